"""Per-row sensitivity of softmax attention: exact Jacobian norm and paper A's Alg. 5.

Maps are ``[..., query, key]`` (normalised axis ``dim``, default ``-1``); masks are boolean,
True = keep; ``-inf`` scores count as masked. Each function returns :class:`RowValues`: the
per-row numbers (``dim`` removed) with NaN where a row cannot be scored (no kept key) and a
``valid`` flag beside them, ready for :func:`attnlimits.metrics.row_mean`.

- :func:`softmax_jacobian_norm`: ||J||₂ of J = (diag(α) − ααᵀ)/T, α = softmax(l/T), from the
  secular equation of a diagonal-minus-rank-one matrix (no L×L eigendecomposition);
  :func:`softmax_jacobian_norms` for a grid of temperatures.
- :func:`finite_difference_sensitivity`: paper A, Alg. 5,
  δ = ||softmax((l + εv)/T) − softmax(l/T)||₂ / ε with a random unit direction v per row.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from attnlimits._checks import (
    ArgumentTypeError,
    check_finite,
    check_mask,
    check_nonempty,
    check_positive,
    check_tensor,
    keep_mask,
    normalize_dim,
)
from attnlimits.metrics import _fused
from attnlimits.normalizers.base import softmax

__all__ = [
    "RowValues",
    "finite_difference_sensitivity",
    "jacobian_top_eigenvalue",
    "softmax_jacobian_matrix",
    "softmax_jacobian_norm",
    "softmax_jacobian_norms",
]

#: Newton steps at most; from the two-term start they converge in about 5 (monotone, quadratic).
NEWTON_MAX_STEPS = 60
#: Stop once every row's step is below this fraction of its μ = λ − α_(2).
NEWTON_RTOL = 4e-16
#: G is at rounding level once |G| is below this fraction of its terms' sum.
_G_RTOL = 8e-16
#: Second weights below this are treated in closed form (their squares underflow).
_TINY = 1e-100


class RowValues(NamedTuple):
    """A per-row metric: values (NaN where not scorable) and the ``valid`` flag."""

    values: Tensor
    valid: Tensor


def _as_grid(values: float | Sequence[float] | Tensor, name: str) -> Tensor:
    """A number, a sequence of numbers or a tensor, as a flat float64 grid of positive values."""
    if isinstance(values, Tensor):
        values = check_tensor(values, name).detach()  # a grid of settings, not differentiated
    elif isinstance(values, (str, bytes)) or not isinstance(values, (numbers.Real, Sequence)):
        raise ArgumentTypeError(f"{name} must be a number, a sequence of numbers or a tensor")
    try:
        t = torch.as_tensor(values, dtype=torch.float64).reshape(-1)
    except (TypeError, ValueError, RuntimeError, OverflowError):
        raise ArgumentTypeError(f"{name} must hold numbers, got {values!r:.60}") from None
    if t.numel() == 0:
        raise ValueError(f"{name} must not be empty")
    check_positive(t, name)
    return t


def _check_not_tiny(t: Tensor, name: str, given: object) -> None:
    """||J|| <= 1/(2T) must be a float64: T >= 1/(2·max) ≈ 2.8e-309."""
    if bool((t < 0.5 / torch.finfo(torch.float64).max).any()):
        raise ValueError(f"{name} must be >= 2.8e-309 (1/(2T) overflows), got {given!r:.40}")


def jacobian_top_eigenvalue(
    weights: Tensor, *, dim: int = -1, mask: Tensor | None = None
) -> RowValues:
    """Largest eigenvalue of A = diag(α) − ααᵀ per row, via its secular equation (float64).

    A is positive semi-definite (uᵀAu = Var_{i∼α}(u_i)), so this is ||A||₂. Its eigenvalues
    interlace the sorted weights α_(1) ≥ α_(2) ≥ …, and the largest, λ, lies in
    [α_(2), α_(1)]. Where α_(1) > α_(2) > 0, λ is the unique root there of

        f(λ) = 1 − Σ_i α_i² / (α_i − λ);

    where α_(1) = α_(2), λ = α_(1) (e₁ − e₂ is then an eigenvector); where α_(2) = 0,
    λ = α_(1)(1 − α_(1)) (0 for a one-key row). See :func:`_secular_root` for the solver:
    Newton's method on a concave form of f, O(rows·L) per step, no L×L matrix.

    Parameters
    ----------
    weights : Tensor
        α in [0, 1], each row summing to 1 over its kept entries; ``[..., query, key]``
        (an empty key axis or a weight outside [0, 1] is refused).
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
    if bool(((weights < 0) | (weights > 1)).any()):
        raise ValueError("weights must lie in [0, 1] (softmax weights)")
    dim = normalize_dim(dim, weights.ndim, "weights")
    check_nonempty(weights, dim, "weights")
    keep = torch.ones_like(weights, dtype=torch.bool)
    checked = check_mask(mask, weights, of="weights")
    if checked is not None:
        keep = checked
    w = torch.where(keep, weights.detach().to(torch.float64), 0.0).movedim(dim, -1)
    valid = keep.movedim(dim, -1).any(-1)
    if w.shape[-1] == 1:
        return RowValues(torch.where(valid, 0.0, math.nan).to(torch.float64), valid)
    lam = _secular_root(w.sort(dim=-1, descending=True).values)
    return RowValues(torch.where(valid, lam, math.nan), valid)


