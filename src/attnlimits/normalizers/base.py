"""Softmax with temperature (paper A, Eq. 2) and the general normaliser F(l) / Σ F(l) (Eq. 3)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from attnlimits._checks import ArgumentTypeError, check_positive
from attnlimits.normalizers._common import check_broadcasts_to, finish, masked_softmax, prepare

__all__ = ["general", "softmax"]


def softmax(
    scores: Tensor,
    dim: int = -1,
    *,
    mask: Tensor | None = None,
    temperature: float | Tensor = 1.0,
) -> Tensor:
    r"""Softmax with temperature over the kept keys.

    .. math:: a_n = \frac{\exp(l_n / T)}{\sum_{j\ \mathrm{kept}} \exp(l_j / T)}

    Mudarisov et al., *Limitations of Normalization in Attention Mechanism*, Eq. 2
    (there ``l = q·k`` and ``T`` is usually ``sqrt(d)``).

    Parameters
    ----------
    scores : Tensor
        Logits, any shape, e.g. ``[batch, head, query, key]``. ``-inf`` counts as masked.
    dim : int
        Normalised axis (the key axis), default ``-1``.
    mask : Tensor of bool, optional
        Keep-mask (True = attend), broadcastable to ``scores``.
    temperature : float or Tensor
        ``T > 0``; any positive float, also outside float32's range (below its smallest normal
        or above its largest: then computed in float64, the output keeps ``scores``' dtype);
        or a tensor broadcastable to ``scores`` (e.g. a learned temperature per head).

    Returns
    -------
    Tensor
        Same shape and dtype as ``scores``; sums to one along ``dim`` in every row with a kept
        key; masked entries and all-masked rows are exactly 0.

    Raises
    ------
    ValueError
        NaN or +inf in ``scores``, ``T <= 0``, a non-boolean or non-broadcastable mask.
    """
    check_positive(temperature, "temperature")
    x, keep, d = prepare(scores, mask, dim)
    check_broadcasts_to(temperature, "temperature", x.shape)
    if not isinstance(temperature, Tensor) and not (
        torch.finfo(x.dtype).tiny <= temperature <= torch.finfo(x.dtype).max
    ):
        # T outside the working dtype's normal range: divide where T is exact (a T that
        # rounds to inf would turn an overflowed -inf logit difference into -inf / inf = NaN)
        x = x.double()
    return finish(masked_softmax(x, keep, d, temperature=temperature), keep, scores)


def general(
    scores: Tensor,
    F: Callable[[Tensor], Tensor],
    dim: int = -1,
    *,
    mask: Tensor | None = None,
) -> Tensor:
    r"""The general normaliser :math:`a_n = F(l_n) / \sum_{j\ \mathrm{kept}} F(l_j)`.

    Mudarisov et al., Eq. 3: ``F`` smooth and positive; it may close over parameters θ such
    as ``T`` or ``L`` (Lemma 1 covers the case where ``F`` does not depend on ``L``).
    ``general(l, torch.exp)`` equals :func:`softmax` up to rounding, but without the max
    shift, so large logits overflow: use :func:`softmax` for the exponential.

    Parameters
    ----------
    scores : Tensor
        Logits, any shape. ``-inf`` counts as masked (``F`` is never evaluated there).
    F : callable
        Elementwise, ``Tensor -> Tensor``; must be finite and > 0 at every kept score.
    dim : int
        Normalised axis, default ``-1``.
    mask : Tensor of bool, optional
        Keep-mask (True = attend), broadcastable to ``scores``.

    Returns
    -------
    Tensor
        Same shape and dtype as ``scores``; sums to one along ``dim`` in rows with a kept key.

    Raises
    ------
    ValueError
        Bad scores or mask, or ``F`` not finite and positive at a kept score.
    """
    if not callable(F):
        raise ArgumentTypeError(f"F must be a callable Tensor -> Tensor, got {type(F).__name__}")
    x, keep, d = prepare(scores, mask, dim)
    f = F(x)
    if not isinstance(f, Tensor) or f.shape != x.shape:
        got = tuple(f.shape) if isinstance(f, Tensor) else type(f).__name__
        raise ValueError(f"F must be elementwise: got {got} for shape {tuple(x.shape)}")
    bad = keep & ~(torch.isfinite(f.detach()) & (f.detach() > 0))
    if not f.is_meta and bool(bad.any()):
        raise ValueError("F must be finite and positive at every kept score")
    f = torch.where(keep, f, 0.0)
    s = f.sum(dim=d, keepdim=True)
    return finish(f / torch.where(s > 0, s, 1.0), keep, scores)
