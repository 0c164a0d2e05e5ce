"""Probe 8 (issue 57): can a pretrained SmolLM2-135M, fine-tuned on the CPU, learn minimum in
CLRS-Text's trace format within a budget a 90-minute default could hold? The rule below is
also in docs/clrs_text.md, "Probe 8", committed alone before this ran.

    python benchmarks/clrs_text_probe8.py [WORK_FOLDER] [START_BY_UTC] [END_UTC]

Run as: python benchmarks/clrs_text_probe8.py /tmp/clrs_probe8 00:15 01:25

**Why** (written after probes 6 and 7 were seen): over probes 6 and 7 the twelve from-scratch
models of the tiny design ended at decoded validation 0.39-0.87, and at three seeds that spread
makes every interval over seeds reach below the trivial baseline at the out-of-distribution
lengths (probe 7: softmax's lower end 0.10 at length 7 against a baseline of 0.19), so even a
gate pooled over seeds would leave nothing testable. A pretrained model starts every seed from
the same weights (a seed draws only the order of the training examples), which is §4.2's own
setting (a fine-tuned, softmax-pretrained LM) and may both learn faster and spread less. Its
cost on two CPU cores is the question: a step of 4 texts took about 5 s of CPU (docs, "SmolLM2").

**The design** (every setting ours): ``--model smollm2-135m`` as the command loads it (float32,
its own RoPE, ``sdpa`` for softmax, ``attnlimits_adaptive`` in every head for adaptive); the
task and lengths of probes 6-7 (minimum only, trace format, training lengths 4, 5, 6, 8, 10,
2,000 questions each; validation **10** a length; tests at 4-10 with 7 and 9 by interpolation
and 12, 14, 16, 20 by extrapolation, **10** a length, decoded greedily); **seed 0** of each arm
(no SmolLM2 fine-tune has been seen at any seed); AdamW at **1e-4** (the command's rate for a
pretrained model, set for ``--quick`` before any learning was seen), 5 % warm-up and cosine
decay over a **cap of 240 steps** of **batch 4** (one micro-batch); a teacher-forced check
every **40 steps** (6 checks); ``stop_at`` 0.98; the stop rule with K = 4 and the trivial
floor; at the cap, probe 7's rule ("decayed": the best of the last K checks beats the best
before them by less than 0.5/sqrt(n), n = 50 validation questions: 0.071). One torch thread a
unit, the two units side by side.

**What it reports**, per arm: the teacher-forced validation at each check, the best and its
step, the first check at or above G = 0.50 (probe 6's gate) and at or above 0.90, the kept
model's decoded validation, why it stopped, CPU a step, the unit's CPU; the test exact match
per length (whole answer and result only) beside the most-common-answer baseline.

**What it decides** (the next probe's design only; one seed per arm cannot judge anything):
if both arms' kept models reach decoded validation >= G and the projected default at 3 seeds
(3 x the two units' CPU seconds over 2 processes) is at most 90 minutes, probe 9 runs this
design as the candidate default at three fresh seeds with probe 7's gate. If both reach G but
the projection is over 90 minutes, SmolLM2 is documented as the GPU setting only and the CPU
default stays the tiny model. If an arm stays below G at the cap, that is reported with its
curve (a longer cap or another rate is then for a GPU).

*Time*: no unit starts after START_BY_UTC; a unit still training at END_UTC stops at its next
check ("deadline", reported as such). Finished units are kept in WORK_FOLDER (a killed probe
resumes). Writes docs/data/clrs_text/probe8_units.csv, probe8_validation.csv and probe8_test.csv.
"""

from __future__ import annotations

import datetime as dt
import math
import multiprocessing
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

import pandas as pd
import torch

from attnlimits.experiments.clrs_text.compute import (
    _answer,
    load_dataset,
    trivial_validation_score,
)
from attnlimits.experiments.clrs_text.config import Config, attn_implementation
from attnlimits.experiments.clrs_text.evaluate import accuracy_table, baseline_table
from attnlimits.experiments.clrs_text.model import (
    ModelSize,
    build_model,
    teacher_forced_correct,
    train_model,
)

ARMS = ("softmax", "adaptive")
SEED = 0
GATE = 0.50
HIGH = 0.90
K = 4
BUDGET_MINUTES = 90.0
PROJECTED_SEEDS = 3
OUT = Path("docs/data/clrs_text")
NAME = "probe8"