def _secular_root(a: Tensor) -> Tensor:
    """λ_max of diag(a) − aaᵀ for rows ``a`` [..., W] sorted in descending order (≥ 2 columns).

    With μ = λ − a_2 ∈ (0, D], D = a_1 − a_2, the root of f solves G(μ) = 0 for

        G(μ) = 1 / (1 + ψ(μ)) − (D − μ) / a_1²,   ψ(μ) = Σ_{i≥2} a_i² / (a_2 − a_i + μ).

    G increases, and 1/(1 + ψ) is concave (by Cauchy–Schwarz 2ψ'² ≤ (1 + ψ)ψ''), so Newton's
    method from a point left of the root climbs to it monotonically and converges
    quadratically. The start is the root of the two-term problem (a_1 and a_2 only), left of
    the root because every further term raises ψ; iterates are kept in [start, D]. Offsets
    a_2 − a_i are exact for close weights, so λ is found to about 1e-16 absolute and 1e-13
    relative (rounding in G limits rows with a_2 < 1e-16 to the absolute figure, as it limits
    ``eigvalsh``). Rows with a_2 < 1e-100, where a_i² underflows, get max(a_1(1 − a_1), a_2):
    for weights summing to 1, λ ≤ tr A ≤ a_1(1 − a_1) + (L − 1)a_2, so the error is below
    L·1e-100. Trailing zero columns do not change the result and may be cut by the caller.
    """
    a1, a2 = a[..., 0], a[..., 1]
    rest = a[..., 1:]
    offset = a2.unsqueeze(-1) - rest  # a_2 − a_i ≥ 0
    w = rest * rest
    gap = a1 - a2
    special = (a2 < _TINY) | (gap == 0)  # closed forms below; keep the iteration finite there
    b = gap - a1 * a1 - a2 * a2
    disc = (b * b + 4 * a2 * a2 * gap).sqrt()
    start = torch.where(b >= 0, 0.5 * (b + disc), 2 * a2 * a2 * gap / (disc - b))
    gap = torch.where(special, 1.0, gap)
    start = torch.where(special, 0.5, start.clamp(max=gap))
    a1_sq = torch.where(special, 1.0, a1 * a1)
    mu = start
    for _ in range(NEWTON_MAX_STEPS):
        inv = (offset + mu.unsqueeze(-1)).reciprocal()
        t = w * inv  # a_i² / (λ − a_i)
        psi = t.sum(-1)
        dpsi = (t * inv).sum(-1)  # −ψ'(μ)
        h = (1 + psi).reciprocal()
        line = (gap - mu) / a1_sq
        new = mu - (h - line) / (dpsi * h * h + 1 / a1_sq)
        new = torch.minimum(torch.maximum(new, start), gap)
        # converged: the step is at μ's resolution, or G is at the rounding of its two terms
        moved = ((new - mu).abs() > NEWTON_RTOL * new) & ((h - line).abs() > _G_RTOL * (h + line))
        mu = new
        if not bool(moved.any()):
            break
    lam = torch.where(a1 == a2, a1, a2 + mu)  # tied top two: e_1 − e_2 is an eigenvector
    return torch.where(a2 < _TINY, torch.maximum(a1 * (1 - a1), a2), lam)


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
    there (``docs/errata.md``). Computed by :func:`jacobian_top_eigenvalue`'s solver in float64;
    for several temperatures use :func:`softmax_jacobian_norms` (one sort for all of them).

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
    check_positive(temperature, "temperature", tensor_ok=False)
    _check_not_tiny(
        torch.tensor([float(temperature)], dtype=torch.float64), "temperature", temperature
    )
    values, valid = softmax_jacobian_norms(scores, [temperature], dim=dim, mask=mask)
    return RowValues(values[..., 0], valid)


