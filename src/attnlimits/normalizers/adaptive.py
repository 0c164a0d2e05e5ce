"""Adaptive-temperature softmax (Veličković et al., *Softmax is not Enough*, Fig. 4, App. F).

Per row: p = softmax(l); H = −Σ_j p_j log(p_j + 1e-9) (nats);
β = max(poly(H), 1) if H > 0.5 else 1, with poly's coefficients highest degree first
[−0.037, 0.481, −2.3, 4.917, −1.791]; output softmax(β·l).

The names ``POLY_COEFFS``, ``ENTROPY_THRESHOLD``, ``ENTROPY_EPS`` and ``adaptive_beta`` are
imported by the streaming kernels; keep them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from attnlimits._checks import check_tensor, is_finite_number
from attnlimits.normalizers._common import finish, masked_softmax, prepare

__all__ = [
    "ENTROPY_EPS",
    "ENTROPY_THRESHOLD",
    "POLY_COEFFS",
    "adaptive_beta",
    "adaptive_softmax",
    "adaptive_stats",
    "check_adaptive_params",
]

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
    in ``entropy``'s dtype; never below 1 and never NaN (a NaN, infinite or negative entropy
    gives 1).
    """
    check_tensor(entropy, "entropy", allow_meta=True)
    check_adaptive_params(coeffs, threshold)
    poly = torch.zeros_like(entropy)
    for c in coeffs:
        poly = poly * entropy + c
    use = (entropy > threshold) & torch.isfinite(entropy)  # per row: cheap
    return torch.where(use, poly.clamp_min(1.0), torch.ones_like(entropy))


def check_adaptive_params(coeffs: Sequence[float], threshold: float) -> None:
    """Raise ``ValueError`` unless ``coeffs`` are finite numbers and ``threshold`` is finite."""
    if not isinstance(coeffs, Sequence) or isinstance(coeffs, (str, bytes)) or len(coeffs) == 0:
        raise ValueError("coeffs must be a non-empty sequence of numbers, highest degree first")
    if not all(is_finite_number(c) for c in coeffs):
        raise ValueError(f"coeffs must be finite numbers, got {list(coeffs)!r:.80}")
    if not is_finite_number(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold!r:.40}")


def _entropy_beta(
    x: Tensor, keep: Tensor, dim: int, coeffs: Sequence[float], threshold: float
) -> tuple[Tensor, Tensor]:
    """(H, β) per row, kept dimension; dropped keys have p = 0 and add nothing to H."""
    p = masked_softmax(x, keep, dim)
    entropy = -(p * torch.log(p + ENTROPY_EPS)).sum(dim=dim, keepdim=True)
    return entropy, adaptive_beta(entropy, coeffs, threshold)


def adaptive_softmax(
    scores: Tensor,
    dim: int = -1,
    *,
    mask: Tensor | None = None,
    coeffs: Sequence[float] = POLY_COEFFS,
    threshold: float = ENTROPY_THRESHOLD,
    detach_beta: bool = False,
) -> Tensor:
    r"""Adaptive-temperature softmax: :math:`\mathrm{softmax}(\beta(H)\, l)` per row.

    Veličković et al. 2025, *Softmax is not Enough (for Sharp Size Generalisation)*,
    Figure 4 listing (Appendix F), over the kept keys of each row:

    .. math::

        p = \mathrm{softmax}(l), \quad H = -\sum_j p_j \log(p_j + 10^{-9}), \quad
        \beta = \begin{cases} \max(\mathrm{poly}(H), 1) & H > 0.5 \\ 1 & \text{else}
        \end{cases}, \quad a = \mathrm{softmax}(\beta\, l).

    β ≥ 1 never raises the entropy (their Proposition 3.2: dH/dβ = −β Var_p(l)). Masked
    keys are excluded from H, as ``-inf`` logits are in the listing.

    Parameters
    ----------
    scores : Tensor
        Logits, any shape, e.g. ``[batch, head, query, key]``. ``-inf`` counts as masked.
    dim : int
        Normalised axis, default ``-1``.
    mask : Tensor of bool, optional
        Keep-mask (True = attend), broadcastable to ``scores``.
    coeffs : sequence of float
        poly(H), highest degree first; default :data:`POLY_COEFFS` (the listing's fit).
    threshold : float
        Rows with ``H <= threshold`` (nats) keep β = 1; default 0.5.
    detach_beta : bool
        If True, β is a constant in the backward pass (gradient of softmax(β·l) at fixed β).
        Default False, as in the published JAX listing, which has no ``stop_gradient``:
        the gradient then also flows through H(l) and poly(H) wherever poly(H) > 1 and
        H > threshold.

    Returns
    -------
    Tensor
        Same shape and dtype as ``scores``; sums to one along ``dim`` in rows with a kept key;
        masked entries and all-masked rows are 0.

    Raises
    ------
    ValueError
        Bad scores or mask, empty or non-finite ``coeffs``, non-finite ``threshold``.

    See Also
    --------
    adaptive_stats : the per-row (H, β) behind this output.
    """
    check_adaptive_params(coeffs, threshold)
    x, keep, d = prepare(scores, mask, dim)
    _, beta = _entropy_beta(x, keep, d, coeffs, threshold)
    if detach_beta:
        beta = beta.detach()
    return finish(masked_softmax(x, keep, d, scale=beta), keep, scores)


def adaptive_stats(
    scores: Tensor,
    dim: int = -1,
    *,
    mask: Tensor | None = None,
    coeffs: Sequence[float] = POLY_COEFFS,
    threshold: float = ENTROPY_THRESHOLD,
) -> tuple[Tensor, Tensor]:
    """Per-row entropy H (nats) of softmax(l) and the inverse temperature β(H) that
    :func:`adaptive_softmax` applies, for diagnostics.

    Same inputs and checks as :func:`adaptive_softmax`. Returns ``(H, beta)``, each of
    ``scores``' shape without ``dim``, in float32 for half inputs (else ``scores``' dtype).
    An all-masked row has H = 0 and β = 1.
    """
    check_adaptive_params(coeffs, threshold)
    x, keep, d = prepare(scores, mask, dim)
    entropy, beta = _entropy_beta(x, keep, d, coeffs, threshold)
    return entropy.squeeze(d), beta.squeeze(d)
