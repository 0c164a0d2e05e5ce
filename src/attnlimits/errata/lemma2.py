"""Paper A, Lemma 2 (Eq. 13): the printed general Jacobian bound fails; a corrected one holds.

Printed: ||∇_l α||₂ ≤ min{ ||F'||·(1/(L·min F) + ||F||/(L²·(min F)²)), √2 } for α = F/ΣF.

``python -m attnlimits.errata lemma2`` computes the exact Jacobian J = diag(F')/S − F F'ᵀ/S²
(S = ΣF) for several positive F and prints its spectral norm beside the printed bound and
the corrected bound (:func:`attnlimits.theory.normalizer_jacobian_norm_bound`):

1. F(x) = x on x > 0 (F' = 1), logits (L, 1, …, 1), L = 100: ||J|| = 0.0254 > 0.02 (the L²);
2. softplus, logits (100, 1.5, …, 1.5), L = 300: ||J|| = 0.0041 > 0.0023 (the L²);
3. softmax F = exp(l/T) at T = 0.1 with two tied logits: ||J|| = 5 > √2 (the √2 cap);
4. a random search over exp, softplus, x² + 1 and x: the largest ratio ||J|| / bound.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from attnlimits.theory.sensitivity import (
    lemma2_bound_as_printed,
    normalizer_jacobian,
    normalizer_jacobian_norm_bound,
)

Fn = Callable[[Tensor], Tensor]

FUNCTIONS: dict[str, tuple[Fn, Fn]] = {
    "exp": (torch.exp, torch.exp),
    "softplus": (torch.nn.functional.softplus, torch.sigmoid),
    "x^2 + 1": (lambda x: x * x + 1, lambda x: 2 * x),
    "x (x > 0)": (lambda x: x, torch.ones_like),
}


def _row(fn: str, logits: Tensor) -> tuple[float, float, float]:
    """Exact ||J||₂, the printed bound and the corrected bound for one logit row."""
    f_fn, d_fn = FUNCTIONS[fn]
    f, d = f_fn(logits), d_fn(logits)
    norm = float(torch.linalg.matrix_norm(normalizer_jacobian(f, d), ord=2))
    args = (float(f.max()), float(d.abs().max()), float(f.min()), logits.numel())
    return norm, float(lemma2_bound_as_printed(*args)), float(normalizer_jacobian_norm_bound(*args))


def one_big(length: int, big: float, rest: float) -> Tensor:
    """Logits (big, rest, …, rest) in float64."""
    row = torch.full((length,), rest, dtype=torch.float64)
    row[0] = big
    return row


def main() -> None:
    print(
        "Paper A, Lemma 2 (Eq. 13): ||J||_2 <= min{ ||F'|| (1/(L minF) + ||F||/(L^2 minF^2)), √2 }"
    )
    print(
        "J = diag(F')/S - F F'^T/S^2 exactly; corrected = theory.normalizer_jacobian_norm_bound\n"
    )
    print(f"{'F':<12}{'logits':<30}{'exact ||J||':>13}{'printed':>11}{'corrected':>11}  verdict")
    cases = [
        ("x (x > 0)", "(100, 1 x 99)", one_big(100, 100.0, 1.0)),
        ("softplus", "(100, 1.5 x 299)", one_big(300, 100.0, 1.5)),
        ("exp", "(0, 0)", torch.zeros(2, dtype=torch.float64)),
    ]
    for fn, label, logits in cases:
        norm, printed, fixed = _row(fn, logits)
        print(
            f"{fn:<12}{label:<30}{norm:>13.5g}{printed:>11.5g}{fixed:>11.5g}  "
            f"printed {'FAILS' if norm > printed else 'holds'}"
        )
    # softmax at temperature T: F = exp(l/T), F' = F/T
    t = 0.1
    f = torch.ones(2, dtype=torch.float64)
    norm = float(torch.linalg.matrix_norm(normalizer_jacobian(f, f / t), ord=2))
    printed = float(lemma2_bound_as_printed(1.0, 1 / t, 1.0, 2))
    fixed = float(normalizer_jacobian_norm_bound(1.0, 1 / t, 1.0, 2))
    print(
        f"{'exp(l/0.1)':<12}{'(0, 0)':<30}{norm:>13.5g}{printed:>11.5g}{fixed:>11.5g}  "
        f"printed {'FAILS' if norm > printed else 'holds'} (the √2 cap)"
    )

    print("\nRandom search: 400 rows per F (L in 2..64, logit scales 0.1..100, half one-big)")
    print(f"{'F':<12}{'max ||J||/printed':>19}{'max ||J||/corrected':>21}")
    gen = torch.Generator().manual_seed(0)
    for fn in FUNCTIONS:
        worst_p = worst_c = 0.0
        for i in range(400):
            length = int(torch.randint(2, 65, (1,), generator=gen))
            scale = float(10 ** (torch.rand(1, generator=gen) * 3 - 1))
            if i % 2:
                x = torch.randn(length, generator=gen, dtype=torch.float64) * scale
            else:
                x = one_big(length, scale, float(torch.rand(1, generator=gen)) * scale / 10)
            if fn == "x (x > 0)":
                x = x.abs() + 1e-3
            f = FUNCTIONS[fn][0](x)
            if not torch.isfinite(f.sum() ** 2) or float(f.min()) < 1e-100:
                continue
            norm, printed, fixed = _row(fn, x)
            worst_p, worst_c = max(worst_p, norm / printed), max(worst_c, norm / fixed)
        print(f"{fn:<12}{worst_p:>19.4f}{worst_c:>21.10f}")
    print(
        "\nVerdict: Eq. 13 as printed fails (ratio > 1) through its L^2 term (F = x, softplus)"
        "\nand through its √2 cap (softmax at small T). The corrected bound "
        "||F'|| sqrt(L) ||F||_2 / S^2,"
        "\nmaximised over S, holds everywhere (ratio <= 1; = 1 when F' is constant)."
    )


if __name__ == "__main__":
    main()
