"""A naive float64 reference for Theorem 2's counts (paper A, Eq. 10), shared by the fused
kernels' tests and the separability ties' tests."""

from __future__ import annotations

import math

import torch


def count_range(attn, x, keep, ns, tol=1e-7):
    """Naive float64 N_s per row and N (Eq. 10), as the range [lo, hi] that rounding of the
    ball radius r leaves open: lo counts ||s − α_i x_i|| < r − tol·scale, hi those ≤ r +
    tol·scale (scale = ||s|| + max α_j||x_j||). Where duplicates tie a distance to r exactly,
    either path may round it in or out; everywhere else both must count exactly lo = hi."""
    heads, q, k = attn.shape
    a = attn.double()
    xs = x.double().expand(heads, k, x.shape[-1])
    kp = torch.ones(q, k, dtype=torch.bool) if keep is None else keep
    lo = torch.full((heads, q, len(ns)), math.nan, dtype=torch.float64)
    hi = lo.clone()
    for h in range(heads):
        for i in range(q):
            kept = kp[i].nonzero().squeeze(-1)
            w = a[h, i, kept]
            order = kept[w.argsort(descending=True, stable=True)]
            for j, n in enumerate(ns):
                if kept.numel() < n + 1:
                    continue
                top, rest = order[:n], order[n:]
                s = (a[h, i, top, None] * xs[h, top]).sum(0)
                inside = (s - a[h, i, top, None] * xs[h, top]).norm(dim=-1)
                r = (s - a[h, i, rest, None] * xs[h, rest]).norm(dim=-1).min()
                scale = s.norm() + (a[h, i, kept, None] * xs[h, kept]).norm(dim=-1).max()
                lo[h, i, j] = (inside < r - tol * scale).sum()
                hi[h, i, j] = (inside <= r + tol * scale).sum()
    return lo, hi
