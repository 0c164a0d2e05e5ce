"""The nested top-N (or random) sets of paper A's Eqs. 6–12, one row at a time: d̃ (Eq. 7), the
ball radius and N_s (Eq. 10), Theorem 1.1's parts; and δ (Assumption 2) by direct differences."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from attnlimits.metrics._fused.rows import FlatRows, njit, prange, threads

__all__ = ["TopNOut", "pairwise_min", "separability_rows", "topn_rows"]


@njit(cache=True, fastmath={"reassoc", "contract", "nsz"})
def _add_key(acc: Any, a: float, grow: Any, k: int) -> None:  # pragma: no cover - numba
    for i in range(k):
        acc[i] += a * grow[i]


# The reductions below vectorise under "no NaN, no inf" (their values are finite); they are
# kept free of "reassoc", which may rewrite t + (1 − w)·B as (t + B) − w·B.


@njit(cache=True, fastmath={"nnan", "ninf"})
def _far(grow: Any, sq: Any, w: Any, key: int, k: int) -> Any:  # pragma: no cover - numba
    """max_{i<k, w_i = 1} ||x_key − x_i||² (w ∈ {0, 1}; squared distances are ≥ 0, so the
    product with w drops the others)."""
    best = grow[0] * 0.0
    s_key = sq[key]
    for i in range(k):
        best = max(best, (s_key + sq[i] - (grow[i] + grow[i])) * w[i])
    return best


@njit(cache=True, fastmath={"nnan", "ninf"})
def _wmax(values: Any, w: Any, k: int) -> Any:  # pragma: no cover - numba
    """max_{i<k} values_i·w_i for values ≥ 0 and w ∈ {0, 1}."""
    best = values[0] * 0.0
    for i in range(k):
        best = max(best, values[i] * w[i])
    return best


@njit(cache=True, fastmath={"nnan", "ninf"})
def _near(terms: Any, w: Any, k: int) -> Any:  # pragma: no cover - numba
    """min_{i<k, w_i = 1} terms_i (w ∈ {0, 1}; 1e300 where no w_i is 1)."""
    low = 1e300
    for i in range(k):
        low = min(low, terms[i] if w[i] > 0.0 else 1e300)
    return low


@njit(cache=True)
def as_dtype(like: Any, value: float) -> Any:  # pragma: no cover - numba
    """``value`` in ``like``'s dtype (keeps float32 loops in float32)."""
    out = np.empty(1, dtype=like.dtype)
    out[0] = value
    return out[0]


@njit(parallel=True, cache=True, fastmath={"reassoc", "contract", "nsz"})
def _topn_kernel(  # pragma: no cover - compiled by numba; tested through topn_rows
    alpha: Any,
    keep: Any,
    kend: Any,
    n_keys: Any,
    order: Any,
    gram: Any,
    sqs: Any,
    table: Any,
    ns: Any,
    want_sum: bool,
    want_min: bool,
    bound_at: Any,
    prefix: Any,
    pmax: Any,
    parg: Any,
    out_sum: Any,
    out_min: Any,
    out_d1: Any,
    out_maxnorm: Any,
    out_mass: Any,
) -> None:
    rows = alpha.shape[0]
    n_n = ns.shape[0]
    for r in prange(rows):
        k = kend[r]
        t = table[r]
        g = gram[t]
        sq = sqs[t]
        a = alpha[r]
        o = order[r]
        acc = np.zeros(k, dtype=alpha.dtype)
        terms = np.empty(k if want_min else 0, dtype=alpha.dtype)
        w = np.zeros(k, dtype=alpha.dtype)  # 1: kept and not (yet) selected
        for i in range(k):
            if keep[r, i]:
                w[i] = 1.0
        zero = as_dtype(alpha, 0.0)
        j = 0
        for jn in range(n_n):
            n = ns[jn]
            if n_keys[r] < n + 1:
                out_sum[r, jn] = np.nan
                out_min[r, jn] = np.nan
                out_d1[r, jn] = np.nan
                out_maxnorm[r, jn] = np.nan
                out_mass[r, jn] = np.nan
                continue
            while j < n:  # the keys ranked j = N' … N − 1 join I_N
                key = o[j]
                _add_key(acc, a[key], g[key], k)
                w[key] = 0.0
                j += 1
            s_sq = zero
            for p in range(n):
                s_sq += a[o[p]] * acc[o[p]]
            if want_sum:
                total32 = zero
                for i in range(k):
                    term = a[i] * (a[i] * sq[i] - (acc[i] + acc[i])) + s_sq
                    total32 += w[i] * math.sqrt(max(term, zero))
                out_sum[r, jn] = total32
            if want_min:  # r² = min over kept i ∉ I_N (then one square root)
                for i in range(k):
                    terms[i] = a[i] * (a[i] * sq[i] - (acc[i] + acc[i])) + s_sq
                out_min[r, jn] = math.sqrt(max(_near(terms, w, k), 0.0))
            if bound_at[jn]:
                mass = zero
                top_sq = zero
                # d_1² = max_{i ∉ I_N, j ∈ I_N} ||x_i − x_j||². Per j ∈ I_N, an upper bound
                # on its part: ||x_j|| + max_{i ∉ I_N}||x_i|| (triangle inequality) and, in
                # prefix rows, the running maximum over every i ≤ t, exact when its argmax
                # is not in I_N. The j of the largest bound first; then every j whose bound
                # can still beat the best so far (the others are skipped): only those scan
                # their K distances.
                rest_norm = math.sqrt(_wmax(sq, w, k))  # max_{kept i ∉ I_N} ||x_i||
                reach = np.empty(n, dtype=np.float64)
                first = 0
                for p in range(n):
                    key = o[p]
                    mass += a[key]
                    top_sq = max(top_sq, sq[key])
                    bound = math.sqrt(sq[key]) + rest_norm
                    bound = bound * bound
                    if prefix[r]:
                        bound = min(bound, pmax[t, key, k - 1])
                    reach[p] = bound
                    if bound > reach[first]:
                        first = p
                d1_sq = 0.0
                for step in range(n + 1):
                    p = first if step == 0 else step - 1
                    if (step > 0 and p == first) or reach[p] * (1.0 + 1e-5) < d1_sq:
                        continue
                    key = o[p]
                    if prefix[r] and w[parg[t, key, k - 1]] > 0.0:
                        part = pmax[t, key, k - 1]
                    else:
                        part = _far(g[key], sq, w, key, k)
                    d1_sq = max(d1_sq, part)
                out_d1[r, jn] = math.sqrt(d1_sq)
                out_maxnorm[r, jn] = math.sqrt(top_sq)
                out_mass[r, jn] = mass


