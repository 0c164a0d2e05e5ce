"""Probe 2 (issue 57): which CPU default can judge? The rule is in docs/clrs_text.md, "Probe 2",
committed before this ran.

    nice -n 10 python benchmarks/clrs_text_probe2.py [WORK_FOLDER] [MINUTES]

Two designs (``rope``, ``nope``) × two arms × seeds 0, 1, 2 on minimum, each unit one model
trained by :func:`compute.run_arm_seed` (one thread), four units side by side (niced, on a
machine shared at load 9 to 14, four niced processes take little more from the others than
two; each unit seeds itself, so the tables do not depend on how many run at once). Seed 0 of every
(design, arm) first; seeds 1 and 2 of a design only once both its seed-0 models passed the
per-seed gate. No unit starts after MINUTES (default 60) of wall time. Each finished unit is
kept in WORK_FOLDER (default /tmp/clrs_probe2), so a killed probe resumes. Writes
docs/data/clrs_text/probe2_units.csv, probe2_validation.csv, probe2_test.csv and
probe2_paired.csv, and prints the gate per (design, arm) and the projected default.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

import pandas as pd

from attnlimits.experiments.clrs_text.compute import load_dataset, run_arm_seed
from attnlimits.experiments.clrs_text.config import Config
from attnlimits.experiments.clrs_text.evaluate import (
    CEILING,
    accuracy_table,
    baseline_table,
    paired_table,
)

DESIGNS = ("rope", "nope")
ARMS = ("softmax", "adaptive")
SEEDS = (0, 1, 2)
LR = 3e-3
PATIENCE = 3
#: the cap and the checks' spacing; PROBE2_STEPS=20 smoke-tests the script (not the probe)
STEPS = int(os.environ.get("PROBE2_STEPS", "2500"))
OUT = Path("docs/data/clrs_text")
WORKERS = 4


def config(design: str) -> Config:
    """The rule's design: minimum, training lengths 4-10 (no 7, 9), cap 2,500, patience 3."""
    return Config(
        algorithms=("minimum",),
        train_lengths=(4, 5, 6, 8, 10),
        test_lengths=(4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 20),
        train_samples=2000,
        validation_samples=50,
        test_samples=100,
        seeds=3,
        steps=STEPS,
        lrs=(LR,),
        eval_every=STEPS // 10,
        patience=PATIENCE,
        positions="none" if design == "nope" else "rope",
    )


