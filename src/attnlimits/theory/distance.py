"""Closed forms of Theorem 1 and Corollary 2 (Mudarisov et al., *Limitations of Normalization in
Attention Mechanism*, NeurIPS 2025, Section 2.1).

Notation: weights α_1..α_L of one attention row, token vectors x_1..x_L in R^d, I_N a set of N
indices, s = Σ_{i∈I_N} α_i x_i (Eq. 6), d̃ = Σ_{i∉I_N} ||α_i x_i − s|| (Eq. 7), and
x̄ = Σ_i α_i x_i. L is always the number of *kept* keys of a row.

Every norm of the form ||a x_i − b x̄|| is computed without materialising the vectors, from
||a x_i − b x̄||² = a²||x_i||² − 2ab⟨x_i, x̄⟩ + b²||x̄||², so a row costs one matrix product.

Where the paper's printed formula and its derivation disagree, the derivation's form is the
default and the printed one is kept under its own ``form`` name; see ``docs/errata.md``.

Shapes: ``alpha [..., K]``, ``x [..., K, d]`` (leading dimensions broadcast), ``mask [..., K]``
boolean, True = keep. Results have ``alpha``'s shape without the key axis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from attnlimits._checks import (
    check_choice,
    check_finite,
    check_int_at_least,
    check_magnitudes,
    check_map_and_vectors,
    check_mask,
    check_top_n,
    key_counts,
)
from attnlimits._grad import sqrt0
from attnlimits.theory._common import broadcast_together, check_interval, check_keys, finite_result

__all__ = [
    "EXPECTED_FORMS",
    "GAP_FORMS",
    "ExpectedForm",
    "GapForm",
    "expected_distance",
    "expected_distance_curve_from_products",
    "expected_distance_from_products",
    "fixed_selection_bound",
    "fixed_selection_bound_unchecked",
    "full_selection_limit",
    "jensen_gap_bound",
    "jensen_gap_bound_from_products",
    "large_context_limit",
    "prob_not_selected",
]

ExpectedForm = Literal["derived", "main_text", "rms"]
GapForm = Literal["main_text", "appendix", "sharp"]
#: The values of :data:`ExpectedForm` and :data:`GapForm`, for argument checks.
EXPECTED_FORMS: tuple[str, ...] = ("derived", "main_text", "rms")
GAP_FORMS: tuple[str, ...] = ("main_text", "appendix", "sharp")


def fixed_selection_bound(
    selected_mass: Tensor, d1: Tensor, max_selected_norm: Tensor, n_keys: Tensor | int, n: int
) -> Tensor:
    """Theorem 1.1: upper bound on the true distance d̃ for the top-N set I_N.

    d̃ ≤ (1 − ᾱ_N)·d_1 + max_{j∈I_N}||x_j|| · [ᾱ_N (L − N) − (1 − ᾱ_N)],
    with ᾱ_N = Σ_{i∈I_N} α_i and d_1 = max_{i∉I_N, j∈I_N} ||x_i − x_j||.

    The proof needs ᾱ_N ≥ α_i for every i ∉ I_N, which holds when I_N is the top-N set (as
    in Eq. 6) but not for an arbitrary subset; see ``docs/errata.md`` (theorem1_bound).

    Parameters
    ----------
    selected_mass : Tensor
        ᾱ_N, any shape.
    d1, max_selected_norm : Tensor
        d_1 and max_{j∈I_N}||x_j||, broadcastable to ``selected_mass``.
    n_keys : Tensor or int
        L, the row's number of kept keys, L ≥ N.
    n : int
        N ≥ 1, the size of I_N.

    Raises
    ------
    ValueError
        ᾱ_N outside [0, 1], negative or non-finite d_1 or norm, N < 1, L < N (no set of N
        keys), shapes that do not broadcast, or a bound beyond the float range.
    """
    check_int_at_least(n, "n", 1)
    check_interval(selected_mass, "selected_mass", 0.0, 1.0)  # ᾱ_N, a sum of weights
    check_interval(d1, "d1", 0.0, math.inf)
    check_interval(max_selected_norm, "max_selected_norm", 0.0, math.inf)
    check_keys(n_keys, n)
    parts = {"selected_mass": selected_mass, "d1": d1, "max_selected_norm": max_selected_norm}
    broadcast_together(**parts, n_keys=n_keys)
    bound = fixed_selection_bound_unchecked(selected_mass, d1, max_selected_norm, n_keys, n)
    return finite_result(bound, **parts)


def fixed_selection_bound_unchecked(
    selected_mass: Tensor, d1: Tensor, max_selected_norm: Tensor, n_keys: Tensor | int, n: int
) -> Tensor:
    """:func:`fixed_selection_bound` without the checks, for per-row callers that mask rows
    with L < N + 1 afterwards (the metrics)."""
    rest = 1.0 - selected_mass
    return rest * d1 + max_selected_norm * (selected_mass * (n_keys - n) - rest)


def prob_not_selected(
    n_keys: Tensor | int, n: int, *, form: Literal["derived", "appendix"] = "derived"
) -> Tensor | float:
    """P(i ∉ I_N) for I_N uniform over the C(L, N) subsets: C(L−1, N)/C(L, N) = (L − N)/L.

    Defined for 1 ≤ N ≤ L (``ValueError`` otherwise: L < N has no set of N keys). N = L
    selects every key, so the probability is exactly 0 there, as the formula gives.

    ``form="appendix"`` returns the (L − N)/N printed in the appendix (Eq. 21), a typo: it
    exceeds 1 whenever N < L/2. See ``docs/errata.md`` (theorem1_probability).
    """
    check_choice(form, "form", ("derived", "appendix"))
    check_int_at_least(n, "n", 1)
    check_keys(n_keys, n)
    if form == "derived":
        return (n_keys - n) / n_keys
    return (n_keys - n) / n


def _products(alpha: Tensor, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """||x_i||² [..., K], ⟨x_i, x̄⟩ [..., K] and ||x̄||² [...] with x̄ = Σ_i α_i x_i."""
    xbar = (alpha.unsqueeze(-2) @ x).squeeze(-2)  # (..., d)
    inner = (x @ xbar.unsqueeze(-1)).squeeze(-1)  # (..., K)
    return (x * x).sum(-1), inner, (xbar * xbar).sum(-1)


def _prepare(
    alpha: Tensor, x: Tensor, n: int | None, mask: Tensor | None, *, with_n: bool = True
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Validate (``n`` too unless ``with_n`` is False); return (alpha with masked entries 0,
    x, keep-mask, L)."""
    check_finite(alpha, "alpha", allow_neg_inf=False)
    check_finite(x, "x", allow_neg_inf=False)
    check_map_and_vectors(alpha, x, ("alpha", "x"))
    try:  # alpha [..., K] against x [..., K, d]: one weight vector per x table
        torch.broadcast_shapes(alpha.shape[:-1], x.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"alpha [..., K] {tuple(alpha.shape)} and x [..., K, d] {tuple(x.shape)}: their "
            "leading axes do not broadcast"
        ) from None
    check_magnitudes(alpha, x, ("alpha", "x"))
    if with_n:
        check_top_n(n, alpha.shape[-1])  # type: ignore[arg-type]
    if alpha.dtype in (torch.float16, torch.bfloat16):
        alpha = alpha.float()
    x = x.to(alpha.dtype)
    keep = check_mask(mask, alpha, of="alpha")
    keep = torch.ones_like(alpha, dtype=torch.bool) if keep is None else keep
    alpha = torch.where(keep, alpha, torch.zeros_like(alpha))
    return alpha, x, keep, key_counts(keep, alpha, of="alpha").squeeze(-1)


