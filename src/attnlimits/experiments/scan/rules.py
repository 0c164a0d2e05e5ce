"""The verdict rules of the scan's claims: one pure function per rule, its thresholds named.

Each rule turns numbers measured on a scan into ``"reproduced"``, ``"partly"`` or ``"not
reproduced"``, and ``"n/a"`` where the scan lacks the numbers; "not testable" (a precondition
fails in the data) is decided where the tables are read (``claims.py``), with its reason. The
vocabulary is shared by every experiment (:mod:`attnlimits.claims.verdicts`).
``tests/test_scan_claims.py`` holds known answers for every verdict on both sides of each
threshold.
"""

from __future__ import annotations

import math

from attnlimits.claims.verdicts import NA, NOT, PARTLY, REPRODUCED
from attnlimits.experiments.paper_a_readings import ABOUT, BAND, PAPER_FRACTION, about_fraction

__all__ = ["ABOUT", "BAND", "PAPER_FRACTION", "about_fraction", "disperses", "distinct", "in_band"]


def _bad(value: float | None) -> bool:
    return value is None or not math.isfinite(value)


def in_band(median: float, q25: float, q75: float) -> str:
    """Paper A (iv), "saturates between 0.7 and 0.85", on the heads' N_s/N: the median head in
    [0.70, 0.85] reproduced; the median outside but the interquartile range [q25, q75] meeting
    the band partly; the range wholly outside not reproduced."""
    if _bad(median) or _bad(q25) or _bad(q75):
        return NA
    if BAND[0] <= median <= BAND[1]:
        return REPRODUCED
    return PARTLY if q25 <= BAND[1] and q75 >= BAND[0] else NOT


def disperses(median_slope: float, share: float, threshold: float) -> str:
    """Paper B, Lemma 2.1 (the weights disperse as items are added): slopes of log max weight
    against log L per head (1/L is −1). The median head's slope at most ``threshold``
    reproduced; a ``share`` > 0 of heads at most it partly; none not reproduced."""
    if _bad(median_slope) or _bad(share):
        return NA
    if median_slope <= threshold:
        return REPRODUCED
    return PARTLY if share > 0 else NOT


def distinct(failing: int, heads: int) -> str:
    """Paper A, Assumption 2 (the x_i are distinct): holds in every head (``failing`` = 0)
    reproduced, else not reproduced (an assumption that fails somewhere does not hold there:
    no "partly"); no heads: n/a."""
    if heads == 0:
        return NA
    return REPRODUCED if failing == 0 else NOT
