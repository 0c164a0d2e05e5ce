"""The papers' statements about normalisers that the comparison can judge: name, role, the
paper's words, our reading, and the normalisers each one covers.

``quote`` is the paper's text, word for word up to whitespace in ../shared/papers
(``tests/test_compare_claims.py`` finds every quote there); ``reading`` is ours. Every setting
is ours: neither paper swaps a normaliser into a pretrained model at inference. Normalisers
neither paper makes a statement about (softcap, softmax1, sink_softmax, yarn's factor, ...)
get no claim; the report's effects table shows them.
"""

from __future__ import annotations

from attnlimits.claims import BETTER, WORSE
from attnlimits.claims.verdicts import HEADLINE, SUPPORTING, Statement
from attnlimits.experiments.compare.rules import CONSTANT, LEVEL, MUCH_LONGER

__all__ = ["ADAPTIVE", "ADAPTIVE_SHARPER", "ALL", "COVERS", "LENGTH_AWARE", "TOPK"]

_LARGER = (
    "'larger inputs': the L past the training length (`train_length`, else the model's context); "
)
ADAPTIVE = Statement(
    "retrieval is better on larger inputs (paper B, §3)",
    HEADLINE,
    "applying adaptive temperature leads to a more performant retrieval head on larger inputs",
    _LARGER + "the retrieval probe's accuracy against softmax's at each, swapped into every head "
    "of a pretrained LM (ours; paper B: one trained head on max retrieval); "
    f"{BETTER}: the difference's {LEVEL} interval (normal, from both arms' standard errors) above "
    "0 (paper B: a paired test, its name lost in our copy)",
)
ADAPTIVE_SHARPER = Statement(
    "its heads are sharper on larger inputs (paper B, Fig. 7)",
    SUPPORTING,
    "our proposed adaptive temperature adaptation indeed leads to sharper coefficients on larger "
    "inputs",
    _LARGER + "sharper: the median head's entropy on sampled rows below softmax's (ours; paper "
    "B shows the coefficients of one head)",
)
LENGTH_AWARE = Statement(
    "the max weight stays roughly constant as L grows (paper A, §4)",
    HEADLINE,
    r"such as Scalable-Softmax scale logits by $\log L$ so that the maximum attention weight "
    "stays roughly constant as the sequence grows",
    "the median head's max weight (sampled rows, weights normalised to sum one) at the "
    f"longest L over the shortest: within ×{CONSTANT} reproduced, moving less than softmax's "
    "partly, else not (ours: thresholds; logn, ssmax_trained and Llama 4's temperature are "
    "grouped with Scalable-Softmax as rescales by log L)",
)
TOPK = Statement(
    "better than softmax when L ≫ k (paper A, §4 guideline 1)",
    HEADLINE,
    r"Top- k or sparse attention should be preferred when $L \gg k$",
    f"at each L ≥ {MUCH_LONGER}·k (our reading of ≫): perplexity or retrieval {BETTER} than "
    f"softmax's and neither {WORSE}; no such L: not testable",
)
#: Statement → the registry names of the normalisers it covers.
COVERS = {
    ADAPTIVE: ("adaptive",),
    ADAPTIVE_SHARPER: ("adaptive",),
    LENGTH_AWARE: ("ssmax", "ssmax_trained", "logn", "llama4_temperature"),
    TOPK: ("topk",),
}
ALL = tuple(COVERS)
