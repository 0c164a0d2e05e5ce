"""Top-k softmax: softmax restricted to the k largest kept scores of each row."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlimits._checks import check_int_at_least
from attnlimits.normalizers._common import finish, masked_softmax, prepare

__all__ = ["topk_softmax"]


def topk_softmax(
    scores: Tensor, dim: int = -1, *, mask: Tensor | None = None, k: int = 5
) -> Tensor:
    r"""Softmax over the ``k`` largest kept scores of each row; every other entry is 0.

    .. math:: a_n = \frac{\exp(l_n)\,[n \in I_k]}{\sum_{j \in I_k} \exp(l_j)}

    with :math:`I_k` the indices of the ``k`` largest kept scores, the hard selection that
    paper A's top-N set :math:`I_N` (Eq. 6) describes. With ``k`` at least the number of kept
    keys this is plain :func:`~attnlimits.normalizers.softmax`. Ties at the k-th value are
    broken by ``torch.topk`` (exactly ``k`` entries are kept). Gradients flow only to the
    selected scores (the selection is piecewise constant).

    Parameters
    ----------
    scores : Tensor
        Logits, any shape. ``-inf`` counts as masked.
    dim : int
        Normalised axis, default ``-1``.
    mask : Tensor of bool, optional
        Keep-mask (True = attend), broadcastable to ``scores``.
    k : int
        Number of keys kept per row, ``k >= 1``; default 5 (paper A's N = 5 in Algorithm 1).

    Returns
    -------
    Tensor
        Same shape and dtype as ``scores``; sums to one along ``dim`` in rows with a kept key.

    Raises
    ------
    ValueError
        Bad scores or mask, or ``k`` not an int ``>= 1``.
    """
    check_int_at_least(k, "k", 1)
    x, keep, d = prepare(scores, mask, dim)
    k_eff = min(k, x.shape[d])
    ranked = torch.where(keep, x, -math.inf).detach()
    idx = ranked.topk(k_eff, dim=d).indices
    selected = torch.zeros_like(keep).scatter(d, idx, True)
    keep = keep & selected  # a dropped key picked when k > kept count stays dropped
    return finish(masked_softmax(x, keep, d), keep, scores)
