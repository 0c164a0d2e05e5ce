"""What a comparison will cost (:mod:`attnlimits.experiments.budget`), from its Config.

One forward of the longest L per normaliser and sequence: the linear layers and the LM head
(:meth:`ModelShape.forward_flops`) and the attention at the normaliser's price relative to
SDPA (:data:`ATTENTION_COST`: docs/compare.md's seconds per forward of 8192 tokens, less the
forward's other work). Memory: no path holds an [head, L, L] map (SDPA's CPU kernel streams
it, the other normalisers stream or chunk it); the peak is counted as the model, the
forward's working memory per token of L (fitted to measured peaks, not itemised), a slice of
the LM head's logits and top-k's score block; the forward keeps no KV cache
(``use_cache=False``) and the heap is trimmed after each forward (docs/compare.md#speed).

Coefficients: ``_FLOP`` from the default run (36.7 s per SDPA forward of 8192 tokens on the
reference machine, docs/compare.md), in the measured units of :mod:`.budget`; ``_START`` is
what the ``--quick`` run (10.0 s) spends outside its three forwards of 256 tokens.
"""

from __future__ import annotations

from attnlimits.experiments import budget
from attnlimits.experiments._model_shape import model_shape
from attnlimits.experiments._precision import weight_bytes
from attnlimits.experiments.compare.config import Config
from attnlimits.experiments.compare.forward import LOGIT_CHUNK

__all__ = ["ATTENTION_COST", "estimate"]

#: Attention time relative to SDPA's, per normaliser (docs/compare.md, L = 8192); a normaliser
#: not listed runs the query-chunked path and is taken at the dearest listed price.
ATTENTION_COST = {
    "softmax": 1.0,
    "softmax1": 1.8,
    "ssmax": 2.0,
    "ssmax_trained": 2.0,
    "logn": 2.1,
    "softcap": 2.7,
    "adaptive": 3.6,
    "topk": 3.6,
}
_FLOP = 1 / 65e9  # seconds per flop of a forward through SDPA
_START = 17.0  # imports, model, sequences, probes, summaries, figures and report
#: Per token of the longest L: the forward's working memory and what the heap keeps of it,
#: fitted to the default run's peak (7.1 GB at L = 8192, AVX2 kind, 2026-11-27; 5.0 GB for
#: softmax alone, 2.9 GB at 4096 and 2.0 GB at 2048: the estimate is 1.5× those, on the safe
#: side). Where the 0.25–0.5 MB a token goes is not yet itemised (docs/compare.md#speed).
_ACTIVATION_BYTES = 640e3
_PROBE_BYTES = 2e3  # per probe: its table row and the text written over the book


def estimate(cfg: Config) -> budget.Estimate:
    """Peak memory and wall time of ``cfg``'s comparison, before any model is loaded."""
    shape = model_shape(cfg.model)
    top = cfg.max_length
    other = shape.forward_flops(top) - shape.attention_flops(top)
    price = max(ATTENTION_COST.values())
    names = [spec.partition(":")[0].strip() for spec in cfg.normalizers]
    factors = [ATTENTION_COST.get(name, price) for name in names]
    per_sequence = sum(_FLOP * (other + f * shape.attention_flops(top)) for f in factors)
    probes = cfg.sequences * len(cfg.lengths) * cfg.probes_per_length
    model = f"the weights of {cfg.model}"
    logits = f"a slice of the LM head's logits ({LOGIT_CHUNK} positions) and its softmax"
    memory = {
        "Python and its libraries": budget.BASE_BYTES,
        model: weight_bytes(cfg, estimate) * shape.params,
        "the text": 3 * budget.text_bytes(cfg.text),
        f"the forward at L = {top}": _ACTIVATION_BYTES * top,
        logits: 2 * 4.0 * LOGIT_CHUNK * shape.vocab,
        f"the sequences, sequences = {cfg.sequences:,}": float(cfg.sequences * (9 * top + 300)),
        f"the probes, probes_per_length = {cfg.probes_per_length:,}": _PROBE_BYTES
        * probes
        * len(cfg.normalizers),
    }
    if "topk" in names:  # the query-chunked path's scores: [head, block, L] floats
        memory[f"top-k's score block at L = {top}"] = 4.0 * shape.heads * cfg.block_size * top
    return budget.estimate(
        f"compare on {cfg.model} ({len(cfg.normalizers)} normalisers × {cfg.sequences:,} "
        f"sequence(s) of {top} tokens)",
        _START + cfg.sequences * per_sequence,
        memory,
        device=cfg.device,
        on_device=[k for k in memory if k.startswith(("the forward", "a slice", "top-k"))],
        model=model,
    )
