"""Paper A (Mudarisov et al., NeurIPS 2025), Theorem 2 (Eqs. 10–12): the bounds on E[N_s]/N.

Printed: 1 − (1/(rN)) Σ_{i∈I_N} ξ_i ≤ E[N_s]/N ≤ (1/N) Σ_{i∈I_N} exp(−(r − ξ_i)²/(16M²)),
ξ_i² = M² Σ_{j≠i} α_j² + (M² − δ²/2) Σ_{j≠k; j,k≠i} α_j α_k (sums over I_N), with
N_s = #{i ∈ I_N : ||s − α_i x_i|| ≤ r} (Eq. 10), s = Σ_{i∈I_N} α_i x_i.

``python -m attnlimits.errata theorem2_bounds`` counts the rows whose direct count N_s/N lies
below the lower or above the upper side: tokens on the unit sphere (Assumption 1), δ their
minimum pairwise distance (Assumption 2), α = softmax(c·z) under a causal mask, and
r = min_{j ∉ I_N} ||s − α_j x_j|| as in the paper's experiments. Seeded; a few seconds.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from attnlimits.metrics.separability import normalize_to_sphere, separability_metrics
from attnlimits.theory.geometry import separability_bounds

D = 64
K = 256
SHARPNESS = (1.0, 4.0, 16.0)
NS = (1, 2, 5, 16, 50)


def causal() -> Tensor:
    return torch.ones(K, K, dtype=torch.bool).tril()


def inputs(seed: int = 0) -> tuple[Tensor, list[tuple[float, Tensor]]]:
    """x [K, D] on the unit sphere, then (c, attn [K, K]) per sharpness, from one generator."""
    gen = torch.Generator().manual_seed(seed)
    x = normalize_to_sphere(torch.randn(K, D, generator=gen, dtype=torch.float64))
    maps = []
    for c in SHARPNESS:
        logits = c * torch.randn(K, K, generator=gen, dtype=torch.float64)
        maps.append((c, torch.softmax(logits.masked_fill(~causal(), -torch.inf), -1)))
    return x, maps


class Row(NamedTuple):
    c: float
    n: int
    ratio: Tensor  # N_s/N per valid row
    lower: Tensor
    upper: Tensor


def compute(seed: int = 0) -> list[Row]:
    x, maps = inputs(seed)
    out = []
    for c, attn in maps:
        for n in NS:
            m = separability_metrics(attn, x, n, mask=causal())
            ok = m.valid
            out.append(Row(c, n, m.ratio[ok], m.lower[ok], m.upper[ok]))
    return out


def n1_counterexample() -> float:
    """Upper side of Eq. 11 at N = 1, r = 0.5, M = 1 (where N_s/N = 1 since X_1 = 0)."""
    alpha = torch.tensor([[1.0]], dtype=torch.float64)
    _, upper = separability_bounds(alpha, torch.tensor([0.5], dtype=torch.float64), 1.0, 0.1)
    return float(upper)


def main() -> None:
    print(f"K = {K} tokens on the unit sphere in R^{D}; {K} rows per line (causal mask)")
    print(
        f"{'c':>4} {'N':>4} {'mean N_s/N':>10} {'mean lower':>10} {'mean upper':>10}"
        f" {'below lower':>11} {'above upper':>11}"
    )
    below_total = 0
    for r in compute():
        below = int((r.ratio < r.lower - 1e-12).sum())
        above = int((r.ratio > r.upper + 1e-12).sum())
        below_total += below
        valid = r.ratio.numel()
        print(
            f"{r.c:4.0f} {r.n:>4} {float(r.ratio.mean()):10.3f}"
            f" {float(r.lower.mean()):10.3f} {float(r.upper.mean()):10.3f}"
            f" {below:>7}/{valid:<3} {above:>7}/{valid:<3}"
        )
    print(f"rows below the lower bound: {below_total}")
    print(
        "counterexample N = 1, r = 0.5, M = 1: X_1 = 0 so N_s/N = 1,"
        f" upper bound = {n1_counterexample():.4f}"
    )
    print(
        "Verdict: the lower bound holds row by row (X_i ≤ ξ_i is deterministic); the upper bound"
        "\nfails whenever every selected token is inside the ball, always at N = 1."
    )


if __name__ == "__main__":
    main()
