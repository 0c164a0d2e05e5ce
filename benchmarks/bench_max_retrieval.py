"""Max retrieval: all seeds in one batched model against the same seeds one after another.

    python benchmarks/bench_max_retrieval.py [--seeds 10] [--steps 100] [--threads 2]
                                             [--variant listing] [--repeats 3]

Same run, same process, alternating: ``--steps`` training steps and a fixed evaluation
(softmax + adaptive on 64 sets of 1,024 items) for ``--seeds`` seeds, (a) sequentially, one
single-seed model after another, and (b) batched, one model with a seed axis. Prints one JSON
object: the median over ``--repeats`` of each wall time, the ratios batched / sequential, and
the literal Eqs. 9–14 forward against the re-associated one. Reference = the sequential run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from attnlimits.experiments.softmax_not_enough import (
    EvalConfig,
    MaxRetrievalModel,
    ModelConfig,
    TrainConfig,
    evaluate,
    make_batch,
    train,
)

NORMS = {"softmax": ("softmax", {}), "adaptive": ("adaptive", {})}


def _time(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--variant", default="listing", choices=["listing", "ours"])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    seeds = tuple(range(args.seeds))
    mcfg, tcfg = ModelConfig(variant=args.variant), TrainConfig(steps=args.steps)
    ecfg = EvalConfig(sizes=(1024,), n_sets=64, target_se=None)
    models = {s: MaxRetrievalModel(mcfg, (s,)) for s in seeds}
    stacked = MaxRetrievalModel(mcfg, seeds)
    runs: dict[str, Callable[[], Any]] = {
        "train_sequential_s": lambda: [train(mcfg, tcfg, s) for s in seeds],
        "train_batched_s": lambda: train(mcfg, tcfg, seeds),
        "eval_sequential_s": lambda: [evaluate(m, ecfg, NORMS) for m in models.values()],
        "eval_batched_s": lambda: evaluate(stacked, ecfg, NORMS),
    }
    train(mcfg, TrainConfig(steps=3), seeds)  # warm-up
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.repeats):
        for name, fn in runs.items():
            times[name].append(_time(fn))
    out: dict[str, Any] = {
        "seeds": args.seeds,
        "steps": args.steps,
        "variant": args.variant,
        "threads": args.threads,
        "load_avg_1min_before": os.getloadavg()[0],
        "cpu": _cpu(),
        "torch": torch.__version__,
    }
    out |= {k: round(statistics.median(v), 3) for k, v in times.items()}
    out["train_ms_per_step_batched"] = round(1e3 * out["train_batched_s"] / args.steps, 1)
    out["ratio_train_batched_over_sequential"] = round(
        out["train_batched_s"] / out["train_sequential_s"], 3
    )
    out["ratio_eval_batched_over_sequential"] = round(
        out["eval_batched_s"] / out["eval_sequential_s"], 3
    )
    items, query, _ = make_batch(4, 4096, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        fast = statistics.median(_time(lambda: stacked(items, query)) for _ in range(3))
        ref = statistics.median(
            _time(lambda: stacked.reference_forward(items, query)) for _ in range(3)
        )
    out["ratio_forward_reassociated_over_literal"] = round(fast / ref, 3)
    print(json.dumps(out, indent=2))


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        return "unknown"


if __name__ == "__main__":
    main()
