"""The command line's side of :mod:`attnlimits.experiments.budget`: the ``--yes`` option, and
several runs of one command (models side by side) checked together before the first starts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from attnlimits.cli._errors import fail

__all__ = ["Yes", "check_models"]

Yes = Annotated[
    bool,
    typer.Option("--yes", help="Start a run estimated at over an hour without asking."),
]


def check_models(
    name: str, configs: Mapping[str, Any], yes: bool, out: Path, folders: Iterable[str] = ()
) -> None:
    """Before the first of several runs of experiment ``name`` (model -> Config) into ``out``:
    ``out`` a folder of its own (the joined report goes into it; ``''`` arrives as ``'.'``)
    with no symbolic link where the joined report or the models' ``folders`` go,
    every model there as far as is known without loading it (a missing package or folder), then
    the runs' cost, one after another: the largest one's memory and their summed time. Any of
    these failing ends in one ``error:`` line and exit 2."""
    from attnlimits.capture import check_model_available
    from attnlimits.experiments import budget, skeleton
    from attnlimits.experiments.limitations.side_by_side import check_joined
    from attnlimits.experiments.store import check_out

    try:
        check_out(out)
        check_joined(Path(out), folders)
        for model in configs:
            check_model_available(model)
        estimate = skeleton.get(name).estimate
        if estimate is not None:
            runs = [estimate(c) for c in configs.values()]
            budget.check(budget.combined(runs, f"{name} on {' and '.join(configs)}"), yes=yes)
    except (OSError, ValueError) as err:
        fail(str(err))
