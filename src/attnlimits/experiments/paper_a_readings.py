"""Our readings of paper A's numbers that two experiments judge (the reproduction's
``limitations/rules.py`` and the scan's ``scan/rules.py``): one definition, so the two cannot
drift apart. The vocabulary and the threshold type are the claims engine's
(:mod:`attnlimits.claims`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from attnlimits.claims import (
    AFTER_RUNS,
    NA,
    NOT,
    PAPER,
    PARTLY,
    REPRODUCED,
    Rule,
    Threshold,
    finite,
)

__all__ = [
    "ABOUT",
    "BAND",
    "BAND_HI",
    "BAND_LO",
    "PAPER_FRACTION",
    "about_fraction",
    "grid_floor",
    "grid_limits",
]

#: (iii) "fewer than 6 %" / "≈ 0.06L": critical N / L at most PAPER_FRACTION, or within a factor
#: ABOUT of it
PAPER_FRACTION = Threshold("PAPER_FRACTION", 0.06, PAPER)
ABOUT = Threshold(
    "ABOUT",
    2.0,
    AFTER_RUNS,
    "'$\\approx 0.06L$': within a factor of 2, the grid's own step at powers of 2 (its present "
    "role, the partly limit of (iii.b), set 2026-11-27 in round 2, after earlier runs were "
    "public; relabelled on the round-3 referee's point 8)",
)
#: (iv) "saturates between 0.7 and 0.85"
BAND_LO = Threshold("BAND_LO", 0.70, PAPER, fmt=".2f")
BAND_HI = Threshold("BAND_HI", 0.85, PAPER, fmt=".2f")
BAND = (BAND_LO.value, BAND_HI.value)


def _at(fraction: float, length: int, grid: Iterable[int]) -> float:
    """``fraction`` of L at the resolution of the N grid tested at ``length``: the first tested
    N at or above it, over L, where a true critical N of exactly that fraction is measured (the
    test runs only on the grid); the fraction itself where no tested N reaches it or a tested
    N equals it."""
    above = sorted(int(n) for n in grid if n >= fraction * length)
    return max(fraction, above[0] / length) if above else fraction


def grid_limits(length: int, grid: Iterable[int]) -> tuple[float, float]:
    """PAPER_FRACTION and PAPER_FRACTION·ABOUT (fractions of L) at the resolution of the N grid
    tested at ``length`` (:func:`_at`)."""
    tested = list(grid)
    return _at(PAPER_FRACTION.value, length, tested), _at(PAPER_FRACTION * ABOUT, length, tested)


def grid_floor(length: int, grid: Iterable[int]) -> float:
    """PAPER_FRACTION / ABOUT, the lower end of "≈ 0.06L" (fractions of L), at the resolution of
    the N grid tested at ``length`` (:func:`_at`): a true critical N of that size is measured
    at the first tested N at or above it, so a measured one below that lies below the band."""
    return _at(PAPER_FRACTION / ABOUT, length, grid)


def _about_fraction(
    fractions: Sequence[float | None], limits: Sequence[tuple[float, float]] | None = None
) -> str:
    ends = limits or [(PAPER_FRACTION.value, PAPER_FRACTION * ABOUT)] * len(fractions)
    per = [
        NOT if f is None or not finite(f) or f > hi else REPRODUCED if f <= lo else PARTLY
        for f, (lo, hi) in zip(fractions, ends, strict=True)
    ]
    if not per:
        return NA
    if all(v == REPRODUCED for v in per):
        return REPRODUCED
    return NOT if all(v == NOT for v in per) else PARTLY


#: (iii) Fig. 2c's "fewer than 6 % of the tokens" with the finding's "≈ 0.06L": per L, critical
#: N / L at most PAPER_FRACTION satisfies both (reproduced there); above it but within the
#: factor ABOUT only "≈ 0.06L" (partly there); above that, or None (no critical N found:
#: censored), neither. Every L reproduced: reproduced; none reproduced or partly: not
#: reproduced; else partly; no L: n/a (the caller leaves out the L where it is not testable). A
#: small fraction passes: the paper's point is that "only a small subset of tokens can be
#: separated", and "fewer than" sets no floor. ``limits``: per L, the two limits at the N grid's
#: resolution (:func:`grid_limits`; the reproduction's grid holds L/16 = 0.0625·L at every L,
#: where a true 0.06·L is measured); without it, the fractions themselves.
about_fraction = Rule(
    "about_fraction",
    _about_fraction,
    lambda: (
        f"critical N / L ≤ {PAPER_FRACTION:g} ('fewer than 6 %') at every testable L: "
        f"reproduced; ≤ {PAPER_FRACTION * ABOUT:g} ('$\\approx 0.06L$') or ≤ {PAPER_FRACTION:g} "
        f"at some: "
        "partly; above at every L: not reproduced; each limit at the N grid's resolution where "
        f"the grid is known (the first tested N ≥ {PAPER_FRACTION:g}·L, "
        f"≥ {PAPER_FRACTION * ABOUT:g}·L: where a true critical N of that size is measured)"
    ),
    (PAPER_FRACTION, ABOUT),
)
