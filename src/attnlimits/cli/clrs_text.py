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
from attnlimits.cli._options import numbers as _numbers

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
        seeds: Annotated[int | None, typer.Option(help="Seeds per arm (default 5).")] = None,
        steps: Annotated[
            int | None, typer.Option(help="Step cap per model (it stops earlier on validation).")
        ] = None,
        format_: Annotated[
            str | None,
            typer.Option(
                "--format", help="trace (CLRS-Text's, default) or answer (the result only)."
            ),
        ] = None,
        lrs: Annotated[
            str | None,
            typer.Option(help="Learning-rate grid, chosen per arm on validation (e.g. 1e-3,3e-3)."),
        ] = None,
        train_lengths: Annotated[
            str | None, typer.Option(help="Training lengths with --lengths ours (e.g. 4,5,7).")
        ] = None,
        test_lengths: Annotated[
            str | None, typer.Option(help="Test lengths with --lengths ours (e.g. 4,6,8,14).")
        ] = None,
        lengths: Annotated[
            str | None,
            typer.Option(
                help="ours (short, default) or paper (CLRS-Text's split, its 5 test seeds)."
            ),
        ] = None,
        dataset: Annotated[
            str | None,
            typer.Option(help="A Parquet dataset made by the data step (default: make one)."),
        ] = None,
        width: Annotated[int | None, typer.Option(help="Tiny model's width (default 64).")] = None,
        layers: Annotated[int | None, typer.Option(help="Tiny model's layers (default 2).")] = None,
        positions: Annotated[
            str | None,
            typer.Option(help="Tiny model's positions: rope (default) or none (NoPE, every arm)."),
        ] = None,
        patience: Annotated[
            int | None,
            typer.Option(
                help="Stop a model after this many validation checks without gain, once above "
                "the trivial answer's validation score (0: off)."
            ),
        ] = None,
        dtype: Annotated[
            str | None,
            typer.Option(
                help="A pretrained --model's precision while it is fine-tuned: auto (default: "
                "float32), float32, bfloat16 or float16 (half precision rounds every update)."
            ),
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
            "format": format_,
            "lrs": _numbers(lrs, float, "lrs"),
            "train_lengths": _numbers(train_lengths, int, "train-lengths"),
            "test_lengths": _numbers(test_lengths, int, "test-lengths"),
            "lengths": lengths,
            "dataset": dataset,
            "width": width,
            "layers": layers,
            "positions": positions,
            "patience": patience,
            "dtype": dtype,
            "device": device,
        }
        _run("clrs-text", options, quick=quick, out=out, fresh=fresh, yes=yes)

    return reproduce_clrs_text
