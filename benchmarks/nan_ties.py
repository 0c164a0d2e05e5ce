"""Issue 54's experiment: separability (paper A, Eq. 10–11) on rows with a duplicated key
whose weight ties the top one, on the torch path (the one CUDA takes) and the fused CPU path.

Per trial: K = 16 keys on the unit sphere in R^d (d = 64), key 1 a bitwise copy of key 0;
one query row whose top weight a sits on key 0 and whose weight on key 1 is a (exact tie),
a one float32 ulp below (``ulp``) or a·(1 − 1e-4) (``1e-4``); the rest random and smaller;
N = 1. Counts the trials whose row is valid but NaN in any field (what ``row_mean`` refuses),
and the trials where the two paths differ (validity, or a field beyond 1e-5)::

    python benchmarks/nan_ties.py [--trials 100] [--d 64] [--layout shared|heads]

``shared``: one x for the row (hidden states: the Gram route, a sparse product on the torch
path); ``heads``: x with a head axis of 2 distinct tables (values: row gathers, dense products).
"""

from __future__ import annotations

import argparse
import os

import torch

from attnlimits.metrics.separability import separability_metrics


def case(seed: int, tie: str, d: int, k: int = 16, layout: str = "shared"):
    g = torch.Generator().manual_seed(seed)
    x = torch.nn.functional.normalize(torch.randn(k, d, generator=g), dim=-1)
    x[1] = x[0]  # a repeated token: bit-identical vectors (layer 0)
    w = torch.rand(k, generator=g) * 0.5
    w[0] = 1.0
    w = w / w.sum()
    a = w[0]
    w[1] = {
        "exact": a,
        "ulp": torch.nextafter(a, torch.tensor(0.0)),
        "1e-4": a * (1 - 1e-4),
    }[tie]
    attn = w.view(1, 1, k)  # [head, query, key]
    if layout == "heads":
        other = torch.nn.functional.normalize(torch.randn(k, d, generator=g), dim=-1)
        x = torch.stack([x, other])  # [head, key, d]
        attn = attn.expand(2, 1, k).contiguous()
    return attn, x


def run(attn, x, fused: bool):
    old = os.environ.get("ATTNLIMITS_FUSED")
    os.environ["ATTNLIMITS_FUSED"] = "1" if fused else "0"
    try:
        return separability_metrics(attn, x, 1)
    finally:
        if old is None:
            del os.environ["ATTNLIMITS_FUSED"]
        else:
            os.environ["ATTNLIMITS_FUSED"] = old


def nan_in_valid(m) -> bool:
    bad = torch.zeros_like(m.valid)
    for f in (m.ratio, m.lower, m.upper, m.r):
        bad |= torch.isnan(f) & m.valid
    return bool(bad.any())


def differ(a, b) -> bool:
    if not torch.equal(a.valid, b.valid):
        return True
    for f, g in zip(a[:4], b[:4], strict=True):
        if not torch.allclose(f.double(), g.double(), rtol=1e-5, atol=1e-5, equal_nan=True):
            return True
    return False


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--layout", choices=["shared", "heads"], default="shared")
    args = p.parse_args()
    print(f"d = {args.d}, N = 1, {args.trials} trials, layout {args.layout}")
    print("tie     torch-NaN  fused-NaN  paths-differ")
    for tie in ("exact", "ulp", "1e-4"):
        counts = [0, 0, 0]
        for seed in range(args.trials):
            attn, x = case(seed, tie, args.d, layout=args.layout)
            ref, fused = run(attn, x, False), run(attn, x, True)
            counts[0] += nan_in_valid(ref)
            counts[1] += nan_in_valid(fused)
            counts[2] += differ(ref, fused)
        print(f"{tie:7s} {counts[0]:9d}  {counts[1]:9d}  {counts[2]:12d}")


if __name__ == "__main__":
    main()
