"""Paper A (Mudarisov et al., NeurIPS 2025), Theorem 1.1: the fixed-I_N bound on d̃ (Eq. 7).

Printed: d̃ ≤ (1 − ᾱ_N)·d_1 + max_{j∈I_N}||x_j||·[ᾱ_N (L − N) − (1 − ᾱ_N)], with
d̃ = Σ_{i∉I_N} ||α_i x_i − s||, s = Σ_{i∈I_N} α_i x_i, ᾱ_N = Σ_{i∈I_N} α_i and
d_1 = max_{i∉I_N, j∈I_N} ||x_i − x_j||.

``python -m attnlimits.errata theorem1_bound`` checks it over random rows (unmasked and causal,
several N and sharpness c, α = softmax(c·z)) with I_N the top-N set, then for an arbitrary
(non-top) subset, where the proof's ᾱ_N ≥ α_i (i ∉ I_N) fails. Seeded; a few seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import torch
from torch import Tensor

from attnlimits.metrics.distance import distance_metrics
from attnlimits.theory.distance import fixed_selection_bound

SHARPNESS = (0.5, 2.0, 8.0)
SIZES = ((16, 1), (16, 5), (64, 5), (64, 20), (128, 5), (128, 50))  # (K, N)
HEADS, D = 4, 32


def cases(seed: int = 0) -> Iterator[tuple[float, int, int, Tensor, Tensor]]:
    """(c, K, N, logits [HEADS, K, K], x [HEADS, K, D]) in the order :func:`compute` uses."""
    gen = torch.Generator().manual_seed(seed)
    for c in SHARPNESS:
        for k, n in SIZES:
            logits = c * torch.randn(HEADS, k, k, generator=gen, dtype=torch.float64)
            x = torch.randn(HEADS, k, D, generator=gen, dtype=torch.float64)
            yield c, k, n, logits, x


def causal(k: int) -> Tensor:
    return torch.ones(k, k, dtype=torch.bool).tril()


class Row(NamedTuple):
    c: float
    k: int
    n: int
    mask: str  # "none" or "causal"
    rows: int  # valid rows (L ≥ N + 1)
    violations: int
    min_slack: float  # min (bound − d̃) over valid rows
    median_ratio: float  # median d̃ / bound (torch's lower median)


def compute(seed: int = 0) -> list[Row]:
    out = []
    for c, k, n, logits, x in cases(seed):
        for name, mask in (("none", None), ("causal", causal(k))):
            scores = logits if mask is None else logits.masked_fill(~mask, -torch.inf)
            m = distance_metrics(torch.softmax(scores, -1), x, n, mask=mask)
            ok = m.valid
            slack = (m.bound - m.distance)[ok]
            viol = int((slack < -1e-9 * m.bound[ok]).sum())
            ratio = float((m.distance / m.bound)[ok].median())
            out.append(Row(c, k, n, name, int(ok.sum()), viol, float(slack.min()), ratio))
    return out


def arbitrary_subset_counterexample() -> tuple[float, float]:
    """(d̃, bound) for L = 2, N = 1, α = (0.1, 0.9), I = {0} (not the top-1 set), x_0 = x_1 = 1."""
    alpha = torch.tensor([0.1, 0.9], dtype=torch.float64)
    x = torch.tensor([[1.0], [1.0]], dtype=torch.float64)
    s = alpha[0] * x[0]
    d_true = float((alpha[1] * x[1] - s).norm())
    d1 = float((x[1] - x[0]).norm())
    bound = float(fixed_selection_bound(alpha[0], torch.tensor(d1), x[0].norm(), 2, 1))
    return d_true, bound


def main() -> None:
    print(
        f"{'c':>3} {'K':>4} {'N':>3} {'mask':>6} {'rows':>5} {'violations':>10} {'min slack':>9}"
        f" {'median d̃/bound':>15}"
    )
    rows = compute()
    for r in rows:
        print(
            f"{r.c:3.1f} {r.k:>4} {r.n:>3} {r.mask:>6} {r.rows:>5} {r.violations:>10}"
            f" {r.min_slack:9.3f} {r.median_ratio:15.3f}"
        )
    print(
        f"valid rows: {sum(r.rows for r in rows)}; "
        f"violations with the top-N set: {sum(r.violations for r in rows)}"
    )
    d_true, bound = arbitrary_subset_counterexample()
    print(
        f"arbitrary I_N = {{0}} with α = (0.1, 0.9), x_0 = x_1 = 1: d̃ = {d_true:.3f}"
        f" > bound = {bound:.3f}"
    )
    print(
        "Verdict: the bound holds for the top-N set (its proof needs ᾱ_N ≥ α_i for i ∉ I_N);"
        "\nit fails for an arbitrary fixed subset, so 'fixed I_N' must mean the top-N set."
    )


if __name__ == "__main__":
    main()