@njit(parallel=True, cache=True)  # no fastmath: exact ties (duplicate keys) give r = 0
def _separability_kernel(  # pragma: no cover - compiled by numba
    alpha: Any,
    keep: Any,
    kend: Any,
    n_keys: Any,
    order: Any,
    gram64: Any,
    table: Any,
    ns: Any,
    out_radius: Any,
    out_count: Any,
) -> None:
    """Eq. 10 in float64: r² = min_{kept i∉I_N} ||α_i x_i − s||² and N_s = #{i ∈ I_N :
    ||α_i x_i − s||² ≤ r²}, both from ⟨x_i, s⟩ accumulated from the float64 Gram rows (in
    rows whose I_N ends in near-zero weights every distance is ≈ ||s|| and float32 cannot
    order them); the two are compared as the torch path does, after the square root."""
    rows = alpha.shape[0]
    n_n = ns.shape[0]
    for r in prange(rows):
        k = kend[r]
        t = table[r]
        g = gram64[t]
        a = alpha[r]
        o = order[r]
        acc = np.zeros(k, dtype=np.float64)
        terms = np.empty(k, dtype=np.float64)
        diag = np.empty(k, dtype=np.float64)
        w = np.zeros(k, dtype=np.float64)
        for i in range(k):
            diag[i] = g[i, i]
            if keep[r, i]:
                w[i] = 1.0
        j = 0
        for jn in range(n_n):
            n = ns[jn]
            if n_keys[r] < n + 1:
                out_radius[r, jn] = np.nan
                out_count[r, jn] = np.nan
                continue
            while j < n:
                key = o[j]
                a_key = np.float64(a[key])
                g_key = g[key]
                for i in range(k):
                    acc[i] += a_key * g_key[i]
                w[key] = 0.0
                j += 1
            s_sq = 0.0
            for p in range(n):
                s_sq += a[o[p]] * acc[o[p]]
            for i in range(k):
                ai = np.float64(a[i])
                terms[i] = ai * (ai * diag[i] - 2.0 * acc[i]) + s_sq
            radius = math.sqrt(max(_near(terms, w, k), 0.0))
            count = 0
            for p in range(n):
                ap = np.float64(a[o[p]])
                inside = ap * (ap * diag[o[p]] - 2.0 * acc[o[p]]) + s_sq
                if math.sqrt(max(inside, 0.0)) <= radius:
                    count += 1
            out_radius[r, jn] = radius
            out_count[r, jn] = count


@njit(parallel=True, cache=True, fastmath={"reassoc", "contract", "nsz"})
def _pairwise_kernel(
    x: Any, keep: Any, out_all: Any, out_distinct: Any
) -> None:  # pragma: no cover
    """Per key i of each table: min_{kept j > i} ||x_i − x_j||² over all pairs and over pairs
    at distance > 0, by direct differences (float64 sums: a nonzero difference is never
    rounded to 0, so exact duplicates are told from near ones)."""
    tables, k, d = x.shape
    for p in prange(tables * k):
        t, i = p // k, p % k
        best_all = np.inf
        best_distinct = np.inf
        if keep[t, i]:
            xi = x[t, i]
            for j in range(i + 1, k):
                if not keep[t, j]:
                    continue
                xj = x[t, j]
                total = 0.0
                for c in range(d):
                    diff = np.float64(xi[c]) - np.float64(xj[c])
                    total += diff * diff
                best_all = min(best_all, total)
                if total > 0.0:
                    best_distinct = min(best_distinct, total)
        out_all[t, i] = best_all
        out_distinct[t, i] = best_distinct


