"""The report sections of a CLRS-Text run (paper B §4.2): set-up, learning rates, accuracy per
cell and per seed, the paired comparison, cost. The claims are :mod:`.claims`'s."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pandas as pd

from attnlimits.experiments.clrs_text.config import Config
from attnlimits.experiments.clrs_text.cost import thirty
from attnlimits.experiments.clrs_text.evaluate import CEILING, MIN_SEEDS
from attnlimits.experiments.clrs_text.provenance import provenance_table
from attnlimits.experiments.report import markdown_table

__all__ = ["sections"]


def _per_seed(answers: pd.DataFrame) -> pd.DataFrame:
    """Exact-match accuracy per (arm, algorithm, length), a column per seed."""
    keys = ["arm", "algorithm", "length", "regime"]
    wide = answers.pivot_table(index=keys, columns="seed", values="correct", aggfunc="mean")
    wide.columns = [f"seed {c}" for c in wide.columns]
    return wide.round(3).reset_index()


def sections(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> list[str]:
    """Set-up (paper / lost in our copy / ours), accuracy per cell, the paired table, cost."""
    acc = tables["accuracy"].copy()
    acc["accuracy (95 % over samples)"] = [
        f"{a:.3f} [{lo:.3f}, {hi:.3f}]"
        for a, lo, hi in zip(
            acc["accuracy"], acc["ci_samples_low"], acc["ci_samples_high"], strict=True
        )
    ]
    acc["95 % over seeds (decides)"] = [
        f"[{lo:.3f}, {hi:.3f}]"
        for lo, hi in zip(acc["ci_seeds_low"], acc["ci_seeds_high"], strict=True)
    ]
    shown = acc[
        [
            "arm",
            "algorithm",
            "length",
            "regime",
            "questions",
            "seeds",
            "accuracy (95 % over samples)",
            "95 % over seeds (decides)",
            "seed_sd",
            "result_accuracy",
            "chance",
            "uniform",
            "chance_result",
            "uniform_result",
        ]
    ]
    train = tables["training"]
    speed = train.groupby("arm")[["seconds_per_step", "cpu_seconds_per_step"]].median()
    threads = meta.get("torch_threads", "?")
    cost = [
        f"- {arm}: {1e3 * r.seconds_per_step:.0f} ms per training step, "
        f"{1e3 * r.cpu_seconds_per_step:.0f} ms of CPU (median over seeds; {threads} "
        f"thread{'' if threads == 1 else 's'}; "
        "other load on the machine is not recorded: compare arms within a run only)"
        for arm, r in speed.iterrows()
    ]
    params = meta.get("params")
    if isinstance(params, Mapping) and len(speed):
        fields = {f.name for f in dataclasses.fields(Config)}
        cfg = Config(**{k: v for k, v in params.items() if k in fields})
        column = "cpu_seconds_per_step" if cfg.device == "cpu" else "seconds_per_step"
        cost += thirty(cfg, speed[column].to_dict(), int(meta.get("processes", 1)))
    return [
        "## Set-up",
        "",
        markdown_table(provenance_table(meta)),
        "",
        "## Learning rate per arm (seed 0's models on the validation split)",
        "",
        "`score`: the mean over algorithms of validation exact match at the model's best check; "
        "`step`: the first check that reached it; the chosen rate trains every seed.",
        "",
        markdown_table(tables["learning_rate"]) if "learning_rate" in tables else "(none)",
        "",
        "## Exact-match accuracy per algorithm and length",
        "",
        "`accuracy`: exact match of the whole generated answer (in the trace format: trace and "
        "result); `result_accuracy`: of the result only (after the last ` | `), comparable "
        "across formats. Trivial baselines: `chance` (the most common answer), `uniform` (a "
        "uniform guess over the answer's format), and the same for the result (`*_result`).",
        "",
        markdown_table(shown),
        "",
        "## Accuracy per seed (arm × seed × algorithm × length)",
        "",
        "Each seed is one trained model; the seeds are the unit of every interval that decides "
        "a verdict (questions are nested within seeds).",
        "",
        markdown_table(_per_seed(tables["answers"])) if "answers" in tables else "(no answers)",
        "",
        "## Paired comparison per algorithm (over seeds; same questions for every seed)",
        "",
        "`difference`: the mean over seeds of each seed's accuracy difference (arm − baseline), "
        "with its 95 % t-interval over seeds (`ci_low`, `ci_high`) and the t-test's `p_t`; "
        "`scope` pooled: over the regime's testable `lengths`. The interval counts the seeds' "
        "spread and the questions' sampling. A length is not testable (`why`) with fewer than "
        f"{MIN_SEEDS} seeds or where neither arm's interval (seeds and questions) is above the "
        f"trivial baseline, and so is, in every regime, an algorithm with an arm below "
        f"{CEILING:.0%} in distribution. "
        "`pairs`, `wins` (questions "
        "only the arm answers) and `losses` count (seed, question) pairs: description only, not "
        "independent.",
        "",
        markdown_table(tables["paired"]),
        "",
        "## Cost",
        "",
        *cost,
        "",
    ]
