"""Streamed normalisers reformulated onto PyTorch's ``scaled_dot_product_attention`` (SDPA).

Every normaliser of :mod:`.streaming` except softcap is ``softmax(c·l)`` with a per-row ``c``,
or a softmax with one extra logit; both fit SDPA's fused kernel, so the forward runs at SDPA's
speed and the backward is SDPA's own (O(L) memory, nothing materialised for autograd):

- per-row scales (``softmax`` with temperature, ``ssmax``, ``logn``, ``yarn``,
  ``llama4_temperature``, ``ssmax_trained``): ``c·l = scale·(c·q)·k``, so q is scaled per row
  and one SDPA call does the rest;
- sinks (``softmax1``, ``sink_softmax``): with ``LSE = log Σ_j e^{l_j}`` from the fused kernel,
  ``e^{l_j}/(e^s + Σ e^{l_j}) = softmax(l)_j · e^{LSE − LSE'}``, ``LSE' = logaddexp(LSE, s)``;
  the backward is the fused kernel's own backward handed ``LSE'`` (it recomputes
  ``P = e^{l − LSE'}``, the sink weights). Without that kernel (another device, dropout, a
  value width other than the key width): one
  extra key with logit s (``q' = [q, s/scale]``, ``k' = [k, 0]``, ``k_sink = [0, 1]``,
  ``v_sink = 0``) in front of the keys, and a dummy query row in front of the queries so a causal
  call stays square; the dummy row is dropped;
- ``adaptive`` (paper B, Figure 4 listing): one statistics call with the keys as values gives
  ``E_p[k]`` and ``LSE``, so ``H = LSE − scale·q·E_p[k]``; then one SDPA call with q scaled by
  ``β(H)``. The gradient flows through β as in the listing (see :func:`_entropy`).

Derivations, measured speed and the fallbacks are in ``docs/kernels.md`` ("Reformulations onto
SDPA"). :func:`sdpa_unsupported` names why a call cannot take this path;
:func:`sdpa_attention` then runs :func:`~attnlimits.kernels.streaming_attention` instead.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlimits.kernels.spec import (
    check_inputs,
    inverse_temperature,
    resolve_params,
    sink_logits,
    visible_keys,
)
from attnlimits.kernels.streaming import streaming_attention
from attnlimits.normalizers.adaptive import adaptive_beta
from attnlimits.normalizers.length_scaling import LENGTH_SCALES

__all__ = ["SDPA_NORMALIZERS", "sdpa_attention", "sdpa_unsupported"]

#: Normalisers with a per-row inverse temperature c: q scaled per row, one SDPA call.
ROW_SCALED = ("softmax", "ssmax", *LENGTH_SCALES)
#: Normalisers with one extra logit (0 for softmax1) that takes weight and carries no value.
SINKS = ("softmax1", "sink_softmax")
#: Every normaliser :func:`sdpa_attention` runs through SDPA.
SDPA_NORMALIZERS = (*ROW_SCALED, *SINKS, "adaptive")

_flash_cpu = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
_flash_cpu_backward = getattr(
    torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None
)


def _has_lse(q: Tensor) -> bool:
    """Whether PyTorch's CPU flash kernel (which returns each row's log-sum-exp) runs ``q``."""
    return q.device.type == "cpu" and _flash_cpu is not None and _flash_cpu_backward is not None


def sdpa_unsupported(
    normalizer: str, q: Tensor, *, return_stats: bool = False, dropout_p: float = 0.0
) -> str | None:
    """Why :func:`sdpa_attention` cannot run ``normalizer`` on ``q`` through SDPA, or None.

    softcap transforms every logit (``cap·tanh(l/cap)``), which no ``q·k`` product expresses;
    ``return_stats`` needs the streaming kernel's per-row statistics; adaptive needs each row's
    log-sum-exp, which only PyTorch's CPU flash kernel returns, and its statistics pass takes no
    dropout (the output pass does).
    """
    if normalizer not in SDPA_NORMALIZERS:
        return f"{normalizer!r} transforms each logit, which q·k cannot express"
    if return_stats:
        return "return_stats needs the streaming kernel's per-row statistics"
    if normalizer == "adaptive" and not _has_lse(q):
        return "adaptive needs each row's log-sum-exp, returned by PyTorch's CPU kernel only"
    return None


def _layout(
    q: Tensor, k: Tensor, mask: Tensor | None, causal: bool
) -> tuple[Tensor | None, bool, Tensor]:
    """The call in SDPA's terms: (boolean keep-mask or None, is_causal, kept keys per row);
    ``mask`` is None or 4-d.

    :func:`streaming_attention`'s causal is bottom-right aligned (query i at key position
    ``Lk − Lq + i``); SDPA's ``is_causal`` is top-left, so it is used only for a square call
    without a mask; otherwise the triangle joins the keep-mask. The counts broadcast to
    ``[B, Hq, Lq]`` (a ``[Lq]`` tensor without a mask).
    """
    Lq, Lk = q.shape[2], k.shape[2]
    if mask is None:
        n = visible_keys(torch.arange(Lq, device=q.device) + (Lk - Lq), Lk, causal)
        if not causal or Lq == Lk or (Lq == 1 and Lk >= 1):
            return None, causal and Lq == Lk, n
    if causal:
        qpos = torch.arange(Lq, device=q.device) + (Lk - Lq)
        tri = torch.arange(Lk, device=q.device)[None, :] <= qpos[:, None]  # (Lq, Lk)
        mask = tri[None, None] if mask is None else mask & tri
    assert mask is not None
    return mask, False, mask.sum(-1)


def _float_mask(keep: Tensor | None, dtype: torch.dtype) -> Tensor | None:
    """An additive mask (0 / −inf) of ``dtype``: what the CPU flash kernel takes."""
    if keep is None:
        return None
    return torch.zeros(keep.shape, dtype=dtype, device=keep.device).masked_fill_(~keep, -math.inf)


def _sdpa(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    keep: Tensor | None,
    is_causal: bool,
    scale: float,
    dropout_p: float,
) -> Tensor:
    """One public SDPA call, grouped-query heads shared without copies."""
    return F.scaled_dot_product_attention(
        q,
        k,
        v,
        attn_mask=keep,
        dropout_p=dropout_p,
        is_causal=is_causal,
        scale=scale,
        enable_gqa=q.shape[1] != k.shape[1],
    )


def _scaled_rows(q: Tensor, c: Tensor) -> Tensor:
    """q with row i multiplied by c_i (``c`` broadcastable to ``[B, Hq, Lq]``), in q's dtype."""
    acc = torch.float64 if q.dtype == torch.float64 else torch.float32
    return (q.to(acc) * c.to(acc)[..., None]).to(q.dtype)


