"""Multi-head coverage: paper A (Mudarisov et al.), Discussion.

If each of H heads independently separates a given top-N token with probability p, the token is
separated by at least one head with probability 1 − (1 − p)^H. Paper A's example: p = 0.8
needs H = 3 heads for 99 % coverage (1 − 0.2³ = 0.992; H = 2 gives 0.96).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import partial

import torch
from torch import Tensor

from attnlimits._checks import check_in_range, check_int_at_least, check_tensor

__all__ = ["heads_for_coverage", "multihead_coverage"]


def multihead_coverage(p: float | Tensor, heads: int | Tensor) -> float | Tensor:
    """Coverage 1 − (1 − p)^H of H independent heads with separability p (paper A, Discussion).

    Parameters
    ----------
    p : float or Tensor
        Per-head separability in [0, 1] (e.g. a measured N_s/N, paper A Eq. 10).
    heads : int or Tensor
        H ≥ 0 heads (H = 0 covers nothing).

    Returns
    -------
    float or Tensor
        The probability that at least one head separates the token.
    """
    if isinstance(p, Tensor):
        check_tensor(p, "p")
        if p.dtype == torch.bool or not bool(((p >= 0) & (p <= 1)).all()):  # NaN fails both
            raise ValueError("p must lie in [0, 1]")
    else:
        check_in_range(p, "p", 0.0, 1.0)
    if isinstance(heads, Tensor):
        check_tensor(heads, "heads")
        if torch.is_floating_point(heads) or heads.dtype == torch.bool or bool((heads < 0).any()):
            raise ValueError("heads must be a non-negative integer tensor")
        try:
            torch.broadcast_shapes(heads.shape, torch.as_tensor(p).shape)
        except RuntimeError:
            raise ValueError(
                f"p {tuple(torch.as_tensor(p).shape)} and heads {tuple(heads.shape)} do not "
                "broadcast"
            ) from None
        return 1 - (1 - p) ** heads
    check_int_at_least(heads, "heads", 0)
    return 1 - (1 - p) ** int(heads)


def _coverage(p: float, heads: int) -> float:
    """1 − (1 − p)^H without rounding 1 − p to 1 for tiny p: −expm1(H·log1p(−p))."""
    return -math.expm1(heads * math.log1p(-p))


def heads_for_coverage(p: float, target: float) -> int:
    """Smallest H with 1 − (1 − p)^H ≥ target: H = ⌈log(1 − target) / log(1 − p)⌉ (paper A).

    Computed with ``log1p``/``expm1`` and exact rational division, so a tiny p (1 − p rounds
    to 1 in floating point) gives its large, finite H at once instead of searching for it.

    Parameters
    ----------
    p : float
        Per-head separability in (0, 1]; p = 0 never reaches a positive target and raises.
    target : float
        Desired coverage in [0, 1).

    Returns
    -------
    int
        The number of heads (0 when ``target`` is 0, 1 when p = 1).
    """
    check_in_range(p, "p", 0.0, 1.0)
    check_in_range(target, "target", 0.0, 1.0, closed=(True, False))
    if target == 0.0:
        return 0
    if p == 0.0:
        raise ValueError("p = 0: no number of heads reaches a positive coverage")
    if p == 1.0:
        return 1
    ratio = Fraction(math.log1p(-target)) / Fraction(math.log1p(-p))
    h = max(1, math.ceil(ratio - Fraction(1, 10**9)))
    # repair a rounding-off estimate against the coverage as multihead_coverage computes it
    # (exact for exact powers such as 0.5²), or, where 1 − p rounds badly, its stable form
    cover = (lambda k: float(multihead_coverage(p, k))) if p > 1e-8 else partial(_coverage, p)
    if h < 2**53:  # beyond, one head more or less does not change a float coverage
        for _ in range(4):  # the estimate is off by at most one or two
            if cover(h) < target:
                h += 1
            elif h > 1 and cover(h - 1) >= target:
                h -= 1
            else:
                break
    return h