def unit(design: str, arm: str, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """One model's (answers, log, validation), each labelled with the design and the unit's
    CPU seconds (training, validation and test decoding together)."""
    cfg = config(design)
    data, _ = load_dataset(cfg)
    cpu = time.process_time()
    tables = run_arm_seed(cfg, data, arm, LR, seed)
    cpu = time.process_time() - cpu
    return tuple(t.assign(design=design, unit_cpu_seconds=cpu) for t in tables)  # type: ignore[return-value]


def seed_passes(log: pd.DataFrame, validation: pd.DataFrame) -> bool:
    """The gate's per-seed part: converged (stopped by the target or by no gain over the last
    checks, at the cap included) and the kept check at ≥ 0.90 on every algorithm."""
    converged = log["stopped"].iloc[0] in ("target", "converged")
    scores = validation.drop_duplicates("step").sort_values("step")
    kept = scores.loc[scores["score"].idxmax(), "step"]
    worst = validation.loc[validation["step"] == kept, "accuracy"].min()
    return bool(converged and worst >= CEILING)


def main() -> None:
    work = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/clrs_probe2")
    minutes = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
    work.mkdir(parents=True, exist_ok=True)
    for design in DESIGNS:  # the dataset once, in this process, before the workers read it
        load_dataset(config(design))
    start = time.perf_counter()
    done: dict[tuple[str, str, int], tuple[pd.DataFrame, ...]] = {}
    pending = [(d, a, 0) for d in DESIGNS for a in ARMS]
    queued_more: set[str] = set()

    def path(u: tuple[str, str, int], part: str) -> Path:
        return work / f"{u[0]}-{u[1]}-seed{u[2]}-{part}.parquet"

    def finished(u: tuple[str, str, int], tables: tuple[pd.DataFrame, ...]) -> None:
        done[u] = tables
        d = u[0]
        zero = [(d, a, 0) for a in ARMS]
        if d not in queued_more and all(z in done for z in zero):
            queued_more.add(d)
            if all(seed_passes(done[z][1], done[z][2]) for z in zero):
                pending.extend((d, a, s) for s in SEEDS[1:] for a in ARMS)
            else:
                print(f"{d}: a seed-0 model failed the gate; seeds 1, 2 not run", flush=True)

    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(WORKERS, mp_context=spawn, max_tasks_per_child=1) as pool:
        running = {}
        while pending or running:
            while pending and len(running) < WORKERS:
                u = pending.pop(0)
                if all(path(u, p).is_file() for p in ("answers", "log", "validation")):
                    finished(
                        u,
                        tuple(
                            pd.read_parquet(path(u, p)) for p in ("answers", "log", "validation")
                        ),
                    )
                    continue
                if time.perf_counter() - start > 60 * minutes:
                    print(f"{u}: not started (past {minutes:g} min)", flush=True)
                    continue
                running[pool.submit(unit, *u)] = u
            if not running:
                continue
            for f in wait(running, return_when=FIRST_COMPLETED).done:
                u = running.pop(f)
                tables = f.result()
                for p, t in zip(("answers", "log", "validation"), tables, strict=True):
                    t.to_parquet(path(u, p))
                log = tables[1]
                print(
                    f"{u}: {int(log['steps_taken'].iloc[0])} steps, {log['stopped'].iloc[0]}, "
                    f"best val {tables[2]['score'].max():.3f}, "
                    f"{log['unit_cpu_seconds'].iloc[0]:.0f} s CPU, "
                    f"at {(time.perf_counter() - start) / 60:.1f} min",
                    flush=True,
                )
                finished(u, tables)
    write(done, (time.perf_counter() - start) / 60)


def write(done: dict[tuple[str, str, int], tuple[pd.DataFrame, ...]], wall: float) -> None:
    """The probe's tables, and the rule's inputs printed."""
    rows = []
    for (d, a, s), (_, log, val) in sorted(done.items()):
        scores = val.drop_duplicates("step")
        rows.append(
            {
                "design": d,
                "arm": a,
                "seed": s,
                "steps": int(log["steps_taken"].iloc[0]),
                "stopped": log["stopped"].iloc[0],
                "best_validation": scores["score"].max(),
                "best_step": int(scores.loc[scores["score"].idxmax(), "step"]),
                "passes_seed_gate": seed_passes(log, val),
                "cpu_ms_per_step": round(1e3 * log["cpu_seconds_per_step"].iloc[0], 1),
                "unit_cpu_seconds": round(log["unit_cpu_seconds"].iloc[0], 1),
            }
        )
    units = pd.DataFrame(rows)
    units.to_csv(OUT / "probe2_units.csv", index=False)
    val = pd.concat([t[2] for t in done.values()], ignore_index=True)
    val[["design", "arm", "seed", "step", "algorithm", "accuracy"]].sort_values(
        ["design", "arm", "seed", "step"]
    ).to_csv(OUT / "probe2_validation.csv", index=False)
    answers = pd.concat([t[0] for t in done.values()], ignore_index=True)
    tests, paired = [], []
    for d, a in answers.groupby("design"):
        acc = accuracy_table(
            a, baseline_table(a[a["arm"] == "softmax"].drop_duplicates("question"))
        )
        tests.append(acc.assign(design=d))
        if a["arm"].nunique() == 2:
            paired.append(paired_table(a, acc).assign(design=d))
    test = pd.concat(tests, ignore_index=True)
    cols = [
        "design",
        "arm",
        "algorithm",
        "length",
        "regime",
        "seeds",
        "accuracy",
        "ci_seeds_low",
        "ci_seeds_high",
        "result_accuracy",
        "baseline",
        "baseline_result",
    ]
    test[cols].round(3).to_csv(OUT / "probe2_test.csv", index=False)
    if paired:
        p = pd.concat(paired, ignore_index=True)
        keep = [
            "design",
            "algorithm",
            "regime",
            "scope",
            "lengths",
            "seeds",
            "accuracy",
            "baseline_accuracy",
            "difference",
            "ci_low",
            "ci_high",
            "testable",
            "why",
        ]
        p[keep].round(3).to_csv(OUT / "probe2_paired.csv", index=False)
    print(f"\nwall {wall:.1f} min\n{units.to_string(index=False)}")
    for (d, arm), g in units.groupby(["design", "arm"]):
        t = test[
            (test["design"] == d) & (test["arm"] == arm) & (test["regime"] == "in distribution")
        ]
        pooled = (t["accuracy"] * t["seeds"]).sum() / t["seeds"].sum() if len(t) else float("nan")
        ok = len(g) == len(SEEDS) and bool(g["passes_seed_gate"].all()) and pooled >= CEILING
        projected = 5 * g["unit_cpu_seconds"].median() / 60  # 5 seeds of this arm, CPU minutes
        print(
            f"{d} {arm}: seeds {len(g)}, per-seed gate {g['passes_seed_gate'].tolist()}, "
            f"test in distribution {pooled:.3f}, gate {'PASS' if ok else 'fail'}, "
            f"5 seeds' CPU {projected:.1f} min"
        )
    print("(projected default: the two arms' 5 seeds' CPU minutes summed, over 2 processes)")


if __name__ == "__main__":
    main()
