"""CPU seconds per CLRS-Text training step against the number of micro-batches (issue 41).

    python benchmarks/clrs_text_micro.py [ARM] [MICRO,...] [STEPS]

One thread; the default run's dataset (trace format, minimum / insertion_sort / bfs at training
lengths 4, 5, 7: generated or taken from the cache), its batches (32 texts, algorithms equally
likely) and its model (2 layers, width 64). Each step is ``model.step_gradients`` plus AdamW:
the texts sorted by length and split into MICRO micro-batches, each padded to its own longest
(1 = the whole batch padded to its longest text, the step before issue 41's change). Prints the
mean CPU milliseconds a step over STEPS steps (default 20) after 3 warm-up steps, per MICRO.
2026-11-27, AVX2 kind, idle but for this: softmax 577 / 338 / 246 / 225 ms at 1 / 2 / 4 / 8;
adaptive 789 / 357 / 330 / 375 ms at 1 / 4 / 8 / 16 (hence ``model.MICRO_BATCHES`` = 8).
"""

import sys
import time

import numpy as np
import torch

from attnlimits.experiments.clrs_text.compute import load_dataset
from attnlimits.experiments.clrs_text.config import Config, attn_implementation
from attnlimits.experiments.clrs_text.model import ModelSize, build_model, encode, step_gradients


def main() -> None:
    torch.set_num_threads(1)
    arm = sys.argv[1] if len(sys.argv) > 1 else "softmax"
    micros = [int(m) for m in (sys.argv[2] if len(sys.argv) > 2 else "1,2,4,8,16").split(",")]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    cfg = Config()
    df, _ = load_dataset(cfg)
    train = df[df["split"] == "train"]
    q, a = encode(train["question"].tolist()), encode(train["answer"].tolist())
    groups = train["algorithm"].to_numpy()
    members = [np.flatnonzero(groups == g) for g in np.unique(groups)]
    net, _ = build_model(ModelSize(), attn_implementation(arm), 0)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)

    def step(micro: int) -> None:
        picks = rng.integers(len(members), size=cfg.batch)
        rows = [int(rng.choice(members[g])) for g in picks]
        opt.zero_grad(set_to_none=True)
        step_gradients(net, [q[r] for r in rows], [a[r] for r in rows], micro=micro)
        opt.step()

    for micro in micros:
        for _ in range(3):
            step(micro)
        t = time.process_time()
        for _ in range(steps):
            step(micro)
        ms = (time.process_time() - t) / steps * 1000
        print(f"{arm}: {micro} micro-batches, {ms:.0f} ms of CPU a step", flush=True)


if __name__ == "__main__":
    main()
