"""The ``attnlimits sweep`` command: its options, and errors as one line (the CLI's rules).

Registered by :mod:`attnlimits.cli`. Bad input
(a bad spec, no Ray, a busy folder) ends in one line on stderr and exit code 2; failed cells
in exit code 1 after the merged report is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from attnlimits._paths import path_kind
from attnlimits.cli._errors import fail as _fail

__all__ = ["sweep"]


def sweep(
    spec: Annotated[
        Path,
        typer.Argument(
            metavar="SPEC",
            help="TOML spec: experiment, quick, fixed settings, axes (lists of values).",
        ),
    ],
    backend: Annotated[
        str, typer.Option(help="serial (in this process), or ray (one task per cell).")
    ] = "serial",
    address: Annotated[
        str | None,
        typer.Option(help="Ray cluster, e.g. ray://head:10001 (default $RAY_ADDRESS, else local)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Results folder (default results/sweep/<SPEC's stem>).")
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", help="Start a sweep estimated at over an hour without asking.")
    ] = False,
) -> None:
    """One experiment over a grid of settings, cell by cell, serially or on Ray; the cells'
    tables merged with the axis values as columns (docs/distributed.md). First one line gives
    the cell count and the estimated time; a sweep of over an hour needs --yes."""
    from attnlimits.experiments.sweep import load_spec, run_sweep
    from attnlimits.experiments.sweep.backends import check_backend

    try:
        check_backend(backend)  # the options first, then the file
        if (kind := path_kind(spec)) != "a file":  # a FIFO would block, /dev/zero never end
            what = "it does not exist" if kind == "missing" else f"it is {kind}"
            raise ValueError(f"cannot read sweep spec {spec}: {what}; give a .toml or .yaml file")
        loaded = load_spec(spec)
        path, failed = run_sweep(loaded, out, backend=backend, address=address, yes=yes)
    except (ValueError, OSError, ImportError) as err:  # bad spec, no Ray, busy folder
        _fail(str(err))
    except KeyboardInterrupt:
        _fail("interrupted; rerun the command to resume (finished cells are skipped)", 130)
    typer.echo(f"report: {path}")
    if failed:
        _fail(f"{failed} of {len(loaded.cells)} cell(s) failed; their errors are in {path}", 1)