def softmax_jacobian_norms(
    scores: Tensor,
    temperatures: float | Sequence[float] | Tensor,
    *,
    dim: int = -1,
    mask: Tensor | None = None,
) -> RowValues:
    """:func:`softmax_jacobian_norm` over a grid of temperatures: values ``[...rows, n_T]``.

    Softmax keeps the order of the logits, so each row is sorted once for every T; at each T
    the columns whose weight underflows to 0 in every row are cut (at T = 1e-3 on SmolLM2's
    raw logits, 3 of 1024 remain) before the secular equation is solved (:func:`_secular_root`).
    ``valid`` (``[...rows]``) is False where no key is kept; values are NaN there. A
    measurement: the values carry no gradient (inputs that require grad are read detached).
    """
    check_finite(scores, "scores")
    t = _as_grid(temperatures, "temperatures")
    _check_not_tiny(t, "temperatures", temperatures)
    dim = normalize_dim(dim, scores.ndim, "scores")
    check_nonempty(scores, dim)
    keep = keep_mask(scores, mask).movedim(dim, -1)
    x = torch.where(keep, scores.detach().to(torch.float64).movedim(dim, -1), -math.inf)
    x = x.sort(dim=-1, descending=True).values  # dropped keys last
    # the row maximum (first) at 0: x / T cannot overflow to +inf (a spread beyond float64's
    # range gives -inf, weight 0, as it should); all-dropped rows stay -inf
    top = x[..., :1]
    x = torch.where(torch.isfinite(top), x - top, x)
    valid = keep.any(-1)
    rows = x.shape[:-1]
    x = x.reshape(-1, x.shape[-1])  # [rows, L]: one row for a 1-D input too
    if _fused.enabled(x):
        out = _fused.jacobian_rows(x, t, NEWTON_MAX_STEPS, NEWTON_RTOL, _G_RTOL, _TINY)
    else:
        out = torch.zeros((x.shape[0], t.numel()), dtype=torch.float64, device=x.device)
        if x.shape[-1] > 1:
            for i, temp in enumerate(t.tolist()):
                alpha = torch.softmax(x / temp, dim=-1).nan_to_num(0.0)
                width = max(2, int((alpha > 0).sum(-1).max()))  # trailing zeros change nothing
                out[..., i] = _secular_root(alpha[..., :width]) / temp
    out = torch.where(valid.unsqueeze(-1), out.view(*rows, t.numel()), math.nan)
    return RowValues(out, valid)


#: Elements per [rows, n_T, n_ε, keys] temporary of :func:`finite_difference_sensitivity`.
_FD_BLOCK = 2**22


