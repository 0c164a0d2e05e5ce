"""Adaptive-temperature softmax (Veličković et al., *Softmax is not Enough*, Figure 4 listing, App. F).

Per row: p = softmax(l); H = −Σ_j p_j log(p_j + 1e-9) (nats);
β = max(poly(H), 1) if H > 0.5 else 1, with poly's coefficients highest degree first
[−0.037, 0.481, −2.3, 4.917, −1.791]; output softmax(β·l).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["ENTROPY_EPS", "ENTROPY_THRESHOLD", "POLY_COEFFS", "adaptive_beta"]

#: Paper B's polynomial β(H), highest degree first (Figure 4 listing).
POLY_COEFFS: tuple[float, ...] = (-0.037, 0.481, -2.3, 4.917, -1.791)
#: Rows with entropy at or below this (nats) keep β = 1 (Figure 4 listing).
ENTROPY_THRESHOLD: float = 0.5
#: The listing's ``log(p + 1e-9)``.
ENTROPY_EPS: float = 1e-9


def adaptive_beta(
    entropy: Tensor,
    coeffs: Sequence[float] = POLY_COEFFS,
    threshold: float = ENTROPY_THRESHOLD,
) -> Tensor:
    """Inverse temperature β(H) of paper B's listing: max(poly(H), 1) where H > threshold, else 1.

    ``coeffs`` are highest degree first (``numpy.polyval`` order). Evaluated by Horner's rule
    in ``entropy``'s dtype; never below 1.
    """
    poly = torch.zeros_like(entropy)
    for c in coeffs:
        poly = poly * entropy + c
    return torch.where(entropy > threshold, poly.clamp_min(1.0), torch.ones_like(entropy))
