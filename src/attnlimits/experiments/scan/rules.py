"""The verdict rules of the scan's claims, on the claims engine: each judges and prints itself
from its named thresholds (:mod:`attnlimits.claims`).

Each rule turns numbers measured on a scan into ``"reproduced"``, ``"partly"`` or ``"not
reproduced"``, and ``"n/a"`` where the scan lacks the numbers; "not testable" (a precondition
fails in the data) is decided where the tables are read (``claims.py``), with its reason. The
vocabulary is shared by every experiment (:mod:`attnlimits.claims.verdicts`).
``tests/test_scan_claims.py`` holds known answers for every verdict on both sides of each
threshold.
"""

from __future__ import annotations

from attnlimits.claims import NA, NOT, OURS, PARTLY, REPRODUCED, Rule, Threshold, finite
from attnlimits.experiments.paper_a_readings import (
    ABOUT,
    BAND,
    BAND_HI,
    BAND_LO,
    PAPER_FRACTION,
    about_fraction,
)

__all__ = [
    "ABOUT",
    "BAND",
    "DISPERSING",
    "PAPER_FRACTION",
    "about_fraction",
    "disperses",
    "distinct",
    "in_band",
]

#: A head disperses where log max weight falls at least this fast in log L (1/L is −1).
DISPERSING = Threshold(
    "DISPERSING_SLOPE", -0.5, OURS, "halfway to 1/L: the max weight falls as 1/√L or faster"
)


def _in_band(median: float, q25: float, q75: float) -> str:
    if not (finite(median) and finite(q25) and finite(q75)):
        return NA
    if BAND[0] <= median <= BAND[1]:
        return REPRODUCED
    return PARTLY if q25 <= BAND[1] and q75 >= BAND[0] else NOT


#: Paper A (iv), "saturates between 0.7 and 0.85", on the heads' N_s/N: the median head in
#: [BAND_LO, BAND_HI] reproduced; the median outside but the interquartile range [q25, q75]
#: meeting the band partly; the range wholly outside not reproduced.
in_band = Rule(
    "in_band",
    _in_band,
    lambda: f"median head in [{BAND_LO}, {BAND_HI}] R; IQR meeting it P; else N",
    (BAND_LO, BAND_HI),
)


def _disperses(median_slope: float, share: float, threshold: float = DISPERSING.value) -> str:
    if not (finite(median_slope) and finite(share)):
        return NA
    if median_slope <= threshold:
        return REPRODUCED
    return PARTLY if share > 0 else NOT


#: Paper B, Lemma 2.1 (the weights disperse as items are added): slopes of log max weight
#: against log L per head (1/L is −1). The median head's slope at most DISPERSING reproduced; a
#: ``share`` > 0 of heads at most it partly; none not reproduced.
disperses = Rule(
    "disperses",
    _disperses,
    lambda: f"median head's slope ≤ {DISPERSING} R; some heads' P; none N",
    (DISPERSING,),
)


def _distinct(failing: int, heads: int) -> str:
    if heads == 0:
        return NA
    return REPRODUCED if failing == 0 else NOT


#: Paper A, Assumption 2 (the x_i are distinct): holds in every head (``failing`` = 0)
#: reproduced, else not reproduced (an assumption that fails somewhere does not hold there: no
#: "partly"); no heads: n/a.
distinct = Rule("distinct", _distinct, lambda: "no head with two equal value vectors R; else N")
