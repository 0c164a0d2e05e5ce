"""Scalable-Softmax (SSMax): softmax of logits scaled by s·log n (Nakanishi 2025, 2501.19399)."""

from __future__ import annotations

import torch
from torch import Tensor

from attnlimits._checks import check_positive, key_counts
from attnlimits.normalizers._common import check_broadcasts_to, finish, masked_softmax, prepare

__all__ = ["ssmax"]


def ssmax(scores: Tensor, dim: int = -1, *, mask: Tensor | None = None, s: float = 0.43) -> Tensor:
    r"""Scalable-Softmax: :math:`a_n = \mathrm{softmax}(s \log(n)\, l)_n` over the kept keys.

    .. math:: a_n = \frac{n^{s\, l_n}}{\sum_{j\ \mathrm{kept}} n^{s\, l_j}}

    Nakanishi 2025, "Scalable-Softmax Is Superior for Attention", the definition of SSMax
    (there ``s`` is learned, one per layer and head; the default 0.43 is a fixed project
    choice, not a value we could verify in the paper's text). ``n`` is
    the number of kept keys *in that row* (:func:`attnlimits._checks.key_counts`), so under a
    causal mask ``n`` is the query position + 1, and a row with one key gets weight 1.
    Scaling by log n counters paper B's dispersion (Lemma 2.1): the logit spread is multiplied
    by ``s log n``, which grows with the context exactly as fast as the dispersion does.

    Parameters
    ----------
    scores : Tensor
        Logits, any shape, e.g. ``[batch, head, query, key]``. ``-inf`` counts as masked.
    dim : int
        Normalised axis, default ``-1``.
    mask : Tensor of bool, optional
        Keep-mask (True = attend), broadcastable to ``scores``.
    s : float
        Scaling parameter, ``s > 0``. Default 0.43 (see above).

    Returns
    -------
    Tensor
        Same shape and dtype as ``scores``; sums to one along ``dim`` in rows with a kept key;
        masked entries and all-masked rows are 0.

    Raises
    ------
    ValueError
        Bad scores or mask, ``s <= 0``.
    """
    check_positive(s, "s")
    x, keep, d = prepare(scores, mask, dim)
    check_broadcasts_to(s, "s", x.shape)
    n = key_counts(keep, x, d)  # kept keys per row, x's dtype
    big = torch.finfo(x.dtype).max  # an s beyond the dtype's range: its largest value, not
    # inf (inf·log 1 = NaN); a tensor s in the scores' working dtype first (a float32 s beside
    # float64 scores could not be clamped to float64's maximum)
    s_work = s.to(x.dtype).clamp_max(big) if isinstance(s, Tensor) else min(s, big)
    scale = s_work * torch.log(n.clamp_min(1.0))
    return finish(masked_softmax(x, keep, d, scale=scale), keep, scores)
