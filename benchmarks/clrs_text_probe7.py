"""Probe 7 (issue 57): the tables of a ``reproduce clrs-text`` run made with branch clrs6's
default (probe 6's design, seeds 3-5, the cap rule "decayed"), read from the run folder's saved
units, so that a run stopped before its end gives the units it finished. The rule is in
docs/clrs_text.md, "Probe 7" (committed alone on branch clrs6 before the run, c45c5b7).

    python benchmarks/clrs_text_probe7.py RUN_FOLDER

Writes docs/data/clrs_text/probe7_units.csv (per finished unit: steps, why it stopped, best
validation by teacher forcing and its step, the kept model's decoded validation, the per-seed
gate, CPU a step and the training's CPU) and probe7_validation.csv (every check); where the
run finished, probe7_test.csv and probe7_paired.csv (its accuracy and paired tables, as the
command wrote them).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

OUT = Path(__file__).resolve().parent.parent / "docs" / "data" / "clrs_text"
#: probe 6's gate, unchanged in probe 7
GATE = 0.5
#: why a unit stopped that counts as converged under probe 7's rule
CONVERGED = ("target", "converged", "decayed")


def unit_table(logs: pd.DataFrame, checks: pd.DataFrame) -> pd.DataFrame:
    """Per finished (arm, seed): steps, stopped, best validation and its step (the first that
    reached it), decoded validation, the per-seed gate, CPU ms a step, training CPU seconds."""
    first = logs.drop_duplicates(["arm", "seed"]).set_index(["arm", "seed"])
    scores = checks.drop_duplicates(["arm", "seed", "step"])
    best = scores.loc[scores.groupby(["arm", "seed"])["score"].idxmax()].set_index(["arm", "seed"])
    out = pd.DataFrame(
        {
            "steps": first["steps_taken"].astype(int),
            "stopped": first["stopped"],
            "best_validation": best["score"].round(3),
            "best_step": best["step"].astype(int),
            "validation_decoded": first["validation_decoded"].round(3),
        }
    )
    out["passes"] = out["stopped"].isin(CONVERGED) & (out["validation_decoded"] >= GATE)
    out["cpu_ms_per_step"] = (1e3 * first["cpu_seconds_per_step"]).round(1)
    out["training_cpu_seconds"] = (first["cpu_seconds_per_step"] * out["steps"]).round(1)
    return out.reset_index()


def main(run: Path) -> None:
    parts = run / "parts"
    logs = pd.concat(
        [pd.read_parquet(f) for f in sorted(parts.glob("log-*/*.parquet"))], ignore_index=True
    )
    checks = pd.concat(
        [pd.read_parquet(f) for f in sorted(parts.glob("validation-*/*.parquet"))],
        ignore_index=True,
    )
    units = unit_table(logs, checks).sort_values(["arm", "seed"])
    units.to_csv(OUT / "probe7_units.csv", index=False)
    cols = ["arm", "seed", "step", "algorithm", "accuracy"]
    checks[cols].sort_values(cols[:3]).to_csv(OUT / "probe7_validation.csv", index=False)
    for name in ("accuracy", "paired"):
        table = run / "tables" / f"{name}.parquet"
        if table.is_file():
            target = "test" if name == "accuracy" else name
            pd.read_parquet(table).to_csv(OUT / f"probe7_{target}.csv", index=False)
    print(units.to_string(index=False))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
