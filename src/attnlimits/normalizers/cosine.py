r"""Scaled cosine logits (Swin Transformer V2): a change of the logits, not of the normaliser.

Cosine attention normalises q and k before their dot product, so it cannot be written as a map
of the scores ``q·k`` that the registry's normalisers take: the same score comes from many
(q, k) pairs with different norms. It is provided here as the logits it produces, to pass to
any normaliser, e.g. ``softmax(cosine_logits(q, k), mask=causal)`` for Swin V2's attention.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnlimits._checks import check_finite, check_positive
from attnlimits.normalizers._common import check_broadcasts_to

__all__ = ["cosine_logits"]


def cosine_logits(
    q: Tensor, k: Tensor, *, scale: float | Tensor = 10.0, eps: float = 1e-12
) -> Tensor:
    r"""Cosine-similarity logits times a scale: :math:`l_{ij} = \cos(q_i, k_j) / \tau`.

    Liu et al. 2022, "Swin Transformer V2: Scaling Up Capacity and Resolution", Eq. 2
    (:math:`\mathrm{Sim}(q_i, k_j) = \cos(q_i, k_j)/\tau + B_{ij}`) without the relative
    position bias :math:`B_{ij}`; ``scale`` is :math:`1/\tau`. There τ is learned per head and
    layer and kept above 0.01 (scale ≤ 100); the official code starts it at scale 10, our
    default. The logits lie in ``[-scale, scale]``, so by paper B's Lemma 2.1 softmax over them
    disperses as the context grows unless the scale grows too.

    Parameters
    ----------
    q : Tensor
        Queries ``[..., Lq, d]`` (e.g. ``[batch, head, pos, d]``); finite.
    k : Tensor
        Keys ``[..., Lk, d]``; finite; leading axes broadcast against ``q``'s.
    scale : float or Tensor
        ``1/τ > 0``; a tensor broadcastable to the result, e.g. ``[head, 1, 1]`` per head.
    eps : float
        Lower bound on a vector's norm before dividing (``F.normalize``'s ``eps``), > 0; a zero
        vector gets logits 0.

    Returns
    -------
    Tensor
        Logits ``[..., Lq, Lk]`` (``q``'s dtype for a float ``scale``).

    Raises
    ------
    ValueError
        Non-finite or non-floating q or k, different dtypes, mismatched d or leading axes,
        ``scale`` or ``eps`` not positive and finite, or ``scale`` beyond the dtype's range
        (the logits lie in ``[-scale, scale]``).
    """
    check_finite(q, "q", allow_neg_inf=False)
    check_finite(k, "k", allow_neg_inf=False)
    check_positive(scale, "scale")
    check_positive(eps, "eps", tensor_ok=False)
    if q.dtype != k.dtype:
        raise ValueError(f"q and k must share a dtype, got {q.dtype} and {k.dtype}")
    if q.ndim < 2 or k.ndim < 2 or q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q [..., Lq, d] and k [..., Lk, d] must share d, got {tuple(q.shape)}, "
            f"{tuple(k.shape)}"
        )
    try:
        lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"the leading axes of q {tuple(q.shape)} and k {tuple(k.shape)} do not broadcast"
        ) from None
    check_broadcasts_to(scale, "scale", (*lead, q.shape[-2], k.shape[-2]), "the logits")
    big = torch.finfo(q.dtype).max
    if eps > big:
        raise ValueError(f"eps must be at most {big:.4g} ({q.dtype}'s range), got {eps!r:.40}")
    if bool(torch.as_tensor(scale).detach().double().abs().max() > big):
        raise ValueError(f"scale must be at most {big:.4g} ({q.dtype}'s range), got {scale!r:.40}")
    qn = torch.nn.functional.normalize(q, dim=-1, eps=eps)
    kn = torch.nn.functional.normalize(k, dim=-1, eps=eps)
    return scale * (qn @ kn.transpose(-1, -2))  # (..., Lq, Lk)
