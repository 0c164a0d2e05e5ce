"""Theorem 1.1: is d̃ ≤ (1 − ᾱ_N) d_1 + max_{j∈I_N}||x_j|| [ᾱ_N (L−N) − (1 − ᾱ_N)]?

Brute force over random rows (unmasked and causal, several N and sharpness) with the top-N
set, then the same bound for an arbitrary (non-top) fixed subset. Seeded; a few seconds.
"""

from __future__ import annotations

import torch

from attnlimits.metrics.distance import distance_metrics
from attnlimits.theory.distance import fixed_selection_bound


def _arbitrary_subset_counterexample() -> None:
    # L = 2, N = 1, α = (0.1, 0.9), I = {0} (not the top-1 set), x_0 = x_1 = e_1
    alpha = torch.tensor([0.1, 0.9], dtype=torch.float64)
    x = torch.tensor([[1.0], [1.0]], dtype=torch.float64)
    s = alpha[0] * x[0]
    d_true = float((alpha[1] * x[1] - s).norm())
    d1 = float((x[1] - x[0]).norm())
    bound = float(fixed_selection_bound(alpha[0], torch.tensor(d1), x[0].norm(), 2, 1))
    print(
        f"arbitrary I_N = {{0}} with α = (0.1, 0.9), x_0 = x_1 = 1: d̃ = {d_true:.3f}"
        f" > bound = {bound:.3f}"
    )


def main() -> None:
    gen = torch.Generator().manual_seed(0)
    print(
        f"{'c':>3} {'K':>4} {'N':>3} {'mask':>6} {'rows':>5} {'violations':>10} {'min slack':>9}"
        f" {'median d̃/bound':>15}"
    )
    total = 0
    for c in (0.5, 2.0, 8.0):
        for k, n in [(16, 1), (16, 5), (64, 5), (64, 20), (128, 5), (128, 50)]:
            logits = c * torch.randn(4, k, k, generator=gen, dtype=torch.float64)
            x = torch.randn(4, k, 32, generator=gen, dtype=torch.float64)
            for name, mask in (
                ("none", None),
                ("causal", torch.ones(k, k, dtype=torch.bool).tril()),
            ):
                scores = logits if mask is None else logits.masked_fill(~mask, -torch.inf)
                m = distance_metrics(torch.softmax(scores, -1), x, n, mask=mask)
                ok = m.valid
                slack = (m.bound - m.distance)[ok]
                viol = int((slack < -1e-9 * m.bound[ok]).sum())
                total += viol
                print(
                    f"{c:3.1f} {k:>4} {n:>3} {name:>6} {int(ok.sum()):>5} {viol:>10}"
                    f" {float(slack.min()):9.3f} {float((m.distance / m.bound)[ok].median()):15.3f}"
                )
    print(f"violations with the top-N set: {total}")
    _arbitrary_subset_counterexample()
    print(
        "Verdict: the bound holds for the top-N set (its proof needs ᾱ_N ≥ α_i for i ∉ I_N);"
        "\nit fails for an arbitrary fixed subset, so 'fixed I_N' must mean the top-N set."
    )
