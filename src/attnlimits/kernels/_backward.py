"""The streamed kernel's autograd: a forward that keeps O(L) per-row statistics and a backward
that recomputes each block's weights (FlashAttention-2, Dao 2023, Algorithm 2, on the CPU).

Notation per query row ``i`` and key ``j``: ``l_ij = scale·q_i·k_j`` (capped to
``cap·tanh(l/cap)`` for softcap), ``t_ij = c_i·l_ij``, the applied weights
``w_ij = exp(t_ij − LSE_i)`` with ``LSE_i = log(e^{σ_i} + Σ_j e^{t_ij})`` (σ the sink logit of
softmax1 / sink_softmax; no term without a sink) and ``o_i = Σ_j w_ij v_j``. Given ``dO``:

- ``D_i = dO_i·o_i = Σ_j w_ij dP_ij`` with ``dP_ij = dO_i·v_j`` (the sink has value 0, so it
  adds nothing to ``o`` and its weight only enters through ``LSE``);
- ``dV_j = Σ_i w_ij dO_i`` and ``dt_ij = w_ij (dP_ij − D_i)``;
- ``dl_ij = c_i dt_ij``, times ``1 − tanh²(l_ij/cap)`` for softcap (c = 1). For constant c and
  c(n) of the length scalings (n counts keys: no gradient) that is all;
- adaptive, c = β(H_i) with ``H_i = −Σ_j p_ij log p_ij``, ``p = softmax(l)``, as paper B's
  Figure 4 listing (no stop_gradient): ``dc_i = Σ_j dt_ij l_ij = dO_i·Y_i − D_i E_i`` with
  ``Y_i = Σ_j w_ij l_ij v_j`` and ``E_i = Σ_j w_ij l_ij``, both accumulated by the forward, and
  ``∂H_i/∂l_ij = −p_ij (log p_ij + H_i)``, so ``dl_ij += −β′(H_i) dc_i p_ij (log p_ij + H_i)``
  with ``p`` recomputed from the row's ``LSE`` of ``l``;
- ``dq_i = scale·Σ_j dl_ij k_j``, ``dk_j = scale·Σ_i dl_ij q_i``.

Saved: q, k, v, o and per row c and LSE (adaptive adds H, the LSE of l, E and Y — Y is
[L, dv], the size of o). Nothing of size L² is kept; the backward holds a few blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from attnlimits.kernels._passes import NEG_CLAMP, Problem, block_scores, forward_blocks, key_range

__all__ = ["StreamedAttention", "beta_slope"]


def beta_slope(H: Tensor, coeffs: Sequence[float], threshold: float) -> Tensor:
    """dβ/dH of :func:`~attnlimits.normalizers.adaptive.adaptive_beta`: poly′(H) where
    ``H > threshold`` and ``poly(H) ≥ 1`` (where torch's clamp_min passes the gradient), else 0."""
    poly, slope = torch.zeros_like(H), torch.zeros_like(H)
    for a in coeffs:  # Horner for poly and its derivative together
        slope = slope * H + poly
        poly = poly * H + a
    return torch.where((H > threshold) & (poly >= 1.0), slope, torch.zeros_like(H))


class StreamedAttention(torch.autograd.Function):
    """``streaming_attention``'s output with an O(L)-memory, recomputing backward."""

    @staticmethod
    def forward(
        ctx: Any, q: Tensor, k: Tensor, v: Tensor, p: Problem, normalizer: str, opts: dict[str, Any]
    ) -> Tensor:
        f = forward_blocks(p, normalizer, opts, stats=False, grad=True)
        extra = (f.entropy, f.lse_l, f.lv, f.lbar) if normalizer == "adaptive" else ()
        ctx.save_for_backward(q, k, v, f.out, f.beta, f.lse, *extra)
        none = torch.empty(0)
        ctx.problem = p._replace(q5=none, k=none, v=none)  # masks, sinks; q, k, v saved above
        ctx.opts = opts
        B, Hkv, G, Lq, dv = f.out.shape
        return f.out.view(B, Hkv * G, Lq, dv)

    @staticmethod
    def backward(ctx: Any, dout: Tensor) -> tuple[Tensor | None, ...]:
        q, k, v, out, c, lse, *extra = ctx.saved_tensors
        B, Hkv, G, Lq, _ = out.shape
        p: Problem = ctx.problem._replace(q5=q.unflatten(1, (Hkv, G)), k=k, v=v)
        acc = p.acc
        dO5 = dout.unflatten(1, (Hkv, G)).to(acc)  # (B, Hkv, G, Lq, dv)
        D = (dO5 * out.to(acc)).sum(-1)  # (B, Hkv, G, Lq)
        g = None
        if extra:  # adaptive: β′(H)·dc per row
            H, lse_l, lv, lbar = extra
            g = beta_slope(H, ctx.opts["coeffs"], ctx.opts["threshold"])
            g = g * ((dO5 * lv).sum(-1) - D * lbar)
        dq = torch.empty(p.q5.shape, dtype=acc, device=q.device)  # (B, Hkv, G, Lq, d)
        dk = torch.zeros(k.shape, dtype=acc, device=k.device)
        dvv = torch.zeros(v.shape, dtype=acc, device=v.device)
        for i0 in range(0, Lq, p.block):
            i1 = min(i0 + p.block, Lq)
            bq = i1 - i0

            def rows(x: Tensor, i0: int = i0, i1: int = i1, bq: int = bq) -> Tensor:
                return x[:, :, :, i0:i1].reshape(B, Hkv, G * bq, *x.shape[4:])

            qf = (p.q5[:, :, :, i0:i1].to(acc) * p.scale).reshape(B, Hkv, G * bq, -1)
            adaptive = None
            if g is not None:
                H, lse_l = extra[0], extra[1]
                lse_l = torch.where(torch.isinf(lse_l), torch.zeros_like(lse_l), lse_l)
                adaptive = (rows(g), rows(H), rows(lse_l))
            dq_blk = _backward_rows(
                p, qf, rows(c), rows(lse), rows(dO5), rows(D), i0, i1, dk, dvv, adaptive
            )
            dq[:, :, :, i0:i1] = dq_blk.view(B, Hkv, G, bq, -1)
        dq4 = dq.flatten(1, 2).to(q.dtype)
        return dq4, dk.to(k.dtype), dvv.to(v.dtype), None, None, None


def _backward_rows(
    p: Problem,
    qf: Tensor,
    c: Tensor,
    lse: Tensor,
    dO: Tensor,
    D: Tensor,
    i0: int,
    i1: int,
    dk: Tensor,
    dv: Tensor,
    adaptive: tuple[Tensor, Tensor, Tensor] | None,
) -> Tensor:
    """dq of query rows [i0, i1) (``qf`` scaled, [B, Hkv, G·bq, d]); adds their share to dk, dv.

    Row tensors are [B, Hkv, G·bq]; ``adaptive`` = (β′(H)·dc, H, LSE of l) per row, or None.
    """
    lse_safe = torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)[..., None]
    dq = torch.zeros_like(qf)
    cc = c[..., None]
    qc = qf * cc  # the forward's scaled queries: t = c·l
    for j0 in key_range(p, i0, i1):
        j1 = min(j0 + p.block, p.k.shape[2])
        t, _, dcap = block_scores(p, qc, i0, i1, j0, j1, want_dcap=True)
        kb, vb = p.k[:, :, j0:j1].to(p.acc), p.v[:, :, j0:j1].to(p.acc)  # (B, Hkv, bk, ·)
        dl = dO @ vb.transpose(-1, -2)  # dP, (B, Hkv, G·bq, bk)
        if adaptive is not None:  # before t becomes w in place: p = softmax(l), l = t / c
            logp = (t / cc).sub_(adaptive[2][..., None]).clamp_min_(NEG_CLAMP)
            dH = logp.exp() * (logp + adaptive[1][..., None])  # −∂H/∂l
        w = t.sub_(lse_safe).exp_()  # the applied weights, 0 where masked
        dv[:, :, j0:j1] += w.transpose(-1, -2) @ dO  # (B, Hkv, bk, dv)
        dl = dl.sub_(D[..., None]).mul_(w).mul_(cc)  # c·dt
        if dcap is not None:
            dl = dl.mul_(dcap)
        if adaptive is not None:
            dl = dl.sub_(dH.mul_(adaptive[0][..., None]))
        dq += dl @ kb  # (B, Hkv, G·bq, d)
        dk[:, :, j0:j1] += dl.transpose(-1, -2) @ qf  # (B, Hkv, bk, d)
    return dq * p.scale
