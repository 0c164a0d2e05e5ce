"""Separability of the top-N tokens, per attention row (Mudarisov et al., NeurIPS 2025,
Section 2.2, Eqs. 10–12, Theorem 2; Algorithm 4).

Per row, with I_N the top-N kept keys and s = Σ_{i∈I_N} α_i x_i:

- r = min_{kept j ∉ I_N} ||s − α_j x_j||, so every non-selected scaled token lies outside the
  ball B_r(s) (the experiments' choice);
- N_s/N = #{i ∈ I_N : ||s − α_i x_i|| ≤ r} / N by direct count (Eq. 10);
- the two sides of Eq. 11 with ξ_i of Eq. 12 (:mod:`attnlimits.theory.geometry`).

The "expectation" E[N_s] of Theorem 2 is never specified (the tokens are fixed); the direct
count is one realisation and the row mean over a head is its empirical analogue. The lower
bound holds for every row's direct count (x on the sphere, pairwise distances ≥ δ); the
upper bound does not (it fails whenever N = 1). See ``docs/errata.md`` (theorem2_bounds).

Shapes: ``attn [..., Q, K]``, ``x [..., K, d]`` (leading dims broadcast), ``mask`` boolean
broadcastable to ``attn``; outputs ``attn.shape[:-1]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from attnlimits._checks import (
    check_finite,
    check_mask,
    check_nonempty,
    check_number,
    check_positive,
)
from attnlimits._grad import sqrt0
from attnlimits.metrics import _fused
from attnlimits.metrics._rows import empty_rows
from attnlimits.metrics._sphere import normalize_to_sphere, sphere_radius
from attnlimits.metrics._topn import (
    TopNRows,
    check_rows,
    gram_pays,
    key_ranks,
    n_grid,
    nested_products,
    prepare_rows,
    query_blocks,
    table_index,
)
from attnlimits.theory.geometry import check_geometry, separability_bounds

__all__ = [
    "SeparabilityMetrics",
    "min_pairwise_distance",
    "normalize_to_sphere",
    "separability_curve",
    "separability_metrics",
]


class SeparabilityMetrics(NamedTuple):
    """Per-row results of :func:`separability_metrics`, each ``attn.shape[:-1]``."""

    ratio: Tensor  # N_s / N by direct count, Eq. 10
    lower: Tensor  # Eq. 11 left side (valid bound); where r = 0 its limit r → 0⁺ (1 at N = 1)
    upper: Tensor  # Eq. 11 right side (not a valid bound, see errata)
    r: Tensor  # ball radius min_{j∉I_N} ||s − α_j x_j||
    valid: Tensor  # L ≥ N + 1


#: Rows of the pairwise-distance matrix held at once by :func:`min_pairwise_distances`.
_ROW_CHUNK = 1024


def min_pairwise_distance(
    x: Tensor, mask: Tensor | None = None, *, distinct: bool = False
) -> Tensor:
    """δ = min_{i≠j} ||x_i − x_j|| over kept keys (Assumption 2), per head.

    With ``distinct=True`` pairs of identical vectors (distance exactly 0, e.g. a repeated
    token in layer 0) are left out: δ over the *distinct* vectors, which is what the bounds of
    Theorem 2 can use once Assumption 2's failure is flagged (δ = 0 without it).

    Parameters
    ----------
    x : Tensor
        ``[..., K, d]``.
    mask : Tensor, optional
        Boolean keep-mask over keys, broadcastable to ``[..., K]``.
    distinct : bool
        Leave out pairs at distance 0.

    Returns
    -------
    Tensor
        δ ``[...]`` (computed without the Gram-matrix shortcut, so near-duplicates are exact);
        NaN where fewer than two keys (two distinct vectors) are kept. Repeated tokens give
        δ = 0.
    """
    return min_pairwise_distances(x, mask)[1 if distinct else 0]


def min_pairwise_distances(x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """(δ over all pairs, δ over distinct pairs) of :func:`min_pairwise_distance`, from one
    pass over the pairwise distances (rows in chunks, memory O(chunk·K)); Assumption 2 holds
    where the first is > 0."""
    check_finite(x, "x", allow_neg_inf=False)
    if x.ndim < 2:
        raise ValueError(f"x must be [..., K, d], got shape {tuple(x.shape)}")
    check_nonempty(x, -2, "x")
    if x.shape[-1] == 0:
        raise ValueError(f"x has no features (d = 0), shape {tuple(x.shape)}")
    if x.dtype in (torch.float16, torch.bfloat16):
        x = x.float()  # cdist has no half kernels on CPU
    k = x.shape[-2]
    keys = torch.empty(x.shape[:-1], dtype=torch.bool, device=x.device)  # [..., K], for the shape
    keep = check_mask(mask, keys, of="x's keys [..., K]")
    kept = None if keep is None else keep.expand(x.shape[:-1])
    # beyond √max squares overflow: such a head is scaled by a power of two (exact, its span
    # checked) and its δ scaled back. inf below means "no pair" (NaN)
    size = x.abs() if kept is None else x.abs().masked_fill(~kept[..., None], 0.0)
    top = size.amax(dim=(-2, -1))  # per head [...], over kept keys: a dropped key plays no part
    huge = top > math.sqrt(torch.finfo(x.dtype).max) / (4 * math.sqrt(x.shape[-1]))
    shift = torch.where(huge, torch.frexp(top)[1], 0)
    if bool(huge.any()):
        _check_span(size, kept, huge, top)
        x = torch.ldexp(x, -shift[..., None, None]).to(x.dtype)
    if _fused.enabled(x) and k > 1:
        flags = torch.ones(x.shape[:-1], dtype=torch.bool) if kept is None else kept
        pair_all, pair_distinct = _fused.pairwise_min(x, flags)
        return _no_pair_nan(pair_all, shift), _no_pair_nan(pair_distinct, shift)
    best = [torch.full(x.shape[:-2], math.inf, dtype=x.dtype, device=x.device) for _ in range(2)]
    for i0 in range(0, k, _ROW_CHUNK):  # rows in chunks: memory O(chunk·K), not O(K²)
        i1 = min(i0 + _ROW_CHUNK, k)
        dist = torch.cdist(x[..., i0:i1, :], x, compute_mode="donot_use_mm_for_euclid_dist")
        rows = torch.arange(i0, i1, device=x.device)
        pair = rows[:, None] != torch.arange(k, device=x.device)[None, :]  # (chunk, K)
        if kept is not None:
            pair = pair & kept[..., i0:i1, None] & kept[..., None, :]
        for j, ok in enumerate((pair, pair & (dist > 0))):
            best[j] = torch.minimum(best[j], dist.masked_fill(~ok, math.inf).amin((-2, -1)))
    return _no_pair_nan(best[0], shift), _no_pair_nan(best[1], shift)


#: Below this fraction of a scaled head's largest entry, squared differences underflow.
_SPAN = 2.0**-480


def _check_span(size: Tensor, kept: Tensor | None, huge: Tensor, top: Tensor) -> None:
    """Refuse a huge head with kept entries below ``_SPAN`` of its largest (they'd read 0)."""
    small = huge[..., None, None] & (size < top[..., None, None] * _SPAN)
    if bool((small if kept is None else small & kept[..., None]).any()):
        big = float(top[huge].max())
        raise ValueError(
            f"x spans too many orders of magnitude in one head for exact distances (entries up "
            f"to {big:.3g} beside entries below {big * _SPAN:.3g}, whose differences would "
            "underflow); rescale or split x"
        )


def _no_pair_nan(best: Tensor, shift: Tensor) -> Tensor:
    """inf (no pair of kept keys) as NaN, then undo the power-of-two scaling of each head."""
    out = best.masked_fill(torch.isinf(best), math.nan)
    return torch.ldexp(out, shift).to(out.dtype) if bool(shift.any()) else out


def separability_metrics(
    attn: Tensor,
    x: Tensor,
    n: int,
    *,
    mask: Tensor | None = None,
    radius: float | None = None,
    delta: float | Tensor | None = None,
    rtol: float = 1e-3,
) -> SeparabilityMetrics:
    """N_s/N by direct count (Eq. 10) and the Theorem 2 bounds (Eq. 11) for every row.

    Parameters
    ----------
    attn : Tensor
        Attention maps ``[..., Q, K]``.
    x : Tensor
        Per-key vectors on a sphere ``[..., K, d]`` (see :func:`normalize_to_sphere`).
    n : int
        N, 1 ≤ N < K.
    mask : Tensor, optional
        Boolean keep-mask broadcastable to ``attn``.
    radius : float, optional
        M > 0; inferred per head from the kept norms when omitted. Either way every kept norm
        must equal M within ``rtol`` (relative, >= 0; else ``ValueError``), or within 2 eps of
        ``x``'s dtype where that is larger (bfloat16, float16: what rounding leaves of
        :func:`normalize_to_sphere`).
    delta : float or Tensor, optional
        δ; by default :func:`min_pairwise_distance` per head over keys kept by some row.

    Returns
    -------
    SeparabilityMetrics
        Per-row tensors; NaN where ``valid`` (L ≥ N + 1) is False.
    """
    curve = separability_curve(attn, x, [n], mask=mask, radius=radius, delta=delta, rtol=rtol)
    return SeparabilityMetrics(*(f.squeeze(-1) for f in curve))


def separability_curve(
    attn: Tensor,
    x: Tensor,
    ns: Sequence[int],
    *,
    mask: Tensor | None = None,
    radius: float | None = None,
    delta: float | Tensor | None = None,
    rtol: float = 1e-3,
) -> SeparabilityMetrics:
    """:func:`separability_metrics` for every N in ``ns`` (sorted, deduplicated).

    Fields are ``[..., Q, n_N]`` (the grid axis last). The work N leaves alone is done
    once: the checks, the rank of every key (the top-N sets are nested), s_N by row gathers
    (:func:`~attnlimits.metrics._topn.nested_products`). Per N,
    the ball radius needs ⟨x_j, s⟩ for every key (one [Q, d]×[d, K] product, or the Gram route
    when x is shared by every head); the inside distances
    ||s − α_i x_i||, i ∈ I_N, come in float64 from the Gram block of I_N (the selected rows),
    ||s − α_i x_i||² = αᵀG α − 2α_i(Gα)_i + α_i²G_ii, which is exactly 0 at N = 1.
    """
    n_values = n_grid(ns)
    check_rows(attn, x, mask, n_values)
    if radius is not None:
        check_positive(radius, "radius", tensor_ok=False)
    check_number(rtol, "rtol")
    if not (math.isfinite(rtol) and rtol >= 0):
        raise ValueError(f"rtol must be finite and >= 0, got {rtol!r:.40}")
    if delta is not None:
        check_number(delta, "delta", tensor_ok=True)
    if (empty := empty_rows(attn, x, mask, 5, len(n_values))) is not None:
        return SeparabilityMetrics(*empty)  # no rows: empty in, empty out
    r = prepare_rows(attn, x, n_values[-1], mask, check=False)
    batch = torch.broadcast_shapes(r.keep.shape[:-2], r.x.shape[:-2])
    key_keep = r.keep.any(-2).expand(*batch, r.x.shape[-2])  # (..., K)
    x_all = r.x.expand(*batch, *r.x.shape[-2:])
    m = sphere_radius(
        x_all, key_keep, radius, rtol, x.dtype if x.is_floating_point() else r.x.dtype
    )
    if delta is None:
        delta = min_pairwise_distance(x_all, key_keep).nan_to_num(0.0)
    delta = torch.as_tensor(delta, dtype=r.attn.dtype, device=attn.device)
    check_geometry(m, delta)
    m, delta = m.unsqueeze(-1), delta.unsqueeze(-1) if delta.ndim > 0 else delta  # per row
    fused = _fused_curve(r, n_values, m, delta, (attn, mask))
    if fused is not None:
        return fused
    gram64 = None  # x shared by every head (hidden states): the float64 Gram matrix, once
    if math.prod(r.x.shape[:-2]) == 1 and (
        n_values[-1] < r.x.shape[-1] or gram_pays(r.x, n_values)
    ):
        x64 = r.x.double().reshape(r.x.shape[-2:])
        gram64 = x64 @ x64.mT  # (K, K)
    shared = gram64 if gram64 is not None and gram_pays(r.x, n_values) else None  # float64
    inside_gram = gram64 if gram64 is not None and n_values[-1] < r.x.shape[-1] else None
    parts = [
        _block(
            prepare_rows(a, x[..., :k, :], n_values[0], keep, check=False),
            n_values,
            m,
            delta,
            r.x[..., :k, :],
            None if shared is None else shared[:k, :k],
            None if inside_gram is None else inside_gram[:k, :k],
        )
        for a, keep, k in query_blocks(attn, mask, n_values[-1] + 1)
    ]
    # query blocks join on the row axis, second-last (the grid axis is last)
    return SeparabilityMetrics(*(torch.cat(f, -2) for f in zip(*parts, strict=True)))


def _fused_curve(
    r: TopNRows,
    n_values: tuple[int, ...],
    m: Tensor,
    delta: Tensor,
    source: tuple[Tensor, Tensor | None],
) -> SeparabilityMetrics | None:
    """:func:`separability_curve` through the fused CPU kernels (:mod:`attnlimits.metrics._fused`:
    the ball radius from the same recurrence as d̃, N_s counted in float64 from the Gram
    tables of I_N), or None where they do not apply."""
    if not _fused.enabled(r.attn, r.x, r.keep):
        return None
    rows = _fused.flat_rows(r.attn, r.keep, r.x, source=source)
    gram64 = _fused.gram_tables(rows, torch.float64)
    if gram64 is None:
        return None
    order = _fused.top_order(rows, n_values[-1])
    radius, count = _fused.separability_rows(rows, order, gram64, n_values)
    shape = radius.shape  # (*batch, Q, n_N)
    alpha = torch.from_numpy(rows.alpha).view(*shape[:-1], -1)
    top = torch.from_numpy(order).view(*shape[:-1], -1)
    n_keys = r.n_keys.expand(shape[:-1])
    nan = torch.tensor(math.nan, dtype=alpha.dtype)
    fields: list[list[Tensor]] = [[], [], [], [], []]
    for j, n in enumerate(n_values):
        ok = n_keys >= n + 1
        ball = radius[..., j].to(alpha.dtype)
        alpha_sel = alpha.gather(-1, top[..., :n])
        lower, upper = separability_bounds(alpha_sel, ball, m, delta, check=False)
        ratio = (count[..., j] / n).to(alpha.dtype)
        for dst, v in zip(fields, (ratio, lower, upper, ball), strict=False):
            dst.append(torch.where(ok, v, nan))
        fields[4].append(ok)
    return SeparabilityMetrics(*(torch.stack(f, -1) for f in fields))


def _inside(x: Tensor, alpha_sel: Tensor, idx: Tensor, gram64: Tensor | None = None) -> Tensor:
    """||s − α_i x_i|| for i ∈ I_N (float64, [..., Q, N]; no gradient: it is only counted) from
    the Gram block of I_N: read from ``gram64`` (x x^T in float64, [K, K], when one x serves
    every head and N < d: O(Q·N²)), else built from the selected rows of x (O(Q·N²·d))."""
    if gram64 is not None:
        g = gram64[idx.unsqueeze(-1), idx.unsqueeze(-2)]  # (..., Q, N, N)
    else:
        k, d = x.shape[-2:]
        batch = torch.broadcast_shapes(x.shape[:-2], idx.shape[:-2])
        t = table_index(x, 2).expand(*batch, 1, 1)
        idx = idx.expand(*batch, *idx.shape[-2:])
        xs = x.reshape(-1, k, d)[t, idx].double()  # (..., Q, N, d)
        g = xs @ xs.mT  # (..., Q, N, N)
    a = alpha_sel.double()
    t_i = a * (g @ a.unsqueeze(-1)).squeeze(-1)  # α_i (Gα)_i
    u_i = a * (g.diagonal(dim1=-2, dim2=-1) * a)  # α_i² G_ii, rounded as t_i is at N = 1
    return (t_i.sum(-1, keepdim=True) - 2 * t_i + u_i).clamp_min(0).sqrt()


def _block(
    r: TopNRows,
    n_values: tuple[int, ...],
    m: Tensor,
    delta: Tensor,
    x: Tensor,
    shared: Tensor | None,
    inside_gram: Tensor | None = None,
) -> SeparabilityMetrics:
    """The per-row part of :func:`separability_curve` on one block of query rows.

    The ball radius and the inside distances are compared in float64: in rows whose I_N ends
    in near-zero weights every ||s − α_i x_i|| is ≈ ||s||, and float32 cannot order them."""
    order = key_ranks(r)
    a = r.attn
    x64 = r.x.double()
    shared64 = None if shared is None else shared.double()
    # ||x_j||² in float64 like the rest of the expression below (a float32 one decided the
    # sign of a tiny r² by its rounding: issue 54), from the Gram diagonal where the inner
    # products come from the Gram matrix, so an exact tie cancels exactly as in the fused path
    sq64 = (x64 * x64).sum(-1) if shared64 is None else shared64.diagonal()
    r64 = r._replace(attn=a.double(), x=x64, sq=sq64.unsqueeze(-2))
    a64 = r64.attn
    nan = torch.tensor(math.nan, dtype=a.dtype, device=a.device)
    fields: list[list[Tensor]] = [[], [], [], [], []]
    for n, inner, s_sq in nested_products(r64, order, n_values, shared64):
        idx = order[..., :n]
        sel = torch.zeros_like(r.keep).scatter_(-1, idx, True) & r.keep
        # ||s − α_j x_j||² = α_j(α_j||x_j||² − 2⟨x_j, s⟩) + ||s||², rounded as the fused
        # kernel rounds it; then r:
        outside = a64 * (a64 * r64.sq - 2 * inner) + s_sq
        ball64 = sqrt0(outside.masked_fill(~(r.keep & ~sel), math.inf).amin(-1))  # (..., Q)
        alpha_sel = a.gather(-1, idx)  # (..., Q, N)
        inside = _inside(x, alpha_sel, idx, inside_gram)
        ratio = (inside <= ball64.unsqueeze(-1)).sum(-1).to(a.dtype) / n
        ball = ball64.to(a.dtype)
        lower, upper = separability_bounds(alpha_sel, ball, m, delta, check=False)
        ok = r.n_keys >= n + 1
        for dst, v in zip(fields, (ratio, lower, upper, ball), strict=False):
            dst.append(torch.where(ok, v, nan))
        fields[4].append(ok)
    return SeparabilityMetrics(*(torch.stack(f, -1) for f in fields))