class _SinkAttention(torch.autograd.Function):
    """softmax(l) @ v with one more logit ``s`` per query head and value 0, on the CPU flash kernel.

    Forward: ``O, LSE = flash(q, k, v)``; ``LSE' = logaddexp(LSE, s)``; ``O' = O·e^{LSE − LSE'}``.
    Backward: the flash backward with ``(O', LSE')``: it recomputes ``P = e^{l − LSE'}`` (the sink
    weights, rows summing to ``1 − w_sink``) and ``D = rowsum(dO'·O')``, which is the exact
    gradient of ``O' = P v`` (``dl = P∘(dO'·vᵀ − D)``), so nothing is materialised.
    """

    @staticmethod
    def forward(
        ctx: Any,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        sink: Tensor,
        mask: Tensor | None,
        is_causal: bool,
        scale: float,
    ) -> Tensor:
        assert _flash_cpu is not None
        out, lse = _flash_cpu(q, k, v, 0.0, is_causal, attn_mask=mask, scale=scale)
        lse2 = torch.logaddexp(lse, sink.to(lse)[:, None])  # (B, Hq, Lq)
        out2 = (out.to(lse) * torch.exp(lse - lse2)[..., None]).to(q.dtype)
        ctx.save_for_backward(q, k, v, out2, lse2, mask)
        ctx.is_causal, ctx.scale = is_causal, scale
        return out2

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        assert _flash_cpu_backward is not None
        q, k, v, out2, lse2, mask = ctx.saved_tensors
        dq, dk, dv = _flash_cpu_backward(
            grad.contiguous(),
            q,
            k,
            v,
            out2,
            lse2,
            0.0,
            ctx.is_causal,
            attn_mask=mask,
            scale=ctx.scale,
        )
        return dq, dk, dv, None, None, None, None


