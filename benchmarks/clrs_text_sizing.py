"""Sizing CLRS-Text's default (issue 41): one model, every algorithm of a dataset, exact match.

    python benchmarks/clrs_text_sizing.py ARM LR STEPS WIDTH LAYERS [ALGORITHMS] [DATASET]

Trains one model with ``ARM`` in every head (one thread) on the dataset's training split (every
algorithm together, as the run does), for ``STEPS`` steps at learning rate ``LR``, then prints
exact match of the whole answer (``ok``) and of the result (``rok``) per split, algorithm and
length up to 10 on the validation and test splits. DATASET: a Parquet file of
``data.build_dataset`` (default /tmp/clrs41_sizing.parquet, made with the default's lengths:
train 4, 5, 7; test 4-8, 10, 12, 14; 2,000 training questions per cell).
"""

import sys
import time

import pandas as pd
import torch

from attnlimits.experiments.clrs_text.config import attn_implementation
from attnlimits.experiments.clrs_text.data import result_of
from attnlimits.experiments.clrs_text.model import (
    ModelSize,
    build_model,
    greedy_answers,
    train_model,
)


def main() -> None:
    torch.set_num_threads(1)
    arm, lr, steps = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    width, layers = int(sys.argv[4]), int(sys.argv[5])
    algos = sys.argv[6].split(",") if len(sys.argv) > 6 and sys.argv[6] else None
    df = pd.read_parquet(sys.argv[7] if len(sys.argv) > 7 else "/tmp/clrs41_sizing.parquet")
    if algos:
        df = df[df["algorithm"].isin(algos)]
    tr = df[df["split"] == "train"]
    size = ModelSize(layers, width, 4, 4 * width, 2048)
    model, tok = build_model(size, attn_implementation(arm), 0)
    t = time.time()
    res = train_model(model, tok.encode(tr["question"].tolist()),
                      tok.encode(tr["answer"].tolist()), tr["algorithm"].to_numpy(),
                      steps=steps, batch=32, lr=lr, seed=0)  # fmt: skip
    tt = time.time() - t
    ev = df[(df["split"] != "train") & (df["length"] <= 10)]
    t = time.time()
    longest = int(ev["answer"].str.len().max()) + 1
    got = pd.Series(greedy_answers(res.model, tok, ev["question"].tolist(), longest), ev.index)
    ev = ev.assign(ok=got == ev["answer"], rok=result_of(got) == result_of(ev["answer"]))
    print(f"{arm} lr={lr} steps={steps} w={width} L={layers}: train {tt:.0f}s "
          f"({1e3 * res.seconds_per_step:.0f} ms/step, {1e3 * res.cpu_seconds_per_step:.0f} "
          f"ms CPU), eval {time.time() - t:.0f}s, loss {res.losses[-1][1]:.4f}")  # fmt: skip
    table = ev.groupby(["split", "algorithm", "length"])[["ok", "rok"]].mean()
    print(table.unstack("split").round(2).to_string())


if __name__ == "__main__":
    main()
