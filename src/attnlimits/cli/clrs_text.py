"""The ``attnlimits reproduce clrs-text`` command's options (paper B §4.2; docs/clrs_text.md).

Registered by :mod:`attnlimits.cli`, which hands it its runner (``cli._run``: Config, device
check, the experiment skeleton, one-line errors), so this module imports nothing of it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from attnlimits.cli._budget import Yes
from attnlimits.cli._options import names as _names

__all__ = ["command"]

Device = Annotated[str | None, typer.Option(help="cpu, cuda or cuda:N (checked before loading).")]
Quick = Annotated[bool, typer.Option(help="Small grids (smoke run); options you give still win.")]
Fresh = Annotated[
    bool, typer.Option(help="Delete a previous run in --out with other settings, start afresh.")
]


def command(_run: Callable[..., Any]) -> Callable[..., None]:
    """The command, running through ``_run(name, options, quick=, out=, fresh=, yes=)``."""

    def reproduce_clrs_text(
        out: Annotated[Path, typer.Option(help="Results folder.")] = Path("results/clrs_text"),
        algorithms: Annotated[
            str | None,
            typer.Option(help="CLRS-Text algorithms, e.g. minimum,bfs, or all (default: three)."),
        ] = None,
        model: Annotated[
            str | None,
            typer.Option(
                help="tiny (default: a small decoder from scratch) or smollm2-135m "
                "(pretrained, fine-tuned; slow on CPU)."
            ),
        ] = None,
        arms: Annotated[
            str | None, typer.Option(help="Normalisers, softmax first (default softmax,adaptive).")
        ] = None,
        seeds: Annotated[int | None, typer.Option(help="Seeds per arm (default 3).")] = None,
        steps: Annotated[int | None, typer.Option(help="Training steps per model.")] = None,
        lengths: Annotated[
            str | None, typer.Option(help="ours (short, default) or paper (CLRS-Text's split).")
        ] = None,
        dataset: Annotated[
            str | None,
            typer.Option(help="A Parquet dataset made by the data step (default: make one)."),
        ] = None,
        device: Device = None,
        quick: Quick = False,
        fresh: Fresh = False,
        yes: Yes = False,
    ) -> None:
        """Paper B §4.2: CLRS-Text, softmax vs adaptive temperature in training and inference."""
        options = {
            "algorithms": _names(algorithms, "algorithms"),
            "model": model,
            "arms": _names(arms, "arms"),
            "seeds": seeds,
            "steps": steps,
            "lengths": lengths,
            "dataset": dataset,
            "device": device,
        }
        _run("clrs-text", options, quick=quick, out=out, fresh=fresh, yes=yes)

    return reproduce_clrs_text
