"""Plumbing shared by every normaliser: input checks, the working dtype, masked softmax.

Every normaliser follows the same four steps:

1. :func:`prepare` checks the scores (a tensor, not a list; NaN or +inf raise ``ValueError``),
   validates ``dim`` and the boolean keep-mask, folds ``-inf`` scores into it, upcasts half
   types to float32 and replaces every dropped score by 0, so that no later arithmetic
   touches an infinity. Meta tensors pass (no values to check): a normaliser on the meta
   device returns a meta tensor of the output's shape and dtype;
2. the normaliser computes on the kept entries;
3. :func:`finish` writes exact zeros at the dropped entries and casts back to the input dtype.

Replacing dropped scores by a finite value *before* any arithmetic is what keeps gradients
finite: ``torch.where`` routes a zero gradient to the unselected branch, but ``0 * inf`` in
that branch's backward would still give NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from attnlimits._checks import check_finite, check_nonempty, keep_mask, normalize_dim

__all__ = ["check_broadcasts_to", "finish", "masked_max", "masked_softmax", "prepare"]

_HALF = (torch.float16, torch.bfloat16)


def prepare(scores: Tensor, mask: Tensor | None, dim: int) -> tuple[Tensor, Tensor, int]:
    """Check the inputs; return ``(x, keep, dim)``.

    ``keep`` is ``mask & (scores != -inf)`` broadcast to ``scores``' shape; ``x`` is the scores
    in the working dtype (float32 for half types, else unchanged) with dropped entries set to 0;
    ``dim`` is non-negative.
    """
    check_finite(scores, "scores", allow_meta=True)
    dim = normalize_dim(dim, scores.ndim, "scores")
    check_nonempty(scores, dim)
    keep = keep_mask(scores, mask)
    work = torch.float32 if scores.dtype in _HALF else scores.dtype
    x = torch.where(keep, scores.to(work), 0.0)
    return x, keep, dim


def finish(out: Tensor, keep: Tensor, like: Tensor) -> Tensor:
    """Exact zeros at dropped entries, cast to ``like``'s dtype; for half types, values beyond
    its range saturate at its largest finite value instead of becoming inf (unbounded maps
    such as ReLU²/n can exceed 65504)."""
    out = torch.where(keep, out, 0.0)
    if like.dtype in _HALF:
        big = torch.finfo(like.dtype).max
        out = out.clamp(-big, big)
    return out.to(like.dtype)


def masked_max(x: Tensor, keep: Tensor, dim: int) -> Tensor:
    """Row maximum over kept entries (kept dimension), detached; 0 for an all-dropped row."""
    m = torch.where(keep, x, -math.inf).amax(dim=dim, keepdim=True).detach()
    return torch.where(torch.isfinite(m), m, 0.0)


def masked_softmax(
    x: Tensor,
    keep: Tensor,
    dim: int,
    *,
    scale: Tensor | None = None,
    temperature: float | Tensor = 1.0,
) -> Tensor:
    """softmax(scale · x / temperature) over the kept entries of each row; dropped entries and
    all-dropped rows give 0.

    The row maximum is subtracted first (softmax is shift-invariant), so the denominator is
    at least 1 in any row with a kept entry and exactly 0 in an all-dropped row. ``scale``
    (>= 0, e.g. one per row) and ``temperature`` (> 0) act on the shifted logits, not on the
    logits: ``1.3 · 3e38`` is inf in float32 (and inf − inf is NaN), while ``1.3 · (x − max)``
    only goes to −inf, which ``exp`` maps to 0. ``scale`` is clamped to the dtype's range and
    the shifted logits to ``-max``, so an overflowing scale or an underflowing one (0 · −inf)
    cannot make NaN; ``temperature`` must be representable in ``x``'s dtype (see
    :func:`~attnlimits.normalizers.softmax`).
    """
    shifted = x - masked_max(x, keep, dim)
    if scale is not None:
        big = torch.finfo(x.dtype).max
        shifted = scale.clamp_max(big) * shifted.clamp_min_(-big)  # in place: ~1 % of a call
    if isinstance(temperature, Tensor) or temperature != 1.0:
        shifted = shifted / temperature  # 0 / T = 0 at the maximum, so no inf − inf
    z = torch.where(keep, shifted, -math.inf)
    e = z.exp()
    s = e.sum(dim=dim, keepdim=True)
    return e / torch.where(s > 0, s, 1.0)


def check_broadcasts_to(
    value: float | Tensor, name: str, shape: Sequence[int], of: str = "scores"
) -> None:
    """A tensor ``value`` (e.g. a learned temperature) must broadcast to ``shape`` (``of``'s)."""
    if not isinstance(value, Tensor):
        return
    try:
        ok = torch.broadcast_shapes(value.shape, tuple(shape)) == tuple(shape)
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(
            f"{name} of shape {tuple(value.shape)} does not broadcast to {of} of shape "
            f"{tuple(shape)}"
        )
