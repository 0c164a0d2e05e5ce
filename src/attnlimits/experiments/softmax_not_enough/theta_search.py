"""App. F's search: the temperature that maximises one key's attention weight, per row.

Paper B (Veličković et al., *Softmax is not Enough*), App. F: for each kept input, a grid
search over the temperature θ, in fixed increments between two bounds, for the θ that gives
the maximal item the highest attention probability softmax(e/θ)[i_max]. With β = 1/θ,
log w(β) = β e_i − log Σ_j exp(β e_j) is concave in β (its second derivative is −Var_β(e),
Prop. 3.2), so w has one peak; it is interior exactly when e_i > mean(e) and e_i < max(e).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

__all__ = ["ThetaSearch", "edge_labels", "max_item_temperature"]


class ThetaSearch(NamedTuple):
    """Per row of :func:`max_item_temperature`: θ*, w(θ*), w at the grid point nearest 1, and
    θ*'s position on the grid (0: lower edge, len − 1: upper edge)."""

    theta: Tensor
    weight: Tensor
    weight_one: Tensor
    position: Tensor


def max_item_temperature(
    scores: Tensor,
    index: Tensor,
    thetas: Tensor | Sequence[float] | np.ndarray,
    *,
    dim: int = -1,
    chunk_elements: int = 1 << 24,
) -> ThetaSearch:
    """Grid search of the temperature that maximises one key's attention weight, per row.

    For each row e of ``scores`` along ``dim`` and key i = ``index``:
    θ* = argmax over ``thetas`` of softmax(e/θ)[i] (App. F's objective), first maximiser on
    ties. Computed as log-weights (e_i − max e)/θ − logsumexp((e − max e)/θ), so the search is
    stable at small θ, and keys with equal logits give bit-equal weights.

    Parameters
    ----------
    scores : Tensor
        Logits, any shape, float32 or float64 (half precision is computed in float32).
        ``-inf`` is a masked key (weight 0 at every θ); NaN and +inf are refused.
    index : Tensor of int
        The key per row: ``scores``' shape without ``dim``, values in ``[0, n)``.
    thetas : 1-D tensor or sequence of float
        The grid, every θ finite and > 0 (any order; "first" is in this order).
    dim : int
        The key axis, default ``-1``.
    chunk_elements : int
        Bound on the (rows × θ-chunk × n) temporaries: θ is processed in chunks.

    Returns
    -------
    ThetaSearch
        ``theta``, ``weight``, ``weight_one`` in the computation dtype and ``position``
        (long), each of ``index``'s shape.
    """
    if not torch.is_floating_point(scores):
        raise ValueError(f"scores must be a floating tensor, got {scores.dtype}")
    if scores.ndim == 0 or scores.shape[dim] == 0:
        raise ValueError(f"scores need a non-empty key axis dim={dim}, got {tuple(scores.shape)}")
    x = scores.movedim(dim, -1)  # (..., n)
    if x.dtype in (torch.float16, torch.bfloat16):
        x = x.float()
    n = x.shape[-1]
    index = torch.as_tensor(index, device=x.device)
    if index.dtype.is_floating_point or index.dtype == torch.bool:
        raise ValueError(f"index must be an integer tensor, got {index.dtype}")
    if index.shape != x.shape[:-1]:
        raise ValueError(
            f"index must have scores' shape without dim ({tuple(x.shape[:-1])}), "
            f"got {tuple(index.shape)}"
        )
    if index.numel() and (index.min() < 0 or index.max() >= n):
        raise ValueError(
            f"index out of range [0, {n}): got values {int(index.min())} … {int(index.max())}"
        )
    theta = torch.as_tensor(thetas, dtype=x.dtype, device=x.device)
    if theta.ndim != 1 or theta.numel() == 0:
        raise ValueError(f"thetas must be a non-empty 1-D grid, got shape {tuple(theta.shape)}")
    if not (torch.isfinite(theta) & (theta > 0)).all():
        raise ValueError(f"every temperature must be finite and > 0, got {theta.tolist()}")
    if torch.isnan(x).any() or (x == torch.inf).any():
        raise ValueError("scores must not contain NaN or +inf (-inf marks a masked key)")
    top = x.amax(-1, keepdim=True)  # (..., 1)
    if not torch.isfinite(top).all():
        raise ValueError("every row needs at least one finite score")
    x = x - top  # (..., n), max 0
    xi = x.gather(-1, index.unsqueeze(-1))  # (..., 1)
    per = max(1, chunk_elements // max(1, x.numel()))
    logw = torch.cat(  # (..., T): log softmax(x/θ)[i] for each θ
        [xi / t - torch.logsumexp(x.unsqueeze(-2) / t[:, None], -1) for t in theta.split(per)],
        -1,
    )
    best = logw.argmax(-1)  # (...,), the first maximiser
    one = int((theta - 1).abs().argmin())
    return ThetaSearch(
        theta=theta[best],
        weight=logw.gather(-1, best.unsqueeze(-1)).squeeze(-1).exp(),
        weight_one=logw[..., one].exp(),
        position=best,
    )


def edge_labels(position: np.ndarray, n_grid: int) -> np.ndarray:
    """Edge flag per θ* position: "low" on the grid's first point, "high" on its last, else
    the empty string."""
    position = np.asarray(position)
    return np.where(position == 0, "low", np.where(position == n_grid - 1, "high", ""))
