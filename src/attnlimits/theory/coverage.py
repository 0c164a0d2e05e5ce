"""Multi-head coverage: paper A (Mudarisov et al.), Discussion.

If each of H heads independently separates a given top-N token with probability p, the token is
separated by at least one head with probability 1 − (1 − p)^H. Paper A's example: p = 0.8
needs H = 3 heads for 99 % coverage (1 − 0.2³ = 0.992; H = 2 gives 0.96).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlimits._checks import check_in_range

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
        if not bool(((p >= 0) & (p <= 1)).all()):  # NaN fails both comparisons
            raise ValueError("p must lie in [0, 1]")
    else:
        check_in_range(p, "p", 0.0, 1.0)
    if isinstance(heads, Tensor):
        if torch.is_floating_point(heads) or bool((heads < 0).any()):
            raise ValueError("heads must be a non-negative integer tensor")
        return 1 - (1 - p) ** heads
    if isinstance(heads, bool) or not isinstance(heads, int) or heads < 0:
        raise ValueError(f"heads must be a non-negative int, got {heads!r}")
    return 1 - (1 - p) ** heads


def heads_for_coverage(p: float, target: float) -> int:
    """Smallest H with 1 − (1 − p)^H ≥ target: H = ⌈log(1 − target) / log(1 − p)⌉ (paper A).

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
    h = max(1, math.ceil(math.log1p(-target) / math.log1p(-p) - 1e-9))
    while multihead_coverage(p, h) < target:  # repair a rounding-low estimate (at most once)
        h += 1
    while h > 1 and multihead_coverage(p, h - 1) >= target:
        h -= 1
    return h
