"""Time ``attnlimits reproduce limitations`` end to end on a randomly initialised 124M GPT-2.

GPT-2 weights cannot be downloaded here, so the model is ``GPT2LMHeadModel(GPT2Config())`` with
seed 0 (12 layers × 12 heads, d = 64, 1024 positions: the paper's shape and attention cost),
saved with an offline word-level tokenizer. The numbers of a random model mean nothing; the
wall time is the point (the paper reports 18 h 13 min for all five algorithms on GPT-2).

    python benchmarks/bench_gpt2_random.py [--out results/bench_gpt2] [--windows 1] [--quick]
                                           [--x-source values [--x-source hidden]]

The paper's run is one x source; the default here is the value vectors (``--x-source values
--x-source hidden`` adds the CLI's hidden-state comparison).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from transformers import GPT2Config, GPT2LMHeadModel

from attnlimits.corpus import load_text, word_tokenizer
from attnlimits.experiments import skeleton
from attnlimits.experiments.limitations import EXPERIMENT, Config


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("results/bench_gpt2"))
    ap.add_argument("--windows", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--x-source", action="append", choices=["values", "keys", "hidden"])
    args = ap.parse_args()

    model_dir = args.out / "model"
    if not (model_dir / "config.json").exists():
        torch.manual_seed(0)
        GPT2LMHeadModel(GPT2Config()).save_pretrained(model_dir)
        word_tokenizer(load_text()).save_pretrained(model_dir)
    cfg = Config.preset(
        quick=args.quick,
        model=str(model_dir),
        windows=args.windows,
        x_sources=tuple(args.x_source or ["values"]),
    )
    start = time.perf_counter()
    skeleton.run(EXPERIMENT, cfg, args.out / "run")
    wall = time.perf_counter() - start
    meta = json.loads((args.out / "run" / "run.json").read_text())
    print(
        f"random GPT-2 124M, {args.windows} window(s), x = {', '.join(cfg.x_sources)}: "
        f"{wall:.1f} s end to end"
    )
    print("stages:", meta["wall_time_s"], "threads:", torch.get_num_threads())


if __name__ == "__main__":
    main()
