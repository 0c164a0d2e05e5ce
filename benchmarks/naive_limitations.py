"""Algorithms 1–5 of Mudarisov et al. (NeurIPS 2025) written the way the paper's pseudocode reads.

The baseline of ``benchmarks/bench_limitations.py``: a Python loop over heads and rows, and per
row plain NumPy (float64) on that row's kept keys only (a causal row at position p has the
p + 1 keys 0..p). Nothing is shared between rows, between N or between L: every row sorts its
weights, builds s, sums the non-selected distances, and so on, from scratch. Inside a row the
work is NumPy-vectorised over tokens (a Python loop over tokens would only make the baseline
slower and the comparison less honest).

Per row (α the row's weights, x the per-key vectors, L = p + 1):

- top-N by a stable descending sort; s = Σ_{i∈I_N} α_i x_i (Eq. 6);
- d̃ = Σ_{i∉I_N} ||α_i x_i − s|| (Eq. 7), directly from the vectors;
- the Theorem 1.1 bound with d_1 = max over the explicit pairs (i ∉ I_N, j ∈ I_N) of ||x_i − x_j||;
- E by the derived formula ((L−N)/L) Σ_i ||α_i (1 + N/(L−1)) x_i − (N/(L−1)) x̄|| and by the
  main text's ((L−N)/L) Σ_i ||(α_i + N/(L−1)) x_i − x̄|| (Theorem 1.2);
- Alg. 4: r = min_{j∉I_N} ||s − α_j x_j||, N_s by counting i ∈ I_N with ||s − α_i x_i|| ≤ r,
  ξ_i of Eq. 12 from explicit sums over the other selected keys, the two sides of Eq. 11;
- Alg. 5: the perturbation softmax((l + εv)/T) − softmax(l/T) per row, T and ε, and
  ||J||₂ = the largest eigenvalue (``numpy.linalg.eigvalsh``) of the explicit L×L matrix
  (diag(α) − ααᵀ)/T.

Every function takes NumPy arrays of one layer: ``attn [H, Q, K]``, ``x [H, K, d]``,
``logits [H, Q, K]``, and the query positions to score per head (``rows``), and returns
``{key: array [H, len(rows)]}`` (NaN where a row has fewer than N + 1 keys), so that the
benchmark can compare them with the library's per-row values at the same positions.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from scipy import stats

__all__ = [
    "alg3_ks",
    "critical_n_naive",
    "distance_row",
    "distances",
    "min_pairwise_naive",
    "sensitivity",
    "separability",
]


def _top_n(alpha: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """I_N (the N largest weights, ties to the lower index) and the rest, by sorting the row."""
    order = np.argsort(-alpha, kind="stable")
    return order[:n], order[n:]


def distance_row(alpha: np.ndarray, x: np.ndarray, n: int, *, bound: bool) -> dict[str, float]:
    """d̃, E (derived and main-text forms) and, if ``bound``, the Thm 1.1 bound for one row."""
    length = alpha.shape[0]
    sel, rest = _top_n(alpha, n)
    s = (alpha[sel, None] * x[sel]).sum(0)  # Eq. 6
    distance = np.linalg.norm(alpha[rest, None] * x[rest] - s, axis=1).sum()  # Eq. 7

    xbar = alpha @ x
    c = n / (length - 1)
    p_out = (length - n) / length
    derived = np.linalg.norm((alpha * (1 + c))[:, None] * x - c * xbar, axis=1).sum() * p_out
    main_text = np.linalg.norm((alpha + c)[:, None] * x - xbar, axis=1).sum() * p_out
    out = {"distance": distance, "expectation": derived, "expectation_main_text": main_text}
    if bound:
        d1 = 0.0
        for j in sel:  # explicit max over the pairs (i ∉ I_N, j ∈ I_N)
            d1 = max(d1, np.linalg.norm(x[rest] - x[j], axis=1).max())
        mass = alpha[sel].sum()
        max_norm = np.linalg.norm(x[sel], axis=1).max()
        out["bound"] = (1 - mass) * d1 + max_norm * (mass * (length - n) - (1 - mass))
    return out


def distances(
    attn: np.ndarray,
    x: np.ndarray,
    rows: np.ndarray,
    ns: Sequence[int],
    bound_ns: Sequence[int],
) -> dict[tuple[str, int], np.ndarray]:
    """Per head and per row position p in ``rows``: :func:`distance_row` on keys 0..p, each N.

    Returns ``{(quantity, N): [H, len(rows)]}``; NaN where p < N (fewer than N + 1 keys).
    """
    heads = attn.shape[0]
    out: dict[tuple[str, int], np.ndarray] = {}
    for h in range(heads):
        for r, p in enumerate(rows):
            alpha = attn[h, p, : p + 1].astype(np.float64)
            xs = x[h, : p + 1].astype(np.float64)
            for n in ns:
                if p < n:
                    continue
                for key, value in distance_row(alpha, xs, n, bound=n in bound_ns).items():
                    arr = out.setdefault((key, n), np.full((heads, len(rows)), np.nan))
                    arr[h, r] = value
    return out


def critical_n_naive(
    ns: Sequence[int], d_mean: np.ndarray, e_mean: np.ndarray, alpha: float
) -> int:
    """Alg. 3's test: first N whose KS test of per-head d̄ against Ē does not reject; else −1."""
    for i, n in enumerate(ns):
        if stats.ks_2samp(d_mean[i], e_mean[i]).pvalue >= alpha:
            return int(n)
    return -1


