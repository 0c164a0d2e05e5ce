"""Gradient sensitivity of normalised attention: paper A (Mudarisov et al.), §2.3.

The Jacobian of α = F(l)/Σ_j F(l_j) with respect to the logits l is

    J = diag(F')/S − F F'ᵀ/S²,  S = Σ_j F(l_j)  (entries J_ij = ∂α_i/∂l_j),

and for softmax at temperature T (F = exp(l/T), F' = F/T) it is J = (diag(α) − ααᵀ)/T.

Paper A prints (Lemma 2, Eq. 13) ||J||₂ ≤ min{||F'||(1/(L min F) + ||F||/(L² (min F)²)), √2} and
(Corollary 3) ||J||₂ ≤ min{1/(4T), √2} for softmax. Both fail (``docs/errata.md``, section
"Corollary 3 and Lemma 2"; ``python -m attnlimits.errata corollary3`` and ``... lemma2``):

- the softmax Jacobian's spectral norm is at most 1/(2T), attained by two tied top logits with
  the rest negligible; 1/(4T) bounds only the diagonal entries α_i(1 − α_i)/T;
- √2 bounds ||α(1) − α(2)|| for any two distributions, not a derivative: ||J|| exceeds √2
  whenever 1/(2T) > √2 and the top two logits tie;
- Eq. 13's second term needs L, not L², in the denominator (a counterexample is F(x) = x on
  x > 0 with one logit L times the others).

The printed forms are kept under ``*_as_printed`` names; the others are the corrected bounds.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlimits._checks import check_finite, check_positive, check_tensor
from attnlimits.theory._common import Number, check_length, check_nonnegative, finite_result

__all__ = [
    "corollary3_bound_as_printed",
    "lemma2_bound_as_printed",
    "normalizer_jacobian",
    "normalizer_jacobian_norm_bound",
    "softmax_jacobian_norm_bound",
    "softmax_perturbation_bound",
]

SQRT2 = math.sqrt(2.0)


def _sqrt(x: Number) -> Number:
    return torch.sqrt(x) if isinstance(x, Tensor) else math.sqrt(x)


def _relu(x: Number) -> Number:
    """max(x, 0): rounding can leave (M + m)S − LMm a hair below 0 at S = M + (L − 1)m."""
    return x.clamp_min(0) if isinstance(x, Tensor) else max(x, 0.0)


def _min(a: Number, b: Number) -> Number:
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return torch.minimum(torch.as_tensor(a), torch.as_tensor(b))
    return min(a, b)


def _check_f(f_max: Number, fprime_max: Number, f_min: Number, length: Number) -> None:
    check_length(length)
    check_positive(f_min, "f_min")
    check_positive(f_max, "f_max")
    check_nonnegative(fprime_max, "fprime_max")
    if bool(torch.as_tensor(f_max < f_min).any()):
        raise ValueError(f"f_max must be >= f_min, got f_min={f_min}, f_max={f_max}")


def softmax_jacobian_norm_bound(temperature: Number = 1.0) -> Number:
    """||∂ softmax(l/T)/∂l||₂ ≤ 1/(2T), sharp: the corrected form of paper A's Corollary 3.

    J = (diag(α) − ααᵀ)/T. For a unit vector u, uᵀ(diag(α) − ααᵀ)u = Var_{i∼α}(u_i) ≤
    (max u − min u)²/4 ≤ 2(u_max² + u_min²)/4 ≤ 1/2 (Popoviciu, then (a − b)² ≤ 2(a² + b²)).
    Equality needs α = (½, ½, 0, …) and u = (1, −1, 0, …)/√2: two tied top logits with the
    rest negligible (the Jacobian then has eigenvalue α_(1)/T → 1/(2T)). Paper A's printed
    min{1/(4T), √2} (:func:`corollary3_bound_as_printed`) is violated there.

    Parameters
    ----------
    temperature : float or Tensor
        T > 0.
    """
    check_positive(temperature, "temperature")
    return finite_result(1 / (2 * temperature), temperature=temperature)


def softmax_perturbation_bound(perturbation_norm: Number, temperature: Number = 1.0) -> Number:
    """||softmax(l′/T) − softmax(l/T)||₂ ≤ min{||l′ − l||₂/(2T), √2}.

    The first term is the mean-value theorem with :func:`softmax_jacobian_norm_bound`; the
    second holds for any two probability vectors p, r (||p − r||₂² ≤ ||p − r||₁·max|p − r| ≤ 2).
    This is what the √2 in paper A's Lemma 2 / Corollary 3 can mean: a bound on a *difference*
    of weights, not on the derivative. Divided by ε = ||l′ − l||, it bounds Alg. 5's δ by
    min{1/(2T), √2/ε}.

    Parameters
    ----------
    perturbation_norm : float or Tensor
        ||l′ − l||₂ ≥ 0 (raw logits).
    temperature : float or Tensor
        T > 0.
    """
    check_nonnegative(perturbation_norm, "perturbation_norm")
    check_positive(temperature, "temperature")
    return _min(perturbation_norm / (2 * temperature), SQRT2)


def corollary3_bound_as_printed(temperature: Number = 1.0) -> Number:
    """Paper A, Corollary 3 as printed: ||∇_l α||₂ ≤ min{1/(4T), √2}. NOT a valid bound.

    Two tied top logits give ||J||₂ → 1/(2T) (exactly 1/(2T) for L = 2), twice 1/(4T), and
    ||J||₂ > √2 once T < 1/(2√2). 1/(4T) is the maximum of a diagonal entry α_i(1 − α_i)/T.
    Use :func:`softmax_jacobian_norm_bound`. See ``docs/errata.md``.
    """
    check_positive(temperature, "temperature")
    return _min(1 / (4 * temperature), SQRT2)


def lemma2_bound_as_printed(
    f_max: Number, fprime_max: Number, f_min: Number, length: Number
) -> Number:
    """Paper A, Lemma 2 (Eq. 13) as printed. NOT a valid bound.

    min{ ||F'||·(1/(L·min F) + ||F||/(L²·(min F)²)), √2 } with ||F|| = max_i |F(l_i)|,
    ||F'|| = max_i |F'(l_i)|. Fails (i) through the √2 cap whenever ||J|| > √2 (softmax at
    T < 1/(2√2) with tied top logits) and (ii) through the L² for F(x) = x, logits
    (L, 1, …, 1), L = 100: ||J||₂ = 0.0254 > 0.02. Use :func:`normalizer_jacobian_norm_bound`.
    """
    _check_f(f_max, fprime_max, f_min, length)
    lm = length * f_min  # > 0; divided twice, not squared (a float ** 2 raises on overflow)
    first = fprime_max * (1 / lm + f_max / lm / lm)
    return finite_result(
        _min(first, SQRT2), f_max=f_max, fprime_max=fprime_max, f_min=f_min, length=length
    )


def normalizer_jacobian_norm_bound(
    f_max: Number, fprime_max: Number, f_min: Number, length: Number
) -> Number:
    """Corrected Lemma 2 of paper A: a valid bound on ||∂α/∂l||₂ from ||F||, ||F'||, min F, L.

    With J = (I − α1ᵀ)·diag(F')/S and I − α1ᵀ idempotent, ||I − α1ᵀ||₂ = ||α1ᵀ||₂ = √L·||α||₂, so

        ||J||₂ ≤ ||F'||·√L·||F||₂ / S²        (equality when F' is constant)

    and, with every F_i in [m, M] (m = min F, M = ||F||): ||F||₂² ≤ (M + m)S − L·M·m, hence

        ||J||₂ ≤ ||F'||·√L·max_{S ∈ [M + (L−1)m, (L−1)M + m]} √((M + m)S − LMm) / S².

    The maximiser of the unimodal right side is S* = 4LMm / (3(M + m)), clipped to the interval.
    A looser closed form is ||F'||·||F|| / (L·(min F)²): paper A's second term with L in
    place of L². No √2 cap: the derivative is unbounded as ||F'|| grows.

    Parameters
    ----------
    f_max, fprime_max, f_min : float or Tensor
        max_i F(l_i) ≥ min_i F(l_i) > 0 and max_i |F'(l_i)| ≥ 0 over the row's logits.
    length : float or Tensor
        L ≥ 1, the number of kept keys.
    """
    _check_f(f_max, fprime_max, f_min, length)
    M, m, L = f_max, f_min, length
    lo = M + (L - 1) * m
    hi = (L - 1) * M + m
    s_star = 4 * L * M * m / (3 * (M + m))
    s: Number
    if isinstance(s_star, Tensor) or isinstance(lo, Tensor) or isinstance(hi, Tensor):
        s = torch.clamp(torch.as_tensor(s_star), min=torch.as_tensor(lo), max=torch.as_tensor(hi))
    else:
        s = min(max(s_star, lo), hi)
    bound = fprime_max * _sqrt(L) * _sqrt(_relu((M + m) * s - L * M * m)) / s / s
    return finite_result(bound, f_max=f_max, fprime_max=fprime_max, f_min=f_min, length=length)


def normalizer_jacobian(f_values: Tensor, f_derivs: Tensor) -> Tensor:
    """Exact Jacobian of α = F/ΣF w.r.t. the logits: J = diag(F')/S − F F'ᵀ/S² (paper A, §2.3).

    Parameters
    ----------
    f_values : Tensor
        F(l_i) > 0, ``[..., key]``.
    f_derivs : Tensor
        F'(l_i), same shape.

    Returns
    -------
    Tensor
        ``[..., key, key]`` with entry ``[i, j]`` = ∂α_i/∂l_j.
    """
    check_tensor(f_values, "f_values")
    check_tensor(f_derivs, "f_derivs")
    if f_values.ndim == 0:
        raise ValueError("f_values must be [..., key], got a scalar")
    if f_values.shape != f_derivs.shape:
        raise ValueError(
            f"shape mismatch: f_values={tuple(f_values.shape)}, f_derivs={tuple(f_derivs.shape)}"
        )
    check_finite(f_values, "f_values", allow_neg_inf=False)
    check_finite(f_derivs, "f_derivs", allow_neg_inf=False)
    if not bool((f_values > 0).all()):
        raise ValueError("f_values must be positive (F is a positive normaliser)")
    # J is unchanged when F and F' are scaled together: scale each row by a power of two
    # (exact) so that S = Σ F cannot overflow, and form F F'ᵀ/S² as (F/S)(F'/S)ᵀ
    top = torch.maximum(f_values.amax(-1, keepdim=True), f_derivs.abs().amax(-1, keepdim=True))
    exponent = torch.frexp(top)[1]
    f, g = torch.ldexp(f_values, -exponent), torch.ldexp(f_derivs, -exponent)
    s = f.sum(-1, keepdim=True)  # [..., 1]
    a, b = f / s, g / s
    return (torch.diag_embed(b) - a.unsqueeze(-1) * b.unsqueeze(-2)).to(f_values.dtype)
