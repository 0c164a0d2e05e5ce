"""Assumption 1 of paper A (Mudarisov et al., NeurIPS 2025, Section 2.2): tokens on a sphere.

:func:`normalize_to_sphere` puts vectors on the sphere of radius M; :func:`sphere_radius` checks
that kept keys are on one, with a tolerance that fits their dtype: in bfloat16 the norms of
``normalize_to_sphere``'s own output are off by up to about 1.5 eps (2⁻⁷ ≈ 0.008: the norm, the
quotient and each product rounded once), more than a float32 ``rtol`` of 1e-3 allows.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlimits._checks import check_finite, check_positive, normalize_dim

__all__ = ["EPS_ALLOWED", "normalize_to_sphere", "sphere_radius"]

#: The sphere check allows this many eps of x's dtype (normalize_to_sphere reaches ~1.5).
EPS_ALLOWED = 2.0


def normalize_to_sphere(x: Tensor, radius: float = 1.0, *, dim: int = -1) -> Tensor:
    """Project every vector onto the sphere of radius M (Assumption 1): M · x / ||x||.

    Raises ``ValueError`` for a zero vector, which has no direction to keep.
    """
    check_finite(x, "x", allow_neg_inf=False)
    check_positive(radius, "radius", tensor_ok=False)
    info = torch.finfo(x.dtype)
    if not info.tiny <= radius <= info.max:
        raise ValueError(f"radius={radius:.4g} is outside {x.dtype}'s range, x's dtype")
    dim = normalize_dim(dim, x.ndim, "x")
    if x.shape[dim] == 0:
        raise ValueError(f"x has no entries along dim={dim} (shape {tuple(x.shape)})")
    # each vector scaled by a power of two first (exact), so its norm cannot overflow
    _, exponent = torch.frexp(x.detach().abs().amax(dim=dim, keepdim=True))
    x = torch.ldexp(x, -exponent).to(x.dtype)
    norms = torch.linalg.vector_norm(x, dim=dim, keepdim=True)
    if bool((norms == 0).any()):
        raise ValueError("x holds a zero vector, which cannot be put on the sphere")
    return x * (radius / norms)


def sphere_radius(
    x: Tensor, key_keep: Tensor, radius: float | None, rtol: float, dtype: torch.dtype
) -> Tensor:
    """M per head [...] (inferred or given), after checking Assumption 1 on kept keys of ``x``
    ``[..., K, d]`` (``key_keep [..., K]``): every kept norm within ``rtol`` of M, or within
    :data:`EPS_ALLOWED` eps of ``dtype`` (the caller's x's) where that is more."""
    rtol = max(rtol, EPS_ALLOWED * torch.finfo(dtype).eps)
    norms = torch.linalg.vector_norm(x, dim=-1).expand(key_keep.shape)  # (..., K)
    hi = norms.masked_fill(~key_keep, -math.inf).amax(-1)
    lo = norms.masked_fill(~key_keep, math.inf).amin(-1)
    used = key_keep.any(-1)  # heads with no kept key: every row is invalid, any M will do
    m = hi if radius is None else torch.full_like(hi, float(radius))
    m = torch.where(used, m, 1.0)
    off = ((hi - m).abs() > rtol * m) | ((lo - m).abs() > rtol * m)
    if bool((off & used).any()):
        sphere = "a sphere" if radius is None else f"the sphere of radius {radius:.4g}"
        raise ValueError(
            f"x is not on {sphere} (Assumption 1) within rtol={rtol:.3g}: kept norms range "
            f"over [{float(lo[used].min()):.4g}, {float(hi[used].max()):.4g}]; use "
            "normalize_to_sphere first"
        )
    return m