class TopNOut(NamedTuple):
    """Per row and N, [*batch, Q, n_N] tensors (NaN where the row has fewer than N + 1 keys);
    fields not asked for are None."""

    distance: Tensor | None  # d̃ (Eq. 7)
    radius: Tensor | None  # min_{kept i ∉ I_N} ||α_i x_i − s_N||
    d1: Tensor | None  # Theorem 1.1's d_1, at ``bound_ns``
    max_norm: Tensor | None  # max_{j∈I_N} ||x_j||, at ``bound_ns``
    mass: Tensor | None  # ᾱ_N, at ``bound_ns``


def _empty(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return np.zeros(shape, dtype=dtype)


@threads
def topn_rows(
    rows: FlatRows,
    order: np.ndarray,
    gram: np.ndarray,
    ns: Sequence[int],
    *,
    distance: bool = True,
    radius: bool = False,
    bound_ns: Sequence[int] = (),
) -> TopNOut:
    """The nested-set quantities of :func:`_topn_kernel` for every N in ``ns`` (ascending).

    ``order`` [R, M ≥ max N]: each row's keys in selection order (kept keys first); ``gram``
    [U, K, K] = x xᵀ per table (:func:`gram_tables`); ``bound_ns`` the N at which to return
    the Theorem 1.1 parts.
    """
    n_values = np.asarray(sorted(ns), dtype=np.int64)
    r_count, n_n = rows.alpha.shape[0], n_values.size
    dtype = rows.alpha.dtype
    sqs = np.ascontiguousarray(np.diagonal(gram, axis1=-2, axis2=-1))
    bound_at = np.isin(n_values, np.asarray(list(bound_ns), dtype=np.int64))
    prefix = np.zeros(r_count, dtype=np.bool_)
    pmax, parg = _empty(0, 0, 0, dtype=dtype), _empty(0, 0, 0, dtype=np.int64)
    if bound_at.any():  # running maxima of ||x_j − x_i||² over i, per table and key j
        g, sq = torch.from_numpy(gram), torch.from_numpy(sqs)
        pm, pa = torch.cummax((sq.unsqueeze(-1) + sq.unsqueeze(-2) - 2 * g).clamp_min(0), dim=-1)
        pmax, parg = pm.numpy(), pa.numpy()
        prefix = rows.n_keys == rows.kend
    outs = [np.empty((r_count, n_n), dtype=dtype) for _ in range(5)]
    _topn_kernel(
        rows.alpha,
        rows.keep,
        rows.kend,
        rows.n_keys,
        order,
        gram,
        sqs,
        rows.table,
        n_values,
        distance,
        radius,
        bound_at,
        prefix,
        pmax,
        parg,
        *outs,
    )
    shape = (*rows.batch, rows.q, n_n)
    t = [torch.from_numpy(v).view(shape) for v in outs]
    return TopNOut(
        t[0] if distance else None,
        t[1] if radius else None,
        t[2] if bound_at.any() else None,
        t[3] if bound_at.any() else None,
        t[4] if bound_at.any() else None,
    )


@threads
def separability_rows(
    rows: FlatRows, order: np.ndarray, gram64: np.ndarray, ns: Sequence[int]
) -> tuple[Tensor, Tensor]:
    """(r, N_s) per row and N, [*batch, Q, n_N] each, float64 (:func:`_separability_kernel`)."""
    n_values = np.asarray(sorted(ns), dtype=np.int64)
    shape = (rows.alpha.shape[0], n_values.size)
    radius, count = np.empty(shape), np.empty(shape)
    _separability_kernel(
        rows.alpha,
        rows.keep,
        rows.kend,
        rows.n_keys,
        order,
        gram64,
        rows.table,
        n_values,
        radius,
        count,
    )
    out = (*rows.batch, rows.q, n_values.size)
    return torch.from_numpy(radius).view(out), torch.from_numpy(count).view(out)


@threads
def pairwise_min(x: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
    """(min over pairs, min over pairs at distance > 0) of ||x_i − x_j|| per table, over kept
    keys: ``x`` [..., K, d], ``keep`` [..., K] (broadcast to x's batch); inf where no pair."""
    lead, (k, d) = x.shape[:-2], x.shape[-2:]
    x3 = x.reshape(-1, k, d).contiguous()
    kp = keep.expand(*lead, k).reshape(-1, k).contiguous()
    out_all = np.empty((x3.shape[0], k))
    out_distinct = np.empty((x3.shape[0], k))
    _pairwise_kernel(x3.numpy(), kp.numpy(), out_all, out_distinct)
    best = [torch.from_numpy(v.min(-1, initial=np.inf)).sqrt() for v in (out_all, out_distinct)]
    return best[0].to(x.dtype).view(lead), best[1].to(x.dtype).view(lead)
