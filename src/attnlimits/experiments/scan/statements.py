"""The papers' statements the scan judges on a user's model: name, role, the paper's words, our
reading.

``quote`` is the paper's text, word for word up to whitespace in ../shared/papers
(``tests/test_scan_claims.py`` finds every quote there); ``reading`` is ours: how the quote
becomes a test on this model, and where the scan's statistic is not the paper's. Paper A's
empirical statements are headlines; properties a theorem states or assumes (Lemma 2.1's
dispersion with bounded logits, Assumption 2) are checks (:mod:`attnlimits.claims.verdicts`).
"""

from __future__ import annotations

from attnlimits.claims.verdicts import CHECK, HEADLINE, Statement
from attnlimits.experiments.scan.rules import ABOUT, BAND, PAPER_FRACTION
from attnlimits.experiments.scan.taxonomy import DISPERSING_SLOPE

__all__ = ["ALL", "ASSUMPTION2", "CRITICAL_N", "DISPERSION", "SEPARABILITY"]

CRITICAL_N = Statement(
    "A (iii): the critical N is about 0.06 L (fewer than 6 % of tokens)",
    HEADLINE,
    "fewer than 6 % of the tokens need to be selected before the empirical and expected "
    "distances become statistically indistinguishable",
    "the model's critical N (Alg. 3: KS over all heads of this model; d̄ and Ē means over "
    "sampled rows, E in the derived form: ours). Per L, with finding (iii)'s '$\\approx 0.06L$': "
    f"critical N / L ≤ {PAPER_FRACTION} reproduced there, ≤ {PAPER_FRACTION * ABOUT:.2f} "
    "partly, above (or no N of the grid passing) not; every L reproduced → reproduced, none "
    "reproduced or partly → not reproduced, else partly. An L whose grid stops below "
    f"{PAPER_FRACTION * ABOUT:.2f}·L with no N passing is left out (it cannot tell)",
)
DISPERSION = Statement(
    "B (Lemma 2.1): the largest weight disperses as O(1/L) as inputs grow",
    CHECK,
    "The computed attention coefficients hence must disperse for all items with increasing "
    "problem size.",
    "Lemma 2.1 holds for logits bounded independently of the size; on this model's heads "
    "(ours): the slope of log max weight against log L over the scanned lengths (1/L is −1), "
    f"the median head's ≤ {DISPERSING_SLOPE} reproduced, some heads' partly, none not. A "
    "trained model's logits may grow with L, the escape of paper B's Prop. 3.1",
)
SEPARABILITY = Statement(
    "A (iv): N_s/N lies between 0.70 and 0.85 once saturated (N ≥ 16)",
    HEADLINE,
    r"the proportion of distinguishable tokens declines up to $N \approx 16$ and then saturates "
    "between 0.7 and 0.85",
    "the median over this model's heads of N_s/N (x_i the value vectors on the unit sphere: "
    "ours; paper A: GPT-2) at the scan's N and the longest analysed L: in "
    f"[{BAND[0]:.2f}, {BAND[1]:.2f}] reproduced, the interquartile range meeting the band "
    "partly, else not; at an N below 16, where the paper's curve still declines, not testable",
)
ASSUMPTION2 = Statement(
    "A (Assumption 2): the x_i are distinct (δ > 0)",
    CHECK,
    "There exists a fixed lower bound on the distance between any two embeddings",
    "per head of this model, x_i the value vectors (ours): no two equal in any window; "
    "Theorem 2's bounds need it",
)
ALL = (CRITICAL_N, DISPERSION, SEPARABILITY, ASSUMPTION2)
