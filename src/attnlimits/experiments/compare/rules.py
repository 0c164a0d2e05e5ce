"""The comparison's rules, declared on the claims engine from named thresholds
(:mod:`attnlimits.claims`): the per-length outcome of a normaliser against softmax, and the
verdict rules of the papers' statements built on it.

**Outcomes** (:mod:`attnlimits.claims.comparisons`' vocabulary, the normaliser's point of
view). Per normaliser and length, each measure's difference from softmax gets a
:data:`LEVEL` interval from :func:`attnlimits.claims.statistics.difference_interval`
(:func:`significance`, the one place the comparison calls it): t on sequences − 1 degrees of
freedom for the paired perplexity change, normal for the accuracy difference:

- *perplexity* (:func:`perplexity_outcome`, the paired change over the same sequences, on the
  perplexity scale, a fall is better): the interval inside ±:data:`MARGIN` is *equivalent*; the
  interval wholly on one side of 0 **and** the change itself beyond ±:data:`MARGIN` is *better*
  or *worse*; anything else is *inconclusive* (a significant change smaller than the margin
  included: it is neither shown to matter nor shown not to). This departs from
  :func:`~attnlimits.claims.comparisons.by_interval` on purpose: the margin was the effect
  rule's from the first run on (a change under half a percent is no effect), so a significant
  change under it may not be called better. With one sequence there is no standard error: *not
  testable* (:data:`ONE_SEQUENCE`);
- *retrieval* (:func:`retrieval_outcome`, the accuracy difference, the two arms' binomial
  standard errors combined): :func:`~attnlimits.claims.comparisons.by_interval` without a margin
  (no equivalence margin is stated for accuracy): *better*, *worse*, else *inconclusive*.

**Verdicts.** Each rule (:data:`RULES`) turns per-length outcomes or numbers of one normaliser
into ``"reproduced"``, ``"partly"`` or ``"not reproduced"``, and ``"n/a"`` where the run lacks
the numbers; "not testable" (no length where the statement applies) is decided where the
tables are read (``claims.py``), with its reason. Every threshold is a
:class:`~attnlimits.claims.Threshold` written once below; every rule's ``text()`` (the claims
table's ``rule`` column, the report's effects paragraph) is formatted from them.
``tests/test_compare_rules.py`` holds known answers for every outcome and verdict, and moves a
threshold to see the verdict and the text follow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from attnlimits.claims import (
    AFTER_RUNS,
    BETTER,
    EQUIVALENT,
    INCONCLUSIVE,
    NA,
    NOT,
    NOT_TESTABLE,
    OURS,
    PARTLY,
    REPRODUCED,
    WORSE,
    Rule,
    Share,
    Threshold,
    by_interval,
    finite,
    statistics,
)

__all__ = [
    "CONSTANT",
    "LEVEL",
    "MARGIN",
    "MUCH_LONGER",
    "ONE_SEQUENCE",
    "READ_BY",
    "RULES",
    "THRESHOLDS",
    "effects_text",
    "more_performant",
    "perplexity_outcome",
    "preferred",
    "retrieval_outcome",
    "roughly_constant",
    "sharper",
    "significance",
]

# ---- the thresholds, each once -----------------------------------------------------------------
#: the two-sided level of the interval of a difference
LEVEL = Threshold(
    "LEVEL",
    statistics.LEVEL,
    OURS,
    "the level of every experiment's interval (attnlimits.claims.statistics); since 2026-11-28 "
    "(issue 55: no experiment keeps its own test) in place of compare's first rule, ± 2 "
    "standard errors, written with its first version (2026-11-24); compare has no committed "
    "run that the change could move",
    ".0%",
)
#: a perplexity change within ± this is no effect
MARGIN = Threshold(
    "MARGIN",
    0.005,
    OURS,
    "a perplexity change under half a percent is no practical effect (a swapped-in normaliser "
    "worth using moves it by more); written with compare's first version (2026-11-24, the day "
    "of its first run)",
    ".1%",
)
#: "stays roughly constant": the max weight at the longest L within this factor of the shortest's
CONSTANT = Threshold(
    "CONSTANT",
    1.25,
    AFTER_RUNS,
    "'roughly constant': within a quarter, either way (in ratio); written 2026-11-27 with the "
    "claims, after the 2026-11-24 run was public, not tuned to its numbers",
)
#: "when L ≫ k": L at least this many times k
MUCH_LONGER = Threshold(
    "MUCH_LONGER",
    10,
    AFTER_RUNS,
    "'≫' as an order of magnitude; written 2026-11-27 with the claims, after the 2026-11-24 run "
    "was public, not tuned to its numbers",
)
#: why a perplexity comparison cannot be made (its outcome is not testable)
ONE_SEQUENCE = "one sequence, no standard error"


# ---- the outcomes ------------------------------------------------------------------------------


def significance(difference: float, se: float, df: float = math.inf) -> tuple[float, float]:
    """The :data:`LEVEL` interval of ``difference`` with standard error ``se`` on ``df``
    degrees of freedom (``inf``: normal), by
    :func:`attnlimits.claims.statistics.difference_interval` (NaN ends with a NaN standard
    error): the one place the comparison's test is computed."""
    found = statistics.difference_interval(difference, se, df, LEVEL.value)
    return float(found.low), float(found.high)


