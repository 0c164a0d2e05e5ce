"""Distance between the top-N context vector and the rest, per attention row (Mudarisov et al.,
NeurIPS 2025, Section 2.1, Eqs. 6–8, Theorem 1; Algorithms 1–3).

For each row α of a map and its kept keys: I_N = the N largest weights among kept keys,
s = Σ_{i∈I_N} α_i x_i (Eq. 6), the true distance d̃ = Σ_{i kept, i∉I_N} ||α_i x_i − s||
(Eq. 7), the Theorem 1.1 bound and the Theorem 1.2 expectation E over a uniformly random I_N.
L is the row's number of kept keys (under a causal mask, query position + 1); rows with fewer
than N + 1 kept keys are NaN with ``valid`` False (see :func:`attnlimits.metrics.row_mean`).

Norms come from ||α_i x_i − s||² = α_i²||x_i||² − 2α_i⟨x_i, s⟩ + ||s||², i.e. one [Q, d]×[d, K]
product per head; d_1 needs the [K, K] pairwise distances of the head, read through their
running maximum for prefix-shaped rows (causal or unmasked) and otherwise by a loop over the N
selected keys (never over tokens). fp16/bf16 inputs are computed in float32.

Shapes: ``attn [..., Q, K]``, ``x [..., K, d]`` (leading dimensions broadcast, e.g.
``[B, H, Q, K]`` with ``[B, H, K, d]``), ``mask`` boolean broadcastable to ``attn``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import NamedTuple, cast

import torch
from torch import Tensor

from attnlimits._checks import check_choice, check_choices
from attnlimits._grad import sqrt0
from attnlimits.metrics import _fused
from attnlimits.metrics._d1 import Pairwise, cut, d1, pairwise
from attnlimits.metrics._rows import empty_rows
from attnlimits.metrics._topn import (
    TopNRows,
    check_rows,
    distance_from_products,
    key_ranks,
    n_grid,
    nested_products,
    prepare_rows,
    query_blocks,
    rank_of,
    selection_distance,
    shared_gram,
    top_n,
)
from attnlimits.theory.distance import (
    EXPECTED_FORMS,
    GAP_FORMS,
    ExpectedForm,
    GapForm,
    expected_distance_curve_from_products,
    expected_distance_from_products,
    fixed_selection_bound_unchecked,
    jensen_gap_bound_from_products,
)

__all__ = [
    "DistanceCurve",
    "DistanceMetrics",
    "distance_curve",
    "distance_metrics",
]


class DistanceMetrics(NamedTuple):
    """Per-row results of :func:`distance_metrics`, each of shape ``attn.shape[:-1]``."""

    distance: Tensor  # d̃, Eq. 7
    bound: Tensor  # Theorem 1.1 upper bound on d̃
    expected: Tensor  # E, Theorem 1.2 (first-order value)
    gap_bound: Tensor  # bound on E_exact − E (Theorem 1.2's ε)
    selected_mass: Tensor  # ᾱ_N
    n_keys: Tensor  # L (kept keys)
    valid: Tensor  # L ≥ N + 1

    @property
    def num_keys(self) -> Tensor:
        """Deprecated name of :attr:`n_keys` (releases before the conventions were unified)."""
        warnings.warn("DistanceMetrics.num_keys is now n_keys", DeprecationWarning, stacklevel=2)
        return self.n_keys


def _mass(r: TopNRows, sel: Tensor) -> Tensor:
    """ᾱ_N = Σ_{i∈I_N} α_i."""
    return torch.where(sel, r.attn, torch.zeros_like(r.attn)).sum(-1)


def _bound(r: TopNRows, idx: Tensor, sel: Tensor, pair: Pairwise) -> Tensor:
    """Theorem 1.1 for the selection ``sel`` (indices ``idx`` [..., Q, N])."""
    batch = torch.broadcast_shapes(r.sq.shape[:-2], idx.shape[:-2])  # x may add batch axes
    rows = (*batch, idx.shape[-2])
    norms = sqrt0(r.sq).expand(*rows, r.sq.shape[-1])
    max_norm = norms.gather(-1, idx.expand(*rows, idx.shape[-1])).amax(-1)
    return fixed_selection_bound_unchecked(
        _mass(r, sel), d1(r, idx, sel, pair), max_norm, r.n_keys, idx.shape[-1]
    )


def distance_metrics(
    attn: Tensor,
    x: Tensor,
    n: int,
    *,
    mask: Tensor | None = None,
    form: ExpectedForm = "derived",
    gap_form: GapForm = "main_text",
    with_bound: bool = True,
) -> DistanceMetrics:
    """d̃ (Eq. 7), the Theorem 1.1 bound and the Theorem 1.2 expectation for every row.

    Per row, with I_N the top-N kept keys and L the kept count:

    - d̃ = Σ_{i∉I_N} ||α_i x_i − s||, s = Σ_{i∈I_N} α_i x_i;
    - bound = (1 − ᾱ_N) d_1 + max_{j∈I_N}||x_j|| [ᾱ_N (L − N) − (1 − ᾱ_N)] (Theorem 1.1);
    - expected = ((L−N)/L) Σ_i ||α_i (1 + N/(L−1)) x_i − (N/(L−1)) x̄|| (Theorem 1.2,
      derived form; ``form="main_text"`` for the paper's printed summand, see
      :func:`attnlimits.theory.distance.expected_distance`);
    - gap_bound: bound on E_exact − expected (:func:`~attnlimits.theory.distance.jensen_gap_bound`).

    Parameters
    ----------
    attn : Tensor
        Attention maps ``[..., Q, K]``.
    x : Tensor
        Per-key vectors ``[..., K, d]``; leading dims broadcast with ``attn``'s.
    n : int
        N, 1 ≤ N < K.
    mask : Tensor, optional
        Boolean keep-mask broadcastable to ``attn`` (True = keep), e.g. causal.
    form, gap_form : str
        Forms of E and of its gap bound, passed to :mod:`attnlimits.theory.distance`.
    with_bound : bool
        Compute the Theorem 1.1 bound (the costly part: d_1 loops over the N selected keys);
        when False, ``bound`` is NaN.

    Returns
    -------
    DistanceMetrics
        Per-row tensors of shape ``attn.shape[:-1]``; NaN where ``valid`` is False.
    """
    check_rows(attn, x, mask, (n,))
    check_choice(form, "form", EXPECTED_FORMS)
    check_choice(gap_form, "gap_form", GAP_FORMS)
    if (empty := empty_rows(attn, x, mask, len(DistanceMetrics._fields))) is not None:
        return DistanceMetrics(*empty)  # no rows: empty in, empty out
    pair: Pairwise | None = None
    parts = []
    for a, m, k in query_blocks(attn, mask, n + 1):
        r = prepare_rows(a, x[..., :k, :], n, m, check=False)
        if with_bound and pair is None:
            pair = pairwise(x.to(r.x.dtype))
        parts.append(_metrics_block(r, n, form, gap_form, cut(pair, k)))
    return DistanceMetrics(*(torch.cat(field, -1) for field in zip(*parts, strict=True)))


def _metrics_block(
    r: TopNRows, n: int, form: ExpectedForm, gap_form: GapForm, pair: Pairwise | None
) -> DistanceMetrics:
    idx, sel = top_n(r.attn, r.keep, n)
    distance = selection_distance(r, sel)
    mass = _mass(r, sel)
    bound = torch.full_like(distance, math.nan) if pair is None else _bound(r, idx, sel, pair)

    xbar = r.attn @ r.x  # (..., Q, d)
    inner, xbar_sq = xbar @ r.x.mT, (xbar * xbar).sum(-1)
    args = (r.attn, r.sq, inner, xbar_sq, n, r.n_keys, r.keep)
    expected = expected_distance_from_products(*args, form=form)
    gap = jensen_gap_bound_from_products(*args, form=gap_form)

    nan = torch.tensor(math.nan, dtype=distance.dtype, device=distance.device)
    out = [torch.where(r.valid, v, nan) for v in (distance, bound, expected, gap, mass)]
    rows = torch.broadcast_shapes(*(v.shape for v in out))  # x may add batch axes
    fields = [v.expand(rows) for v in (*out, r.n_keys, r.valid)]
    return DistanceMetrics(*fields)


class DistanceCurve(NamedTuple):
    """d̃ and E over a grid of N; tensors ``[..., Q, n_N]`` (the grid axis last, as every
    grid result of :mod:`attnlimits.metrics`; ``docs/conventions.md``)."""

    n_values: tuple[int, ...]
    distance: Tensor  # d̃, Eq. 7
    expected: dict[str, Tensor]  # E (Thm 1.2) in each requested form
    bound: Tensor  # Thm 1.1 bound for N in ``bound_ns``, NaN for the other N
    valid: Tensor  # L ≥ N + 1
    gap: dict[str, Tensor] | None = None  # Jensen-gap bound per form, at ``bound_ns`` only


def distance_curve(
    attn: Tensor,
    x: Tensor,
    ns: Sequence[int],
    *,
    mask: Tensor | None = None,
    forms: Sequence[ExpectedForm] = ("derived",),
    bound_ns: Sequence[int] = (),
    gap_forms: Sequence[GapForm] = (),
) -> DistanceCurve:
    """d̃ (Eq. 7) and E (Theorem 1.2) for every N in ``ns``, sharing the work that N leaves alone.

    The same numbers as :func:`distance_metrics` called once per N (without the bound and the
    Jensen term), but the checks, ||x_i||², x̄ = Σ α_i x_i and ⟨x_i, x̄⟩ are computed once, and
    the top-N sets come from one descending rank per row (I_N = {i : rank_i < N}, nested in N).
    Per N the cost is one masked [Q, K]×[K, d] product for s and one [Q, d]×[d, K] for ⟨x_i, s⟩.
    Ties between equal weights are broken by ``argsort`` (stable), as ``topk`` may differ.

    Parameters
    ----------
    attn, x, mask
        As :func:`distance_metrics`.
    ns : sequence of int
        The N values, each 1 ≤ N < K.
    forms : sequence of {"derived", "main_text", "rms"}
        Which forms of E to return (see :func:`attnlimits.theory.expected_distance`).
    bound_ns : sequence of int
        The N (among ``ns``) at which to compute the Theorem 1.1 bound; its d_1 term costs
        N·Q·K per head, so it is opt-in per N.
    gap_forms : sequence of {"main_text", "appendix", "sharp"}
        Forms of the Jensen-gap bound on ε = E_exact − E_derived (Theorem 1.2, see
        :func:`attnlimits.theory.jensen_gap_bound`) to compute at the N of ``bound_ns``
        (NaN at the other N); ``gap`` is None when none is asked.
    """
    n_values = n_grid(ns)
    check_rows(attn, x, mask, n_values)
    bound_set = set(n_grid(bound_ns, "bound_ns", allow_empty=True))
    forms = cast(tuple[ExpectedForm, ...], check_choices(forms, "forms", EXPECTED_FORMS))
    gaps = cast(tuple[GapForm, ...], check_choices(gap_forms, "gap_forms", GAP_FORMS))
    fused = _fused_curve(attn, x, mask, n_values, forms, bound_set, gaps)
    if fused is not None:
        return fused
    pair: Pairwise | None = None
    gram: Tensor | None = None
    parts = []
    for i, (a, m, k) in enumerate(query_blocks(attn, mask, n_values[-1] + 1)):
        r = prepare_rows(a, x[..., :k, :], n_values[0], m, check=False)
        if i == 0:
            x_full = x.to(r.x.dtype)
            pair = pairwise(x_full) if bound_set else None
            gram = shared_gram(x_full, n_values)
        g = gram if gram is None or gram.shape[-1] == k else gram[:k, :k]
        parts.append(_curve_block(r, n_values, forms, bound_set, cut(pair, k), g, gaps))
    # query blocks join on the row axis, second-last (the grid axis is last)
    return DistanceCurve(
        n_values,
        torch.cat([p.distance for p in parts], -2),
        {f: torch.cat([p.expected[f] for p in parts], -2) for f in forms},
        torch.cat([p.bound for p in parts], -2),
        torch.cat([p.valid for p in parts], -2),
        {f: torch.cat([p.gap[f] for p in parts if p.gap], -2) for f in gaps} if gaps else None,
    )


def _curve_block(
    r: TopNRows,
    n_values: tuple[int, ...],
    forms: Sequence[ExpectedForm],
    bound_ns: set[int],
    pair: Pairwise | None,
    gram: Tensor | None,
    gap_forms: tuple[GapForm, ...] = (),
) -> DistanceCurve:
    order = key_ranks(r)
    rank = rank_of(order)  # (..., Q, K): 0 = largest
    xbar = r.attn @ r.x  # (..., Q, d)
    inner, xbar_sq = xbar @ r.x.mT, (xbar * xbar).sum(-1)
    nan = torch.tensor(math.nan, dtype=r.attn.dtype, device=r.attn.device)
    dist: list[Tensor] = []
    valid: list[Tensor] = []
    bound: list[Tensor] = []
    a2sq = r.attn * r.attn * r.sq
    for n, inner_s, s_sq in nested_products(r, order, n_values, gram):
        ok = r.n_keys >= n + 1
        sel = (rank < n) & r.keep
        d = distance_from_products(r, sel, inner_s, s_sq, a2sq)
        dist.append(torch.where(ok, d, nan))
        if pair is not None and n in bound_ns:
            bound.append(torch.where(ok, _bound(r, order[..., :n], sel, pair), nan))
        else:
            bound.append(torch.full_like(dist[-1], math.nan))
        valid.append(ok)
    rows = torch.broadcast_shapes(*(d.shape for d in dist))  # x's batch axes, if x has more
    valid = [ok.expand(rows) for ok in valid]
    ok_all = torch.stack(valid, -1)  # (..., Q, n_N)
    nan_col = torch.full(rows, math.nan, dtype=r.attn.dtype, device=r.attn.device)
    gap: dict[str, Tensor] = {}
    for gf in gap_forms:
        cols = []
        for n, ok in zip(n_values, valid, strict=True):
            if n in bound_ns:
                args = (r.attn, r.sq, inner, xbar_sq, n, r.n_keys, r.keep)
                gap_n = torch.where(ok, jensen_gap_bound_from_products(*args, form=gf), nan)
                cols.append(gap_n.expand(rows))
            else:
                cols.append(nan_col)
        gap[gf] = torch.stack(cols, -1)
    exp: dict[str, Tensor] = {}
    for f in forms:
        e = expected_distance_curve_from_products(
            r.attn, r.sq, inner, xbar_sq, n_values, r.n_keys, r.keep, form=f
        )
        exp[f] = torch.where(ok_all, e, nan)
    grid = (*rows, len(n_values))  # every field on the broadcast rows (x may add batch axes)
    return DistanceCurve(
        n_values,
        torch.stack(dist, -1).expand(grid),
        {f: e.expand(grid) for f, e in exp.items()},
        torch.stack([b.expand(rows) for b in bound], -1),
        ok_all,
        {f: g.expand(grid) for f, g in gap.items()} or None,
    )


def _fused_curve(
    attn: Tensor,
    x: Tensor,
    mask: Tensor | None,
    n_values: tuple[int, ...],
    forms: tuple[ExpectedForm, ...],
    bound_ns: set[int],
    gap_forms: tuple[GapForm, ...],
) -> DistanceCurve | None:
    """:func:`distance_curve` through the fused CPU kernels (:mod:`attnlimits.metrics._fused`),
    or None where they do not apply (GPU, autograd, the ``rms`` form, Gram tables too large)."""
    got = _fused.distance_grid(attn, x, mask, n_values, forms, bound_ns, gap_forms)
    return None if got is None else DistanceCurve(n_values, *got)