def config() -> Config:
    """The rule's design."""
    return Config(
        model="smollm2-135m",
        algorithms=("minimum",),
        train_lengths=(4, 5, 6, 8, 10),
        test_lengths=(4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 20),
        train_samples=2000,
        validation_samples=10,
        test_samples=10,
        seeds=1,
        steps=240,
        batch=4,
        lrs=(1e-4,),
        eval_every=40,
        patience=K,
    )


def decayed(scores: list[float], n: int) -> bool:
    """Probe 7's rule at the cap: the best of the last K checks beats the best before them by
    less than 0.5/sqrt(n)."""
    if len(scores) <= K:
        return False
    return max(scores[-K:]) - max(scores[:-K]) < 0.5 / math.sqrt(n)


def unit(arm: str, end: float) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """One fine-tuned model's (answers, log, validation); past ``end`` (epoch seconds) it stops
    at its next check, "deadline"."""
    torch.set_num_threads(1)
    cfg = config()
    data, _ = load_dataset(cfg)
    train = data[data["split"] == "train"]
    val = data[data["split"] == "validation"].reset_index(drop=True)
    test = data[data["split"] == "test"]
    floor = trivial_validation_score(val)
    cpu = time.process_time()
    size = ModelSize(cfg.layers, cfg.width, cfg.heads, 4 * cfg.width, 512, "rope")
    model, tok = build_model(size, attn_implementation(arm), SEED, cfg.model, cfg.dtype)
    vq, va = tok.encode(val["question"].tolist()), tok.encode(val["answer"].tolist())
    seen: list[pd.DataFrame] = []
    late = {"hit": False}

    def check(m: torch.nn.Module) -> tuple[float, float]:
        ok = val.assign(correct=teacher_forced_correct(m, vq, va))
        per = ok.groupby("algorithm")["correct"].mean()
        seen.append(per.rename("accuracy").reset_index())
        print(f"{arm}: check {len(seen)}: {float(per.mean()):.3f}", flush=True)
        if time.time() > end:
            late["hit"] = True
            return float(per.mean()), 2.0
        return float(per.mean()), float(per.min())

    result = train_model(
        model,
        tok.encode(train["question"].tolist()),
        tok.encode(train["answer"].tolist()),
        train["algorithm"].to_numpy(),
        steps=cfg.steps,
        batch=cfg.batch,
        lr=cfg.lrs[0],
        seed=SEED,
        log_every=10,
        check=check,
        check_every=cfg.eval_every,
        stop_at=cfg.stop_at,
        patience=cfg.patience,
        floor=floor,
        micro=1,
    )
    scores = [c[1] for c in result.checks]
    stopped = result.stopped
    if late["hit"]:
        stopped = "deadline"
    elif stopped == "cap" and decayed(scores, len(val)) and scores[-1] > floor:
        stopped = "decayed"
    decoded = _answer(cfg, result.model, tok, val)
    val_decoded = float(decoded["correct"].mean())
    cols = ["algorithm", "length", "regime", "in_distribution", "question", "answer"]
    answers = _answer(cfg, result.model, tok, test[cols]).assign(arm=arm, lr=cfg.lrs[0], seed=SEED)
    cpu = time.process_time() - cpu
    steps, losses = zip(*result.losses, strict=True)
    validation = pd.concat(
        [v.assign(step=c[0], score=c[1]) for v, c in zip(seen, result.checks, strict=True)],
        ignore_index=True,
    ).assign(arm=arm, seed=SEED)
    log = pd.DataFrame(
        {
            "arm": arm,
            "seed": SEED,
            "steps_taken": result.steps,
            "stopped": stopped,
            "step": steps,
            "loss": losses,
            "cpu_seconds_per_step": result.cpu_seconds_per_step,
            "trivial": floor,
            "validation_decoded": val_decoded,
        }
    )
    return tuple(t.assign(unit_cpu_seconds=cpu) for t in (answers, log, validation))  # type: ignore[return-value]


def first_at(val: pd.DataFrame, level: float) -> float:
    """The first check's step at or above ``level``, NaN where none is."""
    hit = val.drop_duplicates("step")
    hit = hit[hit["score"] >= level]
    return float(hit["step"].min()) if len(hit) else math.nan


