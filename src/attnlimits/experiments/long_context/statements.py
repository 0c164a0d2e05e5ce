"""Paper B's statements that the long-context demo judges, and the thresholds of its rules.

``quote`` is paper B's text, word for word up to whitespace in ../shared/papers
(``tests/test_long_context.py`` finds every quote there); ``reading`` is ours: paper B shows
these on a trained single head (§2, Fig. 2) and on Gemma 2B's heads (Fig. 3); the demo reads
them on a pretrained LM's max-finding prompts, at inference. Every setting of the demo is ours.
"""

from __future__ import annotations

from attnlimits.claims.statistics import LEVEL
from attnlimits.claims.verdicts import HEADLINE, SUPPORTING, Statement

__all__ = ["ACCURACY_FALLS", "ADAPTIVE_HELPS", "ALL", "DISPERSES", "SPREADS"]

DISPERSES = Statement(
    "attention disperses as n grows (paper B, Lemma 2.1, Theorem 2.2)",
    HEADLINE,
    "the coefficients emitted by the softmax function must disperse as we increase the number "
    "of input items",
    "under softmax, the entropy of the answer position's attention (mean over heads and "
    "prompts) is larger at the largest n than at the smallest (ours: a pretrained LM's "
    "max-finding prompts; one comparison, without an interval)",
)
ACCURACY_FALLS = Statement(
    "max-finding accuracy falls as n grows (paper B, §2)",
    HEADLINE,
    "This makes it impossible to robustly compute functions that depend on any particular "
    "finite amount of input values, such as the aforementioned max",
    f"under softmax, accuracy at the largest n is below that at the smallest: the difference's "
    f"{LEVEL:.0%} normal interval above 0 (ours: the prompts' binomial standard errors, "
    "independent cells; attnlimits.claims.statistics.difference_interval)",
)
ADAPTIVE_HELPS = Statement(
    "adaptive temperature at inference helps (paper B, §3)",
    HEADLINE,
    "propose adaptive temperature as an ad-hoc technique for improving the sharpness of "
    "softmax at inference time",
    "more prompts answered right only with adaptive temperature than only with softmax, the "
    "same prompts in both modes, pooled over n (ours: paper B's test is a trained head on max "
    "retrieval; a count, without a test)",
)
SPREADS = Statement(
    "per-head logit spreads of a real LM are contained (paper B, §2, Fig. 3)",
    SUPPORTING,
    "the empirically observed values of across all of their attention heads are "
    "substantially more contained",
    "informative only: paper B's values for Gemma 2B and 7B are lost in our copy, and the demo "
    "measures another model on another text; the row shows this run's per-head spreads",
)
ALL = (DISPERSES, ACCURACY_FALLS, ADAPTIVE_HELPS, SPREADS)
