"""Self-Adjust Softmax (SA-Softmax; Zheng et al. 2025, arXiv 2502.18277, EMNLP 2025)."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlimits.normalizers._common import finish, masked_softmax, prepare

__all__ = ["ssa", "ssa_normalized"]


def ssa(scores: Tensor, dim: int = -1, *, mask: Tensor | None = None) -> Tensor:
    r"""Self-Adjust Softmax, plain form: :math:`a_n = z_n \cdot \mathrm{softmax}(z)_n`.

    Zheng et al. 2025, "Self-Adjust Softmax", the first form in the abstract and Sec. 3:
    the softmax weight is multiplied by the score itself, which keeps the gradient of a
    near-one-hot row from vanishing. **Not a distribution**: entries are negative where
    ``z < 0`` and rows can sum to anything (e.g. ``z = (5, 5)`` gives ``(2.5, 2.5)``).
    The softmax runs over the kept keys only.

    Parameters
    ----------
    scores : Tensor
        Scores z, any shape, e.g. ``[batch, head, query, key]``. ``-inf`` counts as masked.
    dim : int
        Normalised axis, default ``-1``.
    mask : Tensor of bool, optional
        Keep-mask (True = attend), broadcastable to ``scores``.

    Returns
    -------
    Tensor
        Same shape and dtype as ``scores``; masked entries and all-masked rows are 0.

    Raises
    ------
    ValueError
        NaN or +inf in ``scores``; a non-boolean or non-broadcastable mask.
    """
    x, keep, d = prepare(scores, mask, dim)
    return finish(x * masked_softmax(x, keep, d), keep, scores)


def ssa_normalized(scores: Tensor, dim: int = -1, *, mask: Tensor | None = None) -> Tensor:
    r"""Self-Adjust Softmax, normalised form (the paper's default variant).

    .. math::

        a_n = \frac{z_n - \min(z_{\min}, 0)}{\max(0, z_{\max}) - \min(z_{\min}, 0)}
              \cdot \mathrm{softmax}(z)_n

    Zheng et al. 2025, abstract and Sec. 3; :math:`z_{\min}, z_{\max}` run over the kept keys
    of the row. The interval is anchored at 0 (the paper clamps the extremes with 0), so the
    factor lies in [0, 1]: entries are non-negative and each row sums to at most 1. A row
    of all-negative scores has :math:`z_{\min}` mapped to 0, and a row of positive scores
    keeps factor :math:`z_n / z_{\max}`. The only degenerate case, every kept score exactly 0,
    has numerator 0 as well; it returns 0, the limit of the authors' code (which adds 1e-10 to
    the denominator).

    Parameters
    ----------
    scores : Tensor
        Scores z, any shape, e.g. ``[batch, head, query, key]``. ``-inf`` counts as masked.
    dim : int
        Normalised axis, default ``-1``.
    mask : Tensor of bool, optional
        Keep-mask (True = attend), broadcastable to ``scores``.

    Returns
    -------
    Tensor
        Same shape and dtype as ``scores``; entries in [0, 1], rows sum to at most 1;
        masked entries and all-masked rows are 0.

    Raises
    ------
    ValueError
        NaN or +inf in ``scores``; a non-boolean or non-broadcastable mask.
    """
    x, keep, d = prepare(scores, mask, dim)
    lo = torch.where(keep, x, math.inf).amin(dim=d, keepdim=True).clamp_max(0.0)
    hi = torch.where(keep, x, -math.inf).amax(dim=d, keepdim=True).clamp_min(0.0)
    # all-masked rows: ±inf clamp to 0, so span = 0 there. Halved first (exact for normal
    # numbers): hi − lo itself overflows when the kept scores span more than the dtype's max
    span = hi * 0.5 - lo * 0.5
    factor = (x * 0.5 - lo * 0.5) / torch.where(span > 0, span, 1.0)
    return finish(factor * masked_softmax(x, keep, d), keep, scores)
