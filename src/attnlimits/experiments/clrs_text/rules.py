"""CLRS-Text's rules, declared on the claims engine from named thresholds
(:mod:`attnlimits.claims`): what makes a comparison testable, the outcome per algorithm and
regime, the profile per algorithm, and the verdicts on §4.2's statements.

Every threshold is a :class:`~attnlimits.claims.Threshold` written once below, with its
provenance and reason; the rules' texts (the claims table's ``rule`` column, the docs' rules
table) are formatted from them, so docstrings name thresholds and never repeat their values.
The outcomes are the one comparison vocabulary (:mod:`attnlimits.claims.comparisons`),
adaptive's (the other arm's) point of view:

- :data:`outcome`: per algorithm and regime, the paired interval over seeds (pooled over the
  regime's testable lengths) read by :func:`~attnlimits.claims.comparisons.by_interval` with
  the margin :data:`MARGIN`, with one rule on top: *mixed* when one testable length alone is
  significantly against the pooled sign, or two lengths are significantly apart in sign
  (pooling must not hide a sign change);
- :data:`profile`: an algorithm's outcome over its testable regimes, a tie in distribution
  counting for nothing (both arms at the ceiling, which the stop rule makes likely): *mixed*
  when a regime is mixed or one is better and another worse, else *better* or *worse* when one
  is, *equivalent* when every regime left is, else *inconclusive*;
- :data:`comparison_verdict`: counts of the run's algorithms better, against (worse or mixed),
  equivalent and undecided (inconclusive or not testable). The verdict of the counts as if all
  were decided: *reproduced* when at least :data:`NEARLY_ALL` of the run's algorithms are better
  and at most :data:`OUTLIERS` against, *partly* when at least half are better and fewer are
  against than better, else *not reproduced*; given only where the undecided algorithms cannot
  change it (the verdict with every undecided one against, if that is not *not reproduced*;
  *not reproduced* if even every undecided one better would not lift it; else *not testable*);
  the headline at most *partly* unless at least :data:`OOD_SHARE` of the run's algorithms have
  a decided out-of-distribution regime;
- :func:`outlier_verdict`: §4.2's outliers (:data:`OUTLYING`) behind softmax, all three
  *reproduced*, at least one *partly*, none *not reproduced*;
- :func:`learned`: our precondition, an arm at :data:`CEILING` or more in distribution on an
  algorithm; a length with fewer than :data:`MIN_SEEDS` seeds decides nothing
  (``evaluate.paired_table``).

Known-answer tests for every outcome and verdict: ``tests/test_clrs_text_claims.py`` and
``tests/test_clrs_text_rules.py`` (which moves thresholds and sees the verdicts and texts
follow).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from attnlimits.claims import (
    AFTER_RUNS,
    BETTER,
    EQUIVALENT,
    INCONCLUSIVE,
    MIXED,
    NA,
    NOT,
    NOT_TESTABLE,
    OURS,
    PARTLY,
    REPRODUCED,
    WORSE,
    Rule,
    Threshold,
    by_interval,
)
from attnlimits.experiments.clrs_text.config import REGIMES

__all__ = [
    "AGAINST",
    "CEILING",
    "DECIDED",
    "MARGIN",
    "MIN_SEEDS",
    "NEARLY_ALL",
    "OOD_SHARE",
    "OUTLIERS",
    "OUTLYING",
    "READ_BY",
    "RULES",
    "THRESHOLDS",
    "UNDECIDED",
    "comparison_verdict",
    "learned",
    "outcome",
    "outlier_verdict",
    "profile",
]

# ---- the thresholds, each once -----------------------------------------------------------------
#: the in-distribution exact match both arms need before their comparison on an algorithm is
#: testable (issue 57's gate)
CEILING = Threshold(
    "CEILING",
    0.90,
    AFTER_RUNS,
    "an issue's 'at least 90 %': below it a gap measures how fast an arm learns at this "
    "budget, not its profile; written 2026-11-27, after the 2026-11-25/26 runs were public",
    ".0%",
)
#: the fewest seeds (trained models) a comparison is decided on
MIN_SEEDS = Threshold(
    "MIN_SEEDS",
    3,
    AFTER_RUNS,
    "with two, a t-interval has 1 degree of freedom and two equal scores (common in steps of "
    "1/Q) make it a point; written 2026-11-27 in a review, after the 2026-11-25/26 runs were "
    "public",
)
#: a difference whose interval lies within ± this (exact match, 0–1) is equivalent
MARGIN = Threshold(
    "MARGIN",
    0.05,
    AFTER_RUNS,
    "a gain of 1 to 4 points is not 'a significant advantage'; written 2026-11-27 in a review, "
    "after the 2026-11-25/26 runs were public",
)
#: "nearly all" algorithms
NEARLY_ALL = Threshold(
    "NEARLY_ALL",
    0.75,
    OURS,
    "'nearly all' as three in four or more of the run's algorithms; set with the first version, "
    "before any run (2026-11-25)",
    ".0%",
)
#: the share of the run's algorithms that may be against in a reproduction
OUTLIERS = Threshold(
    "OUTLIERS",
    0.10,
    AFTER_RUNS,
    "§4.2 speaks of 'underperformance on outlying algorithms' and names three of thirty; with "
    "fewer than ten algorithms, none may be against; written 2026-11-27 in a review, after the "
    "2026-11-25/26 runs were public",
    ".0%",
)
#: the share of the run's algorithms with a decided out-of-distribution regime below which the
#: headline is at most partly
OOD_SHARE = Threshold(
    "OOD_SHARE",
    0.5,
    AFTER_RUNS,
    "the profiles' point is sizes not trained on: half the algorithms decided out of "
    "distribution at least; written 2026-11-27 in a review, after the 2026-11-25/26 runs were "
    "public",
    ".0%",
)

#: ours: the three "outlying algorithms" §4.2 names, by their CLRS-Text names
OUTLYING = ("heapsort", "mst_kruskal", "bubble_sort")
#: the profiles that count against, that are decided, and that are undecided
AGAINST = (WORSE, MIXED)
DECIDED = (BETTER, WORSE, MIXED, EQUIVALENT)
UNDECIDED = (INCONCLUSIVE, NOT_TESTABLE)


# ---- the rules ---------------------------------------------------------------------------------


def learned(accuracy: float, ceiling: float | None = None) -> bool:
    """Whether an in-distribution exact match of ``accuracy`` reaches ``ceiling`` (default
    :data:`CEILING`)."""
    return bool(accuracy >= (CEILING.value if ceiling is None else ceiling))


def _outcome(ci_low: float, ci_high: float, lengths: Sequence[tuple[float, float]] = ()) -> str:
    if math.isnan(ci_low) or math.isnan(ci_high):
        return INCONCLUSIVE
    up = any(lo > 0 for lo, _ in lengths)
    down = any(hi < 0 for _, hi in lengths)
    if (up and down) or (ci_low > 0 and down) or (ci_high < 0 and up):
        return MIXED
    return by_interval(ci_low, ci_high, MARGIN.value)


#: One algorithm's outcome in one regime from its pooled 95 % interval ``(ci_low, ci_high)`` and
#: its testable lengths' own intervals (module docstring); NaN: inconclusive.
outcome = Rule(
    "outcome",
    _outcome,
    lambda: (
        f"the paired difference's 95 % interval within ±{MARGIN:g}: {EQUIVALENT}; "
        f"else above 0: {BETTER}; below 0: {WORSE}; else {INCONCLUSIVE}; {MIXED} when one "
        "testable length alone is significantly against the pooled sign, or two are apart in "
        "sign"
    ),
    (MARGIN,),
)


def _profile(outcomes: Sequence[tuple[str, str]]) -> str:
    if not outcomes:
        return NOT_TESTABLE
    left = [o for r, o in outcomes if (r, o) != (REGIMES[0], EQUIVALENT)]
    if MIXED in left or (BETTER in left and WORSE in left):
        return MIXED
    if BETTER in left or WORSE in left:
        return BETTER if BETTER in left else WORSE
    whole = left and all(o == EQUIVALENT for o in left)
    return EQUIVALENT if whole else INCONCLUSIVE


#: One algorithm's outcome over its testable regimes' ``(regime, outcome)`` pairs (module
#: docstring); not testable when it has none.
profile = Rule(
    "profile",
    _profile,
    lambda: (
        f"per algorithm over its testable regimes, a tie in distribution counting for nothing: "
        f"{MIXED} when a regime is {MIXED} or one is {BETTER} and another {WORSE}; else "
        f"{BETTER} ({WORSE}) when one is; {EQUIVALENT} when every one left is; else "
        f"{INCONCLUSIVE}"
    ),
)


def _full(better: int, against: int, run: int, share: float) -> str:
    """The verdict of counts where every one of the ``run``'s algorithms is decided."""
    if better >= share * run and against <= math.floor(OUTLIERS * run):
        return REPRODUCED
    if 2 * better >= run and against < better:
        return PARTLY
    return NOT


