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
Each rule is a small pure function with named thresholds (all ours; known-answer tests in
``tests/test_clrs_text.py``):

- :func:`outcome`: per algorithm and regime, the paired interval over seeds
  (``evaluate.paired_table``, pooled over the regime's testable lengths) inside
  ±:data:`EQUIVALENT` is *equivalent*, else above 0 *better*, below 0 *worse*, else
  *inconclusive*; *mixed* when one testable length alone is significantly against the
  pooled sign, or two lengths are significantly apart in sign (pooling hid a sign change).
- :func:`profile`: an algorithm's outcome over its testable regimes, a tie in distribution
  counting for nothing (both arms at the ceiling, which the stop rule makes likely): *mixed*
  when a regime is mixed or one is better and another worse, else *better* or *worse* when one
  is, *equivalent* when every regime left is, else *inconclusive*.
- :func:`comparison_verdict`: counts of the run's algorithms better, against (worse or mixed),
  equivalent and undecided (inconclusive or not testable). The verdict of the counts as if all
  were decided (:func:`_full`): *reproduced* when at least :data:`NEARLY_ALL` of the run's
  algorithms are better and at most :data:`OUTLIERS` against (the paper itself speaks of
  "underperformance on outlying algorithms"), *partly* when at least half are better and fewer
  are against than better, else *not reproduced*. It is given when the undecided algorithms
  cannot change it: the verdict with every undecided one against, if that is not *not
  reproduced*; *not reproduced* if even every undecided one better would not lift it; else
  *not testable*.
- The headline is at most *partly* unless at least :data:`OOD_SHARE` of the run's algorithms
  have a decided out-of-distribution regime: the profiles' point, sizes not trained on.
- :func:`outlier_verdict`: §4.2's outliers ("Heapsort, MST Kruskal and Bubble Sort"), for
  adaptive temperature: each of :data:`OUTLYING` in the run is *behind* softmax when its profile
  is worse or mixed; all three in the run and behind: *reproduced*; at least one: *partly*;
  none: *not reproduced*; *not testable* where the undecided ones could change it. §4.2's
  inference-only statement is always *not testable*: no arm decodes a softmax-trained model
  with adaptive temperature.
- :func:`learned`: our precondition, an arm at :data:`~.evaluate.CEILING` or more in
  distribution on an algorithm (supporting rows, verdict n/a: it is not a paper's claim).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from attnlimits.claims import verdicts
from attnlimits.experiments.clrs_text.config import REGIMES
from attnlimits.experiments.clrs_text.evaluate import CEILING, MIN_SEEDS
from attnlimits.experiments.clrs_text.statements import S

__all__ = [
    "EQUIVALENT",
    "EVIDENCE",
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

#: ours: "nearly all" algorithms, three in four or more of the run's
NEARLY_ALL = 0.75
#: ours: the share of the run's algorithms that may be against in a reproduction; §4.2 speaks
#: of "underperformance on outlying algorithms" and names "some of them (Heapsort, MST Kruskal
#: and Bubble Sort)": at least three of thirty. With fewer than ten algorithms, none
OUTLIERS = 0.10
#: ours: a difference whose interval lies within ± this (exact match, 0–1) is equivalent
EQUIVALENT = 0.05
#: ours: the share of the run's algorithms with a decided out-of-distribution regime below
#: which the headline is at most partly
OOD_SHARE = 0.5

#: ours: the three "outlying algorithms" §4.2 names, by their CLRS-Text names
OUTLYING = ("heapsort", "mst_kruskal", "bubble_sort")
_RULE = (
    f"per algorithm and regime, the paired difference's 95 % interval (seeds' spread and "
    f"questions' sampling, ≥ {MIN_SEEDS} seeds, both arms ≥ {CEILING:.0%} in distribution) "
    f"within ±{EQUIVALENT:g} = equivalent, else above 0 = better, below 0 = worse, else "
    "inconclusive; per algorithm over its profile (a tie in distribution counts for nothing); "
    f"reproduced: ≥ {NEARLY_ALL:.0%} of the run's algorithms better and ≤ {OUTLIERS:.0%} worse "
    "or mixed; partly: ≥ half better and fewer against than better; given only where the "
    "undecided algorithms cannot change it, else not testable (ours)"
)

_OTHER_ARM = (
    "ours, an extension: §4.2 makes this claim for adaptive temperature only; for {} the same "
    "rule is applied. "
)
DECIDED = ("better", "worse", "mixed", "equivalent")


def learned(accuracy: float, ceiling: float = CEILING) -> bool:
    """Whether an in-distribution exact match of ``accuracy`` reaches the ``ceiling``."""
    return bool(accuracy >= ceiling)


def outcome(ci_low: float, ci_high: float, lengths: Sequence[tuple[float, float]] = ()) -> str:
    """One algorithm's outcome in one regime from its pooled 95 % interval ``(ci_low,
    ci_high)`` and its testable lengths' own intervals (module docstring); nan: inconclusive."""
    if math.isnan(ci_low) or math.isnan(ci_high):
        return "inconclusive"
    up = any(lo > 0 for lo, _ in lengths)
    down = any(hi < 0 for _, hi in lengths)
    if (up and down) or (ci_low > 0 and down) or (ci_high < 0 and up):
        return "mixed"
    if -EQUIVALENT <= ci_low and ci_high <= EQUIVALENT:
        return "equivalent"
    if ci_low > 0:
        return "better"
    return "worse" if ci_high < 0 else "inconclusive"


def profile(outcomes: Sequence[tuple[str, str]]) -> str:
    """One algorithm's outcome over its testable regimes' ``(regime, outcome)`` pairs (module
    docstring); "not testable" when it has none."""
    if not outcomes:
        return "not testable"
    left = [o for r, o in outcomes if (r, o) != (REGIMES[0], "equivalent")]
    if "mixed" in left or ("better" in left and "worse" in left):
        return "mixed"
    if "better" in left or "worse" in left:
        return "better" if "better" in left else "worse"
    return "equivalent" if left and all(o == "equivalent" for o in left) else "inconclusive"


def _full(better: int, against: int, run: int, share: float = NEARLY_ALL) -> str:
    """The verdict of counts where every one of the ``run``'s algorithms is decided."""
    if better >= share * run and against <= math.floor(OUTLIERS * run):
        return verdicts.REPRODUCED
    if 2 * better >= run and against < better:
        return verdicts.PARTLY
    return verdicts.NOT


def comparison_verdict(
    better: int, against: int, equivalent: int, undecided: int, share: float = NEARLY_ALL
) -> str:
    """The verdict on "an advantage on nearly all algorithms" from the counts of the run's
    algorithms (module docstring): given where the ``undecided`` ones cannot change it."""
    counts = (better, against, equivalent, undecided)
    if min(counts) < 0:
        raise ValueError(f"counts must be ≥ 0, got {counts}")
    run = sum(counts)
    if run == 0:
        return verdicts.NA
    low = _full(better, against + undecided, run, share)
    if low != verdicts.NOT:
        return low
    if _full(better + undecided, against, run, share) == verdicts.NOT:
        return verdicts.NOT
    return verdicts.NOT_TESTABLE


def outlier_verdict(outs: Mapping[str, str]) -> tuple[str, str]:
    """(verdict, reason when not testable) on §4.2's outliers from the run's per-algorithm
    profiles ``outs`` (algorithm → :func:`profile`): each of :data:`OUTLYING` in the run is
    behind (worse or mixed), not behind (better or equivalent) or undecided. All three in the
    run and behind: reproduced; at least one behind: partly; none: not reproduced; given only
    where the undecided ones cannot change it, else not testable."""
    named = [a for a in OUTLYING if a in outs]
    if not named:
        return verdicts.NOT_TESTABLE, f"none of {', '.join(OUTLYING)} is in this run"
    behind = sum(outs[a] in ("worse", "mixed") for a in named)
    undecided = sum(outs[a] in ("inconclusive", "not testable") for a in named)

    def full(k: int) -> str:
        if k == len(OUTLYING):
            return verdicts.REPRODUCED
        return verdicts.PARTLY if k else verdicts.NOT

    if full(behind) == full(behind + undecided):
        return full(behind), ""
    return verdicts.NOT_TESTABLE, (
        f"{undecided} of the {len(named)} named algorithms in the run undecided, enough to "
        "change the verdict"
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
        f"exact match in distribution (seeds pooled) ≥ {CEILING:.0%} on every algorithm",
        verdicts.NA,
    )


def _outcomes(paired: pd.DataFrame, arm: str) -> pd.DataFrame:
    """Per (algorithm, regime) of ``arm``: ``outcome`` ("not testable" where no length is),
    ``why`` and the pooled row's numbers."""
    mine = paired[paired["arm"] == arm]
    pooled = mine[mine["scope"] == "pooled"].reset_index(drop=True)
    lengths = mine[(mine["scope"] == "length") & mine["testable"]]
    spans = {
        k: list(zip(g["ci_low"], g["ci_high"], strict=True))
        for k, g in lengths.groupby(["algorithm", "regime"])
    }
    pooled["outcome"] = [
        outcome(lo, hi, spans.get((al, rg), [])) if ok else "not testable"
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
        for k in ("better", "worse", "mixed", "equivalent", "inconclusive", "not testable")
    }
    undecided = n["inconclusive"] + n["not testable"]
    verdict = comparison_verdict(n["better"], n["worse"] + n["mixed"], n["equivalent"], undecided)
    words = ", ".join(f"{v} {k}" for k, v in n.items() if v) + f" of {len(outs)} algorithms"
    reason = ""
    if verdict == verdicts.NOT_TESTABLE:
        reason = f"{undecided} of {len(outs)} algorithms undecided, enough to change the verdict"
    return verdict, words, reason


def _detail(rows: pd.DataFrame) -> str:
    return "; ".join(
        f"{al}: {o}"
        + (f" {d:+.3f} [{lo:+.3f}, {hi:+.3f}] at {ls}" if o != "not testable" else f" ({why})")
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
    testable = pooled[pooled["outcome"] != "not testable"]
    pairs = {
        a: list(zip(g["regime"], g["outcome"], strict=True))
        for a, g in testable.groupby("algorithm")
    }
    return pd.Series([profile(pairs.get(a, [])) for a in algos], index=algos, dtype=object)


def _adaptive_only_rows(outs: pd.Series) -> list[dict[str, str]]:
    """§4.2's two other statements about adaptive temperature, from its per-algorithm profiles
    ``outs`` (:func:`_profiles`): the outliers it names, and that applying it at inference
    only does not work well (no arm of ours tests that)."""
    named = {a: outs[a] for a in OUTLYING if a in outs.index}
    verdict, reason = outlier_verdict(named)
    measured = "; ".join(f"{a}: {o}" for a, o in named.items())
    rule = (
        "per named algorithm in the run, its profile (the headline's rule): worse or mixed = "
        "behind; all three in the run and behind: reproduced; at least one behind: partly; none: "
        "not reproduced; given only where the undecided ones cannot change it (ours)"
    )
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
        rows.append(s.judged(f"{words}: {_detail(mine)}", _RULE, verdict, reason))
    testable = pooled[pooled["outcome"] != "not testable"]
    verdict, words, reason = _count(outs)
    out = testable[(testable["regime"] != REGIMES[0]) & testable["outcome"].isin(DECIDED)]
    ood = out["algorithm"].nunique()
    measured = words + ": " + "; ".join(f"{a}: {o}" for a, o in outs.items())
    measured += f"; {ood} of {len(outs)} decided out of distribution"
    if ood < OOD_SHARE * len(outs):
        measured += " (size generalisation barely tested: at most partly)"
        if verdict == verdicts.REPRODUCED:
            verdict = verdicts.PARTLY
    s = S["advantage"]
    head = dataclasses.replace(s, claim=f"(h) {arm} {s.claim}", reading=reading + s.reading)
    rule = (
        _RULE + f"; at most partly unless ≥ {OOD_SHARE:.0%} of them are decided out of distribution"
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
