"""Vanishing attention: Lemma 1 and Corollary 1 of paper A (Mudarisov et al., 2025, §2).

With bounded logits every weight of a length-independent normaliser is Θ(1/L):

- Lemma 1: F positive, independent of L, logits in [−a, a] ⇒ C1/L ≤ α_i ≤ C2/L, where one may
  take C1 = min F / max F and C2 = max F / min F over [−a, a] (α_i = F_i / Σ_j F_j and
  L·min F ≤ Σ_j F_j ≤ L·max F);
- Corollary 1 (Eq. 5), softmax with temperature T and |l_i| ≤ Δ = ||q||·max_n ||k_n||:
  (1/L)·exp(−2Δ/T) ≤ α_i ≤ (1/L)·exp(2Δ/T).

Every function takes numbers or tensors (broadcast together) and returns the same kind.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnlimits._checks import check_finite, check_positive
from attnlimits.theory._common import (
    Number,
    check_length,
    check_nonnegative,
    exp,
    finite_result,
)

__all__ = ["logit_magnitude_bound", "normalizer_weight_bounds", "softmax_weight_bounds"]


def logit_magnitude_bound(query: Tensor, keys: Tensor) -> Tensor:
    """Δ = ||q||·max_n ||k_n||, the Cauchy–Schwarz bound |l_n| = |q·k_n| ≤ Δ of paper A, Eq. 5.

    Parameters
    ----------
    query : Tensor
        ``[..., d]``.
    keys : Tensor
        ``[..., key, d]``; leading shapes broadcast with ``query``'s.

    Returns
    -------
    Tensor
        Δ with shape ``[...]`` (float32 for half inputs).
    """
    check_finite(query, "query", allow_neg_inf=False)
    check_finite(keys, "keys", allow_neg_inf=False)
    if query.ndim < 1 or keys.ndim < 2 or keys.shape[-2] == 0:
        raise ValueError(
            f"query must be [..., d] and keys [..., key, d] with at least one key, got "
            f"{tuple(query.shape)} and {tuple(keys.shape)}"
        )
    if query.shape[-1] != keys.shape[-1]:
        raise ValueError(
            f"query and keys must share the last (feature) axis, got {tuple(query.shape)} "
            f"and {tuple(keys.shape)}"
        )
    try:
        torch.broadcast_shapes(query.shape[:-1], keys.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"the leading axes of query {tuple(query.shape)} and keys {tuple(keys.shape)} "
            "do not broadcast"
        ) from None
    if query.dtype in (torch.float16, torch.bfloat16):  # as the metrics: half in float32
        query, keys = query.float(), keys.float()
    keys_max = torch.linalg.vector_norm(keys, dim=-1).amax(-1)
    delta = torch.linalg.vector_norm(query, dim=-1) * keys_max
    if not bool(torch.isfinite(delta).all()):
        raise ValueError(
            f"||query||·max||keys|| overflows {delta.dtype}: query and keys are too large"
        )
    return delta


def softmax_weight_bounds(
    length: Number, delta: Number, temperature: Number = 1.0
) -> tuple[Number, Number]:
    """Corollary 1 of paper A (Eq. 5): (1/L)·exp(−2Δ/T) ≤ α_i ≤ (1/L)·exp(2Δ/T).

    Holds for every weight of softmax(l/T) over L kept keys whenever |l_i| ≤ Δ (for example
    Δ = ||q||·max_n ||k_n||, see :func:`logit_magnitude_bound`). Both sides are Θ(1/L): with
    bounded logits no key keeps a non-vanishing weight as L grows. The sharper statement in
    terms of the logit spread is paper B's Lemma 2.1 (:func:`attnlimits.theory.dispersion_bounds`;
    spread ≤ 2Δ).

    Parameters
    ----------
    length : float or Tensor
        L ≥ 1, the number of kept keys.
    delta : float or Tensor
        Δ ≥ 0, a bound on |l_i| (raw logits, before dividing by T).
    temperature : float or Tensor
        T > 0.

    Returns
    -------
    (lower, upper)
        The two sides of Eq. 5.
    """
    check_length(length)
    check_nonnegative(delta, "delta")
    check_positive(temperature, "temperature")
    g = exp(2 * delta / temperature)
    return finite_result(
        (1 / (length * g), g / length), length=length, delta=delta, temperature=temperature
    )


def normalizer_weight_bounds(length: Number, f_min: Number, f_max: Number) -> tuple[Number, Number]:
    """Lemma 1 of paper A: C1/L ≤ α_i ≤ C2/L with C1 = min F / max F, C2 = max F / min F.

    For α_i = F(l_i) / Σ_j F(l_j) with F > 0 and independent of L, and logits in [−a, a],
    ``f_min`` and ``f_max`` are min and max of F over [−a, a]; since L·min F ≤ Σ_j F(l_j) ≤
    L·max F, every weight lies in [min F / (L max F), max F / (L min F)]. Softmax at
    temperature T with |l| ≤ Δ (F = exp(l/T), min F / max F = exp(−2Δ/T)) recovers Corollary 1.

    Parameters
    ----------
    length : float or Tensor
        L ≥ 1.
    f_min, f_max : float or Tensor
        0 < f_min ≤ f_max.

    Returns
    -------
    (lower, upper)
    """
    check_length(length)
    check_positive(f_min, "f_min")
    check_positive(f_max, "f_max")
    if bool(torch.as_tensor(f_max < f_min).any()):
        raise ValueError(f"f_max must be >= f_min, got f_min={f_min}, f_max={f_max}")
    bounds = (f_min / (length * f_max), f_max / (length * f_min))
    return finite_result(bounds, length=length, f_min=f_min, f_max=f_max)