def _comparison_verdict(
    better: int, against: int, equivalent: int, undecided: int, share: float | None = None
) -> str:
    counts = (better, against, equivalent, undecided)
    if min(counts) < 0:
        raise ValueError(f"counts must be ≥ 0, got {counts}")
    run = sum(counts)
    if run == 0:
        return NA
    share = NEARLY_ALL.value if share is None else share
    low = _full(better, against + undecided, run, share)
    if low != NOT:
        return low
    if _full(better + undecided, against, run, share) == NOT:
        return NOT
    return NOT_TESTABLE


#: The verdict on "an advantage on nearly all algorithms" from the counts of the run's
#: algorithms better, against, equivalent and undecided (module docstring); ``share`` (default
#: NEARLY_ALL) the share better a reproduction needs.
comparison_verdict = Rule(
    "comparison_verdict",
    _comparison_verdict,
    lambda: (
        f"reproduced: ≥ {NEARLY_ALL} of the run's algorithms {BETTER} and ≤ {OUTLIERS} "
        f"{' or '.join(AGAINST)}; partly: ≥ half {BETTER} and fewer against than {BETTER}; "
        "given only where the undecided algorithms cannot change it, else not testable"
    ),
    (NEARLY_ALL, OUTLIERS),
)


def outlier_verdict(outs: Mapping[str, str]) -> tuple[str, str]:
    """(verdict, reason when not testable) on §4.2's outliers from the run's per-algorithm
    profiles ``outs`` (algorithm → :data:`profile`): each of :data:`OUTLYING` in the run is
    behind (worse or mixed), not behind (better or equivalent) or undecided. All three in the
    run and behind: reproduced; at least one behind: partly; none: not reproduced; given only
    where the undecided ones cannot change it, else not testable."""
    named = [a for a in OUTLYING if a in outs]
    if not named:
        return NOT_TESTABLE, f"none of {', '.join(OUTLYING)} is in this run"
    behind = sum(outs[a] in AGAINST for a in named)
    undecided = sum(outs[a] in UNDECIDED for a in named)

    def full(k: int) -> str:
        if k == len(OUTLYING):
            return REPRODUCED
        return PARTLY if k else NOT

    if full(behind) == full(behind + undecided):
        return full(behind), ""
    return NOT_TESTABLE, (
        f"{undecided} of the {len(named)} named algorithms in the run undecided, enough to "
        "change the verdict"
    )


