"""The expectation E = E_{I_N}[d̃] of paper A's Eq. 8, measured: by exhaustive enumeration of the
C(L, N) selections (small L, the reference) and by Monte Carlo over random selections with its
standard error. Theorem 1.2's closed forms of E live in :mod:`attnlimits.theory.distance`.
"""

from __future__ import annotations

import itertools
import math

import torch
from torch import Tensor

from attnlimits._checks import check_positive
from attnlimits.metrics._topn import prepare_rows, selection_distance, top_n

__all__ = ["expected_distance_exact", "expected_distance_monte_carlo"]


def expected_distance_exact(
    attn: Tensor, x: Tensor, n: int, *, mask: Tensor | None = None, max_subsets: int = 200_000
) -> Tensor:
    """Exact E = E_{I_N}[d̃] over I_N uniform among the C(L, N) subsets of kept keys (Eq. 8).

    Brute force reference: enumerates every N-subset of the K keys (a row averages those that
    lie within its kept keys), so it is for small K only; raises ``ValueError`` when
    C(K, N) > ``max_subsets``. Shapes as :func:`distance_metrics`; returns ``[..., Q]``,
    NaN for rows with fewer than N + 1 kept keys.
    """
    r = prepare_rows(attn, x, n, mask)
    k = attn.shape[-1]
    if math.comb(k, n) > max_subsets:
        raise ValueError(
            f"C({k}, {n}) = {math.comb(k, n)} subsets exceed max_subsets={max_subsets}"
        )
    subsets = torch.tensor(list(itertools.combinations(range(k), n)), device=attn.device)
    all_sel = torch.zeros(subsets.shape[0], k, dtype=torch.bool, device=attn.device)
    all_sel.scatter_(1, subsets, True)  # (S, K)
    extra = (1,) * (r.attn.ndim - 1)
    total = torch.zeros(r.attn.shape[:-1], dtype=torch.float64, device=attn.device)
    count = torch.zeros_like(total)
    chunk = max(1, 2**21 // max(1, r.attn.numel()))
    for start in range(0, all_sel.shape[0], chunk):
        sel = all_sel[start : start + chunk].reshape(-1, *extra, k)  # (S, 1.., K)
        inside = ~(sel & ~r.keep).any(-1)  # subset within the row's kept keys
        d = selection_distance(r, sel & r.keep)
        total += torch.where(inside, d, torch.zeros_like(d)).sum(0).double()
        count += inside.sum(0).double()
    mean = (total / count).to(r.attn.dtype)
    return torch.where(r.valid, mean, torch.full_like(mean, math.nan))


def expected_distance_monte_carlo(
    attn: Tensor,
    x: Tensor,
    n: int,
    *,
    mask: Tensor | None = None,
    samples: int = 1000,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """Monte Carlo estimate of E = E_{I_N}[d̃] (Eq. 8) and its standard error.

    Each sample draws, per row, I_N uniformly among the N-subsets of the row's kept keys (the
    N smallest of i.i.d. uniforms) and evaluates d̃; returns ``(mean, stderr)`` with
    stderr = sample std / √samples, each ``[..., Q]`` and NaN for invalid rows.
    Draws samples in chunks; pass a seeded ``generator`` for reproducible numbers.
    """
    check_positive(samples, "samples")
    r = prepare_rows(attn, x, n, mask)
    total = torch.zeros(r.attn.shape[:-1], dtype=torch.float64, device=attn.device)
    total_sq = torch.zeros_like(total)
    chunk = max(1, 2**20 // r.attn.numel())  # samples drawn at once
    for start in range(0, int(samples), chunk):
        c = min(chunk, int(samples) - start)
        u = torch.rand(
            (c, *r.attn.shape), generator=generator, dtype=r.attn.dtype, device=attn.device
        )
        _, sel = top_n(u, r.keep, n)  # (c, ..., Q, K)
        d = selection_distance(r, sel).double()
        total += d.sum(0)
        total_sq += (d * d).sum(0)
    mean = total / samples
    var = (total_sq / samples - mean * mean).clamp_min(0) * samples / max(samples - 1, 1)
    stderr = (var / samples).sqrt()
    nan = torch.tensor(math.nan, dtype=r.attn.dtype, device=attn.device)
    return (
        torch.where(r.valid, mean.to(r.attn.dtype), nan),
        torch.where(r.valid, stderr.to(r.attn.dtype), nan),
    )
