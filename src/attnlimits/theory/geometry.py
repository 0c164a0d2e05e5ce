"""Theorem 2: separability of the selected tokens (Mudarisov et al., *Limitations of
Normalization in Attention Mechanism*, NeurIPS 2025, Section 2.2, Eqs. 10–12).

Setting: α_i for i ∈ I_N (|I_N| = N), tokens on the sphere of radius M (Assumption 1) with
pairwise distances ≥ δ (Assumption 2), s = Σ_{i∈I_N} α_i x_i, and
X_i = ||s − α_i x_i|| = ||Σ_{j∈I_N, j≠i} α_j x_j||. N_s = #{i ∈ I_N : X_i ≤ r} (Eq. 10).

What the bounds are worth (``docs/errata.md``, theorem2_bounds):

- ξ_i ≥ X_i holds *deterministically*, since ⟨x_j, x_k⟩ = M² − ||x_j − x_k||²/2 ≤ M² − δ²/2
  and α ≥ 0. Hence the lower bound holds for the direct count of every single row, not only
  for an expectation: 1{X_i ≤ r} ≥ 1 − X_i/r ≥ 1 − ξ_i/r.
- The upper bound does not hold. Its Hoeffding step needs r below E[X_i] and then replaces
  E[X_i] by ξ_i, an *upper* bound on X_i, which goes the wrong way. Counterexample: N = 1,
  where X_1 = ξ_1 = 0, so N_s/N = 1 for every r > 0 while the bound is exp(−r²/(16M²)) < 1.
  The paper never says what E[N_s] averages over (the tokens are fixed); no distribution
  rescues N = 1.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlimits._checks import check_finite, check_number, check_positive
from attnlimits._grad import sqrt0

__all__ = ["check_geometry", "separability_bounds", "xi"]


def check_geometry(radius: float | Tensor, delta: float | Tensor) -> None:
    """Raise ``ValueError`` unless M > 0 and 0 ≤ δ ≤ 2M (Assumptions 1–2 can hold)."""
    check_positive(radius, "radius M")
    check_number(delta, "delta", tensor_ok=True)
    d = torch.as_tensor(delta, dtype=torch.float64)
    m = torch.as_tensor(radius, dtype=torch.float64)
    if not bool(torch.isfinite(d).all() and (d >= 0).all()):
        raise ValueError(f"delta must be finite and >= 0, got {delta}")
    if bool((d > 2 * m * (1 + 1e-6)).any()):
        raise ValueError(
            f"delta={delta} exceeds 2M (radius M={radius}): no two points of the sphere are "
            "that far"
        )


def _lift(v: float | Tensor) -> float | Tensor:
    """Per-row value [...] -> [..., 1], to broadcast against per-selected-key values [..., N]."""
    return v.unsqueeze(-1) if isinstance(v, Tensor) and v.ndim > 0 else v


def _sum_others(v: Tensor) -> Tensor:
    """Σ_{j≠i} v_j for every i (last axis), as prefix + suffix sums: no cancellation against v_i."""
    zero = torch.zeros_like(v[..., :1])
    prefix = torch.cat([zero, v.cumsum(-1)[..., :-1]], -1)
    suffix = torch.cat([v.flip(-1).cumsum(-1).flip(-1)[..., 1:], zero], -1)
    return prefix + suffix


def _xi(alpha: Tensor, radius: float | Tensor, delta: float | Tensor) -> Tensor:
    m, d = (torch.as_tensor(v, dtype=alpha.dtype, device=alpha.device) for v in (radius, delta))
    m2, d2 = _lift(m) ** 2, _lift(d) ** 2  # tensors: a huge M overflows to inf, not an error
    a = _sum_others(alpha)  # Σ_{j≠i} α_j
    b = _sum_others(alpha * alpha)  # Σ_{j≠i} α_j²
    # Σ_{j≠k; j,k≠i} α_j α_k = a² − b, so ξ² = M² b + (M² − δ²/2)(a² − b) = M² a² − (δ²/2)(a² − b)
    return sqrt0(m2 * a * a - d2 / 2 * (a * a - b))


def xi(alpha: Tensor, radius: float | Tensor, delta: float | Tensor) -> Tensor:
    """ξ_i of Eq. 12, the bound X_i = ||Σ_{j∈I_N, j≠i} α_j x_j|| ≤ ξ_i.

    ξ_i² = M² Σ_{j∈I_N, j≠i} α_j² + (M² − δ²/2) Σ_{j,k∈I_N; j≠k; j,k≠i} α_j α_k.

    Parameters
    ----------
    alpha : Tensor
        Weights over I_N, ``[..., N]`` (non-negative).
    radius : float or Tensor
        M > 0 (Assumption 1); a tensor broadcasts against ``alpha.shape[:-1]``.
    delta : float or Tensor
        δ with 0 ≤ δ ≤ 2M (Assumption 2; δ = 0 is allowed and gives ξ_i = M Σ_{j≠i} α_j).

    Returns
    -------
    Tensor
        ξ ``[..., N]``, ≥ 0 (clamped at 0 against rounding).
    """
    check_finite(alpha, "alpha", allow_neg_inf=False)
    if alpha.ndim == 0 or alpha.shape[-1] == 0:
        raise ValueError(f"alpha must be weights over I_N [..., N], N >= 1, got {alpha!r:.40}")
    if bool((alpha < 0).any()):
        raise ValueError("alpha must be non-negative")
    check_geometry(radius, delta)
    for name, v in (("radius", radius), ("delta", delta)):
        if isinstance(v, Tensor) and v.ndim:
            try:
                torch.broadcast_shapes(v.shape, alpha.shape[:-1])
            except RuntimeError:
                raise ValueError(
                    f"{name} of shape {tuple(v.shape)} does not broadcast against alpha's rows "
                    f"{tuple(alpha.shape[:-1])} (alpha {tuple(alpha.shape)})"
                ) from None
    out = _xi(alpha, radius, delta)
    if not bool(torch.isfinite(out).all()):
        raise ValueError("ξ overflows the float range: alpha, radius or delta too large")
    return out


def _bounds(
    alpha: Tensor, r: Tensor | float, radius: float | Tensor, delta: float | Tensor
) -> tuple[Tensor, Tensor]:
    x = _xi(alpha, radius, delta)
    m = torch.as_tensor(radius, dtype=alpha.dtype, device=alpha.device)
    if not isinstance(r, Tensor):
        lower = 1 - x.sum(-1) / (alpha.shape[-1] * r)
        return lower, torch.exp(-((r - x) ** 2) / (16 * _lift(m) ** 2)).mean(-1)
    # a measured ball radius r may be 0 (Theorem 2 needs r > 0: lower takes its limit r → 0⁺,
    # see separability_bounds) or inf (no key outside I_N: lower 1, upper 0); neither enters
    # a formula (the double where), so no 0/0 or 0·inf reaches the gradients
    inf, ok = torch.isinf(r), (r > 0) & torch.isfinite(r)
    xi_sum = x.sum(-1)
    at_zero = torch.where(xi_sum > 0, -math.inf, 1.0)  # the limit r → 0⁺ of 1 − Σξ_i/(rN)
    limit = torch.where(r == 0, at_zero, 1.0)
    lower = torch.where(ok, 1 - xi_sum / (alpha.shape[-1] * torch.where(ok, r, 1.0)), limit)
    upper = torch.exp(-((_lift(torch.where(inf, 0.0, r)) - x) ** 2) / (16 * _lift(m) ** 2))
    return lower, torch.where(inf, 0.0, upper.mean(-1))


def separability_bounds(
    alpha: Tensor,
    r: float | Tensor,
    radius: float | Tensor,
    delta: float | Tensor,
    *,
    check: bool = True,
) -> tuple[Tensor, Tensor]:
    """Both sides of Theorem 2 (Eq. 11) on N_s/N, with ξ_i from :func:`xi`.

    lower = 1 − (1/(rN)) Σ_{i∈I_N} ξ_i,   upper = (1/N) Σ_{i∈I_N} exp(−(r − ξ_i)²/(16M²)).

    ``lower`` is a valid bound on the direct count N_s/N (Eq. 10) of each row whose selected
    tokens satisfy Assumptions 1–2; ``upper`` is *not* a valid bound (it fails at N = 1 for
    every r > 0; see the module docstring and ``docs/errata.md``, theorem2_bounds).

    Eq. 10 and Theorem 2 take r > 0. A *measured* radius r = 0 (``check=False`` callers: a
    non-selected token's α_j x_j equals s, e.g. at N = 1 a repeated token whose weight ties
    the top one) gives each side its limit r → 0⁺: ``lower`` = 1 where Σξ_i = 0 (always at
    N = 1, where ξ_1 = 0, so the value is continuous in r there) and −∞ otherwise (Markov's
    step 1{X_i ≤ r} ≥ 1 − X_i/r says nothing as r → 0; still a valid bound), ``upper`` its
    formula at r = 0. Never NaN (issue 54).

    Parameters
    ----------
    alpha : Tensor
        Weights over I_N, ``[..., N]``.
    r : float or Tensor
        Ball radius r > 0, one per row (``[...]``).
    radius, delta : float or Tensor
        M and δ as in :func:`xi`.
    check : bool
        Validate the arguments (``False`` for callers that validated them once already).

    Returns
    -------
    (lower, upper) : tuple of Tensor
        Each ``alpha.shape[:-1]``.
    """
    if not check:
        return _bounds(alpha, r, radius, delta)
    check_positive(r, "r")
    xi(alpha, radius, delta)  # validation
    if isinstance(r, Tensor) and r.ndim:
        try:
            torch.broadcast_shapes(r.shape, alpha.shape[:-1])
        except RuntimeError:
            raise ValueError(
                f"r of shape {tuple(r.shape)} does not broadcast against alpha's rows "
                f"{tuple(alpha.shape[:-1])}"
            ) from None
    lower, upper = _bounds(alpha, r, radius, delta)
    if not bool(torch.isfinite(lower).all()):
        raise ValueError(f"the lower bound overflows the float range: r={r!r:.40} is too small")
    return lower, upper