def perplexity_outcome(delta_nll: float, se: float, df: float = math.inf) -> str:
    """The outcome of a paired mean change ``delta_nll`` of the mean NLL per token (normaliser
    − softmax, same sequences) with standard error ``se`` on ``df`` degrees of freedom (the
    sequences − 1; module docstring): on the perplexity scale, the change is
    ``expm1(delta_nll)`` and its interval ``expm1`` of the NLL's."""
    if not finite(se) or not finite(delta_nll) or not df > 0:
        return NOT_TESTABLE
    low, high = significance(delta_nll, se, df)
    gain_low, gain_high = -math.expm1(high), -math.expm1(low)  # a fall in perplexity: a gain
    found = by_interval(gain_low, gain_high, MARGIN.value)
    if found in (BETTER, WORSE) and abs(math.expm1(delta_nll)) <= MARGIN.value:
        return INCONCLUSIVE  # significant, but no larger than the margin
    return found


def retrieval_outcome(gap: float, se: float) -> str:
    """The outcome of an accuracy difference ``gap`` (normaliser − softmax) with standard error
    ``se`` (module docstring)."""
    return by_interval(*significance(gap, se))


def effects_text() -> str:
    """The outcome rules as the report and the docs print them."""
    return (
        f"perplexity (the paired change; a fall is {BETTER}): its {LEVEL} interval (t on the "
        f"sequences − 1 degrees of freedom) inside ±{MARGIN}: {EQUIVALENT}; wholly on "
        f"one side of 0 with the change beyond ±{MARGIN}: {BETTER} or {WORSE}; else "
        f"{INCONCLUSIVE}; {ONE_SEQUENCE}: {NOT_TESTABLE}. Retrieval (the accuracy difference): "
        f"its {LEVEL} interval (normal) above 0: {BETTER}; "
        f"below 0: {WORSE}; else {INCONCLUSIVE}"
    )


# ---- the verdict rules -------------------------------------------------------------------------

_share = Share("share", "it holds", "L")


def _more_performant(retrieval: Sequence[str]) -> str:
    return _share([e == BETTER for e in retrieval])


#: Paper B: adaptive temperature "leads to a more performant retrieval head on larger inputs"
#: (with significance): the retrieval outcome at each L past the training length; better at
#: every one reproduced, at some partly, at none not reproduced; none given: n/a.
more_performant = Rule(
    "more_performant",
    _more_performant,
    lambda: (
        f"retrieval {BETTER} than softmax's at every L past the training length: reproduced; "
        "at some: partly; at none: not reproduced"
    ),
)


def _sharper(entropy: Sequence[float], softmax_entropy: Sequence[float]) -> str:
    pairs = zip(entropy, softmax_entropy, strict=True)
    return _share([e < s for e, s in pairs if finite(e) and finite(s)])


#: Paper B, Fig. 7: "sharper coefficients on larger inputs": the median head's entropy below
#: softmax's at each L past the training length; every L reproduced, some partly, none not; n/a
#: without a pair of finite values.
sharper = Rule(
    "sharper",
    _sharper,
    lambda: (
        "median head's entropy below softmax's at every L past the training length: "
        "reproduced; at some: partly; at none: not reproduced"
    ),
)


def _roughly_constant(ratio: float, softmax_ratio: float) -> str:
    if not all(finite(r) and r > 0 for r in (ratio, softmax_ratio)):
        return NA
    if 1 / CONSTANT <= ratio <= CONSTANT.value:
        return REPRODUCED
    return PARTLY if abs(math.log(ratio)) < abs(math.log(softmax_ratio)) else NOT


#: Paper A: length-aware rescales keep "the maximum attention weight ... roughly constant as the
#: sequence grows": ``ratio`` (the median head's max weight at the longest L over the shortest)
#: within [1/CONSTANT, CONSTANT] reproduced; outside but nearer 1 (in log) than softmax's
#: ``softmax_ratio`` partly (it moves less than softmax's); else not reproduced.
roughly_constant = Rule(
    "roughly_constant",
    _roughly_constant,
    lambda: (
        f"max weight at the longest L / at the shortest within ×{CONSTANT} either way: "
        "reproduced; nearer 1 than softmax's: partly; else not reproduced"
    ),
    (CONSTANT,),
)


def _preferred(perplexity: Sequence[str], retrieval: Sequence[str]) -> str:
    pairs = zip(perplexity, retrieval, strict=True)
    return _share([BETTER in (p, r) and WORSE not in (p, r) for p, r in pairs])


#: Paper A: "Top- k or sparse attention should be preferred when L ≫ k": at each L with
#: L ≥ MUCH_LONGER·k (the caller picks them), better than softmax where perplexity or retrieval
#: is better and neither worse; every such L reproduced, some partly, none not; none given: n/a.
#: A perplexity comparison not testable (one sequence) counts as neither.
preferred = Rule(
    "preferred",
    _preferred,
    lambda: (
        f"at every L ≥ {MUCH_LONGER}·k perplexity or retrieval {BETTER} and neither {WORSE}: "
        "reproduced; at some: partly; at none: not reproduced"
    ),
    (MUCH_LONGER,),
)

#: What reads a threshold besides the rules (the docs' thresholds table).
READ_BY = {
    "LEVEL": "`perplexity_outcome`, `retrieval_outcome` (via `significance`)",
    "MARGIN": "`perplexity_outcome`",
    "MUCH_LONGER": "the L it judges (`claims`)",
}
#: Every rule, in the order the statements use them.
RULES = (more_performant, sharper, roughly_constant, preferred)
#: Every threshold, by name: those the rules read, then the outcomes' (effects_text).
THRESHOLDS = {t.name: t for t in (*(t for rule in RULES for t in rule.thresholds), LEVEL, MARGIN)}
