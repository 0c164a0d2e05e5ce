"""Paper B's (3.c): the default run's training at a second weight decay λ, not chosen for it.

    python benchmarks/second_lambda.py RUN_FOLDER [LAMBDA]

(3.a) and (3.b) judge a growth of the logit spread and of the norms bounding it that our choice
of λ = 1e-3 allowed (it was chosen because with it the spread still grows: round 4's point 10).
This trains the same ten seeds, steps, schedule and regulariser as the run in RUN_FOLDER (its
``run.json``) at LAMBDA (default 1e-2: ours, set before this run, a decade above the default,
where the L2 term pulls hardest against growth), training only (the spread and the bound are
logged during training), and writes ``RUN_FOLDER/tables/second_lambda_log.parquet`` (and
``.csv``), keeping the rows of any other λ run before (one ``weight_decay`` per λ).
``attnlimits report RUN_FOLDER`` then judges (3.c) on it (its rule:
``softmax_not_enough.second_lambda.run_row``: each λ by ``rules.grows_if_learnt``, several λ
combined as a finding's headlines). A checkpoint in ``RUN_FOLDER/checkpoints/`` lets a stopped
run resume.

Pre-registered (round 8, 2026-11-29, its rule written before it), run the same day:

    python benchmarks/second_lambda.py RUN_FOLDER 3e-3

the geometric middle of 1e-3 and 1e-2 (at 1e-2 the model learnt nothing: training accuracy
0.22); its cost is one training stage of the run, 35 min 26 s of wall time at 1e-2 on the
AVX2 kind beside other work (not a timing). At 3e-3 it took 15 min 39 s of wall time (1,853 s
of CPU; one run, quiet; 2026-11-29, AVX2 kind).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

from attnlimits.experiments.softmax_not_enough.config import Config
from attnlimits.experiments.softmax_not_enough.train import checkpoint_path, train

LAMBDA = 1e-2


def main() -> None:
    run = Path(sys.argv[1])
    lam = float(sys.argv[2]) if len(sys.argv) > 2 else LAMBDA
    params = json.loads((run / "run.json").read_text())["params"]
    cfg = Config(
        seeds=int(params["seeds"]),
        steps=params.get("steps"),
        schedule=params["schedule"],
        regularizer=params["regularizer"],
        model_variant=params["model_variant"],
    ).benchmark()
    tcfg = replace(cfg.train, weight_decay=lam)
    if tcfg == cfg.train:
        raise SystemExit(f"λ = {lam:g} is the run's own λ: nothing to compare")
    ckpt = checkpoint_path(run / "checkpoints", cfg.model, tcfg, cfg.seeds)
    start, cpu = time.perf_counter(), time.process_time()
    _, log = train(cfg.model, tcfg, cfg.seeds, ckpt=ckpt, progress=True)
    log = log.assign(weight_decay=lam)
    tables = run / "tables"
    before = tables / "second_lambda_log.parquet"
    if before.is_file():  # the other λ's rows stay: (3.c) judges each λ
        kept = pd.read_parquet(before)
        log = pd.concat([kept[kept["weight_decay"] != lam], log], ignore_index=True)
    tmp = tables / "second_lambda_log.tmp.parquet"
    log.to_parquet(tmp)
    log.to_csv(tables / "second_lambda_log.csv", index=False)
    tmp.replace(tables / "second_lambda_log.parquet")  # nothing half-written survives
    print(
        f"λ = {lam:g}: {len(cfg.seeds)} seeds × {tcfg.steps:,} steps in "
        f"{time.perf_counter() - start:,.0f} s ({time.process_time() - cpu:,.0f} s CPU); "
        f"wrote {tables / 'second_lambda_log.parquet'}"
    )


if __name__ == "__main__":
    main()