def unit_table(done: dict[str, tuple[pd.DataFrame, ...]]) -> pd.DataFrame:
    rows = []
    for arm, (_, log, val) in done.items():
        scores = val.drop_duplicates("step")
        rows.append(
            {
                "arm": arm,
                "seed": SEED,
                "steps": int(log["steps_taken"].iloc[0]),
                "stopped": log["stopped"].iloc[0],
                "best_validation": round(float(scores["score"].max()), 3),
                "best_step": int(scores.loc[scores["score"].idxmax(), "step"]),
                "first_step_at_gate": first_at(val, GATE),
                "first_step_at_0.90": first_at(val, HIGH),
                "validation_decoded": round(float(log["validation_decoded"].iloc[0]), 3),
                "trivial": round(float(log["trivial"].iloc[0]), 3),
                "first_loss": round(float(log["loss"].iloc[0]), 3),
                "last_loss": round(float(log["loss"].iloc[-1]), 3),
                "cpu_s_per_step": round(log["cpu_seconds_per_step"].iloc[0], 2),
                "unit_cpu_seconds": round(log["unit_cpu_seconds"].iloc[0], 1),
            }
        )
    return pd.DataFrame(rows)


def decision(units: pd.DataFrame) -> str:
    """The rule's decision from the two seed-0 units."""
    minutes = PROJECTED_SEEDS * float(units["unit_cpu_seconds"].sum()) / 2 / 60
    reach = bool(len(units) == 2 and (units["validation_decoded"] >= GATE).all())
    if reach and minutes <= BUDGET_MINUTES:
        what = "probe 9 runs this design at three fresh seeds as the candidate default"
    elif reach:
        what = "SmolLM2 is the GPU setting only; the CPU default stays the tiny model"
    else:
        what = "an arm stays below G at the cap: reported with its curve"
    return f"projected default at 3 seeds {minutes:.1f} min on 2 cores; both >= G: {reach}: {what}"


def _at(hhmm: str) -> float:
    h, m = (int(x) for x in hhmm.split(":"))
    now = dt.datetime.now(dt.timezone.utc)
    at = now.replace(hour=h, minute=m, second=0, microsecond=0)
    if at < now - dt.timedelta(hours=12):  # past midnight UTC
        at += dt.timedelta(days=1)
    return at.timestamp()


def main() -> None:
    work = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/clrs_probe8")
    start_by = _at(sys.argv[2] if len(sys.argv) > 2 else "23:59")
    end = _at(sys.argv[3] if len(sys.argv) > 3 else "23:59")
    work.mkdir(parents=True, exist_ok=True)
    load_dataset(config())  # the dataset once, before the workers
    start = time.perf_counter()
    done: dict[str, tuple[pd.DataFrame, ...]] = {}
    parts = ("answers", "log", "validation")

    def path(arm: str, part: str) -> Path:
        return work / f"{arm}-seed{SEED}-{part}.parquet"

    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=spawn, max_tasks_per_child=1) as pool:
        running = {}
        for arm in ARMS:
            if all(path(arm, p).is_file() for p in parts):
                done[arm] = tuple(pd.read_parquet(path(arm, p)) for p in parts)
            elif time.time() <= start_by:
                running[pool.submit(unit, arm, end)] = arm
        while running:
            for f in wait(running, return_when=FIRST_COMPLETED).done:
                arm = running.pop(f)
                tables = f.result()
                for p, t in zip(parts, tables, strict=True):
                    t.to_parquet(path(arm, p))
                done[arm] = tables
                print(f"{arm} done at {(time.perf_counter() - start) / 60:.1f} min", flush=True)
    units = unit_table(done)
    units.to_csv(OUT / f"{NAME}_units.csv", index=False)
    val = pd.concat([t[2] for t in done.values()], ignore_index=True)
    val[["arm", "seed", "step", "algorithm", "accuracy"]].sort_values(["arm", "step"]).to_csv(
        OUT / f"{NAME}_validation.csv", index=False
    )
    answers = pd.concat([t[0] for t in done.values()], ignore_index=True)
    acc = accuracy_table(answers, baseline_table(answers.drop_duplicates("question")))
    cols = ["arm", "algorithm", "length", "regime", "questions", "accuracy", "result_accuracy"]
    cols += ["baseline", "baseline_result"]
    acc[cols].round(3).to_csv(OUT / f"{NAME}_test.csv", index=False)
    print(units.to_string(index=False))
    print(acc[cols].round(3).to_string(index=False))
    print(decision(units))


if __name__ == "__main__":
    main()