def outlier_text() -> str:
    """:func:`outlier_verdict` as the claims table prints it."""
    return (
        f"per named algorithm in the run, its profile (the headline's rule): "
        f"{' or '.join(AGAINST)} = behind; all three in the run and behind: reproduced; at least "
        "one behind: partly; none: not reproduced; given only where the undecided ones cannot "
        "change it (ours)"
    )


def testable_text() -> str:
    """What makes a comparison testable, as the claims table prints it."""
    return (
        f"seeds' spread and questions' sampling, ≥ {MIN_SEEDS} seeds, both arms ≥ {CEILING} in "
        "distribution"
    )


#: What reads a threshold besides the rules (the docs' thresholds table).
READ_BY = {
    "CEILING": "`learned`, `evaluate.paired_table` (testable)",
    "MIN_SEEDS": "`evaluate.paired_table` (testable)",
    "OOD_SHARE": "the headline (`claims`)",
}
#: Every rule with a text, in the order the claims use them.
RULES = (outcome, profile, comparison_verdict)
#: Every threshold of CLRS-Text's rules, by name: the rules', then the testable gate's and the
#: headline's out-of-distribution share.
THRESHOLDS = {
    t.name: t
    for t in (
        *(t for rule in RULES for t in rule.thresholds),
        CEILING,
        MIN_SEEDS,
        OOD_SHARE,
    )
}
