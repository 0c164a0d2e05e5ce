"""What the long-context demo will cost (:mod:`attnlimits.experiments.budget`), from its Config.

Per (mode, n) cell, ``prompts`` prompts of L(n) = 41 + n × (digits + 1) tokens (SmolLM2's chat
template and one number per line): a forward of the prompt (:meth:`ModelShape.forward_flops`;
the adaptive kernel at :data:`_ADAPTIVE` × that), then ``max_new_tokens`` greedy steps per
batch; then one captured forward per spread window. Memory: the model, one batch's eager maps
and logits at the longest prompt, its KV cache, the prompts and their tables, and the range of
numbers each prompt draws from (``numpy.arange(low, high + 1)``).

Coefficients: one-thread CPU seconds (``time.process_time``, 2026-11-25, a 2-vCPU AVX2 EPYC) of
``_run_cell`` on SmolLM2-135M with n = 8 and 32 (73 and 169 tokens), 5 and 10 prompts, both
modes; ``_START`` is what the ``--quick`` run spends outside its cells and spread pass.
"""

from __future__ import annotations

from attnlimits.experiments import budget
from attnlimits.experiments._model_shape import model_shape
from attnlimits.experiments._precision import weight_bytes
from attnlimits.experiments.long_context.config import Config

__all__ = ["estimate"]

_FLOP = 1 / 57e9  # seconds per flop of a prompt's forward (softmax: the model's own attention)
_ADAPTIVE = 1.35  # the adaptive mode's forward relative to softmax's
_STEP = 0.12  # seconds per greedy step of a batch (recording included)
_CAPTURE_FLOP = 1 / 40e9  # the spread pass: a forward with its maps kept
_START = 24.0  # imports, model, summaries, figures and report
_ROW_BYTES = 100  # per table row (answers, per-head answer-row statistics)


def prompt_tokens(cfg: Config, n: int) -> int:
    """Tokens of a prompt of ``n`` numbers (SmolLM2's chat template: 41 around them)."""
    return 41 + n * (len(str(cfg.high)) + 1)


def estimate(cfg: Config) -> budget.Estimate:
    """Peak memory and wall time of ``cfg``'s demo, before any model is loaded."""
    shape = model_shape(cfg.model)
    modes = [1.0 if m == "softmax" else _ADAPTIVE for m in cfg.modes]
    batch = min(cfg.batch_size, cfg.prompts)
    per_prompt = sum(
        _FLOP * shape.forward_flops(prompt_tokens(cfg, n), lm_head=False) for n in cfg.ns
    )
    steps = len(cfg.ns) * _STEP * cfg.max_new_tokens / 4  # measured with batches of four
    seconds = _START + cfg.prompts * (sum(modes) * per_prompt + len(modes) * steps)
    spread = cfg.spread_windows * shape.forward_flops(cfg.spread_length) if cfg.spread_length else 0
    seconds += _CAPTURE_FLOP * spread
    top = prompt_tokens(cfg, max(cfg.ns)) + cfg.max_new_tokens
    rows = cfg.prompts * len(cfg.modes) * len(cfg.ns) * (1 + shape.layers * shape.heads)
    kv = 2 * 4.0 * batch * top * shape.layers * shape.kv_heads * shape.head_dim
    model = f"the weights of {cfg.model}"
    memory = {
        "Python and its libraries": budget.BASE_BYTES,
        model: weight_bytes(cfg, estimate) * shape.params,
        f"a batch's maps and logits, batch_size = {cfg.batch_size:,} prompts of {top} tokens": 4.0
        * batch
        * top
        * (3 * shape.heads * top + shape.vocab),
        f"the KV cache, max_new_tokens = {cfg.max_new_tokens:,}": kv,
        f"the spread pass's maps, spread_length = {cfg.spread_length:,}": 56.0
        * shape.heads
        * cfg.spread_length**2,
        f"the spread windows, spread_windows = {cfg.spread_windows:,}": 60.0
        * cfg.spread_windows
        * cfg.spread_length,
        f"the prompts and their tables, prompts = {cfg.prompts:,}": float(
            _ROW_BYTES * rows + cfg.prompts * 20 * top
        ),
        f"the range of numbers, high - low = {cfg.high - cfg.low:,}": 8.0
        * (cfg.high - cfg.low + 1),
    }
    return budget.estimate(
        f"long-context on {cfg.model} ({cfg.prompts:,} prompts × {len(cfg.ns)} list lengths "
        f"× {len(cfg.modes)} modes)",
        seconds,
        memory,
        device=cfg.device,
        on_device=[k for k in memory if k.startswith(("a batch", "the KV", "the spread pass"))],
        model=model,
    )
