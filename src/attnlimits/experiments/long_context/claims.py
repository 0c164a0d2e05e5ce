"""Claims of a long-context run about paper B, and the report's summary sections.

Paper B (Veličković et al.): attention disperses as the number of items grows (Lemma 2.1,
Theorem 2.2), so accuracy on a max-finding task falls with n; adaptive temperature sharpens
high-entropy heads at inference; real LMs' per-head logit spreads are contained (its Fig. 3,
Gemma). Each is a statement of ``statements.py``, judged on this run's tables in the shared
vocabulary (:mod:`attnlimits.claims.verdicts`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from attnlimits.claims.statistics import difference_interval
from attnlimits.claims.verdicts import NA, NOT, REPRODUCED
from attnlimits.experiments.long_context.statements import (
    ACCURACY_FALLS,
    ADAPTIVE_HELPS,
    DISPERSES,
    SPREADS,
)

__all__ = ["COLUMNS", "EVIDENCE", "claims", "paired_counts", "sections"]

#: What decides each claim (report.html links the verdict to them): (pattern in the claim's
#: text, figure names, table names).
EVIDENCE = (
    (r"disperses", ("mean_entropy", "head_entropy"), ("mean_entropy", "head_entropy")),
    (r"accuracy falls|adaptive temperature", ("accuracy",), ("accuracy", "answers")),
    (r"logit spreads", ("spread",), ("spread",)),
)
#: The claims table's columns, as every reproduction's (:meth:`Statement.judged`).
COLUMNS = ["claim", "role", "paper", "reading", "measured", "rule", "verdict"]
_TWO_N = "needs the softmax mode at two or more n"


def _yes(passed: bool) -> str:
    return REPRODUCED if passed else NOT


def claims(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> pd.DataFrame:
    """Dispersion, accuracy against n, the adaptive-temperature gain, and the spreads."""
    acc, mean = tables["accuracy"], tables["mean_entropy"]
    soft = mean[mean["mode"] == "softmax"].sort_values("n")
    a_soft = acc[acc["mode"] == "softmax"].sort_values("n")
    rule = "the reading's comparison holds → reproduced, else not reproduced"
    if len(soft) < 2:  # a run without the softmax mode, or with one n, cannot judge them
        rows = [s.judged(_TWO_N, rule, NA) for s in (DISPERSES, ACCURACY_FALLS)]
    else:
        lo, hi = soft.iloc[0], soft.iloc[-1]
        first, last = a_soft.iloc[0], a_soft.iloc[-1]
        drop = difference_interval(first.accuracy - last.accuracy, math.hypot(first.se, last.se))
        rows = [
            DISPERSES.judged(
                f"softmax answer-row entropy {lo.entropy:.2f} nats at n = {lo.n} → "
                f"{hi.entropy:.2f} at n = {hi.n}; H / log L {lo.entropy_ratio:.2f} → "
                f"{hi.entropy_ratio:.2f}",
                rule,
                _yes(bool(hi.entropy > lo.entropy)),
            ),
            ACCURACY_FALLS.judged(
                f"softmax accuracy {first.accuracy:.2f} ± {first.se:.2f} at n = {first.n} → "
                f"{last.accuracy:.2f} ± {last.se:.2f} at n = {last.n}",
                rule,
                _yes(bool(drop.low > 0)),
            ),
        ]
    paired = paired_counts(tables["answers"])
    if len(paired):
        s_only, a_only = int(paired["softmax_only"].sum()), int(paired["adaptive_only"].sum())
        rows.append(
            ADAPTIVE_HELPS.judged(
                f"prompts right only with adaptive: {a_only}; only with softmax: {s_only} "
                "(paired, all n)",
                rule,
                _yes(a_only > s_only),
            )
        )
    if "spread" in tables:
        ph = tables["spread"].groupby(["layer", "head"])["spread_max"].mean()
        rows.append(
            SPREADS.judged(
                f"max over rows per head: {ph.min():.2f}–{ph.max():.2f}, mean {ph.mean():.2f}",
                "informative only: no verdict",
                NA,
            )
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def paired_counts(answers: pd.DataFrame) -> pd.DataFrame:
    """Per n, prompts right only under softmax / only under adaptive (same prompts, paired)."""
    wide = answers.pivot_table(index=["n", "prompt"], columns="mode", values="correct")
    if not {"softmax", "adaptive"} <= set(wide.columns):
        return pd.DataFrame(columns=["n", "softmax_only", "adaptive_only"])
    s, a = wide["softmax"].astype(bool), wide["adaptive"].astype(bool)
    out = pd.DataFrame({"softmax_only": s & ~a, "adaptive_only": a & ~s}).groupby("n").sum()
    return out.reset_index()


def _fmt(x: float, digits: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def sections(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> list[str]:
    """The run's set-up, the accuracy/entropy table and the spread numbers (Markdown lines)."""
    cfg = meta["params"]
    acc, mean = tables["accuracy"], tables["mean_entropy"]
    merged = acc.merge(mean, on=["mode", "n"])
    lines = [
        "## Dispersion in a real LM: max-finding with softmax vs adaptive temperature",
        "",
        f"Model `{cfg['model']}`; {cfg['prompts']} prompts per n of distinct integers in "
        f"[{cfg['low']}, {cfg['high']}], one per line; greedy decoding, exact match of the first "
        "integer generated. Entropy: of the answer position's attention (last prompt token as "
        "query) over all prompt tokens, per head, mean over heads and prompts; for adaptive the "
        "weights actually applied, softmax(β·l), and before β, softmax(l).",
        "",
        "| mode | n | prompt tokens | accuracy ± SE | chance | answer in list | last item | "
        "mean H (nats) | H before β | log L | H / log L | heads with β > 1 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in merged.sort_values(["n", "mode"]).itertuples():
        lines.append(
            f"| {r.mode} | {r.n} | {r.n_tokens:.0f} | {r.accuracy:.2f} ± {r.se:.2f} | "
            f"{r.chance:.3f} | {r.in_list:.2f} | {r.picked_last:.2f} | {_fmt(r.entropy)} | "
            f"{_fmt(r.entropy_base)} | {_fmt(r.log_keys)} | {_fmt(r.entropy_ratio)} | "
            f"{r.frac_sharpened:.1%} |"
        )
    paired = paired_counts(tables["answers"])
    if len(paired):
        pairs = ", ".join(
            f"n={r.n}: {r.softmax_only}/{r.adaptive_only}" for r in paired.itertuples()
        )
        lines += ["", f"Paired prompts right only under softmax / only under adaptive: {pairs}."]
    if "spread" in tables:
        ph = tables["spread"].groupby(["layer", "head"])[["spread_max", "spread_mean"]].mean()
        L = int(tables["spread"]["length"].iloc[0])
        lines += [
            "",
            f"## Per-head logit spread on War and Peace (L = {L}, paper B Fig. 3 analogue)",
            "",
            "| statistic per head | min | median | mean | max |",
            "|---|---:|---:|---:|---:|",
        ]
        for col, label in (("spread_max", "max over rows"), ("spread_mean", "mean over rows")):
            v = ph[col]
            lines.append(
                f"| {label} | {v.min():.2f} | {v.median():.2f} | {v.mean():.2f} | {v.max():.2f} |"
            )
        lines += [
            "",
            "Paper B gives Gemma 2B's and 7B's spreads over a code file; the values are lost in "
            "our copy of the paper, so none is shown beside these.",
        ]
    return lines
