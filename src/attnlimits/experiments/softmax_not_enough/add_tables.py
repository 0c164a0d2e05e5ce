"""Tables a finished max-retrieval run gains from its checkpoint alone, by inference (nothing
is trained): the argmax arm's accuracy (:mod:`.argmax_arm`) and the profile sets' table
(:func:`.evaluate.set_attention`, which since 2026-11-28 holds each set's normalised entropy,
(1.b)'s statistic), for a run made before they were added.

    python -m attnlimits.experiments.softmax_not_enough.add_tables RUN
    attnlimits report RUN

The first writes ``tables/argmax_accuracy`` and rewrites ``tables/set_attention`` (the same
sets; its other columns unchanged) in RUN; the second redraws the claims from them. Rerunning
the run's own command with the same ``--out`` does the same through its parts, but also
recomputes what it does not store (the attention profile), and refuses a run whose settings
no longer match the code's.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from attnlimits.experiments.softmax_not_enough.argmax_arm import TABLE, argmax_accuracy
from attnlimits.experiments.softmax_not_enough.config import Config, MaxRetrievalConfig
from attnlimits.experiments.softmax_not_enough.evaluate import set_attention
from attnlimits.experiments.softmax_not_enough.model import MaxRetrievalModel
from attnlimits.experiments.softmax_not_enough.seeds import softmax_model
from attnlimits.experiments.softmax_not_enough.train import checkpoint_path, load_checkpoint
from attnlimits.experiments.store import ResultStore

__all__ = ["add_tables", "benchmark_of", "load_model", "main"]


def benchmark_of(folder: Path) -> MaxRetrievalConfig:
    """The benchmark settings of the run in ``folder``, rebuilt from its ``run.json``'s params."""
    meta = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    params: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in meta["params"].items()
    }
    return Config(**params).benchmark()


def load_model(folder: Path, device: str = "cpu") -> MaxRetrievalModel:
    """The trained softmax models of the finished run in ``folder``, from its checkpoint."""
    bench = benchmark_of(folder)
    mcfg = softmax_model(bench)
    path = checkpoint_path(folder / "checkpoints", mcfg, bench.train, bench.seeds)
    if not path.is_file():
        raise ValueError(f"{folder} has no checkpoint {path.name} of its trained models")
    model = MaxRetrievalModel(mcfg, bench.seeds)
    model.load_state_dict(load_checkpoint(path, device)["model"])
    return model.to(device).eval()


def add_tables(folder: Path) -> dict[str, pd.DataFrame]:
    """Write the argmax arm's table (kept where the run has one) and the refreshed
    ``set_attention`` into ``folder``; the refreshed table must agree with the stored one on
    every column the stored one has."""
    bench = benchmark_of(folder)
    model = load_model(folder)
    store = ResultStore(folder)
    norms = {"softmax": ("softmax", {}), "adaptive": ("adaptive", dict(bench.adaptive_params))}
    sets = set_attention(model, bench.profile_sizes, norms)
    old = store.read_table("set_attention")
    pd.testing.assert_frame_equal(sets[list(old.columns)], old, check_dtype=False)
    store.write_table(sets, "set_attention")
    if (folder / "tables" / f"{TABLE}.parquet").is_file():
        return {"set_attention": sets, TABLE: store.read_table(TABLE)}
    argmax = argmax_accuracy(model, store.read_table("accuracy"), bench.eval)
    store.write_table(argmax, TABLE)
    return {"set_attention": sets, TABLE: argmax}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("results", type=Path, help="a finished softmax-not-enough run folder")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    tables = add_tables(args.results)
    mean = tables[TABLE].groupby(["size", "norm"])["accuracy"].mean().unstack()
    print(mean.to_string(float_format=lambda x: f"{100 * x:.1f}"))


if __name__ == "__main__":
    main()
