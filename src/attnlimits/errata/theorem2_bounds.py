"""Theorem 2 (Eq. 11): do both bounds hold for the direct count N_s/N (Eq. 10)?

Random tokens on the unit sphere (Assumption 1) with δ = their minimum pairwise distance
(Assumption 2), α = softmax(c·z), r = min_{j ∉ I_N} ||s − α_j x_j|| as in the experiments.
Counts rows where N_s/N < lower or N_s/N > upper. Seeded; a few seconds.
"""

from __future__ import annotations

import torch

from attnlimits.metrics.separability import normalize_to_sphere, separability_metrics
from attnlimits.theory.geometry import separability_bounds

D = 64
K = 256


def main() -> None:
    gen = torch.Generator().manual_seed(0)
    x = normalize_to_sphere(torch.randn(K, D, generator=gen, dtype=torch.float64))
    print(f"K = {K} tokens on the unit sphere in R^{D}; {K} rows per line (causal mask)")
    print(
        f"{'c':>4} {'N':>4} {'mean N_s/N':>10} {'mean lower':>10} {'mean upper':>10}"
        f" {'below lower':>11} {'above upper':>11}"
    )
    mask = torch.ones(K, K, dtype=torch.bool).tril()
    below_total = 0
    for c in (1.0, 4.0, 16.0):
        logits = c * torch.randn(K, K, generator=gen, dtype=torch.float64)
        attn = torch.softmax(logits.masked_fill(~mask, -torch.inf), -1)
        for n in (1, 2, 5, 16, 50):
            m = separability_metrics(attn, x, n, mask=mask)
            ok = m.valid
            below = int((m.ratio < m.lower - 1e-12)[ok].sum())
            above = int((m.ratio > m.upper + 1e-12)[ok].sum())
            below_total += below
            print(
                f"{c:4.0f} {n:>4} {float(m.ratio[ok].mean()):10.3f}"
                f" {float(m.lower[ok].mean()):10.3f} {float(m.upper[ok].mean()):10.3f}"
                f" {below:>7}/{int(ok.sum()):<3} {above:>7}/{int(ok.sum()):<3}"
            )
    print(f"rows below the lower bound: {below_total}")
    alpha = torch.tensor([[1.0]], dtype=torch.float64)
    _, upper = separability_bounds(alpha, torch.tensor([0.5], dtype=torch.float64), 1.0, 0.1)
    print(
        "counterexample N = 1, r = 0.5, M = 1: X_1 = 0 so N_s/N = 1,"
        f" upper bound = {float(upper):.4f}"
    )
    print(
        "Verdict: the lower bound holds row by row (X_i ≤ ξ_i is deterministic); the upper bound"
        "\nfails whenever every selected token is inside the ball, always at N = 1."
    )
