"""Per-row sensitivity of softmax attention: exact Jacobian norm and paper A's Alg. 5.

Maps are ``[..., query, key]`` (normalised axis ``dim``, default ``-1``); masks are boolean,
True = keep; ``-inf`` scores count as masked. Each function returns :class:`RowValues`: the
per-row numbers (``dim`` removed) with NaN where a row cannot be scored (no kept key) and a
``valid`` flag beside them, ready for :func:`attnlimits.metrics.row_mean`.

- :func:`softmax_jacobian_norm`: ||J||₂ of J = (diag(α) − ααᵀ)/T, α = softmax(l/T), from the
  secular equation of a diagonal-minus-rank-one matrix (no L×L eigendecomposition).
- :func:`finite_difference_sensitivity`: paper A, Alg. 5,
  δ = ||softmax((l + εv)/T) − softmax(l/T)||₂ / ε with a random unit direction v per row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from attnlimits._checks import check_finite, check_mask, check_positive, keep_mask, normalize_dim

__all__ = [
    "RowValues",
    "finite_difference_sensitivity",
    "jacobian_top_eigenvalue",
    "softmax_jacobian_matrix",
    "softmax_jacobian_norm",
]

#: Bisection steps: the bracket [α_(2), α_(1)] shrinks by 2^-64, below float64 resolution.
BISECTION_STEPS = 64


class RowValues(NamedTuple):
    """A per-row metric: values (NaN where not scorable) and the ``valid`` flag."""

    values: Tensor
    valid: Tensor


def _softmax_rows(x: Tensor, keep: Tensor) -> Tensor:
    """softmax over the last axis restricted to ``keep``; all-dropped rows give zeros."""
    return torch.softmax(torch.where(keep, x, -math.inf), dim=-1).nan_to_num(0.0)


def _as_grid(values: float | Sequence[float] | Tensor, name: str) -> Tensor:
    t = torch.as_tensor(values, dtype=torch.float64).reshape(-1)
    if t.numel() == 0:
        raise ValueError(f"{name} must not be empty")
    check_positive(t, name)
    return t


def jacobian_top_eigenvalue(
    weights: Tensor, *, dim: int = -1, mask: Tensor | None = None
) -> RowValues:
    """Largest eigenvalue of A = diag(α) − ααᵀ per row, via its secular equation (float64).

    A is positive semi-definite (uᵀAu = Var_{i∼α}(u_i)), so this is ||A||₂. Its eigenvalues
    interlace the sorted weights, and the largest, λ, lies in [α_(2), α_(1)] (the two largest
    weights). Where α_(1) > α_(2), λ is the unique root in that interval of

        f(λ) = 1 − Σ_i α_i² / (α_i − λ),

    which decreases strictly there (from +∞ to −∞); where α_(1) = α_(2), λ = α_(1) (e₁ − e₂ is
    then an eigenvector); where α_(2) = 0, λ = α_(1)(1 − α_(1)) (0 for a one-key row). The
    root is found by :data:`BISECTION_STEPS` vectorised bisection steps over all rows at once;
    cost O(rows·L) per step, no L×L matrix.

    Parameters
    ----------
    weights : Tensor
        α, non-negative, each row summing to 1 over its kept entries; ``[..., query, key]``.
    dim : int
        The key axis.
    mask : Tensor, optional
        Boolean keep-mask broadcastable to ``weights``; dropped entries count as 0.

    Returns
    -------
    RowValues
        λ per row in float64; NaN and ``valid = False`` for rows with no kept key.
    """
    check_finite(weights, "weights", allow_neg_inf=False)
    if bool((weights < 0).any()):
        raise ValueError("weights must be non-negative")
    dim = normalize_dim(dim, weights.ndim)
    keep = torch.ones_like(weights, dtype=torch.bool)
    checked = check_mask(mask, weights)
    if checked is not None:
        keep = checked
    w = torch.where(keep, weights.detach().to(torch.float64), 0.0).movedim(dim, -1)
    valid = keep.movedim(dim, -1).any(-1)
    if w.shape[-1] == 1:
        return RowValues(torch.where(valid, 0.0, math.nan).to(torch.float64), valid)
    top2 = w.topk(2, dim=-1).values
    lo, hi = top2[..., 1:2], top2[..., 0:1]
    w_sq = w * w
    positive = w > 0
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        ratio = torch.where(positive, w_sq / (w - mid), 0.0)
        right = (1.0 - ratio.sum(-1, keepdim=True)) > 0  # f(mid) > 0: the root lies right of mid
        lo = torch.where(right, mid, lo)
        hi = torch.where(right, hi, mid)
    a1, a2 = top2[..., 0:1], top2[..., 1:2]
    lam = torch.where(a1 == a2, a1, 0.5 * (lo + hi))
    lam = torch.where(a2 == 0, a1 * (1 - a1), lam)  # one positive weight: f has the root a1 − a1²
    return RowValues(torch.where(valid, lam.squeeze(-1), math.nan), valid)


def softmax_jacobian_norm(
    scores: Tensor,
    temperature: float = 1.0,
    *,
    dim: int = -1,
    mask: Tensor | None = None,
) -> RowValues:
    """Exact ||∂α/∂l||₂ per row for α = softmax(l/T): the top eigenvalue of (diag(α) − ααᵀ)/T.

    Always ≤ 1/(2T) (:func:`attnlimits.theory.softmax_jacobian_norm_bound`), with equality at
    two tied top logits and the rest negligible; paper A's Corollary 3 (1/(4T)) is violated
    there (``docs/errata.md``). Computed by :func:`jacobian_top_eigenvalue` in float64.

    Parameters
    ----------
    scores : Tensor
        Raw logits l, ``[..., query, key]``; ``-inf`` entries are dropped.
    temperature : float
        T > 0.
    dim : int
        The key axis.
    mask : Tensor, optional
        Boolean keep-mask broadcastable to ``scores`` (True = keep).

    Returns
    -------
    RowValues
        Float64 norms ``[..., query]``; NaN and ``valid = False`` where no key is kept.
    """
    check_finite(scores, "scores")
    check_positive(temperature, "temperature")
    dim = normalize_dim(dim, scores.ndim)
    keep = keep_mask(scores, mask).movedim(dim, -1)
    x = scores.detach().to(torch.float64).movedim(dim, -1) / temperature
    alpha = _softmax_rows(x, keep)
    lam, valid = jacobian_top_eigenvalue(alpha, mask=keep)
    return RowValues(lam / temperature, valid)


def softmax_jacobian_matrix(weights: Tensor, temperature: float = 1.0) -> Tensor:
    """Dense softmax Jacobian (diag(α) − ααᵀ)/T, ``[..., key] -> [..., key, key]`` (reference).

    Entry ``[i, j]`` is ∂α_i/∂l_j for α = softmax(l/T). For tests and small rows only; use
    :func:`softmax_jacobian_norm` for norms.
    """
    check_finite(weights, "weights", allow_neg_inf=False)
    check_positive(temperature, "temperature")
    return (torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)) / temperature


def finite_difference_sensitivity(
    scores: Tensor,
    temperatures: float | Sequence[float] | Tensor,
    epsilons: float | Sequence[float] | Tensor = (1e-3, 1e-1, 10.0),
    *,
    dim: int = -1,
    mask: Tensor | None = None,
    generator: torch.Generator | None = None,
) -> RowValues:
    """Paper A, Alg. 5: δ = ||softmax((l + εv)/T) − softmax(l/T)||₂ / ε per row, over a T × ε grid.

    v is a random unit vector per row, drawn from an isotropic Gaussian over the row's kept
    entries only (zero on dropped ones) with ``generator``, and shared by every (T, ε) so the
    grid is compared on the same directions. By the mean-value theorem and ||p − r||₂ ≤ √2
    for distributions, δ ≤ min{1/(2T), √2/ε}
    (:func:`attnlimits.theory.softmax_perturbation_bound`); paper A plots min{1/(4T), √2}.

    Parameters
    ----------
    scores : Tensor
        Raw logits l, ``[..., query, key]``; ``-inf`` entries are dropped.
    temperatures, epsilons : float, sequence or Tensor
        Positive grids (flattened), n_T and n_ε values.
    dim : int
        The key axis.
    mask : Tensor, optional
        Boolean keep-mask broadcastable to ``scores`` (True = keep).
    generator : torch.Generator, optional
        Source of the directions (on ``scores``' device); seed it for reproducible numbers.

    Returns
    -------
    RowValues
        ``values`` of shape ``[...rows, n_T, n_ε]`` (rows = ``scores``' shape without ``dim``),
        float64, so ``values[..., i, j]`` lines up with ``valid`` of shape ``[...rows]``
        (False where no key is kept; values NaN there).
        A row with one kept key gives δ = 0.
    """
    check_finite(scores, "scores")
    t = _as_grid(temperatures, "temperatures").to(scores.device)
    eps = _as_grid(epsilons, "epsilons").to(scores.device)
    dim = normalize_dim(dim, scores.ndim)
    keep = keep_mask(scores, mask).movedim(dim, -1)  # [...rows, L]
    l = torch.where(keep, scores.detach().to(torch.float64).movedim(dim, -1), 0.0)
    v = torch.randn(l.shape, generator=generator, dtype=torch.float64, device=l.device)
    v = torch.where(keep, v, 0.0)
    v = v / torch.linalg.vector_norm(v, dim=-1, keepdim=True).clamp_min(1e-300)
    t_ = t.view(-1, 1, 1)  # (n_T, 1, 1): broadcasts against (...rows, n_T, n_ε, L)
    e_ = eps.view(1, -1, 1)  # (1, n_ε, 1)
    l_, v_, keep_ = l[..., None, None, :], v[..., None, None, :], keep[..., None, None, :]
    base = _softmax_rows(l_ / t_, keep_)  # (...rows, n_T, 1, L)
    moved = _softmax_rows((l_ + e_ * v_) / t_, keep_)  # (...rows, n_T, n_ε, L)
    delta = torch.linalg.vector_norm(moved - base, dim=-1) / eps  # (...rows, n_T, n_ε)
    valid = keep.any(-1)
    return RowValues(torch.where(valid[..., None, None], delta, math.nan), valid)
