"""The numbers of ``docs/clrs_text.md``, from a saved run: no figure in that doc is typed by hand.

    python -m attnlimits.experiments.clrs_text.doc RESULTS [--doc docs/clrs_text.md]
        [--data docs/data/clrs_text]

RESULTS is the folder of ``attnlimits reproduce clrs-text``. :func:`extract` takes the few small
tables the doc shows from the run's tables (what was run, the learning rates chosen, exact match
per arm, algorithm and length with the baselines, per-seed accuracies, the pooled paired
comparison per regime, the claims) and writes them as CSV under ``--data``; :func:`render` turns
them into Markdown blocks (and the default's set-up table, from :mod:`.provenance`, and the
rules and thresholds, from :mod:`.rules`), which
replace the doc's blocks between ``<!-- generated: NAME -->``
and ``<!-- /generated: NAME -->`` (the markers of paper A's doc, :mod:`..limitations.doc`).
``tests/test_clrs_text_doc.py`` renders the committed CSVs and checks that the doc holds exactly
those blocks, so the doc and the saved run's tables cannot drift apart. The trace-length table
(``trace_lengths.csv``) comes from ``benchmarks/clrs_text_trace_lengths.py``; the sizing probe's
(``probe_validation.csv``, ``probe_test.csv``) from the probe run that sized the default
(docs/clrs_text.md, "Sizing the default").
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path

import pandas as pd

from attnlimits.experiments.clrs_text import rules
from attnlimits.experiments.clrs_text.provenance import defaults
from attnlimits.experiments.report import (
    block,
    fill,
    load_tables,
    markdown_table,
    refill,
    save_tables,
)
from attnlimits.experiments.rule_tables import rules_table, thresholds_table

__all__ = ["block", "default_setup", "extract", "fill", "load", "main", "render", "save"]

Data = dict[str, pd.DataFrame]
_RUN_KEYS = (
    "preset",
    "format",
    "algorithms",
    "train_lengths",
    "test_lengths",
    "seeds",
    "steps",
    "lrs",
    "stop_at",
    "eval_every",
    "layers",
    "width",
    "heads",
    "batch",
    "train_samples",
    "validation_samples",
    "test_samples",
)


def extract(folder: Path) -> Data:
    """The doc's tables from a finished run's folder."""
    meta_file = folder / "run.json"
    if not meta_file.is_file():
        raise ValueError(f"{folder} holds no clrs-text run (no run.json)")
    meta = json.loads(meta_file.read_text())
    tables = {p.stem: pd.read_parquet(p) for p in (folder / "tables").glob("*.parquet")}
    params = meta["params"]
    run = pd.DataFrame(
        {
            "setting": list(_RUN_KEYS),
            "value": [
                ", ".join(map(str, v)) if isinstance(v, list) else str(v)
                for v in (params.get(k, meta.get(k, "")) for k in _RUN_KEYS)
            ],
        }
    )
    acc = tables["accuracy"][
        [
            "arm",
            "algorithm",
            "length",
            "regime",
            "accuracy",
            "ci_seeds_low",
            "ci_seeds_high",
            "result_accuracy",
            "chance",
            "uniform",
            "baseline",
        ]
    ].round(3)
    ans = tables["answers"]
    per_seed = (
        ans.groupby(["arm", "algorithm", "regime", "seed"])["correct"].mean().round(3).reset_index()
    )
    paired = tables["paired"]
    paired = paired[paired["scope"] == "pooled"][
        [
            "arm",
            "algorithm",
            "regime",
            "lengths",
            "seeds",
            "difference",
            "ci_low",
            "ci_high",
            "testable",
            "why",
        ]
    ].round(3)
    steps = tables["training"].groupby("arm")["steps_taken"].agg(["min", "max"]).reset_index()
    lrs = tables["learning_rate"].merge(steps, on="arm", how="left").round(3)
    claims = tables["claims"][["claim", "role", "verdict", "measured"]]
    return {
        "run": run,
        "accuracy": acc,
        "per_seed": per_seed,
        "paired": paired,
        "learning_rate": lrs,
        "claims": claims,
    }


#: The doc's tables saved as CSV and read back with their types (one helper for every doc
#: module).
save, load = save_tables, partial(load_tables, as_text=False)


def _accuracy(acc: pd.DataFrame) -> str:
    """Exact match (whole answer) per algorithm and length, an arm per column, the result-only
    match and the baseline beside it."""
    a = acc.assign(
        cell=[
            f"{v:.2f} [{lo:.2f}, {hi:.2f}] ({r:.2f})"
            for v, lo, hi, r in zip(
                acc["accuracy"],
                acc["ci_seeds_low"],
                acc["ci_seeds_high"],
                acc["result_accuracy"],
                strict=True,
            )
        ]
    )
    wide = a.pivot_table(
        index=["algorithm", "length", "regime"], columns="arm", values="cell", aggfunc="first"
    ).reset_index()
    base = acc.drop_duplicates(["algorithm", "length"])[["algorithm", "length", "baseline"]]
    return markdown_table(wide.merge(base, on=["algorithm", "length"]))


def _per_seed(per_seed: pd.DataFrame) -> str:
    wide = per_seed.pivot_table(
        index=["arm", "algorithm", "regime"], columns="seed", values="correct"
    ).reset_index()
    wide.columns = [c if isinstance(c, str) else f"seed {c}" for c in wide.columns]
    return markdown_table(wide)


def render(data: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    """The doc's generated blocks, by name."""
    return {
        "clrs-run": markdown_table(data["run"]),
        "clrs-lr": markdown_table(data["learning_rate"]),
        "clrs-accuracy": _accuracy(data["accuracy"]),
        "clrs-per-seed": _per_seed(data["per_seed"]),
        "clrs-paired": markdown_table(data["paired"]),
        "clrs-claims": markdown_table(data["claims"]),
        "clrs-trace-lengths": _lengths(data["trace_lengths"]),
        "clrs-setup": default_setup(),
        "clrs-rules": rules_table(rules.RULES),
        "clrs-thresholds": thresholds_table(rules.THRESHOLDS, rules.RULES, rules.READ_BY),
        "clrs-probe-validation": _probe_validation(data["probe_validation"]),
        "clrs-probe-test": _probe_test(data["probe_test"]),
    }


