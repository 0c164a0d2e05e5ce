"""The verdict rules of paper A's statements: one pure function per rule, its thresholds named.

Each rule turns numbers measured on a run into ``"reproduced"``, ``"partly"`` or ``"not
reproduced"`` (a bound either holds or not: :func:`holds` has no "partly"), and ``"n/a"`` only
where the run lacks the numbers (a NaN slope, an empty list). "Not testable" (a precondition of
the statement fails in the data) is decided where the data are read (``findings.py``), with its
reason. The vocabulary and the rule that joins statements into a finding are shared by every
experiment (:mod:`attnlimits.experiments.verdicts`). The docstrings say which reading of the
paper each rule takes; the report prints the same thresholds (``findings.py`` formats them from
these constants). ``tests/test_limitations_claims.py`` holds known answers for every verdict of
every rule and its boundaries.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from attnlimits.experiments.paper_a_readings import ABOUT, BAND, PAPER_FRACTION, about_fraction
from attnlimits.experiments.verdicts import NA, NOT, PARTLY, REPRODUCED

__all__ = [
    "ABOUT",
    "BAND",
    "NA",
    "NOT",
    "PAPER_FRACTION",
    "PARTLY",
    "REPRODUCED",
    "about_fraction",
    "bound_loose",
    "collapses",
    "converges",
    "drops",
    "falls",
    "holds",
    "in_band",
    "linear_growth",
    "lower_loose",
    "one_over_t",
    "plateau",
    "saturates",
    "share",
    "sub_linear",
    "tightens",
    "tracks",
    "within_noise",
]

# (i) "grow roughly linearly": log-log slope in ROUGHLY_LINEAR; from GROWS it grows, not linearly
ROUGHLY_LINEAR = (0.7, 1.3)
GROWS = 0.1
# (i) "the bound is loose": median bound / d̃ over heads
LOOSE, TIGHT = 2.0, 1.2
# (ii) "plateaus": relative change of d̃ from N = 20 to the largest N
PLATEAU, PLATEAU_PARTLY = 0.25, 0.5
# (ii) "the bound tightens": (bound / d̃ at the largest N) / (at the smallest N)
TIGHTENS, LOOSENS = 0.9, 1.1
# (ii) "true and expected distances converge near N = 100": E / d̃ within 1 ± CONVERGED at N = 100
CONVERGED = 0.25
# (iii) "grows sub-linearly": log-log slope of critical N against L at most SUB_LINEAR; from
# LINEAR on it is linear or faster (a fixed fraction of L has slope 1)
SUB_LINEAR, LINEAR = 0.9, 1.0
# (iv) "falls until N ≈ 16": median N_s/N drops by FALLS from the first N > 1 to N = 16
FALLS = 0.05
# (iv) "then saturates": |change of the median| from N = 16 to the largest N
SATURATED, SATURATED_PARTLY = 0.05, 0.15
# (iv) "the upper bound tracks the maxima": max ≤ upper ≤ max + TRACKS at an N, and the bound
# not constant over N (its range over N above FLAT)
TRACKS, FLAT = 0.1, 0.01
# (iv) "the lower bound is loose": median over heads and N of N_s/N − lower bound
LOWER_LOOSE, LOWER_TIGHT = 0.3, 0.1
# (v) "follow 1/T": log-log slope within ONE_OVER_T of −1
ONE_OVER_T = 0.2
# (v) "drop by about two orders of magnitude": factor ≥ 10^1.5 (two orders, to half an order)
DROP_ABOUT, DROP_SOME = 10**1.5, 10**0.5
# (v) "all curves collapse" for T ≥ 1: max / min over ε of the curves at most COLLAPSED at a T
COLLAPSED = 1.1
# Theorem 1.2's ε: a check "holds to 3 SE" in this share of cells (chance leaves ~0.1 % out)
WITHIN_SE = 0.99


def _bad(value: float) -> bool:
    return value is None or not math.isfinite(value)


def share(flags: Sequence[bool]) -> str:
    """A statement made for every case (every head, layer, T, L, ...): reproduced if it holds
    in all, not reproduced if in none, partly otherwise; "n/a" without cases."""
    if len(flags) == 0:
        return NA
    if all(flags):
        return REPRODUCED
    return PARTLY if any(flags) else NOT


def holds(fraction: float) -> str:
    """A bound as a theorem states it: reproduced if it holds in every case (``fraction`` = 1),
    not reproduced otherwise; a bound that fails somewhere is not a bound, so no "partly"."""
    if _bad(fraction):
        return NA
    return REPRODUCED if fraction >= 1.0 else NOT


def linear_growth(slope: float) -> str:
    """(i) "grow roughly linearly in L", read as a log-log slope in [0.7, 1.3]; a slope ≥ 0.1
    outside that band grows, but not linearly (partly); below 0.1 it does not grow."""
    if _bad(slope):
        return NA
    if ROUGHLY_LINEAR[0] <= slope <= ROUGHLY_LINEAR[1]:
        return REPRODUCED
    return PARTLY if slope >= GROWS else NOT


def bound_loose(ratio: float) -> str:
    """(i) "the bound is ... loose": median over heads of bound / d̃ at least 2 (partly from
    1.2; below, the bound is tight, not loose)."""
    if _bad(ratio):
        return NA
    if ratio >= LOOSE:
        return REPRODUCED
    return PARTLY if ratio >= TIGHT else NOT


def plateau(change: float) -> str:
    """(ii) "d̃ plateaus beyond N ≈ 20": |relative change of mean d̃ from N = 20 to the largest
    N| at most 25 % (partly up to 50 %)."""
    if _bad(change):
        return NA
    if abs(change) <= PLATEAU:
        return REPRODUCED
    return PARTLY if abs(change) <= PLATEAU_PARTLY else NOT


def tightens(ratio_change: float) -> str:
    """(ii) "while the bound tightens", read relative to d̃: (bound / d̃ at the largest N) over
    (bound / d̃ at the smallest N) at most 0.9; within ±10 % it stays (partly); above, the
    bound loosens."""
    if _bad(ratio_change):
        return NA
    if ratio_change <= TIGHTENS:
        return REPRODUCED
    return PARTLY if ratio_change <= LOOSENS else NOT


def converges(ratio_lo: float, ratio_hi: float) -> str:
    """(ii) "true and expected distances converge" as N approaches 100: the 95 % interval
    [``ratio_lo``, ``ratio_hi``] of E / d̃ at N = 100 lies within 1 ± 0.25 (reproduced), outside
    it entirely (not reproduced), or across its edge (partly: the data cannot tell). A shrinking
    gap alone is not convergence: E / d̃ → 1 as N → L on any head (Corollary 2)."""
    if _bad(ratio_lo) or _bad(ratio_hi):
        return NA
    lo, hi = 1 - CONVERGED, 1 + CONVERGED
    if lo <= ratio_lo and ratio_hi <= hi:
        return REPRODUCED
    return NOT if ratio_hi < lo or ratio_lo > hi else PARTLY


def sub_linear(slope_min: float, slope_max: float) -> str:
    """(iii) "grows sub-linearly": the log-log slope of critical N against L, as the interval
    [``slope_min``, ``slope_max``] the censored lengths leave (a length that never accepts has a
    critical N somewhere in (0.9·L, L]). At most 0.9 at its top: reproduced; at least 1 (linear,
    as a fixed fraction of L is, or faster) at its bottom: not reproduced; otherwise partly (a
    slope in (0.9, 1), or censoring that leaves both open)."""
    if _bad(slope_min) or _bad(slope_max):
        return NA
    if slope_max <= SUB_LINEAR:
        return REPRODUCED
    return NOT if slope_min >= LINEAR else PARTLY


def falls(drop: float) -> str:
    """(iv) "N_s/N falls until N ≈ 16": the median over heads drops by at least 0.05 from the
    first N > 1 to N = 16 (N = 1 is left out: N_s/N = 1 there by definition); any drop below
    that is partly; none is not reproduced."""
    if _bad(drop):
        return NA
    if drop >= FALLS:
        return REPRODUCED
    return PARTLY if drop > 0 else NOT


def saturates(change: float) -> str:
    """(iv) "then saturates": |change of the median| from N = 16 to the largest N at most 0.05
    (partly up to 0.15)."""
    if _bad(change):
        return NA
    if abs(change) <= SATURATED:
        return REPRODUCED
    return PARTLY if abs(change) <= SATURATED_PARTLY else NOT


def in_band(medians: Sequence[float]) -> str:
    """(iv) "between 0.70 and 0.85": the median over heads in [0.70, 0.85] at every N ≥ 16 /
    some / none."""
    return share([BAND[0] <= m <= BAND[1] for m in medians])


def tracks(maxima: Sequence[float], uppers: Sequence[float]) -> str:
    """(iv) "the upper bound tracks the empirical maxima closely": at an N, the bound's maximum
    over heads lies above the largest N_s/N and within 0.1 of it; every N given / some / none.
    A bound constant over N (range at most 0.01, e.g. 1.00 at every N) follows nothing: not
    reproduced. Callers leave N = 1 out, where the bound is below N_s/N = 1 by construction
    (docs/errata.md, Theorem 2); fewer than two N: n/a."""
    if len(uppers) < 2:
        return NA
    if max(uppers) - min(uppers) <= FLAT:
        return NOT
    return share([m <= u <= m + TRACKS for m, u in zip(maxima, uppers, strict=True)])


def lower_loose(gap: float) -> str:
    """(iv) "the lower bound is loose": median over heads and N of N_s/N − lower bound at least
    0.3 (partly from 0.1)."""
    if _bad(gap):
        return NA
    if gap >= LOWER_LOOSE:
        return REPRODUCED
    return PARTLY if gap >= LOWER_TIGHT else NOT


def one_over_t(slopes: Sequence[float]) -> str:
    """(v) "for T < 0.1 the curves follow 1/T": per ε, log-log slope of the curve over T < 0.1
    within 0.2 of −1. Every ε / some / none."""
    known = [s for s in slopes if not _bad(s)]
    lo, hi = -1 - ONE_OVER_T, -1 + ONE_OVER_T  # [−1.2, −0.8], as a band: its ends are exact
    return share([lo <= s <= hi for s in known])


def drops(factor: float) -> str:
    """(v) "for T ≥ 1 they drop by about two orders of magnitude": the smallest factor over ε
    from T = 0.01 to T = 1 at least 10^1.5 (partly from 10^0.5: a drop, not of two orders).
    Counted from T = 0.01, reading (b) of docs/errata.md (finding_v_two_orders): the reading
    under which it agrees with "follow 1/T" (from T = 0.1 a 1/T curve falls only 10×, so the
    statement could not hold where the headline does)."""
    if _bad(factor):
        return NA
    if factor >= DROP_ABOUT:
        return REPRODUCED
    return PARTLY if factor >= DROP_SOME else NOT


def collapses(spreads: Sequence[float]) -> str:
    """(v) "once T ≥ 1 all curves collapse": at each T ≥ 1, max / min over ε of the curves at
    most 1.1 (they meet). Every T / some / none; n/a without a T ≥ 1 (or with one ε)."""
    return share([s <= COLLAPSED for s in spreads if not _bad(s)])


def within_noise(shares: Sequence[float]) -> str:
    """Theorem 1.2's ε = E exact − E derived: each check (ε ≥ 0, ε ≤ each printed bound) holds
    to 3 standard errors of E exact in at least 99 % of the cells (3 SE leave about 0.1 % out
    by chance alone). Every check / some / none."""
    return share([s >= WITHIN_SE for s in shares if not _bad(s)])
