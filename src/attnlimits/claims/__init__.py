"""The claims engine: how every reproduction states a paper's claim and judges it.

- :mod:`.verdicts`: the one vocabulary (reproduced, partly, not reproduced, not testable, n/a),
  the roles (headline, supporting, check), a :class:`~.verdicts.Statement` (its claim, role, the
  paper's words and our reading) and the rule that combines headline verdicts into a finding's;
- :mod:`.thresholds`: :class:`~.thresholds.Threshold`, a named number with its provenance
  (paper, lost in our copy, ours, set after earlier runs were public) and reason;
- :mod:`.comparisons`: the one vocabulary of a comparison between two arms (better, worse,
  equivalent, inconclusive, mixed) and the rule from an interval to it;
- :mod:`.rules`: rule shapes built from thresholds (:class:`~.rules.Graded`,
  :class:`~.rules.Share`, :class:`~.rules.Holds`) that judge a statistic and print themselves.
- :mod:`.statistics`: the intervals of the designs we have (seeds × shared questions, a
  proportion, a slope, a difference with its standard error), each method chosen once; numpy
  and scipy, imported by name (``attnlimits.claims.statistics``), not re-exported here.

It sits below :mod:`attnlimits.view` (pure Python, no torch), so that the pages render verdicts
from the engine's own constants, and every experiment's ``claims.py`` judges through it.
"""

from attnlimits.claims.comparisons import (
    BETTER,
    EQUIVALENT,
    INCONCLUSIVE,
    MIXED,
    OUTCOMES,
    WORSE,
    by_interval,
)
from attnlimits.claims.rules import Band, Graded, Holds, Rule, Share, finite
from attnlimits.claims.thresholds import AFTER_RUNS, LOST, OURS, PAPER, PROVENANCES, Threshold
from attnlimits.claims.verdicts import (
    CHECK,
    FINDING,
    HEADLINE,
    NA,
    NOT,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
    ROLES,
    SHORT,
    SUPPORTING,
    VERDICTS,
    Statement,
    agreement,
    combine,
    finding,
    missing_quotes,
    normalise,
)

__all__ = [
    "AFTER_RUNS",
    "BETTER",
    "CHECK",
    "EQUIVALENT",
    "FINDING",
    "HEADLINE",
    "INCONCLUSIVE",
    "LOST",
    "MIXED",
    "NA",
    "NOT",
    "NOT_TESTABLE",
    "OURS",
    "OUTCOMES",
    "PAPER",
    "PARTLY",
    "PROVENANCES",
    "REPRODUCED",
    "ROLES",
    "SHORT",
    "SUPPORTING",
    "VERDICTS",
    "WORSE",
    "Band",
    "Graded",
    "Holds",
    "Rule",
    "Share",
    "Statement",
    "Threshold",
    "agreement",
    "by_interval",
    "combine",
    "finding",
    "finite",
    "missing_quotes",
    "normalise",
]
