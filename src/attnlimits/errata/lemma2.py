"""Paper A (Mudarisov et al., NeurIPS 2025), §2.3, Lemma 2 (Eq. 13): which norms make it hold?

Printed, for α = F(l)/S, S = Σ_j F(l_j), J = ∂α/∂l = diag(F′)/S − F F′ᵀ/S²:

    ||J||₂ ≤ min{ ||F′||·(1/(L·min F) + ||F||/(L²·(min F)²)), √2 }.

The proof is the triangle inequality ||J||₂ ≤ max|F′_i|/S + ||F||₂·||F′||₂/S² with S ≥ L·min F.
So the first term (the √2 cap aside) depends on how ||F||, ||F′|| are read:

- max-norms (||F|| = max_i |F(l_i)|, as restated in REFERENCE.md): ||F||₂||F′||₂ ≤ L·||F||·||F′||,
  so the second denominator must be L, not L²: ``max_L`` holds, ``max_printed`` (L²) fails;
- Euclidean norms of the vectors (F(l_i))_i and (F′(l_i))_i: max|F′_i| ≤ ||F′||₂ and the printed
  L² form, ``euclid_printed``, holds as it stands.

The √2 cap fails under either reading (softmax at T = 0.1 with two tied logits: ||J||₂ = 5).
``sharp`` is :func:`attnlimits.theory.normalizer_jacobian_norm_bound` (max-norm inputs).

``python -m attnlimits.errata lemma2`` prints ||J||₂ (exact, SVD) beside every reading for fixed
cases, then the worst ratio ||J||₂ / bound found by gradient ascent on the logits, batched over
rows (the top singular pair from warm-started power iteration, O(L) per product), with each
worst row's ratio re-evaluated exactly. Seeded; a few seconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor

from attnlimits.theory.sensitivity import normalizer_jacobian, normalizer_jacobian_norm_bound

Fn = Callable[[Tensor], Tensor]

#: F and F′; ``exp`` is shifted by the row maximum (every reading is invariant under F → cF).
FUNCTIONS: dict[str, tuple[Fn, Fn]] = {
    "exp": (
        lambda x: torch.exp(x - x.amax(-1, keepdim=True).detach()),
        lambda x: torch.exp(x - x.amax(-1, keepdim=True).detach()),
    ),
    "softplus": (torch.nn.functional.softplus, torch.sigmoid),
    "x^2 + 1": (lambda x: x * x + 1, lambda x: 2 * x),
    "x (x > 0)": (lambda x: x, torch.ones_like),
}
READINGS = ("max_printed", "max_L", "euclid_printed", "sharp")
LENGTHS = (2, 4, 16, 64, 256)
LIMIT = 100.0  # |logit| ≤ LIMIT in the search (F = x: logits in [1e-3, LIMIT])
LR = 0.05  # Adam step on the logits / their row scale


def reading_bounds(f: Tensor, d: Tensor) -> dict[str, Tensor]:
    """First term of Eq. 13 (no √2 cap) under each reading, and the sharp bound; ``[..., L]``."""
    length = f.shape[-1]
    m = f.amin(-1)
    f_max, d_max = f.abs().amax(-1), d.abs().amax(-1)
    f_two, d_two = f.norm(dim=-1), d.norm(dim=-1)
    first = 1 / (length * m)
    return {
        "max_printed": d_max * (first + f_max / (length**2 * m**2)),
        "max_L": d_max * (first + f_max / (length * m**2)),
        "euclid_printed": d_two * (first + f_two / (length**2 * m**2)),
        "sharp": torch.as_tensor(normalizer_jacobian_norm_bound(f_max, d_max, m, length)),
    }


def jacobian_norm(f: Tensor, d: Tensor) -> Tensor:
    """Exact ||J||₂ per row (SVD of the full Jacobian)."""
    return torch.linalg.matrix_norm(normalizer_jacobian(f, d), ord=2)


class Case(NamedTuple):
    name: str
    label: str
    norm: float
    bounds: dict[str, float]


def _case(name: str, label: str, f: Tensor, d: Tensor) -> Case:
    b = {k: float(v) for k, v in reading_bounds(f, d).items()}
    return Case(name, label, float(jacobian_norm(f, d)), b)


def one_big(length: int, big: float, rest: float) -> Tensor:
    """Logits (big, rest, …, rest) in float64."""
    row = torch.full((length,), rest, dtype=torch.float64)
    row[0] = big
    return row


def fixed_cases() -> list[Case]:
    """The counterexamples of docs/errata.md: the L² (F = x, softplus) and the √2 cap."""
    out = []
    for fn, label, logits in (
        ("x (x > 0)", "(100, 1 x 99)", one_big(100, 100.0, 1.0)),
        ("softplus", "(100, 1.5 x 299)", one_big(300, 100.0, 1.5)),
        ("exp", "(0, 0)", torch.zeros(2, dtype=torch.float64)),
    ):
        f_fn, d_fn = FUNCTIONS[fn]
        out.append(_case(fn, label, f_fn(logits), d_fn(logits)))
    f = torch.ones(2, dtype=torch.float64)  # softmax at T = 0.1: F = exp(l/T), F′ = F/T
    out.append(_case("exp(l/0.1)", "(0, 0)", f, f / 0.1))
    return out


class Worst(NamedTuple):
    ratio: float  # exact ||J||₂ / bound at ``logits``
    logits: Tensor  # float64 [L]


def _logits(fn: str, z: Tensor) -> Tensor:
    if fn == "x (x > 0)":
        return z.abs().clamp(1e-3, LIMIT)
    return z.clamp(-LIMIT, LIMIT)


def _jv(f: Tensor, d: Tensor, s: Tensor, v: Tensor) -> Tensor:
    return d * v / s - f * (d * v).sum(-1, keepdim=True) / s**2


def _jtu(f: Tensor, d: Tensor, s: Tensor, u: Tensor) -> Tensor:
    return d * u / s - d * (f * u).sum(-1, keepdim=True) / s**2


def _starts(gen: torch.Generator, rows: int, length: int) -> tuple[Tensor, Tensor]:
    """(scale, w): starts scale·w ``[F, reading, rows, L]``, half Gaussian, half one-big."""
    shape = (len(FUNCTIONS), len(READINGS), rows, length)
    scale = 10 ** (3 * torch.rand(*shape[:3], 1, generator=gen, dtype=torch.float64) - 1)
    w = torch.randn(shape, generator=gen, dtype=torch.float64)
    rest = 10 ** (-3 * torch.rand(*shape[:3], 1, generator=gen, dtype=torch.float64))
    w[:, :, ::2] = rest[:, :, ::2].expand(-1, -1, -1, length)
    w[:, :, ::2, 0] = 1.0
    return scale, w


def _values(z: Tensor) -> tuple[Tensor, Tensor]:
    """F and F′ ``[F, ...]`` at logits ``z[k]`` for the k-th function of :data:`FUNCTIONS`."""
    f, d = [], []
    for k, (fn, (f_fn, d_fn)) in enumerate(FUNCTIONS.items()):
        logits = _logits(fn, z[k])
        f.append(f_fn(logits))
        d.append(d_fn(logits))
    return torch.stack(f), torch.stack(d)


def search(rows: int = 16, steps: int = 30, seed: int = 0) -> dict[tuple[str, str], Worst]:
    """Worst ||J||₂ / bound per (F, reading): Adam on the logits, batched over F and rows.

    Every (F, reading) gets ``rows`` starts per length; the objective is log(||J||₂/bound),
    with ||J||₂ = uᵀJv for the top singular pair (u, v) from power iteration (a lower bound on
    ||J||₂ whose gradient is that of ||J||₂ at convergence). The best row is re-scored exactly.
    """
    gen = torch.Generator().manual_seed(seed)
    found: dict[tuple[str, str], Worst] = {}
    pick = torch.arange(len(READINGS))
    for length in LENGTHS:
        scale, w = _starts(gen, rows, length)
        w.requires_grad_(True)
        v = torch.randn(w.shape, generator=gen, dtype=torch.float64)
        moment, second = torch.zeros_like(w), torch.zeros_like(w)  # Adam (torch.optim loads dynamo)
        best_w = w.detach().clone()
        best_r = torch.zeros(w.shape[:3], dtype=torch.float64)
        for step in range(1, steps + 1):
            f, d = _values(scale * w)
            s = f.sum(-1, keepdim=True)
            with torch.no_grad():
                for _ in range(8):
                    v = _jtu(f, d, s, _jv(f, d, s, v))
                    v = v / v.norm(dim=-1, keepdim=True).clamp_min(1e-300)
                u = _jv(f, d, s, v)
                u = u / u.norm(dim=-1, keepdim=True).clamp_min(1e-300)
            norm = (u * _jv(f, d, s, v)).sum(-1)  # [F, reading, rows]
            b = torch.stack([reading_bounds(f, d)[r] for r in READINGS], 1)  # [F, reading, ...]
            ratio = norm / b[:, pick, pick]
            ok = torch.isfinite(ratio) & (ratio > 0)
            with torch.no_grad():
                better = ok & (ratio > best_r)
                best_r = torch.where(better, ratio, best_r)
                best_w = torch.where(better.unsqueeze(-1), w, best_w)
            (grad,) = torch.autograd.grad(torch.where(ok, ratio, 1.0).log().sum(), w)
            with torch.no_grad():
                grad.nan_to_num_(0.0, 0.0, 0.0)  # rows with a non-finite ratio stay put
                moment.lerp_(grad, 0.1)
                second.lerp_(grad * grad, 0.001)
                m_hat, v_hat = moment / (1 - 0.9**step), second / (1 - 0.999**step)
                w += LR * m_hat / (v_hat.sqrt() + 1e-12)
        for j, (fn, (f_fn, d_fn)) in enumerate(FUNCTIONS.items()):
            for k, reading in enumerate(READINGS):
                i = int(best_r[j, k].argmax())
                logits = _logits(fn, scale[j, k, i] * best_w[j, k, i])
                f, d = f_fn(logits), d_fn(logits)
                r = float(jacobian_norm(f, d) / reading_bounds(f, d)[reading])
                if r > found.get((fn, reading), Worst(0.0, logits)).ratio:
                    found[fn, reading] = Worst(r, logits)
    return found


def main() -> None:
    print("Paper A, Lemma 2 (Eq. 13): ||J||_2 <= min{||F'||(1/(L m) + ||F||/(L^2 m^2)), √2}")
    print("m = min F; J = diag(F')/S - F F'^T/S^2, exact ||J||_2 by SVD.")
    print("Bounds (the first term of Eq. 13, without the √2 cap):")
    print("  max_printed    ||F'||_max (1/(L m) + ||F||_max/(L^2 m^2))   [max-norms, as printed]")
    print("  max_L          ||F'||_max (1/(L m) + ||F||_max/(L m^2))     [max-norms, L^2 -> L]")
    print("  euclid_printed ||F'||_2   (1/(L m) + ||F||_2/(L^2 m^2))     [2-norms, as printed]")
    print("  sharp          theory.normalizer_jacobian_norm_bound (max-norms)\n")
    head = f"{'F':<12}{'logits':<18}{'exact ||J||':>12}" + "".join(f"{r:>15}" for r in READINGS)
    print(head + "  exceeded")
    cases = fixed_cases()
    for c in cases:
        vals = "".join(f"{c.bounds[r]:>15.5g}" for r in READINGS)
        fails = [r for r in READINGS if c.norm > c.bounds[r] * (1 + 1e-12)]
        print(f"{c.name:<12}{c.label:<18}{c.norm:>12.5g}{vals}  {', '.join(fails) or 'none'}")
    c = cases[-1]  # softmax at T = 0.1, tied logits
    capped = ", ".join(f"{r} {min(c.bounds[r], math.sqrt(2)):.4f}" for r in READINGS[:3])
    print(f"with the √2 cap, {c.name} {c.label}: {capped} against ||J|| = {c.norm:.4g}:")
    cap_fails = all(c.norm > min(c.bounds[r], math.sqrt(2)) for r in READINGS[:3])
    print(f"the cap {'fails' if cap_fails else 'holds'} under every reading of the norms\n")

    found = search()
    print(f"Worst ||J||_2 / bound by gradient ascent (L in {LENGTHS}, |logits| <= {LIMIT:g})")
    print(f"{'F':<12}{'reading':<16}{'L':>5}{'worst ratio':>13}  verdict")
    for (fn, reading), w in found.items():
        verdict = "FAILS (ratio > 1)" if w.ratio > 1 + 1e-9 else "holds here"
        print(f"{fn:<12}{reading:<16}{w.logits.numel():>5}{w.ratio:>13.6f}  {verdict}")
    print(
        "\nVerdict: read with max-norms, Eq. 13 fails through its L^2 (F = x, softplus) and holds"
        "\nwith L in place of L^2; read with Euclidean norms, the printed L^2 form holds (the proof"
        "\nneeds only max|F'| <= ||F'||_2 and S >= L min F). The √2 cap fails under both readings."
    )


if __name__ == "__main__":
    main()
