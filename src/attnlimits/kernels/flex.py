"""The normalisers that PyTorch's FlexAttention can express, for GPU users.

FlexAttention (``torch.nn.attention.flex_attention``) computes ``softmax(mod(l)) @ v`` with
``l = scale·q·kᵀ`` and a per-entry ``score_mod(l, b, h, q_idx, kv_idx)``, fused and streamed
by its compiled kernel, and can return each row's log-sum-exp. That is enough for:

- softmax with temperature and every per-row scale (ssmax, logn, yarn, llama4_temperature,
  ssmax_trained): ``mod(l) = c_{b,h,i}·l`` (:func:`row_scale_mod`), ``c`` computed from each
  row's kept-key count ``n`` (:func:`row_scales`);
- softcap: ``mod(l) = cap·tanh(l/cap)`` (:func:`softcap_mod`);
- softmax1 and sink_softmax: the sink is one more logit ``σ`` with value 0, so
  ``w′ = w·Z/(Z + e^σ)`` and the output is rescaled per row by ``1/(1 + e^{σ − LSE})``, the
  sigmoid of ``LSE − σ`` (:func:`sink_rescale`);
- adaptive temperature in two launches: ``Σ_j p_j l_j = scale·q·Σ_j p_j k_j`` is the query
  times attention over the *keys* as values, so one launch with ``v = k`` gives
  ``H = LSE − Σ p l`` (paper B, App. G) and β(H); the second runs ``mod(l) = β_{b,h,i}·l``
  (:func:`adaptive_beta_flex`).

:func:`flex_normalized_attention` puts these together with the same arguments as
:func:`~attnlimits.kernels.streaming_attention` (causal or no mask). Pass
``kernel=torch.compile(flex_attention)`` on a GPU: the default, eager ``flex_attention``,
materialises the scores (it is a reference, used by the tests on the CPU). See
``docs/kernels.md``, "FlexAttention (GPU)".

Gradients (GPU only: FlexAttention has no CPU backward in torch 2.13, so this is untested
here): every mod above is differentiable in ``l``; adaptive's β is computed from detached inputs,
so its gradient is that of ``softmax(β·l)`` at fixed β (the ``detach_beta=True`` variant of
:func:`~attnlimits.normalizers.adaptive_softmax`); use ``streaming_attention`` for the
listing's full gradient through H.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from attnlimits.kernels.spec import (
    UNIT_TEMPERATURE,
    check_inputs,
    inverse_temperature,
    logit_cap,
    resolve_params,
    sink_logits,
    visible_keys,
)
from attnlimits.normalizers.adaptive import adaptive_beta

__all__ = [
    "ScoreMod",
    "adaptive_beta_flex",
    "causal_mask_mod",
    "flex_available",
    "flex_normalized_attention",
    "row_scale_mod",
    "row_scales",
    "sink_rescale",
    "softcap_mod",
]

#: FlexAttention's ``score_mod(score, b, h, q_idx, kv_idx) -> score``.
ScoreMod = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]


def flex_available() -> str | None:
    """None when this torch build has ``flex_attention``, else the reason it cannot run."""
    try:
        from torch.nn.attention import flex_attention as _fa  # noqa: F401
    except ImportError as err:  # torch < 2.5
        return f"this torch ({torch.__version__}) has no torch.nn.attention.flex_attention: {err}"
    return None


def softcap_mod(cap: float) -> ScoreMod:
    """Gemma 2's soft cap ``cap·tanh(l/cap)``."""

    def mod(score: Tensor, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return torch.tanh(score / cap) * cap

    return mod


def row_scale_mod(c: Tensor) -> ScoreMod:
    """``c[b, h, q_idx]·l``: a per-row inverse temperature ``c`` of shape ``[B, Hq, Lq]``."""

    def mod(score: Tensor, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return score * c[b, h, q_idx]

    return mod


def causal_mask_mod(offset: int) -> Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]:
    """Keep key ``kv_idx ≤ offset + q_idx`` (bottom-right aligned, as ``streaming_attention``)."""

    def mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return kv_idx <= q_idx + offset

    return mask_mod


def row_scales(
    normalizer: str, opts: dict[str, Any], like: Tensor, Lk: int, causal: bool
) -> Tensor | None:
    """Per-row ``c`` ``[B, Hq, Lq]`` of softmax and the length scalings, for queries ``like``
    (``c`` in float64 for float64 queries, else float32); None for normalisers without one
    (softcap, the sinks, adaptive)."""
    B, Hq, Lq, _ = like.shape
    dtype = torch.float64 if like.dtype == torch.float64 else torch.float32
    if normalizer == "softmax":
        t = float(opts["temperature"])
        return torch.full((B, Hq, Lq), 1.0 / t, dtype=dtype, device=like.device)
    if normalizer in (*UNIT_TEMPERATURE, "adaptive"):
        return None
    n = visible_keys(torch.arange(Lq, device=like.device) + (Lk - Lq), Lk, causal)  # (Lq,)
    c = inverse_temperature(normalizer, opts, n.to(torch.float64)).to(dtype)
    return c.expand(B, Hq, Lq).contiguous()


def sink_rescale(out: Tensor, lse: Tensor, sink: Tensor) -> Tensor:
    """Output of the sink softmax from plain softmax's: ``out·sigmoid(LSE − σ)`` per row.

    ``out`` ``[B, Hq, Lq, dv]``, ``lse`` ``[B, Hq, Lq]`` (natural log, −inf on rows without a
    kept key: then the output stays 0), ``sink`` ``[Hq]``.
    """
    return out * torch.sigmoid(lse - sink.to(lse)[:, None])[..., None]


def _call(
    kernel: Callable[..., Any],
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mod: ScoreMod | None,
    block_mask: Any,
    scale: float,
) -> tuple[Tensor, Tensor]:
    """(out, lse) of one FlexAttention launch, GQA enabled where the head counts differ."""
    from torch.nn.attention.flex_attention import AuxRequest

    out, aux = kernel(
        q,
        k,
        v,
        score_mod=mod,
        block_mask=block_mask,
        scale=scale,
        enable_gqa=q.shape[1] != k.shape[1],
        return_aux=AuxRequest(lse=True),
    )
    return out, aux.lse


def adaptive_beta_flex(
    q: Tensor,
    k: Tensor,
    opts: dict[str, Any],
    *,
    block_mask: Any,
    scale: float,
    kernel: Callable[..., Any],
) -> Tensor:
    """β(H) per row ``[B, Hq, Lq]`` from one launch with the keys as values:
    ``H = LSE − scale·q·Σ_j p_j k_j`` (paper B, App. G), from detached q and k."""
    q, k = q.detach(), k.detach()
    pk, lse = _call(kernel, q, k, k, None, block_mask, scale)  # Σ_j p_j k_j, (B, Hq, Lq, d)
    mean_l = scale * (q * pk).sum(-1)  # Σ_j p_j l_j
    has = torch.isfinite(lse)
    H = torch.where(has, lse - mean_l, torch.zeros_like(lse)).clamp_min(0.0)
    return adaptive_beta(H, opts["coeffs"], opts["threshold"])


def flex_normalized_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    normalizer: str = "softmax",
    *,
    causal: bool = False,
    scale: float | None = None,
    kernel: Callable[..., Any] | None = None,
    **params: Any,
) -> Tensor:
    """``streaming_attention``'s result through FlexAttention (one launch; adaptive: two).

    Parameters
    ----------
    q, k, v : Tensor
        ``[B, Hq, Lq, d]``, ``[B, Hkv, Lk, d]``, ``[B, Hkv, Lk, dv]`` (``Hq`` a multiple of
        ``Hkv``).
    normalizer : str
        Any of :data:`~attnlimits.kernels.NORMALIZERS`; its parameters go in ``**params``.
    causal : bool
        Query ``i`` sees keys ``j ≤ Lk − Lq + i`` (as ``streaming_attention``); no other mask.
    scale : float, optional
        Logit scale, default ``1/√d``.
    kernel : callable, optional
        The FlexAttention function; default the eager ``flex_attention``. On a GPU pass
        ``torch.compile(flex_attention)`` (compiled once per shape and mod).
    """
    reason = flex_available()
    if reason is not None:
        raise RuntimeError(reason)
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    opts = resolve_params(normalizer, params)
    scale, _ = check_inputs(q, k, v, None, scale, block_size=1)
    Hq, Lq, Lk = q.shape[1], q.shape[2], k.shape[2]
    kernel = flex_attention if kernel is None else kernel
    block_mask = None
    if causal:
        block_mask = create_block_mask(
            causal_mask_mod(Lk - Lq), None, None, Lq, Lk, device=str(q.device)
        )
    cap = logit_cap(normalizer, opts)
    c = row_scales(normalizer, opts, q, Lk, causal)
    if normalizer == "adaptive":
        c = adaptive_beta_flex(q, k, opts, block_mask=block_mask, scale=scale, kernel=kernel)
    mod = softcap_mod(cap) if cap is not None else None if c is None else row_scale_mod(c)
    out, lse = _call(kernel, q, k, v, mod, block_mask, scale)
    sink = sink_logits(normalizer, opts, Hq)
    if sink is not None:
        out = sink_rescale(out, lse, sink.to(q.device))
    return out.to(q.dtype)
