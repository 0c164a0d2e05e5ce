"""What a scan will cost (:mod:`attnlimits.experiments.budget`), from its Config.

Per forward pass (one per window at the longest L for a causal model, plus one on the
induction tokens; one per window and L for an encoder) and layer:

- the forward through SDPA, :meth:`ModelShape.forward_flops`;
- the streamed row statistics: heads × L² (:func:`~attnlimits.kernels.attention_row_stats`);
- per analysed length (L ≤ ``analysis_max_length``) the sampled rows: heads × rows × L, the
  rows capped at the band's, and the ``rows`` evenly spaced indices drawn before the cap
  (``torch.linspace`` and ``unique`` over all of them: time and memory grow with ``rows``);
- saving the layer's parts.

Coefficients: one-thread CPU seconds (``time.process_time``, 2026-11-25, a 2-vCPU AVX2 EPYC)
of ``capture_qkv`` and ``_layer_parts`` on SmolLM2-135M, layer 15 of a War and Peace window at
L = 1024 and 4096, with ``rows`` 16, 64 and 10⁶ and the sampled rows switched off; ``_START``
is what the ``--quick`` scan spends outside the layers.
"""

from __future__ import annotations

from attnlimits.experiments import budget
from attnlimits.experiments._model_shape import model_shape
from attnlimits.experiments._precision import weight_bytes
from attnlimits.experiments.scan.config import Config, analysed_lengths, band

__all__ = ["estimate"]

_FLOP = 1 / 80e9  # seconds per flop of the SDPA forward
_STREAM = 6e-9  # per head × L² of the streamed row statistics
_ROW = 1.4e-7  # per head × sampled row × L (d̃ and E over the N grid, Jacobian, N_s/N)
_INDEX = 4.8e-7  # per row index drawn (linspace, round, unique) per analysed length
_PART = 0.05  # saving one layer's parts
_START = 24.0  # imports, model, windows, aggregation, figures and report
_INDEX_BYTES = 24  # per row index drawn: float32, int64 and unique's sorted copy
_ACTIVATION_BYTES = 64e3  # per token of the forward (hidden states, MLP, logits in part)
_ROW_BYTES = 120  # per table row


def estimate(cfg: Config) -> budget.Estimate:
    """Peak memory and wall time of ``cfg``'s scan, before any model is loaded."""
    shape = model_shape(cfg.model)
    h, top = shape.heads, cfg.max_length
    passes: list[tuple[int, tuple[int, ...]]] = [(top, cfg.lengths)]
    if not shape.causal:
        passes = [(n, (n,)) for n in cfg.lengths]
    else:  # and the induction tokens
        passes.append((2 * cfg.induction_period, ()))
    analysed = set(analysed_lengths(cfg))
    per_layer = 0.0
    for length, served in passes:
        per_layer += _FLOP * shape.forward_flops(length) / shape.layers
        per_layer += _STREAM * h * float(length) ** 2 + _PART
        for n in analysed & set(served):
            lo, hi = band(n, shape.causal)
            per_layer += _ROW * h * min(cfg.rows, hi - lo) * n + _INDEX * cfg.rows
    longest = max(top, 2 * cfg.induction_period)
    rows = h * len(cfg.lengths)  # per window and layer: the windows table
    for n in analysed:  # the samples table: d̃ and E per sampled row and N
        lo, hi = band(n, shape.causal)
        rows += h * min(cfg.rows, hi - lo) * len(cfg.ns)
    block = min(cfg.block_size, longest)
    model = f"the weights of {cfg.model}"
    memory = {
        "Python and its libraries": budget.BASE_BYTES,
        model: weight_bytes(cfg, estimate) * shape.params,
        "the text": 3 * budget.text_bytes(cfg.text),
        f"the forward at L = {longest}": _ACTIVATION_BYTES * longest,
        f"the streamed blocks, block_size = {cfg.block_size:,}": 4.0 * 6 * h * block**2,
        f"the sampled rows' indices, rows = {cfg.rows:,}": float(_INDEX_BYTES * cfg.rows),
        f"the token windows, windows = {cfg.windows:,}": float(cfg.windows * (8 * top + 300)),
        f"the tables of {cfg.windows:,} windows × {shape.layers} layers": float(
            _ROW_BYTES * rows * cfg.windows * shape.layers
        ),
    }
    return budget.estimate(
        f"scan of {cfg.model} ({cfg.windows:,} window(s) × {shape.layers} layers, L ≤ {top})",
        _START + cfg.windows * shape.layers * per_layer,
        memory,
        device=cfg.device,
        on_device=[k for k in memory if k.startswith(("the forward", "the streamed", "the samp"))],
        model=model,
    )