def alg3_ks(
    per_length: dict[int, dict[tuple[str, int], np.ndarray]], ns: Sequence[int], alpha: float
) -> dict[int, int]:
    """Critical N per L from per-row values ``{L: {(quantity, N): [heads, rows]}}`` (row means)."""
    out = {}
    for length, vals in per_length.items():
        n_values = [n for n in ns if n < length and ("distance", n) in vals]
        d = np.stack([np.nanmean(vals["distance", n], axis=1) for n in n_values])
        e = np.stack([np.nanmean(vals["expectation", n], axis=1) for n in n_values])
        out[length] = critical_n_naive(n_values, d, e, alpha)
    return out


def min_pairwise_naive(x: np.ndarray) -> float:
    """δ = min_{i≠j} ||x_i − x_j|| (Assumption 2) by an explicit loop over i."""
    best = np.inf
    for i in range(x.shape[0] - 1):
        best = min(best, np.linalg.norm(x[i + 1 :] - x[i], axis=1).min())
    return float(best)


def _separability_row(
    alpha: np.ndarray, x: np.ndarray, n: int, m: float, delta: float
) -> dict[str, float]:
    sel, rest = _top_n(alpha, n)
    s = (alpha[sel, None] * x[sel]).sum(0)
    r = np.linalg.norm(s - alpha[rest, None] * x[rest], axis=1).min()  # ball radius
    count = 0
    margin = np.inf  # how close a selected token sits to the sphere of radius r (relative)
    xi = np.empty(n)
    for k, i in enumerate(sel):
        inside = np.linalg.norm(s - alpha[i] * x[i])
        if inside <= r:  # N_s by direct count (Eq. 10)
            count += 1
        margin = min(margin, abs(inside - r) / r)
        others = alpha[np.delete(sel, k)]
        pairs = np.outer(others, others).sum() - (others * others).sum()  # Σ_{j≠k; j,k≠i}
        xi[k] = np.sqrt(max(m * m * (others * others).sum() + (m * m - delta**2 / 2) * pairs, 0))
    lower = 1 - xi.sum() / (r * n)
    upper = np.exp(-((r - xi) ** 2) / (16 * m * m)).mean()
    return {"ratio": count / n, "lower": lower, "upper": upper, "margin": margin}


def separability(
    attn: np.ndarray, x: np.ndarray, rows: np.ndarray, ns: Sequence[int]
) -> tuple[dict[tuple[str, int], np.ndarray], float]:
    """Alg. 4 per head and row: x put on the unit sphere, δ per head, then each N.

    Returns ``({(quantity, N): [H, len(rows)]}, seconds spent on the per-head δ)``; the
    quantity ``margin`` is min_{i∈I_N} |X_i − r| / r, how near the count was to flipping.
    """
    heads = attn.shape[0]
    out: dict[tuple[str, int], np.ndarray] = {}
    setup = 0.0
    for h in range(heads):
        t0 = time.perf_counter()
        xh = x[h].astype(np.float64)
        xh = xh / np.linalg.norm(xh, axis=1, keepdims=True)  # Assumption 1, M = 1
        delta = min_pairwise_naive(xh)  # Assumption 2
        setup += time.perf_counter() - t0
        for r, p in enumerate(rows):
            alpha = attn[h, p, : p + 1].astype(np.float64)
            for n in ns:
                if p < n:
                    continue
                for key, value in _separability_row(alpha, xh[: p + 1], n, 1.0, delta).items():
                    arr = out.setdefault((key, n), np.full((heads, len(rows)), np.nan))
                    arr[h, r] = value
    return out, setup


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


def sensitivity(
    logits: np.ndarray,
    directions: np.ndarray,
    rows: np.ndarray,
    temperatures: Sequence[float],
    epsilons: Sequence[float],
    *,
    jacobian: bool = True,
) -> tuple[dict[tuple[str, float, float], np.ndarray], float]:
    """Alg. 5 per head and row position p (keys 0..p): g(T, ε) and the exact ||J||₂ per T.

    ``directions [H, len(rows), K]`` are the raw Gaussian draws (the same the library draws);
    each row's v is its first p + 1 entries, normalised. Returns
    ``({("sensitivity", T, ε) or ("jacobian_norm", T, 0.0): [H, len(rows)]}, seconds spent on
    the Jacobian norms)``.
    """
    heads = logits.shape[0]
    out: dict[tuple[str, float, float], np.ndarray] = {}
    t_jac = 0.0

    def put(key: tuple[str, float, float], h: int, r: int, value: float) -> None:
        out.setdefault(key, np.full((heads, len(rows)), np.nan))[h, r] = value

    for h in range(heads):
        for r, p in enumerate(rows):
            l = logits[h, p, : p + 1].astype(np.float64)
            v = directions[h, r, : p + 1] / np.linalg.norm(directions[h, r, : p + 1])
            for t in temperatures:
                base = _softmax(l / t)
                for eps in epsilons:
                    moved = _softmax((l + eps * v) / t)
                    put(("sensitivity", t, eps), h, r, np.linalg.norm(moved - base) / eps)
                if jacobian:
                    t0 = time.perf_counter()
                    jac = (np.diag(base) - np.outer(base, base)) / t
                    put(("jacobian_norm", t, 0.0), h, r, np.linalg.eigvalsh(jac)[-1])
                    t_jac += time.perf_counter() - t0
    return out, t_jac