def _sink_extra_key(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    sink: Tensor,
    keep: Tensor | None,
    is_causal: bool,
    scale: float,
    dropout_p: float,
) -> Tensor:
    """The public-API sink: one extra key of logit s and value 0, SDPA's own autograd.

    One more head dimension carries the sink: ``q' = [q, s/scale, 0…]``, ``k' = [k, 0…]``,
    ``k_sink = [0, 1, 0…]`` (padded to a multiple of 8, as the fused kernels want equal head
    dimensions), so ``scale·q'·k'`` is l for every key and s for the sink. The sink key goes
    first; under causal a dummy query row goes first too, so the call stays square and row
    ``i + 1`` sees the sink and keys ``0..i``; the dummy row is dropped.
    """
    B, Hq, Lq, d = q.shape
    Hkv, dv = k.shape[1], v.shape[-1]
    width = -(-(max(d, dv) + 1) // 8) * 8
    qs = (sink.to(q) / scale)[None, :, None, None].expand(B, Hq, Lq, 1)
    q2 = F.pad(torch.cat([q, qs], -1), (0, width - d - 1))  # (B, Hq, Lq, width)
    k2 = F.pad(k, (0, width - d))  # (B, Hkv, Lk, width)
    k_sink = torch.zeros(B, Hkv, 1, width, dtype=k.dtype, device=k.device)
    k_sink[..., d] = 1.0
    k2 = torch.cat([k_sink, k2], 2)  # (B, Hkv, 1 + Lk, width)
    v2 = F.pad(v, (0, width - dv, 1, 0))  # (B, Hkv, 1 + Lk, width), the sink's value 0
    if keep is not None:  # the sink column is kept in every row
        keep = F.pad(keep, (1, 0), value=True)
    if is_causal:
        q2 = F.pad(q2, (0, 0, 1, 0))  # the dummy query row 0: (B, Hq, 1 + Lq, width)
    out = _sdpa(q2, k2, v2, keep, is_causal, scale, dropout_p)
    return out[:, :, int(is_causal) :, :dv]


def _entropy(q: Tensor, k: Tensor, mask: Tensor | None, is_causal: bool, scale: float) -> Tensor:
    """Each row's H = −Σ p log p of p = softmax(l), from one flash call with the keys as values.

    ``H = LSE − E_p[l]`` and ``E_p[l] = scale·q·E_p[k]``. Autograd: ``LSE`` and the outer ``q``
    are detached and the values are ``k.detach()``, so the gradient flows through p only, and
    ``dH = −scale·q·Σ_j dp_j k_j = −Σ_j l_j dp_j``: exactly H's differential, since the terms
    through LSE (``Σ p dl``) and through the values and the outer q (``scale·dq·E_p[k] +
    scale·q·Σ p dk``) cancel. Returns float32 (float64 for float64 inputs), clamped at 0.
    """
    assert _flash_cpu is not None
    acc = torch.float64 if q.dtype == torch.float64 else torch.float32
    mean_k, lse = _flash_cpu(q, k, k.detach(), 0.0, is_causal, attn_mask=mask, scale=scale)
    mean_l = scale * (q.detach().to(acc) * mean_k.to(acc)).sum(-1)  # (B, Hq, Lq)
    return (lse.to(acc).detach() - mean_l).clamp_min(0.0)


def sdpa_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    normalizer: str = "softmax",
    *,
    mask: Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    block_size: int = 256,
    fallback: bool = True,
    **params: Any,
) -> Tensor:
    """:func:`~attnlimits.kernels.streaming_attention`'s result through PyTorch's SDPA.

    Same arguments and output ``[B, Hq, Lq, dv]`` (q ``[B, Hq, Lq, d]``, k/v ``[B, Hkv, Lk, d]``,
    causal bottom-right aligned, boolean keep-mask), differentiable by SDPA's own backward.

    Parameters
    ----------
    dropout_p : float
        Attention dropout in ``[0, 1)`` on the applied weights (training); adaptive's statistics
        pass takes none. The streaming fallback has no dropout: ``ValueError`` there.
    block_size : int
        Used by the streaming fallback only.
    fallback : bool
        Where :func:`sdpa_unsupported` gives a reason (softcap, ``return_stats``, adaptive off
        the CPU), run :func:`streaming_attention` (True) or raise ``ValueError`` with the reason.
    """
    if not (isinstance(dropout_p, (int, float)) and 0.0 <= dropout_p < 1.0):
        raise ValueError(f"dropout_p must lie in [0, 1), got {dropout_p!r}")
    opts = resolve_params(normalizer, params)
    scale, _ = check_inputs(q, k, v, mask, scale, block_size)
    reason = sdpa_unsupported(normalizer, q)
    if reason is not None:
        if not fallback:
            raise ValueError(f"no SDPA form: {reason}")
        if dropout_p:
            raise ValueError(
                f"{reason}; the streaming kernel that runs it has no attention dropout: "
                "call model.eval(), set the attention dropout to 0, or pick a normaliser with "
                f"an SDPA form ({', '.join(SDPA_NORMALIZERS)})"
            )
        return streaming_attention(
            q,
            k,
            v,
            normalizer,
            mask=mask,
            causal=causal,
            scale=scale,
            block_size=block_size,
            **params,
        )
    if mask is not None:  # the caller's shape, not broadcast: SDPA broadcasts it without copies
        mask = mask.reshape((1,) * (4 - mask.ndim) + tuple(mask.shape))
    keep, is_causal, n = _layout(q, k, mask, causal)
    if normalizer in SINKS:
        sink = sink_logits(normalizer, opts, q.shape[1]).to(q.device)  # type: ignore[union-attr]
        if _has_lse(q) and v.shape[-1] == q.shape[-1] and not dropout_p:  # the kernel's terms
            fmask = _float_mask(keep, q.dtype)
            out = _SinkAttention.apply(q, k, v, sink, fmask, is_causal, scale)
        else:
            out = _sink_extra_key(q, k, v, sink, keep, is_causal, scale, dropout_p)
    elif normalizer == "softmax":
        out = _sdpa(q, k, v, keep, is_causal, scale / float(opts["temperature"]), dropout_p)
    elif normalizer == "adaptive":
        H = _entropy(q, k, _float_mask(keep, q.dtype), is_causal, scale)
        beta = adaptive_beta(H, opts["coeffs"], opts["threshold"])
        out = _sdpa(_scaled_rows(q, beta), k, v, keep, is_causal, scale, dropout_p)
    else:  # ssmax and the length scalings: c from the kept keys n
        acc = torch.float64 if q.dtype == torch.float64 else torch.float32
        c = inverse_temperature(normalizer, opts, n.to(acc))
        out = _sdpa(_scaled_rows(q, c), k, v, keep, is_causal, scale, dropout_p)
    if keep is not None:  # rows without a kept key give zeros, as the streaming kernel's
        out = torch.where((n > 0)[..., None], out, torch.zeros((), dtype=out.dtype))
    return out