def _probe_validation(v: pd.DataFrame) -> str:
    """The sizing probe's validation exact match per check: a row per step, a column per arm
    and algorithm (``probe_validation.csv``, from the probe run's ``tables/validation``)."""
    wide = v.pivot_table(index="step", columns=["arm", "algorithm"], values="accuracy")
    wide.columns = [f"{arm}: {algo}" for arm, algo in wide.columns]
    return markdown_table(wide.round(2).reset_index())


def _probe_test(t: pd.DataFrame) -> str:
    """The sizing probe's test exact match (whole answer, result only in brackets) per
    algorithm and length, a column per arm (``probe_test.csv``)."""
    t = t.assign(
        cell=[
            f"{a:.2f} ({r:.2f})" for a, r in zip(t["accuracy"], t["result_accuracy"], strict=True)
        ]
    )
    wide = t.pivot_table(
        index=["algorithm", "length", "regime"], columns="arm", values="cell", aggfunc="first"
    )
    return markdown_table(wide.reset_index())


def default_setup() -> str:
    """The set-up table of the default run (:func:`.provenance.defaults`), as its report prints
    it: the labels live in one place, :mod:`.provenance`."""
    return markdown_table(defaults())


def _lengths(lengths: pd.DataFrame) -> str:
    """Tokens (bytes) of question + answer per algorithm, format and length."""
    wide = lengths.pivot_table(index=["algorithm", "format"], columns="length", values="tokens")
    return markdown_table(wide.astype(int).reset_index())


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--doc", type=Path, default=Path("docs/clrs_text.md"))
    ap.add_argument("--data", type=Path, default=Path("docs/data/clrs_text"))
    args = ap.parse_args(argv)
    save(extract(args.results), args.data)
    refill(args.doc, render(load(args.data)))


if __name__ == "__main__":
    main()
