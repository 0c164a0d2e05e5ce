"""The verdict rules of the comparison's claims: one pure function per rule, its thresholds named
(:class:`~attnlimits.claims.Threshold`, with their provenance; the claims' rule texts are
formatted from them).

Each turns per-length numbers of one normaliser against softmax into ``"reproduced"``,
``"partly"`` or ``"not reproduced"``, and ``"n/a"`` where the run lacks the numbers; "not
testable" (no length where the statement applies) is decided where the tables are read
(``claims.py``), with its reason. ``helps`` / ``hurts`` / ``neutral`` per length are
``claims.effects``' (a paired change beyond 2 standard errors). ``tests/test_compare_claims.py``
holds known answers for every verdict on both sides of each threshold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from attnlimits.claims import NA, NOT, OURS, PARTLY, REPRODUCED, Threshold

__all__ = ["CONSTANT", "MUCH_LONGER", "more_performant", "preferred", "roughly_constant", "sharper"]

HELPS, HURTS, UNTESTED = "helps", "hurts", "untested"
#: "stays roughly constant": the max weight at the longest L within this factor of the shortest's
CONSTANT = Threshold(
    "CONSTANT", 1.25, OURS, "'roughly constant': within a quarter, either way (in ratio)"
)
#: "when L ≫ k": L at least this many times k
MUCH_LONGER = Threshold("MUCH_LONGER", 10, OURS, "'≫' as an order of magnitude")


def _share(flags: Sequence[bool]) -> str:
    if not flags:
        return NA
    if all(flags):
        return REPRODUCED
    return PARTLY if any(flags) else NOT


def more_performant(retrieval: Sequence[str]) -> str:
    """Paper B: adaptive temperature "leads to a more performant retrieval head on larger
    inputs" (with significance): the retrieval effect at each larger L; helps at every one
    reproduced, at some partly, at none not reproduced; none given: n/a."""
    return _share([e == HELPS for e in retrieval])


def sharper(entropy: Sequence[float], softmax_entropy: Sequence[float]) -> str:
    """Paper B, Fig. 7: "sharper coefficients on larger inputs": the median head's entropy
    below softmax's at each larger L; every L reproduced, some partly, none not; n/a without a
    pair of finite values."""
    pairs = [(e, s) for e, s in zip(entropy, softmax_entropy, strict=True)]
    return _share([e < s for e, s in pairs if math.isfinite(e) and math.isfinite(s)])


def roughly_constant(ratio: float, softmax_ratio: float) -> str:
    """Paper A: length-aware rescales keep "the maximum attention weight ... roughly constant
    as the sequence grows": ``ratio`` (the median head's max weight at the longest L over the
    shortest) within [1/CONSTANT, CONSTANT] reproduced; outside but nearer 1 (in log) than softmax's
    ``softmax_ratio`` partly (it moves less than softmax's); else not reproduced."""
    if not all(math.isfinite(r) and r > 0 for r in (ratio, softmax_ratio)):
        return NA
    if 1 / CONSTANT <= ratio <= CONSTANT.value:
        return REPRODUCED
    return PARTLY if abs(math.log(ratio)) < abs(math.log(softmax_ratio)) else NOT


def preferred(perplexity: Sequence[str], retrieval: Sequence[str]) -> str:
    """Paper A: "Top- k or sparse attention should be preferred when L ≫ k": at each L with
    L ≥ MUCH_LONGER·k, better than softmax where perplexity or retrieval helps and neither
    hurts; every such L reproduced, some partly, none not; none given: n/a. An untested
    perplexity (one sequence) counts as neither."""
    return _share(
        [
            HELPS in (p, r) and HURTS not in (p, r)
            for p, r in zip(perplexity, retrieval, strict=True)
        ]
    )
