"""Theorem 1.2's closed forms of E (derived and printed) and its Jensen-gap bounds, per row
and N."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from attnlimits.metrics._fused.rows import FlatRows, njit, prange, threads
from attnlimits.metrics._fused.selection import as_dtype

__all__ = ["expectation_rows"]


@njit(cache=True, fastmath={"reassoc", "contract", "nsz"})
def _derived_sq(aa: Any, bb: Any, xb: Any, c: Any) -> Any:  # pragma: no cover
    """||α_i(1+c)x_i − c x̄||² = A + c·2(A − B) + c²(A − 2B + ||x̄||²) from ``aa`` = A =
    α_i²||x_i||², ``bb`` = B = α_i⟨x_i, x̄⟩, ``xb`` = ||x̄||²: the derived form's summand
    (squared), which is also ||μ_i||²."""
    return aa + c * ((aa - bb) + (aa - bb) + c * (aa - (bb + bb) + xb))


@njit(parallel=True, cache=True, fastmath={"reassoc", "contract", "nsz"})
def _expectation_kernel(  # pragma: no cover - compiled by numba
    alpha: Any,
    keep: Any,
    kend: Any,
    n_keys: Any,
    sqs: Any,
    table: Any,
    inner: Any,
    ns: Any,
    want_derived: bool,
    want_main: bool,
    gap_at: Any,
    gap_forms: Any,
    out_derived: Any,
    out_main: Any,
    out_gap: Any,
) -> None:
    rows = alpha.shape[0]
    n_n = ns.shape[0]
    for r in prange(rows):
        k = kend[r]
        sq = sqs[table[r]]
        a = alpha[r]
        b_in = inner[r]
        length = n_keys[r]
        zero = as_dtype(alpha, 0.0)
        y_total = zero  # Σ_kept α_j²||x_j||²
        xb = zero  # ||x̄||² = Σ_i α_i ⟨x_i, x̄⟩
        for i in range(k):
            if keep[r, i]:
                y_total += a[i] * a[i] * sq[i]
                xb += a[i] * b_in[i]
        for jn in range(n_n):
            n = ns[jn]
            if length < n + 1:
                out_derived[r, jn] = np.nan
                out_main[r, jn] = np.nan
                for f in range(gap_forms.shape[0]):
                    out_gap[f, r, jn] = np.nan
                continue
            c = as_dtype(alpha, n / (length - 1.0))  # N/(L−1)
            outside = as_dtype(alpha, (length - n) / length)  # P(i ∉ I_N)
            if want_derived:  # Σ ||α_i(1+c)x_i − c x̄||
                total = zero
                for i in range(k):
                    if keep[r, i]:
                        aa = a[i] * a[i] * sq[i]
                        bb = a[i] * b_in[i]
                        total += math.sqrt(max(_derived_sq(aa, bb, xb, c), zero))
                out_derived[r, jn] = outside * total
            # printed: ||(α_i + c)x_i − x̄||² = (A − 2B + ||x̄||²) + c·2(α_i||x_i||² − ⟨x_i, x̄⟩)
            # + c²||x_i||²
            if want_main:
                total = zero
                for i in range(k):
                    if keep[r, i]:
                        aa = a[i] * a[i] * sq[i]
                        bb = a[i] * b_in[i]
                        rest = aa - (bb + bb) + xb
                        lin = (a[i] * sq[i] - b_in[i]) + (a[i] * sq[i] - b_in[i])
                        total += math.sqrt(max(rest + c * (lin + c * sq[i]), zero))
                out_main[r, jn] = outside * total
            if gap_at[jn]:  # the Jensen-gap bounds (theory.distance.jensen_gap_bound)
                # main text and Eq. 25 share Σ_i (Σ_{j≠i} α_j²||x_j||²) / (2||μ_i||); sharp sums
                # √(||μ_i||² + v_i) − ||μ_i||; one pass over the keys for all of them
                m_ = length - 1.0
                v_scale = as_dtype(alpha, n * (m_ - n) / (m_ * m_ * max(m_ - 1.0, 1.0)))
                m32 = as_dtype(alpha, m_)
                shared = zero
                sharp = zero
                for i in range(k):
                    if keep[r, i]:
                        aa = a[i] * a[i] * sq[i]
                        bb = a[i] * b_in[i]
                        rest = aa - (bb + bb) + xb  # ||α_i x_i − x̄||²
                        mean = math.sqrt(max(_derived_sq(aa, bb, xb, c), zero))  # ||μ_i||
                        others = y_total - aa  # Σ_{j≠i} α_j²||x_j||²
                        if others > zero:  # no spread: the term is 0, even where μ_i = 0
                            shared += others / (mean + mean)
                        var = max(v_scale * (m32 * others - max(rest, zero)), zero)
                        sharp += math.sqrt(mean * mean + var) - mean
                for f in range(gap_forms.shape[0]):
                    if gap_forms[f] == 0:  # main text: N/(L−1)
                        out_gap[f, r, jn] = outside * c * shared
                    elif gap_forms[f] == 1:  # Eq. 25: N(L−N−1), 0 at N = L − 1
                        factor = as_dtype(alpha, n * (length - n - 1.0))
                        out_gap[f, r, jn] = outside * factor * shared if factor > zero else zero
                    else:
                        out_gap[f, r, jn] = outside * sharp


_GAP_CODES = {"main_text": 0, "appendix": 1, "sharp": 2}


@threads
def expectation_rows(
    rows: FlatRows,
    gram: np.ndarray,
    inner: Tensor,
    ns: Sequence[int],
    forms: Sequence[str],
    gap_ns: Sequence[int] = (),
    gap_forms: Sequence[str] = (),
) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """Theorem 1.2's E (``forms`` among derived, main_text) for every N, and the Jensen-gap
    bounds (``gap_forms``) at ``gap_ns`` (NaN at the other N); [*batch, Q, n_N] each.

    ``gram`` [U, K, K] = x xᵀ per table (its diagonal, ||x_i||², is read); ``inner`` [R, K] =
    ⟨x_i, x̄⟩ per row, x̄ = Σ α_i x_i (||x̄||² = Σ_i α_i ⟨x_i, x̄⟩).
    """
    sqs = np.ascontiguousarray(np.diagonal(gram, axis1=-2, axis2=-1))
    n_values = np.asarray(sorted(ns), dtype=np.int64)
    r_count, n_n = rows.alpha.shape[0], n_values.size
    dtype = rows.alpha.dtype
    gap_at = np.isin(n_values, np.asarray(list(gap_ns), dtype=np.int64))
    codes = np.asarray([_GAP_CODES[f] for f in gap_forms], dtype=np.int64)
    out_d = np.empty((r_count, n_n), dtype=dtype)
    out_m = np.empty((r_count, n_n), dtype=dtype)
    out_g = np.full((max(1, codes.size), r_count, n_n), np.nan, dtype=dtype)
    _expectation_kernel(
        rows.alpha,
        rows.keep,
        rows.kend,
        rows.n_keys,
        sqs,
        rows.table,
        inner.reshape(r_count, -1).contiguous().numpy(),
        n_values,
        "derived" in forms,
        "main_text" in forms,
        gap_at,
        codes,
        out_d,
        out_m,
        out_g,
    )
    shape = (*rows.batch, rows.q, n_n)
    exp = {}
    if "derived" in forms:
        exp["derived"] = torch.from_numpy(out_d).view(shape)
    if "main_text" in forms:
        exp["main_text"] = torch.from_numpy(out_m).view(shape)
    gaps = {f: torch.from_numpy(out_g[i]).view(shape) for i, f in enumerate(gap_forms)}
    return exp, gaps