def _norm(a: Tensor, b: Tensor, sq_norms: Tensor, inner: Tensor, xbar_sq: Tensor) -> Tensor:
    """||a x_i − b x̄|| from the products (clamped at 0 against rounding; gradient 0 there)."""
    return sqrt0(a * a * sq_norms - 2 * a * b * inner + b * b * xbar_sq)


def _conditional_moments(
    alpha: Tensor, sq_norms: Tensor, inner: Tensor, xbar_sq: Tensor, n: int, length: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """Per key i, given i ∉ I_N: ||μ_i||, tr Cov(s) and Σ_{j≠i} α_j²||x_j||² (unmasked sums).

    μ_i = E[α_i x_i − s | i ∉ I_N] = α_i (1 + N/(L−1)) x_i − (N/(L−1)) x̄ (appendix Eqs. 22–24).
    s given i ∉ I_N sums N of the m = L−1 vectors y_j = α_j x_j (j ≠ i) drawn without
    replacement, so tr Cov(s) = N(m−N)/(m²(m−1)) · [m Σ_{j≠i}||y_j||² − ||Σ_{j≠i} y_j||²].
    ``alpha`` must be 0 on masked keys.
    """
    c = n / (length - 1)  # N/(L−1)
    mean = _norm(alpha * (1 + c), c, sq_norms, inner, xbar_sq)
    y_sq = alpha * alpha * sq_norms  # ||α_i x_i||² (0 on masked keys)
    others_sq = y_sq.sum(-1, keepdim=True) - y_sq
    rest_sq = _norm(alpha, torch.ones_like(c), sq_norms, inner, xbar_sq) ** 2  # ||x̄ − α_i x_i||²
    m = length - 1
    var = n * (m - n) / (m * m * (m - 1).clamp_min(1)) * (m * others_sq - rest_sq)
    return mean, var.clamp_min(0), others_sq


def expected_distance_from_products(
    alpha: Tensor,
    sq_norms: Tensor,
    inner: Tensor,
    xbar_sq: Tensor,
    n: int,
    n_keys: Tensor,
    keep: Tensor,
    form: ExpectedForm = "derived",
) -> Tensor:
    """Theorem 1.2 from precomputed products; see :func:`expected_distance`.

    ``alpha`` (0 on masked keys), ``sq_norms`` (||x_i||²), ``inner`` (⟨x_i, x̄⟩) and ``keep``
    broadcast to [..., K]; ``xbar_sq`` (||x̄||²) and ``n_keys`` (L) have shape [...]. Used by
    :func:`attnlimits.metrics.distance.distance_metrics` to share one matrix product per head.
    """
    args = (alpha, sq_norms, inner, xbar_sq, (n,), n_keys, keep)
    return expected_distance_curve_from_products(*args, form=form).squeeze(-1)


def expected_distance_curve_from_products(
    alpha: Tensor,
    sq_norms: Tensor,
    inner: Tensor,
    xbar_sq: Tensor,
    ns: Sequence[int],
    n_keys: Tensor,
    keep: Tensor,
    form: ExpectedForm = "derived",
) -> Tensor:
    """:func:`expected_distance_from_products` for every N in ``ns``: shape [..., len(ns)].

    With c = N/(L−1), each summand of the derived and main-text forms is the square root of a
    quadratic in c whose coefficients do not depend on N:

    - derived, ||α_i (1 + c) x_i − c x̄||² = A + c·2(A − B) + c²(A − 2B + ||x̄||²);
    - main text, ||(α_i + c) x_i − x̄||² = (A − 2B + ||x̄||²) + c·2(α_i||x_i||² − ⟨x_i, x̄⟩)
      + c²||x_i||²,

    with A = α_i²||x_i||² and B = α_i⟨x_i, x̄⟩. The coefficients are formed once (0 on masked
    keys) and each N costs two fused multiply-adds, a square root and a sum.
    """
    if form == "rms":  # √E[||α_i x_i − s||² | i ∉ I_N]
        out = []
        for n in ns:
            length = _length(n_keys, n)
            mean, var, _ = _conditional_moments(
                alpha, sq_norms, inner, xbar_sq.unsqueeze(-1), n, length.unsqueeze(-1)
            )
            terms = torch.where(keep, sqrt0(mean * mean + var), 0.0).sum(-1)
            out.append((length - n) / length * terms)
        return torch.stack(out, -1)
    a_sq = alpha * alpha * sq_norms
    a_in = alpha * inner
    rest = a_sq - 2 * a_in + xbar_sq.unsqueeze(-1)  # ||α_i x_i − x̄||²
    if form == "derived":
        coef = (a_sq, 2 * (a_sq - a_in), rest)
    elif form == "main_text":
        coef = (rest, 2 * (alpha * sq_norms - inner), sq_norms.expand_as(rest))
    else:
        raise ValueError(f"form must be 'derived', 'main_text' or 'rms', got {form!r}")
    c0, c1, c2 = (torch.where(keep, t, 0.0) for t in coef)
    out = []
    for n in ns:
        length = _length(n_keys, n)
        c = (n / (length - 1)).unsqueeze(-1)  # N/(L−1), per row
        terms = sqrt0(torch.addcmul(c0, c, torch.addcmul(c1, c, c2)), inplace=True)
        out.append((length - n) / length * terms.sum(-1))
    return torch.stack(out, -1)


def _length(n_keys: Tensor, n: int) -> Tensor:
    """L where L ≥ N + 1, else N + 1: rows with fewer kept keys have no value (their callers
    put 0 or NaN there), and L = 1 would put N/(L−1) = inf into their gradients."""
    return n_keys.clamp_min(n + 1)


def expected_distance(
    alpha: Tensor, x: Tensor, n: int, *, mask: Tensor | None = None, form: ExpectedForm = "derived"
) -> Tensor:
    """Theorem 1.2: first-order value of E = E_{I_N}[d̃] for I_N uniform over C(L, N) subsets.

    E ≈ ((L − N)/L) Σ_{i=1..L} ||α_i (1 + N/(L−1)) x_i − (N/(L−1)) x̄||   (``form="derived"``)

    which is ||E[α_i x_i − s | i ∉ I_N]|| summed with P(i ∉ I_N) = (L − N)/L, the derivation of
    the appendix (Eqs. 22–24: E[s | i ∉ I_N] = (N/(L−1)) Σ_{j≠i} α_j x_j). By Jensen it is a
    lower bound on the exact E, short by at most :func:`jensen_gap_bound`.

    ``form="main_text"`` gives the main text's summand ||(α_i + N/(L−1)) x_i − x̄||, which
    the derivation does not support and exact enumeration rejects; see ``docs/errata.md``
    (theorem1_expectation).

    ``form="rms"`` (not in the paper) replaces each ||E[Y_i]|| by √E[||Y_i||²], Y_i =
    α_i x_i − s given i ∉ I_N, using the exact without-replacement variance. By Jensen,
    derived ≤ E_exact ≤ rms; at large L with spread-out α the derived form is well below the
    exact E (the random part of s dominates) and ``rms`` is much closer.

    Parameters
    ----------
    alpha : Tensor
        Attention weights ``[..., K]`` (a row, summing to one over kept keys).
    x : Tensor
        Token vectors ``[..., K, d]``; leading dimensions broadcast with ``alpha``'s.
    n : int
        N, with 1 ≤ N < K.
    mask : Tensor, optional
        Boolean keep-mask ``[..., K]``; masked keys are dropped and L is the kept count.
    form : {"derived", "main_text", "rms"}

    Returns
    -------
    Tensor
        E per row, shape ``alpha.shape[:-1]``.
    """
    check_choice(form, "form", EXPECTED_FORMS)
    alpha, x, keep, length = _prepare(alpha, x, n, mask)
    sq, inner, xbar_sq = _products(alpha, x)
    e = expected_distance_from_products(alpha, sq, inner, xbar_sq, n, length, keep, form)
    return _rows_with_n_keys(e, length, n)


def _rows_with_n_keys(value: Tensor, length: Tensor, n: int) -> Tensor:
    """``value`` in rows with L ≥ N + 1; 0 where L = N (every key selected: d̃ is the empty
    sum); NaN where L < N (no set of N kept keys)."""
    zero_or_nan = torch.where(length == n, 0.0, math.nan).to(value.dtype)
    return torch.where(length > n, value, zero_or_nan)


def jensen_gap_bound_from_products(
    alpha: Tensor,
    sq_norms: Tensor,
    inner: Tensor,
    xbar_sq: Tensor,
    n: int,
    n_keys: Tensor,
    keep: Tensor,
    form: GapForm = "main_text",
) -> Tensor:
    """Jensen-gap bound from precomputed products; see :func:`jensen_gap_bound`."""
    n_keys = _length(n_keys, n)
    length = n_keys.unsqueeze(-1)
    mean, var, others_sq = _conditional_moments(
        alpha, sq_norms, inner, xbar_sq.unsqueeze(-1), n, length
    )
    if form == "sharp":
        gap = sqrt0(mean * mean + var) - mean
    elif form in ("main_text", "appendix"):
        factor = n / (length - 1) if form == "main_text" else n * (length - n - 1)
        # a term whose covariance bound is 0 has s fixed given i ∉ I_N, so it adds 0 (not
        # 0/0 or 0·inf where μ_i = 0); elsewhere 1/||μ_i|| = inf where μ_i = 0
        spread = (others_sq > 0) & (factor > 0)
        # the +inf where μ_i = 0 is a constant: no 0·inf in the gradients of the other rows
        finite = spread & (mean > 0)
        safe_mean = torch.where(finite, mean, torch.ones_like(mean))
        gap = torch.where(finite, factor * others_sq / (2 * safe_mean), torch.zeros_like(mean))
        gap = torch.where(spread & ~finite, math.inf, gap)
    else:
        raise ValueError(f"form must be 'main_text', 'appendix' or 'sharp', got {form!r}")
    gap = torch.where(keep, gap, torch.zeros_like(gap))
    return (n_keys - n) / n_keys * gap.sum(-1)


def jensen_gap_bound(
    alpha: Tensor, x: Tensor, n: int, *, mask: Tensor | None = None, form: GapForm = "main_text"
) -> Tensor:
    """Bound on ε = E_exact − E (``form="derived"`` E of :func:`expected_distance`), Theorem 1.2.

    Main text: ε ≤ ½ (1 − N/L) Σ_i (N/(L−1)) Σ_{j≠i} α_j²||x_j||² / ||μ_i||, with
    μ_i = α_i x_i − (N/(L−1)) Σ_{j≠i} α_j x_j = E[α_i x_i − s | i ∉ I_N].

    It follows from E||Y|| ≤ √(||μ||² + tr Cov Y) ≤ ||μ|| + tr Cov Y / (2||μ||) and
    tr Cov(s | i ∉ I_N) ≤ (N/(L−1)) Σ_{j≠i} α_j²||x_j||² (sampling without replacement), so
    it holds; 0 ≤ ε always (Jensen).

    ``form="appendix"`` uses the per-term factor N(L−N−1) of Eq. 25 instead of N/(L−1): also
    valid but looser by (L−1)(L−N−1). ``form="sharp"`` is Σ_i P(i∉I_N)(√(||μ_i||² + v_i) −
    ||μ_i||) with the exact finite-population variance v_i; finite even where μ_i = 0
    (where the other two forms are +inf). See ``docs/errata.md`` (theorem1_jensen_gap).

    Shapes and arguments as :func:`expected_distance`.
    """
    check_choice(form, "form", GAP_FORMS)
    alpha, x, keep, length = _prepare(alpha, x, n, mask)
    sq, inner, xbar_sq = _products(alpha, x)
    gap = jensen_gap_bound_from_products(alpha, sq, inner, xbar_sq, n, length, keep, form)
    return _rows_with_n_keys(gap, length, n)


def large_context_limit(alpha: Tensor, x: Tensor, *, mask: Tensor | None = None) -> Tensor:
    """Corollary 2, N fixed and L growing: E ≈ Σ_i ||α_i x_i|| (Eq. 9).

    The limit of the derived form as N/(L−1) → 0. Its error is at most
    (N/(L−1)) Σ_i ||α_i x_i − x̄|| ≤ (N/(L−1))·(max||x_i|| + L||x̄||), so it needs N||x̄|| → 0,
    not only N/L → 0: with anisotropic tokens (||x̄|| of order ||x_i||) it does not hold.
    """
    alpha, x, _, _ = _prepare(alpha, x, None, mask, with_n=False)  # masked α are 0
    return torch.linalg.vector_norm(alpha.unsqueeze(-1) * x, dim=-1).sum(-1)  # 0 where α = 0


def full_selection_limit(alpha: Tensor) -> Tensor:
    """Corollary 2, N → L with L fixed: E → 0 (Eq. 9); the prefactor (L − N)/L vanishes.

    At N = L no key is left outside I_N and d̃ is the empty sum, so the limit is exact.
    Returns zeros of shape ``alpha.shape[:-1]``; ``alpha`` must still be weights ``[..., K]``
    (finite, non-negative), as everywhere else.
    """
    check_finite(alpha, "alpha", allow_neg_inf=False)
    if alpha.ndim == 0 or bool((alpha < 0).any()):
        raise ValueError(f"alpha must be non-negative weights [..., K], got {alpha!r:.60}")
    return alpha.new_zeros(alpha.shape[:-1])
