"""Claims of a CLRS-Text run (paper B §4.2, Figure 8), judged on its tables, and its sections.

Each verdict is a small pure rule with named thresholds (known-answer tests in
``tests/test_clrs_text.py``):

- :func:`learned`: an arm has learned an algorithm when the lower end of its accuracy's
  Wilson interval (in distribution, every seed's answers pooled) is above chance plus
  :data:`LEARN_MARGIN`; chance is the accuracy of always giving the most common answer.
- :func:`comparison_verdict`: paper B says adaptive temperature is better on nearly all
  algorithms. Per algorithm the paired sign test decides better / worse / no difference at
  :data:`ALPHA`; the claim is *reproduced* when the share of algorithms significantly better
  is at least :data:`NEARLY_ALL` and none is significantly worse, *not reproduced* when none
  is better or more are worse than better, otherwise *partly*.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from attnlimits.experiments.clrs_text.config import Config
from attnlimits.experiments.clrs_text.cost import thirty
from attnlimits.experiments.clrs_text.setup import setup_table
from attnlimits.experiments.report import markdown_table

__all__ = [
    "ALPHA",
    "EVIDENCE",
    "LEARN_MARGIN",
    "NEARLY_ALL",
    "claims",
    "comparison_verdict",
    "learned",
    "outcome",
    "sections",
]

#: What decides each claim (report.html links the verdict to them): (pattern in the claim's
#: text, figure names, table names).
EVIDENCE = (
    (r"learns every trained algorithm", ("profile",), ("accuracy",)),
    (r"beats softmax", ("profile",), ("paired", "accuracy")),
)

LEARN_MARGIN = 0.10  # "well above chance": ten points above it, at the interval's lower end
ALPHA = 0.05  # the sign test's level per algorithm
NEARLY_ALL = 0.75  # "nearly all" algorithms: three in four or more


def learned(ci_low: float, chance: float, margin: float = LEARN_MARGIN) -> bool:
    """Whether an accuracy whose interval starts at ``ci_low`` is well above ``chance``."""
    return bool(ci_low > chance + margin)


def outcome(difference: float, p: float, alpha: float = ALPHA) -> str:
    """``"better"``, ``"worse"`` or ``"no difference"`` for one algorithm's paired test."""
    if math.isnan(p) or p >= alpha or difference == 0:
        return "no difference"
    return "better" if difference > 0 else "worse"


def comparison_verdict(better: int, worse: int, total: int, share: float = NEARLY_ALL) -> str:
    """The verdict on "adaptive is better on nearly all algorithms" from per-algorithm outcomes."""
    if total <= 0:
        return "not tested"
    if worse == 0 and better >= share * total:
        return "reproduced"
    if better == 0 or worse > better:
        return "not reproduced"
    return "partly"


def _learn_row(acc: pd.DataFrame, arm: str) -> dict[str, str]:
    a = acc[(acc["arm"] == arm) & acc["in_distribution"]]
    # each training length against its own chance, as the rule states (the lowest interval
    # against the highest chance of another length was stricter than the rule)
    ok = [learned(lo, c) for lo, c in zip(a["ci_samples_low"], a["chance"], strict=True)]
    by_algo = a.assign(ok=ok).groupby("algorithm")["ok"].all()
    short = ", ".join(
        f"{al}: {g['accuracy'].mean():.2f} (chance ≤ {g['chance'].max():.2f})"
        for al, g in a.groupby("algorithm")
    )
    missed = sorted(by_algo.index[~by_algo.to_numpy(bool)])
    return {
        "claim": f"{arm} learns every trained algorithm in distribution (our precondition)",
        "paper": "fine-tuned Gemma 2B solves many CLRS-Text tasks in distribution",
        "measured": short,
        "rule": f"at every training length, Wilson 95 % lower end > chance + {LEARN_MARGIN:.2f}",
        "verdict": "reproduced" if not missed else f"not reproduced ({', '.join(missed)})",
    }


def _compare_row(paired: pd.DataFrame, arm: str, ind: bool) -> dict[str, str]:
    p = paired[(paired["arm"] == arm) & (paired["in_distribution"] == ind)]
    outs = [outcome(d, q) for d, q in zip(p["difference"], p["p_sign"], strict=True)]
    better, worse = outs.count("better"), outs.count("worse")
    where = "in distribution" if ind else "out of distribution (longer inputs)"
    measured = "; ".join(
        f"{al}: {d:+.3f} (p = {q:.2g})"
        for al, d, q in zip(p["algorithm"], p["difference"], p["p_sign"], strict=True)
    )
    return {
        "claim": f"{arm} beats softmax on nearly all algorithms, {where}",
        "paper": "adaptive temperature better on nearly all algorithms (Fig. 8); the outliers "
        "are those whose texts fill most of the context",
        "measured": f"{better} better, {worse} worse of {len(outs)}: {measured}",
        "rule": f"sign test p < {ALPHA} per algorithm; ≥ {NEARLY_ALL:.0%} better, none worse",
        "verdict": comparison_verdict(better, worse, len(outs)),
    }


def claims(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> pd.DataFrame:
    """Both arms learn; each other arm against softmax, in and out of distribution."""
    acc, paired = tables["accuracy"], tables["paired"]
    arms = list(meta["params"]["arms"])
    rows = [_learn_row(acc, arm) for arm in arms]
    for arm in arms[1:]:
        for ind in (True, False):
            if ((paired["arm"] == arm) & (paired["in_distribution"] == ind)).any():
                rows.append(_compare_row(paired, arm, ind))
    return pd.DataFrame(rows)


def sections(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> list[str]:
    """Set-up (paper / lost in our copy / ours), accuracy per cell, the paired table, cost."""
    acc = tables["accuracy"].copy()
    acc["accuracy (95 % over samples)"] = [
        f"{a:.3f} [{lo:.3f}, {hi:.3f}]"
        for a, lo, hi in zip(
            acc["accuracy"], acc["ci_samples_low"], acc["ci_samples_high"], strict=True
        )
    ]
    shown = acc[["arm", "algorithm", "length", "in_distribution", "questions", "seeds",
                 "accuracy (95 % over samples)", "seed_sd", "chance"]]  # fmt: skip
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
        markdown_table(setup_table(meta)),
        "",
        "## Exact-match accuracy per algorithm and length",
        "",
        markdown_table(shown),
        "",
        "## Paired comparison per algorithm (same questions, seed by seed)",
        "",
        markdown_table(tables["paired"]),
        "",
        "## Cost",
        "",
        *cost,
        "",
    ]
