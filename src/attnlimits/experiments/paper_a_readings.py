"""Our readings of paper A's numbers that two experiments judge (the reproduction's
``limitations/rules.py`` and the scan's ``scan/rules.py``): one definition, so the two cannot
drift apart. The vocabulary and the threshold type are the claims engine's
(:mod:`attnlimits.claims`)."""

from __future__ import annotations

from collections.abc import Sequence

from attnlimits.claims import (
    NA,
    NOT,
    OURS,
    PAPER,
    PARTLY,
    REPRODUCED,
    Rule,
    Threshold,
    finite,
)

__all__ = ["ABOUT", "BAND", "BAND_HI", "BAND_LO", "PAPER_FRACTION", "about_fraction"]

#: (iii) "fewer than 6 %" / "≈ 0.06L": critical N / L at most PAPER_FRACTION, or within a factor
#: ABOUT of it
PAPER_FRACTION = Threshold("PAPER_FRACTION", 0.06, PAPER)
ABOUT = Threshold(
    "ABOUT", 2.0, OURS, "'≈ 0.06L': within a factor of 2, the grid's own step at powers of 2"
)
#: (iv) "saturates between 0.7 and 0.85"
BAND_LO = Threshold("BAND_LO", 0.70, PAPER, fmt=".2f")
BAND_HI = Threshold("BAND_HI", 0.85, PAPER, fmt=".2f")
BAND = (BAND_LO.value, BAND_HI.value)


def _about_fraction(fractions: Sequence[float | None]) -> str:
    per = [
        NOT
        if f is None or not finite(f) or f > PAPER_FRACTION * ABOUT
        else REPRODUCED
        if f <= PAPER_FRACTION.value
        else PARTLY
        for f in fractions
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
#: separated", and "fewer than" sets no floor.
about_fraction = Rule(
    "about_fraction",
    _about_fraction,
    lambda: (
        f"critical N / L ≤ {PAPER_FRACTION:g} ('fewer than 6 %') at every testable L: "
        f"reproduced; ≤ {PAPER_FRACTION * ABOUT:g} ('≈ 0.06L') or ≤ {PAPER_FRACTION:g} at some: "
        "partly; above at every L: not reproduced"
    ),
    (PAPER_FRACTION, ABOUT),
)
