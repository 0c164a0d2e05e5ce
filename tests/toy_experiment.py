"""A toy experiment for the skeleton's runner (tests/test_skeleton.py and the torch-build
test): ``steps`` parts of one table, computed through the store; ``fail_at`` raises midway."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from matplotlib.figure import Figure

from attnlimits.experiments import skeleton
from attnlimits.experiments.store import ResultStore


@dataclass(frozen=True)
class ToyConfig:
    steps: int = 3
    fail_at: int = -1  # raise after saving this many parts (-1: never)

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")

    @classmethod
    def quick(cls, **fields: int) -> ToyConfig:
        return cls(**{"steps": 2, **fields})


CALLS: list[int] = []


def _compute(config: ToyConfig, store: ResultStore, *, progress: bool = True):
    params = {"steps": config.steps}
    parts = []
    for i in range(config.steps):
        if i == config.fail_at:
            raise RuntimeError("boom")

        def one(i: int = i) -> pd.DataFrame:
            CALLS.append(i)
            return pd.DataFrame({"step": [i], "value": [i * i]})

        parts.append(store.part("toy", params, f"s{i}", one))
    return {"values": pd.concat(parts, ignore_index=True)}


def _figures(tables, meta):
    fig = Figure()
    fig.add_subplot().plot(tables["values"]["step"], tables["values"]["value"])
    return {"values": fig}


def _claims(tables, meta):
    total = int(tables["values"]["value"].sum())
    return pd.DataFrame(
        [{"claim": "sum", "paper": "-", "measured": total, "rule": "-", "verdict": "n/a"}]
    )


TOY = skeleton.Experiment(
    name="toy", title="Toy", config=ToyConfig, compute=_compute, figures=_figures, claims=_claims
)


EXPERIMENT = TOY  # what skeleton.get("toy") finds in this module
