"""The ``attnlimits report FOLDER`` command: a finished run redrawn from its saved tables.

Registered by :mod:`attnlimits.cli`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from attnlimits.cli._errors import fail as _fail

__all__ = ["report"]


def report(
    folder: Annotated[
        Path, typer.Argument(metavar="FOLDER", help="A results folder of a finished run.")
    ],
) -> None:
    """Redraw a run's figures, claims, report.md and report.html from its saved tables (for
    several models side by side: each model's folder, then the table that joins them)."""
    from attnlimits.experiments import skeleton
    from attnlimits.experiments.limitations.side_by_side import redraw_side_by_side

    try:
        path = redraw_side_by_side(folder) or skeleton.redraw(folder)
    except (ValueError, OSError) as err:
        _fail(str(err))
    typer.echo(f"report: {path}")
