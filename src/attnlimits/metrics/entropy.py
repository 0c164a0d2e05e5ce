"""Per-row summaries of an attention map: entropy, max weight, logit spread, support size.

Maps are ``[..., query, key]`` (normalised axis ``dim``, default ``-1``); masks are boolean,
True = keep. Every function returns one value per row (``dim`` removed). Rows with no kept key
(and, for the weight-based metrics, rows whose kept weights are all zero) give NaN, except the
integer :func:`support_size`, which counts 0 there.

Paper A's Discussion recommends monitoring attention entropy; paper B's Proposition 3.2 ties
it to the temperature (:func:`attnlimits.theory.entropy_beta_derivative`) and its adaptive
temperature is a function of it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from attnlimits._checks import (
    check_finite,
    check_mask,
    check_nonempty,
    check_positive,
    is_finite_number,
    keep_mask,
    normalize_dim,
)
from attnlimits.metrics._topn import n_grid

__all__ = [
    "attention_entropy",
    "effective_support",
    "entropy_from_scores",
    "logit_spread",
    "max_weight",
    "support_size",
    "top_mass",
]


def _weights(weights: Tensor, mask: Tensor | None, dim: int) -> tuple[Tensor, Tensor, Tensor]:
    """Checked weights with dropped entries zeroed, the keep-mask, and the scorable rows."""
    check_finite(weights, "weights", allow_neg_inf=False)
    if bool((weights < 0).any()):
        raise ValueError("weights must be non-negative")
    dim = normalize_dim(dim, weights.ndim, "weights")
    check_nonempty(weights, dim, "weights")
    checked = check_mask(mask, weights, of="weights")
    keep = torch.ones_like(weights, dtype=torch.bool) if checked is None else checked
    w = torch.where(keep, weights, 0.0)
    scorable = (w > 0).any(dim=dim)
    return w, keep, scorable


def attention_entropy(weights: Tensor, *, dim: int = -1, mask: Tensor | None = None) -> Tensor:
    """Shannon entropy H = −Σ_i α_i log α_i per row, in nats, with 0·log 0 = 0.

    Dropped entries are excluded. Meant for rows summing to one (softmax, sparsemax, …); for
    other rows it is the same sum, unnormalised. 0 ≤ H ≤ log L for a distribution over L kept
    keys. Differentiable where the weights are positive.

    Parameters
    ----------
    weights : Tensor
        α ≥ 0, ``[..., query, key]``.
    dim : int
        The key axis.
    mask : Tensor, optional
        Boolean keep-mask broadcastable to ``weights``.

    Returns
    -------
    Tensor
        H per row; NaN where no kept weight is positive.
    """
    w, _, scorable = _weights(weights, mask, dim)
    pos = w > 0
    safe = torch.where(pos, w, 1.0)
    h = -torch.where(pos, w * torch.log(safe), 0.0).sum(dim=dim)
    if not bool(torch.isfinite(h[scorable]).all()):  # only for weights far above 1
        raise ValueError(f"weights are so large that their entropy overflows {h.dtype}")
    return torch.where(scorable, h, math.nan)


def effective_support(weights: Tensor, *, dim: int = -1, mask: Tensor | None = None) -> Tensor:
    """Effective number of attended keys exp(H) (perplexity), in [1, L] for a distribution.

    See :func:`attention_entropy`; NaN where no kept weight is positive.
    """
    return torch.exp(attention_entropy(weights, dim=dim, mask=mask))


def max_weight(weights: Tensor, *, dim: int = -1, mask: Tensor | None = None) -> Tensor:
    """max_i α_i over the kept entries of each row; NaN where no kept weight is positive.

    Paper A's Lemma 1 / paper B's Lemma 2.1 bound it by O(1/L) for bounded logits.
    """
    w, _, scorable = _weights(weights, mask, dim)
    return torch.where(scorable, w.amax(dim=normalize_dim(dim, w.ndim, "weights")), math.nan)


def top_mass(
    weights: Tensor, ns: Sequence[int], *, dim: int = -1, mask: Tensor | None = None
) -> Tensor:
    """ᾱ_N = Σ_{i ∈ I_N} α_i, the weight the N largest kept weights of a row carry, for each N
    of ``ns``: paper A, Theorem 1 ("the total weight (1 − ᾱ_N) carried by the remaining L − N
    tokens" is its complement). With :func:`max_weight` (ᾱ_1), a measure of how concentrated
    a row's weights are.

    Returns ``[..., n_N]``: the rows (``dim`` removed), the grid of N last (``ns`` sorted,
    each N once, as :func:`attnlimits.metrics.distance_curve` orders it); NaN where a row has
    fewer than N kept keys or no positive kept weight. Ties do not matter: the sum of the N
    largest values is the same whichever tied entries are taken.
    """
    grid = n_grid(ns)
    if grid[0] < 1:
        raise ValueError(f"ns must be whole numbers ≥ 1, got {list(ns)!r:.80}")
    w, keep, scorable = _weights(weights, mask, dim)
    dim = normalize_dim(dim, w.ndim, "weights")
    w, keep = w.movedim(dim, -1), keep.expand_as(weights).movedim(dim, -1)
    k = min(max(grid), w.shape[-1])
    sums = w.topk(k, dim=-1).values.cumsum(-1)  # (..., k): the top-j sums, j = 1 … k
    n_keys = keep.sum(-1, keepdim=True)
    idx = torch.tensor([min(n, k) - 1 for n in grid], device=w.device)
    at = sums.index_select(-1, idx)
    need = torch.tensor(grid, device=w.device)
    ok = (n_keys >= need) & scorable.unsqueeze(-1)
    return torch.where(ok, at, math.nan)


def support_size(
    weights: Tensor, *, dim: int = -1, mask: Tensor | None = None, atol: float = 0.0
) -> Tensor:
    """Number of kept weights above ``atol`` per row (int64): the support of sparse normalisers.

    With ``atol = 0`` it counts exact nonzeros (sparsemax and entmax give exact zeros; softmax
    never does). A row with no kept key counts 0.
    """
    if not (is_finite_number(atol) and atol >= 0):
        raise ValueError(f"atol must be non-negative and finite, got {atol!r:.40}")
    w, _, _ = _weights(weights, mask, dim)
    return (w > atol).sum(dim=normalize_dim(dim, w.ndim, "weights"))


def logit_spread(scores: Tensor, *, dim: int = -1, mask: Tensor | None = None) -> Tensor:
    """max − min of the kept logits per row: paper B's spread Δ (Lemma 2.1, Prop. 3.1).

    ``-inf`` entries count as dropped. A row with one kept key has spread 0; a row with none,
    NaN; a spread beyond the dtype's range (finite logits near ±max), inf.
    """
    check_finite(scores, "scores")
    dim = normalize_dim(dim, scores.ndim, "scores")
    check_nonempty(scores, dim)
    keep = keep_mask(scores, mask)
    hi = torch.where(keep, scores, -math.inf).amax(dim=dim)
    lo = torch.where(keep, scores, math.inf).amin(dim=dim)
    return torch.where(keep.any(dim=dim), hi - lo, math.nan)


def entropy_from_scores(
    scores: Tensor,
    temperature: float = 1.0,
    *,
    dim: int = -1,
    mask: Tensor | None = None,
) -> Tensor:
    """Entropy of α = softmax(l/T) from the logits: H = log Z − Σ_i α_i l_i/T, Z = Σ_i e^{l_i/T}.

    Stable for any logit range (no log of a vanishing weight) and differentiable in ``scores``
    (paper B, App. G uses the same identity to stream the entropy). ``-inf`` entries are
    dropped.

    Parameters
    ----------
    scores : Tensor
        Raw logits l, ``[..., query, key]``.
    temperature : float
        T > 0.
    dim : int
        The key axis.
    mask : Tensor, optional
        Boolean keep-mask broadcastable to ``scores``.

    Returns
    -------
    Tensor
        H per row in nats; NaN where no key is kept.
    """
    check_finite(scores, "scores")
    check_positive(temperature, "temperature", tensor_ok=False)
    dim = normalize_dim(dim, scores.ndim, "scores")
    check_nonempty(scores, dim)
    keep = keep_mask(scores, mask)
    like = scores
    work = torch.float32 if scores.dtype in (torch.float16, torch.bfloat16) else scores.dtype
    info = torch.finfo(work)
    if not info.tiny <= temperature <= info.max:
        work = torch.float64  # T beyond the working dtype's range: divide where T is exact
    scores = scores.to(work)
    big = torch.finfo(work).max
    # H is shift-invariant: shift by the row maximum, then scale, clamped at -max, so that
    # neither a huge logit / T nor a spread beyond the dtype's range overflows to ±inf
    top = torch.where(keep, scores, -math.inf).amax(dim=dim, keepdim=True).detach()
    shifted = (scores - torch.where(torch.isfinite(top), top, 0.0)).clamp_min(-big)
    x = torch.where(keep, (shifted / temperature).clamp_min(-big), 0.0)  # finite everywhere
    z = torch.where(keep, x, -math.inf)
    any_kept = keep.any(dim=dim, keepdim=True)
    log_z = torch.logsumexp(torch.where(any_kept, z, 0.0), dim=dim, keepdim=True)
    p = torch.where(keep, torch.exp(x - log_z), 0.0)
    h = (log_z - (p * x).sum(dim=dim, keepdim=True)).squeeze(dim)
    return torch.where(any_kept.squeeze(dim), h, math.nan).to(like.dtype)
