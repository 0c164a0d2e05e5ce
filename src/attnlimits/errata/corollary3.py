"""Paper A (Mudarisov et al., NeurIPS 2025), §2.3, Corollary 3: ||∇_l softmax(l/T)||₂ bound.

Printed: ||∇_l α||₂ ≤ min{1/(4T), √2} for α = softmax(l/T). The Jacobian is
J = (diag(α) − ααᵀ)/T and its spectral norm is at most 1/(2T) (attained by two tied top logits).

Evidence printed by ``python -m attnlimits.errata corollary3`` (seeded, CPU, about a second):

1. two tied top logits (L = 2, and L = 64 with the other logits 30 below): the exact spectral
   norm equals (→) 1/(2T), twice the printed 1/(4T), and exceeds √2 for T < 1/(2√2);
2. random logits (Gaussian rows at several scales, with masks): the largest norm over 10⁴ rows
   never exceeds 1/(2T) and does exceed 1/(4T);
3. the largest diagonal entry α_i(1 − α_i)/T never exceeds 1/(4T): that is what 1/(4T) bounds;
4. ||softmax(l′/T) − softmax(l/T)|| ≤ √2 for any two logit vectors: the √2 bounds a difference
   of distributions (the §2.3 swap example's ceiling), not a derivative.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from attnlimits.metrics.jacobian import softmax_jacobian_matrix, softmax_jacobian_norm
from attnlimits.theory.sensitivity import corollary3_bound_as_printed, softmax_jacobian_norm_bound

TEMPERATURES = (0.05, 0.1, 0.3, 1.0, 3.0)
TIED = {"tied top two, L=2": 2, "tied top two, L=64": 64}


def tied_rows(length: int, gap: float = 30.0) -> Tensor:
    """Logits (0, 0, −gap, …, −gap) of the given length, float64."""
    row = torch.full((length,), -gap, dtype=torch.float64)
    row[:2] = 0.0
    return row


def random_rows(generator: torch.Generator, n_rows: int = 10_000, length: int = 32) -> Tensor:
    """Gaussian logit rows, scale 0.1 … 30 varying by row, float64 ``[n_rows, length]``."""
    scale = 10 ** torch.empty(n_rows, 1, dtype=torch.float64).uniform_(-1, 1.5, generator=generator)
    return scale * torch.randn(n_rows, length, generator=generator, dtype=torch.float64)


class Inputs(NamedTuple):
    rows: Tensor  # [10⁴, 32] random logits
    mask: Tensor  # keep-mask; the first half of the rows unmasked
    sharp_a: Tensor  # softmax(random rows / 0.01), two independent draws
    sharp_b: Tensor


def inputs(seed: int = 0) -> Inputs:
    gen = torch.Generator().manual_seed(seed)
    rows = random_rows(gen)
    mask = torch.rand(rows.shape, generator=gen) < 0.7
    mask[: rows.shape[0] // 2] = True
    a = torch.softmax(random_rows(gen) / 0.01, -1)
    b = torch.softmax(random_rows(gen) / 0.01, -1)
    return Inputs(rows, mask, a, b)


class TiedRow(NamedTuple):
    case: str
    t: float
    exact: float  # secular-equation norm
    eigvalsh: float  # largest eigenvalue of the dense J
    printed: float  # min{1/(4T), √2}
    corrected: float  # 1/(2T)


class RandomRow(NamedTuple):
    t: float
    max_norm: float
    max_diag: float  # max_i α_i(1 − α_i)/T
    above_quarter: int  # rows with ||J|| > 1/(4T)
    above_half: int  # rows with ||J|| > 1/(2T)


def tied() -> list[TiedRow]:
    out = []
    for name, length in TIED.items():
        row = tied_rows(length)
        for t in TEMPERATURES:
            exact = float(softmax_jacobian_norm(row, t).values)
            alpha = torch.softmax(row / t, -1)
            ref = float(torch.linalg.eigvalsh(softmax_jacobian_matrix(alpha, t))[-1])
            printed = float(corollary3_bound_as_printed(t))
            out.append(TiedRow(name, t, exact, ref, printed, float(softmax_jacobian_norm_bound(t))))
    return out


def random_stats(x: Inputs) -> list[RandomRow]:
    out = []
    for t in TEMPERATURES:
        norms = softmax_jacobian_norm(x.rows, t, mask=x.mask).values.nan_to_num(0.0)
        alpha = torch.softmax(x.rows.masked_fill(~x.mask, -math.inf) / t, -1).nan_to_num(0.0)
        diag = (alpha * (1 - alpha) / t).amax(-1)
        q, h = 1 / (4 * t), 1 / (2 * t)
        above_q = int((norms > q * (1 + 1e-12)).sum())
        above_h = int((norms > h * (1 + 1e-12)).sum())
        out.append(RandomRow(t, float(norms.max()), float(diag.max()), above_q, above_h))
    return out


def main() -> None:
    print("Paper A, Corollary 3: ||d softmax(l/T)/dl||_2 <= min{1/(4T), sqrt 2}  (as printed)")
    print("J = (diag(a) - a a^T)/T; exact spectral norm (secular equation, checked by eigvalsh);")
    print("printed = min{1/(4T), sqrt 2}\n")
    header = f"{'case':<26}{'T':>6}{'exact ||J||':>13}{'eigvalsh':>11}{'printed':>11}"
    print(header + f"{'1/(2T)':>9}  verdict")
    for r in tied():
        verdict = "printed FAILS" if r.exact > r.printed * (1 + 1e-12) else "printed holds"
        fixed = "holds" if r.exact <= r.corrected * (1 + 1e-12) else "FAILS"
        print(
            f"{r.case:<26}{r.t:>6g}{r.exact:>13.6g}{r.eigvalsh:>11.6g}{r.printed:>11.4g}"
            f"{r.corrected:>9.4g}  {verdict}; 1/(2T) {fixed}"
        )

    x = inputs()
    print("\nRandom logits: 10,000 Gaussian rows of length 32 (scales 0.1-30), half with masks")
    print(
        f"{'T':>6}{'max ||J||':>12}{'max diag':>11}{'1/(4T)':>9}{'1/(2T)':>9}"
        f"{'rows > 1/(4T)':>15}{'rows > 1/(2T)':>15}"
    )
    for s in random_stats(x):
        print(
            f"{s.t:>6g}{s.max_norm:>12.5g}{s.max_diag:>11.5g}{1 / (4 * s.t):>9.4g}"
            f"{1 / (2 * s.t):>9.4g}{s.above_quarter:>15}{s.above_half:>15}"
        )

    print("\nThe sqrt 2 term: ||softmax(l'/T) - softmax(l/T)||_2 over random pairs, any T")
    print(
        f"  max difference = {float((x.sharp_a - x.sharp_b).norm(dim=-1).max()):.6f}"
        f" <= sqrt 2 = {math.sqrt(2):.6f}"
        " (a bound on a difference of distributions, not on the derivative)"
    )
    print(
        "\nVerdict: Corollary 3 as printed fails at two tied top logits (||J|| = 1/(2T) at L = 2);"
        "\nthe correct sharp bound is ||J||_2 <= 1/(2T) "
        "(attnlimits.theory.softmax_jacobian_norm_bound);"
        "\nfor finite differences, ||Δα|| <= min{||Δl||/(2T), sqrt 2} "
        "(attnlimits.theory.softmax_perturbation_bound)."
    )


if __name__ == "__main__":
    main()
