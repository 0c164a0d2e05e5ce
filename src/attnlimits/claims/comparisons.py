"""One vocabulary for the outcome of a comparison between two arms, for every experiment.

A comparison (adaptive temperature against softmax on one algorithm, a normaliser against
softmax at one length, a refitted polynomial against the published one) ends in one of:

- :data:`BETTER`: the arm's difference from its reference has an interval wholly above 0;
- :data:`WORSE`: wholly below 0;
- :data:`EQUIVALENT`: the interval lies within ± a stated equivalence margin (only where the
  experiment states one: an interval inside the margin is "no practical difference", which a
  mere "not significant" is not);
- :data:`INCONCLUSIVE`: none of these (the interval straddles 0 and reaches past the margin, or
  it is undefined: one seed, one sequence);
- :data:`MIXED`: parts of one comparison point both ways (better at one length, worse at another),
  for experiments that combine parts.

Where the comparison's preconditions fail (an arm that did not learn the task), the outcome is
:data:`~attnlimits.claims.verdicts.NOT_TESTABLE`, the verdict vocabulary's own word, with the
reason beside it.

:func:`by_interval` is the one rule from an interval to an outcome; an experiment that judges
otherwise says why in its module docstring. ``view`` renders these words from :data:`OUTCOMES`.
"""

from __future__ import annotations

import math

__all__ = ["BETTER", "EQUIVALENT", "INCONCLUSIVE", "MIXED", "OUTCOMES", "WORSE", "by_interval"]

BETTER, WORSE, EQUIVALENT, INCONCLUSIVE, MIXED = (
    "better",
    "worse",
    "equivalent",
    "inconclusive",
    "mixed",
)
OUTCOMES = (BETTER, WORSE, EQUIVALENT, INCONCLUSIVE, MIXED)


def by_interval(low: float, high: float, margin: float | None = None) -> str:
    """The outcome of a difference (arm − reference, positive: the arm is better) from its
    interval ``[low, high]``: equivalent when ``margin`` is given and ``-margin ≤ low`` and
    ``high ≤ margin``; else better when ``low > 0``, worse when ``high < 0``, else inconclusive
    (a NaN bound too).

    >>> by_interval(0.1, 0.3), by_interval(-0.3, -0.1), by_interval(-0.1, 0.2)
    ('better', 'worse', 'inconclusive')
    >>> by_interval(-0.01, 0.02, margin=0.05)
    'equivalent'
    """
    if math.isnan(low) or math.isnan(high):
        return INCONCLUSIVE
    if low > high:
        raise ValueError(f"an interval's low end must not pass its high end, got [{low}, {high}]")
    if margin is not None:
        if not margin >= 0:
            raise ValueError(f"an equivalence margin must be ≥ 0, got {margin}")
        if -margin <= low and high <= margin:
            return EQUIVALENT
    if low > 0:
        return BETTER
    return WORSE if high < 0 else INCONCLUSIVE