def _perturbed_distance(l: Tensor, v: Tensor, keep: Tensor, t: Tensor, eps: Tensor) -> Tensor:
    """||softmax((l + εv)/T) − softmax(l/T)||₂ / ε for rows [...rows, L]: [...rows, n_T, n_ε].

    Rows are taken in order of their kept-key count, in blocks of about :data:`_FD_BLOCK`
    elements, and each block keeps only the columns some of its rows keep (dropped keys weigh
    0 in both distributions): under a causal mask this skips about half the work.
    """
    flat_l, flat_v, flat_keep = (a.reshape(-1, a.shape[-1]) for a in (l, v, keep))
    out = torch.empty((flat_l.shape[0], t.numel(), eps.numel()), dtype=l.dtype, device=l.device)
    order = flat_keep.sum(-1).argsort()
    step = max(1, _FD_BLOCK // (t.numel() * eps.numel() * max(1, l.shape[-1])))
    t_ = t.view(-1, 1, 1)  # (n_T, 1, 1): broadcasts against (rows, n_T, n_ε, L)
    e_ = eps.view(1, -1, 1)  # (1, n_ε, 1)
    for i in range(0, order.numel(), step):
        rows = order[i : i + step]
        cols = flat_keep[rows].any(0).nonzero().squeeze(-1)
        if cols.numel() == 0:  # no kept key: δ = 0 here, NaN set by the caller
            out[rows] = 0.0
            continue
        lb, vb, kb = (a[rows][:, cols][:, None, None, :] for a in (flat_l, flat_v, flat_keep))
        grid = (lb.shape[0], t.numel(), eps.numel(), lb.shape[-1])
        base = softmax(lb.expand(*grid[:2], 1, -1), mask=kb, temperature=t_)  # (rows, n_T, 1, L')
        moved = softmax((lb + e_ * vb).expand(grid), mask=kb, temperature=t_)  # (.., n_T, n_ε, L')
        out[rows] = torch.linalg.vector_norm(moved - base, dim=-1) / eps
    return out.view(*l.shape[:-1], t.numel(), eps.numel())


def softmax_jacobian_matrix(weights: Tensor, temperature: float = 1.0) -> Tensor:
    """Dense softmax Jacobian (diag(α) − ααᵀ)/T, ``[..., key] -> [..., key, key]`` (reference).

    Entry ``[i, j]`` is ∂α_i/∂l_j for α = softmax(l/T). For tests and small rows only; use
    :func:`softmax_jacobian_norm` for norms.
    """
    check_finite(weights, "weights", allow_neg_inf=False)
    if weights.ndim == 0:
        raise ValueError("weights must be [..., key], got a scalar")
    if bool(((weights < 0) | (weights > 1)).any()):
        raise ValueError("weights must lie in [0, 1] (softmax weights)")
    check_positive(temperature, "temperature", tensor_ok=False)
    if 1 / temperature > torch.finfo(weights.dtype).max:
        raise ValueError(
            f"temperature={temperature:.3g} is so small that α/T overflows {weights.dtype}"
        )
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
        A row with one kept key gives δ = 0. A measurement: no gradient (inputs read detached).
    """
    check_finite(scores, "scores")
    t = _as_grid(temperatures, "temperatures").to(scores.device)
    eps = _as_grid(epsilons, "epsilons").to(scores.device)
    dim = normalize_dim(dim, scores.ndim, "scores")
    check_nonempty(scores, dim)
    keep = keep_mask(scores, mask).movedim(dim, -1)  # [...rows, L]
    l = torch.where(keep, scores.detach().to(torch.float64).movedim(dim, -1), -math.inf)
    # δ is shift-invariant: the row maximum at 0 (clamped at -max) keeps l + εv finite
    top = l.amax(-1, keepdim=True)
    l = torch.where(keep, (l - torch.where(torch.isfinite(top), top, 0.0)), 0.0)
    l = l.clamp_min(-torch.finfo(torch.float64).max)
    v = torch.randn(l.shape, generator=generator, dtype=torch.float64, device=l.device)
    v = torch.where(keep, v, 0.0)
    v = v / torch.linalg.vector_norm(v, dim=-1, keepdim=True).clamp_min(1e-300)
    if _fused.enabled(l, v):
        delta = _fused.perturbation_rows(l, v, keep, t, eps)
    else:
        delta = _perturbed_distance(l, v, keep, t, eps)
    valid = keep.any(-1)
    return RowValues(torch.where(valid[..., None, None], delta, math.nan), valid)
