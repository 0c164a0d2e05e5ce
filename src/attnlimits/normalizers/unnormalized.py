"""Attention weights that do not sum to one: sigmoid, stick-breaking and ReLU attention."""

from __future__ import annotations

import torch
import torch.nn.functional as nnf
from torch import Tensor

from attnlimits._checks import check_int_at_least, is_finite_number, key_counts
from attnlimits.normalizers._common import finish, prepare

__all__ = ["relu2_attention", "relu_attention", "sigmoid", "stick_breaking"]


def sigmoid(
    scores: Tensor, dim: int = -1, *, mask: Tensor | None = None, bias: float | None = None
) -> Tensor:
    r"""Sigmoid attention: :math:`a_n = \sigma(l_n + b)`, elementwise, **not normalised**.

    Ramapuram et al. 2024, "Theory, Analysis, and Best Practices for Sigmoid Self-Attention"
    (arXiv 2409.04431): the default bias :math:`b = -\log n`, with ``n`` the number of kept
    keys in that row, keeps the initial row mass near 1 (at ``l = 0`` each weight is
    1/(n + 1), summing to n/(n + 1)). Each weight lies in [0, 1] and is independent of the
    others, so a row can sum to anything in [0, n]: there is no competition between keys
    and no dispersion in the sense of paper B's Lemma 2.1.

    Parameters
    ----------
    scores : Tensor
        Logits, any shape, e.g. ``[batch, head, query, key]``. ``-inf`` counts as masked.
    dim : int
        Key axis (used to count ``n``), default ``-1``.
    mask : Tensor of bool, optional
        Keep-mask (True = attend), broadcastable to ``scores``.
    bias : float, optional
        A fixed bias ``b``; default ``None`` means ``-log n`` per row.

    Returns
    -------
    Tensor
        Same shape and dtype as ``scores``, entries in [0, 1]; masked entries and all-masked
        rows are 0.

    Raises
    ------
    ValueError
        Bad scores or mask, or a non-finite ``bias``.
    """
    if bias is not None and not is_finite_number(bias):
        raise ValueError(f"bias must be a finite number or None, got {bias}")
    x, keep, d = prepare(scores, mask, dim)
    b = -torch.log(key_counts(keep, x, d).clamp_min(1.0)) if bias is None else bias
    return finish(torch.sigmoid(x + b), keep, scores)


def stick_breaking(scores: Tensor, dim: int = -1, *, mask: Tensor | None = None) -> Tensor:
    r"""Stick-breaking attention, **not normalised**: rows sum to at most 1.

    .. math:: a_j = \sigma(l_j) \prod_{k \in K,\ k > j} \bigl(1 - \sigma(l_k)\bigr)

    Tan et al. 2025, "Scaling Stick-Breaking Attention" (arXiv 2410.17980, ICLR 2025),
    with K the kept keys of the row: the most recent kept key (the last along
    ``dim``) breaks the stick first, takes :math:`\sigma(l)` of it, and each earlier key takes
    :math:`\sigma(l)` of what is left. So :math:`\sum_j a_j = 1 - \prod_{k \in K}(1 -
    \sigma(l_k)) \le 1`; the remainder is attention to nothing. Whether a query attends to
    itself is up to ``mask`` (the paper breaks over the tokens *before* the query, j < i).
    Computed in log space,
    :math:`\log a_j = \log\sigma(l_j) + \sum_{k > j} \log\sigma(-l_k)`,
    with one reversed cumulative sum along ``dim``.

    Parameters
    ----------
    scores : Tensor
        Logits, any shape, e.g. ``[batch, head, query, key]``. ``-inf`` counts as masked.
    dim : int
        Key axis, ordered oldest to most recent; default ``-1``.
    mask : Tensor of bool, optional
        Keep-mask (True = attend), broadcastable to ``scores``.

    Returns
    -------
    Tensor
        Same shape and dtype as ``scores``, entries in [0, 1], rows sum to at most 1;
        masked entries and all-masked rows are 0.

    Raises
    ------
    ValueError
        NaN or +inf in ``scores``; a non-boolean or non-broadcastable mask.
    """
    x, keep, d = prepare(scores, mask, dim)
    log_rest = torch.where(keep, nnf.logsigmoid(-x), 0.0)  # log(1 - σ(l_k)), 0 if dropped
    # Σ_{k >= j} by a reversed cumsum, then shift by one so that k > j strictly
    suffix = log_rest.flip(d).cumsum(d).flip(d)
    n = x.shape[d]
    after = torch.cat([suffix.narrow(d, 1, n - 1), torch.zeros_like(suffix.narrow(d, 0, 1))], d)
    return finish(torch.exp(nnf.logsigmoid(x) + after), keep, scores)


def relu_attention(
    scores: Tensor, dim: int = -1, *, mask: Tensor | None = None, power: int = 1
) -> Tensor:
    r"""ReLU attention divided by the length, **not normalised**.

    .. math:: a_n = \mathrm{ReLU}(l_n)^p / n

    ``power = 1``: ReLU/L (Wortsman et al. 2023, "Replacing softmax with ReLU in Vision
    Transformers", arXiv 2309.08586: ReLU divided by the sequence length); ``power = 2``: squared
    ReLU (ReLU², as in Primer's squared-ReLU feed-forward, So et al. 2021, used as an attention
    map in linear-attention work). ``n`` is the row's kept keys. Exact zeros for ``l ≤ 0``; rows
    are unbounded (no competition between keys, so no dispersion in paper B's sense). A value
    beyond the dtype's range (ReLU² of a logit above √max, e.g. 2e19 in float32) saturates at
    its largest finite value instead of becoming inf, as half-precision outputs do.
    """
    check_int_at_least(power, "power", 1)
    x, keep, d = prepare(scores, mask, dim)
    n = key_counts(keep, x, d).clamp_min(1.0)
    out = torch.relu(x) ** power / n
    return finish(out if power == 1 else out.clamp_max_(torch.finfo(x.dtype).max), keep, scores)


def relu2_attention(scores: Tensor, dim: int = -1, *, mask: Tensor | None = None) -> Tensor:
    """:func:`relu_attention` with ``power = 2`` (ReLU²/L)."""
    return relu_attention(scores, dim, mask=mask, power=2)
