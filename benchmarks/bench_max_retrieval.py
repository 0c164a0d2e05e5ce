"""Max retrieval timings: one training step, and evaluation throughput per set size.

    python benchmarks/bench_max_retrieval.py [--threads 1] [--steps 200]

Prints one JSON object: ms per training step (batch 128, set size drawn from 1..16) and
evaluated items per second (softmax + adaptive in one pass) at a few set sizes, plus the
reference (literal Eqs. 9–14) forward for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import time

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out: dict[str, object] = {"threads": args.threads, "load_avg": os.getloadavg()[0]}

    train(ModelConfig(), TrainConfig(steps=5), seed=0)  # warm-up
    t0 = time.perf_counter()
    model, _ = train(ModelConfig(), TrainConfig(steps=args.steps), seed=0)
    out["train_step_ms"] = round(1e3 * (time.perf_counter() - t0) / args.steps, 2)

    norms = {"softmax": ("softmax", {}), "adaptive": ("adaptive", {})}
    rates = {}
    for n, sets in ((16, 4000), (256, 1000), (4096, 100), (16384, 30)):
        t0 = time.perf_counter()
        evaluate(model, EvalConfig(sizes=(n,), n_sets=sets), norms)
        rates[n] = round(sets * n / (time.perf_counter() - t0))
    out["eval_items_per_s"] = rates

    gen = torch.Generator().manual_seed(0)
    items, query, _ = make_batch(1, 16384, generator=gen)
    ref = MaxRetrievalModel(ModelConfig())
    with torch.no_grad():
        for name, fn in (
            ("fast", lambda: ref(items, query)),
            ("reference", lambda: ref.reference_forward(items, query)),
        ):
            fn()
            t0 = time.perf_counter()
            for _ in range(5):
                fn()
            out[f"{name}_forward_items_per_s"] = round(5 * 16384 / (time.perf_counter() - t0))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
