"""Naive materialised attention: the definition that :func:`streaming_attention` streams.

Builds the whole ``[B, Hq, Lq, Lk]`` logit matrix, so memory is O(L²): use it as the ground
truth in tests (in float64) and as the baseline in ``benchmarks/bench_streaming.py``.
"""

from __future__ import annotations

from typing import Any, Literal, overload

import torch
from torch import Tensor

from attnlimits.hf_bridge import repeat_kv
from attnlimits.kernels.spec import (
    UNIT_TEMPERATURE,
    AttentionStats,
    check_inputs,
    inverse_temperature,
    logit_cap,
    resolve_params,
    sink_logits,
)
from attnlimits.normalizers.adaptive import adaptive_beta
from attnlimits.normalizers.base import softmax
from attnlimits.normalizers.length_scaling import softcap_logits
from attnlimits.normalizers.sinks import sink_softmax

__all__ = ["naive_attention"]


@overload
def naive_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    normalizer: str = ...,
    *,
    mask: Tensor | None = ...,
    causal: bool = ...,
    scale: float | None = ...,
    return_stats: Literal[False] = ...,
    **params: Any,
) -> Tensor: ...
@overload
def naive_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    normalizer: str = ...,
    *,
    mask: Tensor | None = ...,
    causal: bool = ...,
    scale: float | None = ...,
    return_stats: Literal[True],
    **params: Any,
) -> AttentionStats: ...
def naive_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    normalizer: str = "softmax",
    *,
    mask: Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
    return_stats: bool = False,
    **params: Any,
) -> Tensor | AttentionStats:
    r"""Materialised ``softmax(c·l) @ v`` with the same arguments and result as streaming_attention.

    ``l = scale·q·kᵀ``; ``H = −Σ p log p`` (exact, ``0·log 0 = 0``) with ``p = softmax(l)``;
    ``c`` = 1/T, s·log n, a length scaling c(n) or β(H) as in
    :func:`attnlimits.kernels.streaming_attention`; softcap caps ``l`` first
    (:func:`~attnlimits.normalizers.softcap_logits`), softmax1 and sink_softmax apply
    :func:`~attnlimits.normalizers.sink_softmax` (its H counts the sink as one more outcome).
    Computes in the input dtype (pass float64 for a reference). Key/value heads are repeated
    for grouped-query attention.
    """
    opts = resolve_params(normalizer, params)
    scale, mask = check_inputs(q, k, v, mask, scale, block_size=1)
    B, Hq, Lq, _ = q.shape
    Hkv, Lk = k.shape[1], k.shape[2]
    kr = repeat_kv(k, Hq // Hkv)  # (B, Hq, Lk, d)
    vr = repeat_kv(v, Hq // Hkv)  # (B, Hq, Lk, dv)
    logits = scale * (q @ kr.transpose(-1, -2))  # (B, Hq, Lq, Lk)
    cap = logit_cap(normalizer, opts)
    if cap is not None:
        logits = softcap_logits(logits, cap)
    keep = torch.ones((B, Hq, Lq, Lk), dtype=torch.bool, device=q.device)
    if causal:
        qpos = torch.arange(Lq, device=q.device) + (Lk - Lq)
        keep = keep & (torch.arange(Lk, device=q.device)[None, :] <= qpos[:, None])
    if mask is not None:
        keep = keep & mask
    n = keep.sum(-1)  # (B, Hq, Lq)
    p = softmax(logits, mask=keep)
    H = -torch.special.xlogy(p, p).sum(-1)
    if normalizer == "softmax":
        c = torch.full_like(H, 1.0 / float(opts["temperature"]))
    elif normalizer == "adaptive":
        c = adaptive_beta(H, opts["coeffs"], opts["threshold"])
    elif normalizer in UNIT_TEMPERATURE:
        c = torch.ones_like(H)
    else:  # ssmax and the length scalings: c from the kept keys n
        c = inverse_temperature(normalizer, opts, n.to(H.dtype))
    sink = sink_logits(normalizer, opts, Hq)
    if sink is None:
        w = softmax(c[..., None] * logits, mask=keep)
        H_out = -torch.special.xlogy(w, w).sum(-1)
    else:
        s = sink.to(logits)[:, None, None]  # (Hq, 1, 1)
        w = sink_softmax(c[..., None] * logits, mask=keep, sink=s)
        w_sink = 1.0 - w.sum(-1)  # the sink's share
        H_out = -torch.special.xlogy(w, w).sum(-1) - torch.special.xlogy(w_sink, w_sink)
    out = w @ vr  # (B, Hq, Lq, dv)
    if not return_stats:
        return out
    return AttentionStats(out, H, c, H_out, n)
