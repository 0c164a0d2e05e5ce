"""Softmaxes that may put weight nowhere: softmax1 (off by one), a sink logit, softpick."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlimits._checks import check_number, check_positive
from attnlimits.normalizers._common import finish, masked_max, prepare

__all__ = ["sink_softmax", "softmax1", "softpick"]


def sink_softmax(
    scores: Tensor, dim: int = -1, *, mask: Tensor | None = None, sink: float | Tensor = 0.0
) -> Tensor:
    r"""Softmax with one extra logit that takes weight but gives no value (an attention sink).

    .. math:: a_n = \frac{e^{l_n}}{e^{s} + \sum_{j\ \mathrm{kept}} e^{l_j}}

    The learned per-head sink logit ``s`` of recent open-weight models (gpt-oss, 2025: one
    learnable scalar per head added to the softmax denominator); ``s = 0`` is
    :func:`softmax1`. Rows sum to ``1 − e^{s}/(e^{s} + Σ e^{l})`` < 1, so a head can attend to
    nothing without a sink token.

    Parameters
    ----------
    scores : Tensor
        Logits, any shape, e.g. ``[batch, head, query, key]``. ``-inf`` counts as masked.
    dim : int
        Normalised axis, default ``-1``.
    mask : Tensor of bool, optional
        Keep-mask (True = attend), broadcastable to ``scores``.
    sink : float or Tensor
        The sink logit ``s``: a number, or a tensor broadcastable to ``scores`` with ``dim``
        of size 1 (e.g. ``[head, 1, 1]`` for one sink per head); finite.

    Returns
    -------
    Tensor
        Same shape and dtype as ``scores``, entries in [0, 1), rows summing to less than one;
        masked entries and all-masked rows are 0.
    """
    check_number(sink, "sink", tensor_ok=True)
    if isinstance(sink, Tensor):
        if not bool(torch.isfinite(sink).all()):
            raise ValueError("sink must be finite")
    elif not math.isfinite(sink):
        raise ValueError(f"sink must be a finite number or tensor, got {sink!r}")
    x, keep, d = prepare(scores, mask, dim)
    big = torch.finfo(x.dtype).max  # a sink beyond the dtype's range takes all the weight
    s = torch.as_tensor(sink, dtype=x.dtype, device=x.device).clamp(-big, big)
    if s.ndim and s.shape[d if s.ndim == x.ndim else -1] != 1:
        raise ValueError(f"sink must have size 1 along dim, got shape {tuple(s.shape)}")
    m = torch.maximum(masked_max(x, keep, d), s.detach())  # the largest of the logits and s
    e = torch.where(keep, (x - m).exp(), 0.0)
    return finish(e / ((s - m).exp() + e.sum(dim=d, keepdim=True)), keep, scores)


def softmax1(scores: Tensor, dim: int = -1, *, mask: Tensor | None = None) -> Tensor:
    r"""softmax1 ("attention is off by one", Miller 2023).

    .. math:: a_n = \frac{e^{l_n}}{1 + \sum_{j\ \mathrm{kept}} e^{l_j}}

    :func:`sink_softmax` with a sink logit of 0 (Kaplan/Miller's "quiet attention"; the same
    form as a softmax over the keys and one extra key of logit 0 and value 0). Rows sum to less
    than one; masked entries and all-masked rows are 0.
    """
    return sink_softmax(scores, dim, mask=mask, sink=0.0)


def softpick(
    scores: Tensor, dim: int = -1, *, mask: Tensor | None = None, eps: float = 1e-8
) -> Tensor:
    r"""Softpick (rectified softmax; Zuhri et al. 2025, arXiv 2504.20966).

    .. math::
        a_n = \frac{\mathrm{ReLU}(e^{l_n} - 1)}{\sum_{j\ \mathrm{kept}} |e^{l_j} - 1| + \epsilon}

    in the stable form of the authors' reference code: numerator and sum are multiplied by
    :math:`e^{-m}` (``m`` the row maximum) and ε is added to the scaled sum, so ε only matters
    when every kept logit is (almost) exactly 0. Keys with ``l ≤ 0`` get exactly 0 (sparse);
    rows sum to at most one, and to well below it when most logits are negative: no mass is
    forced onto any key (no sink needed).

    Parameters
    ----------
    eps : float
        ε > 0 (default 1e-8, the authors' code).
    """
    check_positive(eps, "eps", tensor_ok=False)
    x, keep, d = prepare(scores, mask, dim)
    m = masked_max(x, keep, d)
    shifted = torch.where(keep, (x - m).exp() - (-m).exp(), 0.0)  # e^{-m}(e^{l} - 1)
    den = shifted.abs().sum(dim=d, keepdim=True) + eps  # 0 where eps underflows the dtype
    return finish(torch.relu(shifted) / torch.where(den > 0, den, 1.0), keep, scores)
