"""Attention statistics of the answer position, recorded during a prompt's forward pass.

The mode's attention function (the model's own SDPA, or the streaming adaptive-temperature
kernel) runs as usual; for the prompt's (prefill) forward the last query row's statistics are
computed by the streaming kernel and kept per layer.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor

from attnlimits import hf_bridge
from attnlimits.capture import attention_modules
from attnlimits.experiments.long_context.config import Config
from attnlimits.kernels import streaming_attention
from attnlimits.kernels.hf import make_attention_function
from attnlimits.metrics import logit_spread

__all__ = ["answer_row_stats", "generate_answers", "recording"]

_IMPL = "attnlimits_long_context"


def _keep_last_row(mask: Tensor | None, n_keys: int) -> Tensor | None:
    """The last query row of a transformers mask as a boolean keep-mask ``[B, 1|H, 1, Lk]``."""
    keep = hf_bridge.keep_mask(mask)
    return None if keep is None else keep[..., -1:, :n_keys]


def answer_row_stats(
    query: Tensor,
    key: Tensor,
    mask: Tensor | None,
    normalizer: str,
    *,
    scaling: float | None = None,
    **params: Any,
) -> dict[str, Tensor]:
    """Statistics of the last query row (the answer position) over all keys, per head.

    ``query [B, Hq, Lq, d]``, ``key [B, Hkv, Lk, d]`` (after rotary), ``mask`` transformers'
    mask or None (plain causal: the last row sees every key). Returns ``[B, Hq]`` tensors:
    ``entropy`` (H of the weights applied, softmax(β·l)), ``entropy_base`` (H of softmax(l)),
    ``beta``, ``n_keys``, ``spread`` (max − min of the scaled scores l over kept keys).
    """
    q = query[:, :, -1:]  # (B, Hq, 1, d)
    keep = _keep_last_row(mask, key.shape[2])
    stats = streaming_attention(
        q,
        key,
        key[..., :1],
        normalizer,
        mask=keep,
        causal=True,
        scale=scaling,
        return_stats=True,
        **params,
    )
    scale = q.shape[-1] ** -0.5 if scaling is None else scaling
    k = hf_bridge.repeat_kv(key, q.shape[1] // key.shape[1])  # (B, Hq, Lk, d)
    scores = (q.float() @ k.float().transpose(-1, -2)) * scale  # (B, Hq, 1, Lk)
    return {
        "entropy": stats.out_entropy[..., 0],
        "entropy_base": stats.entropy[..., 0],
        "beta": stats.beta[..., 0],
        "n_keys": stats.n_keys[..., 0],
        "spread": logit_spread(scores, mask=keep)[..., 0],
    }


class _Recorder:
    """Collects :func:`answer_row_stats` per layer during a prompt's (prefill) forward."""

    def __init__(self, layer_of: dict[int, int], normalizer: str, params: dict[str, Any]):
        self.layer_of, self.normalizer, self.params = layer_of, normalizer, params
        self.active = False
        self.rows: dict[int, dict[str, Tensor]] = {}

    def __call__(self, module: Any, query: Tensor, key: Tensor, mask: Tensor | None, scaling: Any):
        stats = answer_row_stats(query, key, mask, self.normalizer, scaling=scaling, **self.params)
        self.rows[self.layer_of[id(module)]] = {k: v.detach().cpu() for k, v in stats.items()}


def _inner_attention(mode: str, cfg: Config) -> tuple[Callable[..., Any], str, dict]:
    """The attention function a mode runs, and the normaliser and parameters of its stats."""
    if mode == "adaptive":
        params = dict(cfg.adaptive_params)
        fn = make_attention_function("adaptive", frozen={**params, "block_size": cfg.block_size})
        return fn, "adaptive", params
    if cfg.softmax_backend == "kernel":
        fn = make_attention_function("softmax", frozen={"block_size": cfg.block_size})
        return fn, "softmax", {}
    return hf_bridge.attention_function("sdpa"), "softmax", {}


@contextmanager
def recording(model: Any, mode: str, cfg: Config) -> Iterator[_Recorder]:
    """Run ``model`` in ``mode`` and record the answer row of each prefill (``Lq > 1``) forward.

    Registers ``attn_implementation="attnlimits_long_context"``: the mode's attention function
    (for ``"adaptive"`` the very function ``attnlimits_adaptive`` runs) followed by
    :func:`answer_row_stats`; restores the model's implementation on exit. Set
    ``recorder.active`` to record; ``recorder.rows`` maps layer -> stats.
    """
    inner, normalizer, params = _inner_attention(mode, cfg)
    layer_of = {id(m): i for i, (_, _, m) in enumerate(attention_modules(model))}
    recorder = _Recorder(layer_of, normalizer, params)

    def attention(module: Any, query: Tensor, key: Tensor, value: Tensor, mask: Any, **kw: Any):
        out = inner(module, query, key, value, mask, **kw)
        if recorder.active and query.shape[2] > 1:
            recorder(module, query, key, mask, kw.get("scaling"))
        return out

    hf_bridge.register_attention(_IMPL, attention)
    with hf_bridge.using_attention(model, _IMPL):
        yield recorder


@torch.no_grad()
def generate_answers(
    model: Any, ids: Tensor, recorder: _Recorder, max_new_tokens: int
) -> tuple[Tensor, dict[int, dict[str, Tensor]]]:
    """Greedy decoding of ``ids [B, L]`` (no padding) with a KV cache, inside :func:`recording`.

    Returns the new tokens ``[B, max_new_tokens]`` and the answer-row stats of the prompt's
    forward, ``{layer: {name: [B, H]}}``.
    """
    # the KV cache's name: ``cache`` in recent transformers (which warn that
    # ``past_key_values`` goes in 5.40), ``past_key_values`` before
    kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    recorder.rows, recorder.active = {}, True
    try:
        out = model(input_ids=ids, use_cache=True)
    finally:
        recorder.active = False
    rows = recorder.rows
    past, nxt = getattr(out, kw), out.logits[:, -1].argmax(-1)
    tokens = [nxt]
    for _ in range(max_new_tokens - 1):
        out = model(input_ids=nxt[:, None], use_cache=True, **{kw: past})
        past, nxt = getattr(out, kw), out.logits[:, -1].argmax(-1)
        tokens.append(nxt)
    return torch.stack(tokens, dim=1), rows
