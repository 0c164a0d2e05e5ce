"""Per-row attention statistics streamed from q and k, never materialising a ``[query, key]`` map.

For ``p = softmax(l)``, ``l = scale·q·kᵀ`` over the kept keys of each row, one pass over key
blocks keeps the running maximum ``m``, ``Z = Σ e^{l−m}``, ``U = Σ e^{l−m}(l − m)`` (rescaled
flash-style when ``m`` grows, as in :mod:`attnlimits.kernels.streaming`) and the running minimum
of the kept logits. At the end, per row:

- entropy ``H = log Z − U/Z = −Σ p log p`` (paper B, App. G);
- maximum weight ``max p = e^{m−m}/Z = 1/Z`` (paper A, Lemma 1; paper B, Lemma 2.1);
- sink mass ``p_0 = e^{l_0−m}/Z``: the weight on key position 0 (the attention sink);
- logit spread ``Δ = max l − min l`` (paper B, Lemma 2.1 and Prop. 3.1);
- optionally the weight on the key ``offset`` positions before the query (``offsets``: 1 is the
  previous token, 0 the token itself), recomputed from its one logit: O(L·d) per offset.

Memory is O(L·d + block²) per head: this is what lets ``attnlimits scan`` and the training
monitor watch lengths whose maps would not fit. :func:`attnlimits.metrics.attention_entropy`,
:func:`~attnlimits.metrics.max_weight` and :func:`~attnlimits.metrics.logit_spread` are the
materialised definitions the tests compare against.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from attnlimits.kernels.spec import check_inputs

__all__ = ["RowStats", "attention_row_stats"]

# exp(-1000) is exactly 0 in float32/float64: masked logits (−inf) shifted by a finite max become
# a finite number with weight 0, so the entropy term 0·(l − m) is 0, not NaN.
_NEG_CLAMP = -1000.0


class RowStats(NamedTuple):
    """Per-row statistics of ``softmax(scale·q·kᵀ)``; every tensor is ``[B, Hq, Lq]`` (float32,
    float64 for float64 input) except ``n_keys`` (int64) and ``offset_weights``
    (``[B, Hq, Lq, n_offsets]``). A row with no kept key has n_keys 0 and NaN elsewhere."""

    entropy: Tensor
    max_weight: Tensor
    sink_mass: Tensor
    logit_spread: Tensor
    n_keys: Tensor
    offset_weights: Tensor


def attention_row_stats(
    q: Tensor,
    k: Tensor,
    *,
    mask: Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
    offsets: Sequence[int] = (),
    block_size: int = 512,
) -> RowStats:
    """Entropy, maximum weight, sink mass, logit spread (and offset weights) of every row.

    Parameters
    ----------
    q : Tensor
        Queries ``[B, Hq, Lq, d]``.
    k : Tensor
        Keys ``[B, Hkv, Lk, d]``, ``Hq`` a multiple of ``Hkv`` (query head ``h`` reads key head
        ``h // (Hq // Hkv)``, as in grouped-query attention).
    mask : Tensor, optional
        Boolean keep-mask (True = attend) broadcastable to ``[B, Hq, Lq, Lk]``.
    causal : bool
        Query ``i`` sits at key position ``Lk − Lq + i`` and sees keys at or before it.
    scale : float, optional
        Logit scale, default ``1/√d`` (the model's own ``scaling``).
    offsets : sequence of int
        Report the weight on key ``position − offset`` for each offset (0 where that key does
        not exist or is not kept).
    block_size : int
        Query rows and key columns per block.
    """
    scale, mask = check_inputs(q, k, k, mask, scale, block_size)
    B, Hq, Lq, _ = q.shape
    Hkv, Lk = k.shape[1], k.shape[2]
    G = Hq // Hkv
    acc = torch.float64 if q.dtype == torch.float64 else torch.float32
    shift = Lk - Lq  # query i sits at key position shift + i
    offs = torch.as_tensor(list(offsets), dtype=torch.long, device=q.device).reshape(-1)
    kf = k.to(acc)
    rows = [torch.empty((B, Hkv, G, Lq), dtype=acc, device=q.device) for _ in range(4)]
    counts = torch.empty((B, Hkv, G, Lq), dtype=torch.int64, device=q.device)
    at_offsets = torch.zeros((B, Hkv, G, Lq, offs.numel()), dtype=acc, device=q.device)
    mask5 = None if mask is None else mask.unflatten(1, (Hkv, G))  # a view
    for i0 in range(0, Lq, block_size):
        i1 = min(i0 + block_size, Lq)
        qpos = torch.arange(i0, i1, device=q.device) + shift
        blk = _Block(
            q=(q[:, :, i0:i1].to(acc) * scale).unflatten(1, (Hkv, G)),  # (B, Hkv, G, bq, d)
            k=kf,
            qpos=qpos,
            mask=None if mask5 is None else mask5[:, :, :, i0:i1],
            causal=causal,
        )
        m = torch.full((B, Hkv, G, i1 - i0), -math.inf, dtype=acc, device=q.device)
        Z, U = torch.zeros_like(m), torch.zeros_like(m)
        lo = torch.full_like(m, math.inf)
        n = torch.zeros(m.shape, dtype=torch.int64, device=q.device)
        stop = Lk if not causal else max(0, min(Lk, shift + i1))
        for j0 in range(0, stop, block_size):
            j1 = min(j0 + block_size, Lk)
            s = blk.q @ kf[:, :, None, j0:j1].transpose(-1, -2)  # (B, Hkv, G, bq, bk)
            keep = _keep(blk, torch.arange(j0, j1, device=q.device).expand(len(qpos), -1))
            n = n + keep.sum(-1)
            lo = torch.minimum(lo, s.masked_fill(~keep, math.inf).amin(-1))
            s = s.masked_fill_(~keep, -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            alpha = torch.exp(m - m_safe)
            dev = s.sub_(m_safe[..., None]).clamp_min_(_NEG_CLAMP)
            e = torch.exp(dev)
            delta = torch.where(Z > 0, m - m_safe, torch.zeros_like(m))
            U = alpha * (U + delta * Z) + (e * dev).sum(-1)
            Z = alpha * Z + e.sum(-1)
            m = m_new
        has = n > 0
        Zs = torch.where(has, Z, torch.ones_like(Z))
        m_safe = torch.where(has, m, torch.zeros_like(m))
        first = torch.zeros((len(qpos), 1), dtype=torch.long, device=q.device)
        sink = _weight_at(blk, first, m_safe, Zs)[..., 0]
        H = (torch.log(Zs) - U / Zs).clamp_min(0.0)
        nan = torch.full_like(Z, math.nan)
        for dst, val in zip(rows, (H, 1.0 / Zs, sink, m - lo), strict=True):
            dst[..., i0:i1] = torch.where(has, val, nan)
        counts[..., i0:i1] = n
        if offs.numel():
            at_offsets[..., i0:i1, :] = _weight_at(blk, qpos[:, None] - offs[None, :], m_safe, Zs)
    H_all, w_max, w_sink, spread = (r.reshape(B, Hq, Lq) for r in rows)
    return RowStats(
        H_all, w_max, w_sink, spread, counts.reshape(B, Hq, Lq), at_offsets.reshape(B, Hq, Lq, -1)
    )


class _Block(NamedTuple):
    q: Tensor  # (B, Hkv, G, bq, d), scaled, in the accumulation dtype
    k: Tensor  # (B, Hkv, Lk, d), in the accumulation dtype
    qpos: Tensor  # (bq,) key position of each query row
    mask: Tensor | None  # (B, Hkv, G, bq, Lk) keep-mask of these rows, a view
    causal: bool


def _keep(blk: _Block, idx: Tensor) -> Tensor:
    """Keep-mask ``(B|1, Hkv|1, G|1, bq, n)`` of the keys ``idx`` ``(bq, n)`` of each row."""
    Lk = blk.k.shape[2]
    keep = (idx >= 0) & (idx < Lk)
    if blk.causal:
        keep = keep & (idx <= blk.qpos[:, None])
    keep5 = keep[None, None, None]
    if blk.mask is not None:
        where = idx.clamp(0, Lk - 1).expand(*blk.mask.shape[:3], *idx.shape)
        keep5 = keep5 & blk.mask.gather(-1, where)
    return keep5


def _weight_at(blk: _Block, idx: Tensor, m: Tensor, Z: Tensor) -> Tensor:
    """Weights ``e^{l−m}/Z`` on the keys ``idx`` ``(bq, n)`` of each row; 0 where not kept."""
    kg = blk.k[:, :, idx.clamp(0, blk.k.shape[2] - 1)]  # (B, Hkv, bq, n, d)
    logit = (blk.q[..., None, :] * kg[:, :, None]).sum(-1)  # (B, Hkv, G, bq, n)
    w = torch.exp((logit - m[..., None]).clamp_max(0.0)) / Z[..., None]
    return torch.where(_keep(blk, idx), w, torch.zeros_like(w))
