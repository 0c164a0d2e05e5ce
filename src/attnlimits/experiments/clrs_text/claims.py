"""Claims of a CLRS-Text run (paper B §4.2, Figure 8), judged on its tables, and its sections.

The statements (:data:`S`, from :mod:`.statements`) use the shared vocabulary and finding rule
of :mod:`attnlimits.claims.verdicts`: each carries the paper's words (``quote``, word for
word in ../shared/papers/paper-b-softmax-not-enough.txt; the test finds them) and our
``reading``.
§4.2's claim is per **algorithm**: "a significant advantage of the adaptive temperature-backed
model on nearly all of the thirty algorithms under study", seen in "performance profiles in-
and out-of-distribution". So, per arm other than softmax, one **headline** statement counts
algorithms by their whole profile, and the three regimes (in distribution, interpolation,
extrapolation) are **supporting** rows, judged by the same count, kept apart, deciding nothing.
The rules and their thresholds live in :mod:`.rules` (on the claims engine: every threshold a
named :class:`~attnlimits.claims.Threshold` with its provenance, every rule's text formatted
from them); the outcomes are the one comparison vocabulary of
:mod:`attnlimits.claims.comparisons`. This module reads the run's tables and writes the rows:
per other arm the headline and the three regimes; for adaptive temperature §4.2's outliers
(``rules.outlier_verdict``) and its inference-only statement, always *not testable* (no arm
decodes a softmax-trained model with adaptive temperature); and each arm's ceiling row
(``rules.learned``; supporting, verdict n/a: our precondition, not a paper's claim).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pandas as pd

from attnlimits.claims import BETTER, EQUIVALENT, INCONCLUSIVE, MIXED, WORSE, verdicts
from attnlimits.experiments.clrs_text import rules
from attnlimits.experiments.clrs_text.config import REGIMES
from attnlimits.experiments.clrs_text.rules import (
    MARGIN,
    NEARLY_ALL,
    OOD_SHARE,
    OUTLIERS,
    OUTLYING,
    comparison_verdict,
    learned,
    outcome,
    outlier_verdict,
    profile,
)
from attnlimits.experiments.clrs_text.statements import S

__all__ = [
    "EVIDENCE",
    "MARGIN",
    "NEARLY_ALL",
    "OOD_SHARE",
    "OUTLIERS",
    "OUTLYING",
    "S",
    "claims",
    "comparison_verdict",
    "learned",
    "outcome",
    "outlier_verdict",
    "profile",
]

#: What decides each claim (report.html links the verdict to them): (pattern in the claim's
#: text, figure names, table names).
EVIDENCE = (
    (r"reaches the ceiling", ("profile",), ("accuracy",)),
    (
        r"advantage|in distribution \(|by interpolation|by extrapolation|behind softmax|outlying",
        ("profile",),
        ("paired", "accuracy"),
    ),
    # no arm tests it: the trained arms' profiles, which an inference-only arm would join
    (r"inference", ("profile",), ("accuracy",)),
)


def _rule() -> str:
    """The headline's and the regimes' rule as the claims table prints it (from :mod:`.rules`)."""
    return (
        f"per algorithm and regime ({rules.testable_text()}): {rules.outcome.text()}; "
        f"{rules.profile.text()}; {rules.comparison_verdict.text()} (ours)"
    )


_OTHER_ARM = (
    "ours, an extension: §4.2 makes this claim for adaptive temperature only; for {} the same "
    "rule is applied. "
)


def _learn_row(acc: pd.DataFrame, arm: str) -> dict[str, str]:
    a = acc[(acc["arm"] == arm) & acc["in_distribution"]]
    pooled = a.assign(k=a["accuracy"] * a["questions"]).groupby("algorithm")
    by_algo = pooled["k"].sum() / pooled["questions"].sum()
    missed = sorted(by_algo.index[[not learned(v) for v in by_algo]])
    short = ", ".join(f"{al}: {v:.2f}" for al, v in by_algo.items())
    met = "precondition not met" if missed else "precondition met"
    s = S["learns"]
    return dataclasses.replace(s, claim=f"({arm}-learns) {arm} {s.claim}").judged(
        f"{met}: {short}" + (f"; below the ceiling: {', '.join(missed)}" if missed else ""),
        f"exact match in distribution (seeds pooled) ≥ {rules.CEILING} on every algorithm",
        verdicts.NA,
    )


def _outcomes(paired: pd.DataFrame, arm: str) -> pd.DataFrame:
    """Per (algorithm, regime) of ``arm``: ``outcome`` (not testable where no length is),
    ``why`` and the pooled row's numbers."""
    mine = paired[paired["arm"] == arm]
    pooled = mine[mine["scope"] == "pooled"].reset_index(drop=True)
    lengths = mine[(mine["scope"] == "length") & mine["testable"]]
    spans = {
        k: list(zip(g["ci_low"], g["ci_high"], strict=True))
        for k, g in lengths.groupby(["algorithm", "regime"])
    }
    pooled["outcome"] = [
        rules.outcome(lo, hi, spans.get((al, rg), [])) if ok else verdicts.NOT_TESTABLE
        for al, rg, lo, hi, ok in zip(
            pooled["algorithm"],
            pooled["regime"],
            pooled["ci_low"],
            pooled["ci_high"],
            pooled["testable"],
            strict=True,
        )
    ]
    return pooled


