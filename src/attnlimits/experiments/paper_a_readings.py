"""Our readings of paper A's numbers that two experiments judge (the reproduction's
``limitations/rules.py`` and the scan's ``scan/rules.py``): one definition, so the two cannot
drift apart. The vocabulary is :mod:`attnlimits.experiments.verdicts`'s."""

from __future__ import annotations

import math
from collections.abc import Sequence

from attnlimits.experiments.verdicts import NA, NOT, PARTLY, REPRODUCED

__all__ = ["ABOUT", "BAND", "PAPER_FRACTION", "about_fraction"]

#: (iii) "fewer than 6 %" / "≈ 0.06L": critical N / L at most PAPER_FRACTION, or within a factor
#: ABOUT of it
PAPER_FRACTION, ABOUT = 0.06, 2.0
#: (iv) "saturates between 0.7 and 0.85"
BAND = (0.70, 0.85)


def about_fraction(fractions: Sequence[float | None]) -> str:
    """(iii) Fig. 2c's "fewer than 6 % of the tokens" with the finding's "≈ 0.06L": per L,
    critical N / L at most 0.06 satisfies both (reproduced there); above 0.06 but within the
    factor ABOUT (≤ 0.12) only "≈ 0.06L" (partly there); above that, or None (no critical N
    found: censored), neither. Every L reproduced: reproduced; none reproduced or partly: not
    reproduced; else partly; no L: n/a (the caller leaves out the L where it is not testable).
    A small fraction passes: the paper's point is that "only a small subset of tokens can be
    separated", and "fewer than" sets no floor."""
    per = [
        NOT if f is None or not math.isfinite(f) or f > PAPER_FRACTION * ABOUT
        else REPRODUCED if f <= PAPER_FRACTION else PARTLY
        for f in fractions
    ]  # fmt: skip
    if not per:
        return NA
    if all(v == REPRODUCED for v in per):
        return REPRODUCED
    return NOT if all(v == NOT for v in per) else PARTLY
