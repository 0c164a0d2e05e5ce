"""d_1 of Theorem 1.1 (Mudarisov et al., NeurIPS 2025): the largest distance between a selected
key and a kept key outside I_N, per attention row, from the head's [K, K] pairwise distances.

Private to :mod:`attnlimits.metrics.distance`: the key-pair tables (:class:`Pairwise`, built
once per head and cut to a query block's keys) and d_1 through their running maximum for
prefix-shaped rows (causal or unmasked), else by a loop over the N selected keys (never over
tokens).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from attnlimits._grad import sqrt0
from attnlimits.metrics._topn import TopNRows, table_index

__all__ = ["Pairwise", "cut", "d1", "d1_loop", "pairwise"]

#: Elements per temporary in the d_1 pass (16 MiB in float64): bounds memory, not results.
_CHUNK = 2**21


class Pairwise(NamedTuple):
    """Key-pair tables of one head (or of shared x), reused by every query block and N."""

    dist: Tensor  # ||x_i − x_j||, (..., K, K)
    prefix_max: Tensor  # [j, t] = max_{i ≤ t} dist[j, i]
    prefix_arg: Tensor  # the i attaining it (int64)


def pairwise(x: Tensor) -> Pairwise:
    """||x_i − x_j|| for every pair of keys and its running maximum along i."""
    sq = (x * x).sum(-1).unsqueeze(-2)
    gram = x @ x.mT  # (..., K, K)
    dist = sqrt0(sq.mT + sq - 2 * gram)  # 0 on the diagonal, with gradient 0 there
    prefix_max, prefix_arg = torch.cummax(dist, dim=-1)
    return Pairwise(dist, prefix_max, prefix_arg)


def cut(pair: Pairwise | None, k: int) -> Pairwise | None:
    """The key-pair tables of keys 0..k-1 (a query block cut to its keys; running maxima along
    i stay exact since they only look back)."""
    if pair is None or pair.dist.shape[-1] == k:
        return pair
    return Pairwise(*(t[..., :k, :k] for t in pair))


def d1(r: TopNRows, idx: Tensor, sel: Tensor, pair: Pairwise) -> Tensor:
    """d_1 = max_{kept i ∉ I_N, j ∈ I_N} ||x_i − x_j|| per row (Theorem 1.1); ``idx`` [..., Q, N].

    Fast path, exact, for rows whose kept keys are a prefix 0..t (causal or no mask): the
    largest candidate max_{j∈I_N} max_{i≤t} ||x_j − x_i|| is read from the running maximum,
    O(N) per row instead of O(N·K). It is d_1 whenever some j reaches it with an i ∉ I_N
    (then that pair is admissible and no admissible pair is larger). The other rows (measured
    under 8 % at N = 100 on SmolLM2, none at N = 1) and rows of other masks loop over the
    N selected keys (:func:`d1_loop`).
    """
    k, (q, n) = pair.dist.shape[-1], idx.shape[-2:]
    batch = torch.broadcast_shapes(pair.dist.shape[:-2], idx.shape[:-2], r.keep.shape[:-2])
    table = table_index(pair.dist, 1).expand(*batch, q).reshape(-1)  # (R,): dist table of a row
    flat_idx = idx.expand(*batch, q, n).reshape(-1, n)  # (R, N)
    sel_f = sel.expand(*batch, q, k).reshape(-1, k)
    keep_f = r.keep.expand(*batch, q, k).reshape(-1, k)
    count = r.n_keys.expand(*batch, q).reshape(-1).long()
    prefix = (keep_f == (torch.arange(k, device=idx.device) < count[:, None])).all(-1)
    last = (count - 1).clamp_min(0)[:, None].expand_as(flat_idx)
    pm = pair.prefix_max.reshape(-1, k, k)[table[:, None], flat_idx, last]  # (R, N)
    arg = pair.prefix_arg.reshape(-1, k, k)[table[:, None], flat_idx, last]
    best = pm.amax(-1)
    admissible = pm.masked_fill(sel_f.gather(-1, arg), -math.inf).amax(-1)
    out = best.clone()
    slow = (~prefix | (admissible < best)) & (count >= n + 1)
    rows = slow.nonzero().squeeze(-1)
    if rows.numel():
        blocked = ~(keep_f[rows] & ~sel_f[rows])
        out[rows] = d1_loop(pair.dist.reshape(-1, k, k), table[rows], flat_idx[rows], blocked)
    return out.view(*batch, q)


def d1_loop(dist: Tensor, table: Tensor, idx: Tensor, blocked: Tensor) -> Tensor:
    """max over j ∈ ``idx`` [R, N] and unblocked i of ``dist[table, j, i]``, chunked over j."""
    (rows_total, n), k = idx.shape, dist.shape[-1]
    flat = dist.reshape(-1, k)  # row of (table b, key j): b·K + j
    idx = idx + (table * k)[:, None]
    out = torch.full((rows_total,), -math.inf, dtype=dist.dtype, device=dist.device)
    step = max(1, _CHUNK // max(1, rows_total * k))  # selected keys per pass
    for t in range(0, n, step):
        j = idx[:, t : t + step]  # (R, c)
        got = flat.index_select(0, j.reshape(-1)).view(rows_total, j.shape[1], k)
        got.masked_fill_(blocked.unsqueeze(1), -math.inf)  # ||x_j − x_i||, i kept and ∉ I_N
        out = torch.maximum(out, got.amax((-2, -1)))
    return out