def _count(outs: pd.Series) -> tuple[str, str, str]:
    """(verdict, counts in words, reason when not testable) of per-algorithm ``outs``."""
    n = {
        k: int((outs == k).sum())
        for k in (BETTER, WORSE, MIXED, EQUIVALENT, INCONCLUSIVE, verdicts.NOT_TESTABLE)
    }
    undecided = sum(n[k] for k in rules.UNDECIDED)
    against = sum(n[k] for k in rules.AGAINST)
    verdict = rules.comparison_verdict(n[BETTER], against, n[EQUIVALENT], undecided)
    words = ", ".join(f"{v} {k}" for k, v in n.items() if v) + f" of {len(outs)} algorithms"
    reason = ""
    if verdict == verdicts.NOT_TESTABLE:
        reason = f"{undecided} of {len(outs)} algorithms undecided, enough to change the verdict"
    return verdict, words, reason


def _detail(rows: pd.DataFrame) -> str:
    return "; ".join(
        f"{al}: {o}"
        + (
            f" {d:+.3f} [{lo:+.3f}, {hi:+.3f}] at {ls}"
            if o != verdicts.NOT_TESTABLE
            else f" ({why})"
        )
        for al, o, d, lo, hi, ls, why in zip(
            rows["algorithm"],
            rows["outcome"],
            rows["difference"],
            rows["ci_low"],
            rows["ci_high"],
            rows["lengths"],
            rows["why"],
            strict=True,
        )
    )


def _profiles(pooled: pd.DataFrame) -> pd.Series:
    """Each algorithm's :func:`profile` over its testable regimes (``_outcomes``' table)."""
    algos = sorted(set(pooled["algorithm"]))
    testable = pooled[pooled["outcome"] != verdicts.NOT_TESTABLE]
    pairs = {
        a: list(zip(g["regime"], g["outcome"], strict=True))
        for a, g in testable.groupby("algorithm")
    }
    return pd.Series([rules.profile(pairs.get(a, [])) for a in algos], index=algos, dtype=object)


def _adaptive_only_rows(outs: pd.Series) -> list[dict[str, str]]:
    """§4.2's two other statements about adaptive temperature, from its per-algorithm profiles
    ``outs`` (:func:`_profiles`): the outliers it names, and that applying it at inference
    only does not work well (no arm of ours tests that)."""
    named = {a: outs[a] for a in rules.OUTLYING if a in outs.index}
    verdict, reason = rules.outlier_verdict(named)
    measured = "; ".join(f"{a}: {o}" for a, o in named.items())
    rule = rules.outlier_text()
    out = verdicts.finding(S["outlying"], [S["outliers"].judged(measured, rule, verdict, reason)])
    none = "no arm trained with softmax and decoded with adaptive temperature (not built)"
    head = S["inference only"].judged("", "an inference-only arm", verdicts.NOT_TESTABLE, none)
    return out + verdicts.finding(S["inference"], [head])


def _arm_rows(pooled: pd.DataFrame, outs: pd.Series, arm: str) -> list[dict[str, str]]:
    """The headline (per algorithm over its profile, ``outs``) and the three regimes' rows of
    ``arm`` (``pooled``: :func:`_outcomes`)."""
    reading = _OTHER_ARM.format(arm) if arm != "adaptive" else ""
    rows = []
    for key in REGIMES:
        mine = pooled[pooled["regime"] == key].sort_values("algorithm")
        if not len(mine):
            continue
        verdict, words, reason = _count(mine["outcome"])
        label, rest = S[key].claim.split(" ", 1)
        s = dataclasses.replace(
            S[key], claim=f"{label} {arm} {rest}", reading=reading + S[key].reading
        )
        rows.append(s.judged(f"{words}: {_detail(mine)}", _rule(), verdict, reason))
    testable = pooled[pooled["outcome"] != verdicts.NOT_TESTABLE]
    verdict, words, reason = _count(outs)
    out = testable[(testable["regime"] != REGIMES[0]) & testable["outcome"].isin(rules.DECIDED)]
    ood = out["algorithm"].nunique()
    measured = words + ": " + "; ".join(f"{a}: {o}" for a, o in outs.items())
    measured += f"; {ood} of {len(outs)} decided out of distribution"
    if ood < rules.OOD_SHARE * len(outs):
        measured += " (size generalisation barely tested: at most partly)"
        if verdict == verdicts.REPRODUCED:
            verdict = verdicts.PARTLY
    s = S["advantage"]
    head = dataclasses.replace(s, claim=f"(h) {arm} {s.claim}", reading=reading + s.reading)
    rule = (
        _rule()
        + f"; at most partly unless ≥ {rules.OOD_SHARE} of them are decided out of distribution"
    )
    return [head.judged(measured, rule, verdict, reason), *rows]


def claims(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> pd.DataFrame:
    """Per other arm: the finding, its headline (per algorithm over its profile) and the three
    regimes' rows (for adaptive temperature §4.2's outliers and inference-only statements
    too), then the arms' ceiling rows (supporting, our precondition, n/a)."""
    acc, paired = tables["accuracy"], tables["paired"]
    arms = list(meta["params"]["arms"])
    learn = {arm: _learn_row(acc, arm) for arm in arms}
    out: list[dict[str, str]] = []
    for arm in arms[1:]:
        if not (paired["arm"] == arm).any():
            continue
        reading = _OTHER_ARM.format(arm) if arm != "adaptive" else ""
        f = S["finding"]
        f = dataclasses.replace(f, claim=f"{arm} {f.claim}", reading=reading + f.reading)
        pooled = _outcomes(paired, arm)
        outs = _profiles(pooled)
        out += verdicts.finding(f, [*_arm_rows(pooled, outs, arm), learn[arms[0]], learn[arm]])
        if arm == "adaptive":
            out += _adaptive_only_rows(outs)
    out += [r for r in learn.values() if r not in out]
    return pd.DataFrame(out)
