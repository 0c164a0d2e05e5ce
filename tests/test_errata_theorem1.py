"""Theorem 1 (1.1 and 1.2, appendix Eq. 21, the Jensen gap) and Corollary 2: the numbers their
errata scripts' ``main()`` prints, each against an independent computation written here (as in
tests/test_errata.py: numpy, direct vectors, enumeration of subsets; no BLAS calls)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from attnlimits.errata import (
    theorem1_bound,
    theorem1_expectation,
    theorem1_jensen_gap,
    theorem1_large_context,
    theorem1_probability,
)
from errata_numbers import close, lines_matching, lower_median, nums, softmax

# --- Theorem 1.2, appendix Eq. 21 -----------------------------------------------------------


def test_theorem1_probability_counts(capsys):
    theorem1_probability.main()
    out = capsys.readouterr().out
    rows = [nums(line) for line in lines_matching(out, r"^\s*\d+\s+\d+\s+\d")]
    shown = {(L, n) for L in (4, 12) for n in range(1, L)} | {(6, 3)}
    assert {(int(r[0]), int(r[1])) for r in rows} == shown
    for length, n, counted, derived, appendix in rows:
        L, k = int(length), int(n)
        missing = sum(0 not in s for s in itertools.combinations(range(L), k))
        assert close(counted, missing / math.comb(L, k), 4)
        assert close(derived, (L - k) / L, 4)
        assert close(appendix, (L - k) / k, 4)
    pairs = [(L, k) for L in range(2, 13) for k in range(1, L)]
    worst_app = max(abs((L - k) / L - (L - k) / k) for L, k in pairs)
    (line,) = lines_matching(out, r"max \|count − \(L−N\)/L\|")
    assert nums(line)[-2:] == [0.0, len(pairs)] == [0.0, 66]
    (line,) = lines_matching(out, r"max \|count − \(L−N\)/N\|")
    assert nums(line.split("=")[1])[0] == float(f"{worst_app:.3g}") == 10.1


# --- Theorem 1.1 -----------------------------------------------------------------------------


def naive_fixed_selection(logits: np.ndarray, x: np.ndarray, n: int, causal: bool):
    """(valid, d̃, bound) per row from the vectors: top-N set, s, d_1 by pairwise distances."""
    heads, k, _ = logits.shape
    keep = np.tril(np.ones((k, k), bool)) if causal else np.ones((k, k), bool)
    alpha = softmax(np.where(keep, logits, -np.inf))
    length = keep.sum(-1)  # [Q]
    top = np.argsort(-alpha, axis=-1, kind="stable")[..., :n]  # [H, Q, N]
    sel = np.zeros_like(keep, shape=alpha.shape)
    np.put_along_axis(sel, top, True, axis=-1)
    outside = keep & ~sel
    y = alpha[..., None] * x[:, None, :, :]  # α_i x_i, [H, Q, K, d]
    s = (y * sel[..., None]).sum(-2)
    d_tilde = (np.linalg.norm(y - s[:, :, None, :], axis=-1) * outside).sum(-1)
    pair = np.linalg.norm(x[:, :, None, :] - x[:, None, :, :], axis=-1)  # [H, K, K]
    from_sel = pair[np.arange(heads)[:, None, None], top]  # [H, Q, N, K]: ||x_j − x_i||, j ∈ I_N
    d1 = np.where(outside[:, :, None, :], from_sel, -np.inf).max((-2, -1))
    d1[np.isinf(d1)] = np.nan  # no key outside I_N: an invalid row
    mass = (alpha * sel).sum(-1)
    max_norm = np.linalg.norm(x, axis=-1)[np.arange(heads)[:, None, None], top].max(-1)
    bound = (1 - mass) * d1 + max_norm * (mass * (length - n) - (1 - mass))
    return np.broadcast_to(length >= n + 1, mass.shape), d_tilde, bound


def test_theorem1_bound_rows(capsys):
    theorem1_bound.main()
    out = capsys.readouterr().out
    printed = lines_matching(out, r"^\s*\d\.\d\s+\d+\s+\d+\s+(none|causal)")
    cases = [
        (c, k, n, mask, logits.numpy(), x.numpy())
        for c, k, n, logits, x in theorem1_bound.cases()
        for mask in ("none", "causal")
    ]
    assert len(printed) == len(cases) == 36
    total = 0
    for line, (c, k, n, mask, logits, x) in zip(printed, cases, strict=True):
        assert line.split()[3] == mask
        pc, pk, pn, rows, viol, slack, ratio = nums(line)
        assert (pc, pk, pn) == (c, k, n)
        valid, d_tilde, bound = naive_fixed_selection(logits, x, n, mask == "causal")
        gap = (bound - d_tilde)[valid]
        assert rows == valid.sum()
        assert viol == int((gap < -1e-9 * bound[valid]).sum()) == 0
        assert close(slack, gap.min(), 3)
        assert close(ratio, lower_median((d_tilde / bound)[valid]), 3)
        total += int(valid.sum())
    (line,) = lines_matching(out, "valid rows")
    assert nums(line) == [total, 0] == [8952, 0]
    # L = 2, N = 1, α = (0.1, 0.9), I = {0}, x_0 = x_1 = 1: d̃ = |0.9 − 0.1|, d_1 = 0
    (line,) = lines_matching(out, "arbitrary I_N")
    d_tilde, bound = nums(line.split(":")[1])[-2:]
    assert (d_tilde, bound) == (0.8, round(0.9 * 0 + 1 * (0.1 * 1 - 0.9), 3)) == (0.8, -0.8)
    assert theorem1_bound.arbitrary_subset_counterexample() == pytest.approx((0.8, -0.8))


# --- Theorem 1.2: E by enumeration, the closed forms from the vectors --------------------------


def enumerate_selections(alpha: np.ndarray, x: np.ndarray, n: int):
    """Exact E[d̃] per row and E[||α_i x_i − s||² | i ∉ I_N] per (row, i), over all N-subsets."""
    length = alpha.shape[-1]
    subsets = list(itertools.combinations(range(length), n))
    sel = np.zeros((len(subsets), length), bool)
    for row, subset in enumerate(subsets):
        sel[row, list(subset)] = True
    y = alpha[:, :, None] * x[None]  # [R, L, d]
    s = np.einsum("sl,rld->rsd", sel.astype(float), y)  # [R, S, d]
    dist = np.linalg.norm(y[:, None] - s[:, :, None], axis=-1)  # [R, S, L]
    out = ~sel
    exact = (dist * out).sum(-1).mean(-1)
    second = (dist**2 * out).sum(1) / out.sum(0)  # [R, L]
    return exact, second


def closed_forms(alpha: np.ndarray, x: np.ndarray, n: int):
    """(derived, main text, μ_i, Σ_{j≠i} α_j²||x_j||²) of Theorem 1.2, from the vectors."""
    length = alpha.shape[-1]
    c = n / (length - 1)
    y = alpha[:, :, None] * x[None]
    xbar = y.sum(1, keepdims=True)
    pre = (length - n) / length
    derived = pre * np.linalg.norm((1 + c) * y - c * xbar, axis=-1).sum(-1)
    main = pre * np.linalg.norm(y + c * x[None] - xbar, axis=-1).sum(-1)
    mu = np.linalg.norm(y - c * (xbar - y), axis=-1)  # ||α_i x_i − c Σ_{j≠i} α_j x_j||
    sq = (y**2).sum(-1)
    return derived, main, mu, sq.sum(-1, keepdims=True) - sq


def rms_finite_population(alpha: np.ndarray, x: np.ndarray, n: int) -> np.ndarray:
    """Σ_i P(i∉I_N)·√(||μ_i||² + tr Cov s), tr Cov = N(m−N)/(m(m−1)) Σ_{j≠i}||y_j − ȳ_(i)||²."""
    length = alpha.shape[-1]
    m = length - 1
    y = alpha[:, :, None] * x[None]
    others = ~np.eye(length, dtype=bool)  # [i, j]
    y_others = np.where(others[None, :, :, None], y[:, None], 0.0)  # [R, i, j, d]
    mean_others = y_others.sum(2, keepdims=True) / m
    spread = ((y_others - mean_others) ** 2).sum(-1) * others[None]
    var = n * (m - n) / (m * (m - 1)) * spread.sum(-1)
    mu = np.linalg.norm(y - n / m * (y.sum(1, keepdims=True) - y), axis=-1)
    return (length - n) / length * np.sqrt(mu**2 + var).sum(-1)


def monte_carlo(alpha, x, n, samples, rng):
    """Mean d̃ and its standard error per row, I_N drawn uniformly by numpy."""
    rows, length = alpha.shape
    y = alpha[:, :, None] * x[None]
    values = []
    for _ in range(samples // 250):
        ranks = rng.random((250, rows, length)).argsort(-1).argsort(-1)
        sel = ranks < n  # [B, R, L]
        s = (y[None] * sel[..., None]).sum(-2)
        values.append((np.linalg.norm(y[None] - s[:, :, None], axis=-1) * ~sel).sum(-1))
    d = np.concatenate(values)
    return d.mean(0), d.std(0, ddof=1) / math.sqrt(d.shape[0])


def rel(a, b) -> float:
    return float((np.abs(a - b) / b).mean())


def test_theorem1_expectation_tables(capsys):
    theorem1_expectation.main()
    out = capsys.readouterr().out
    head = r"^\s*(random|peaked)\s+\d+\s+\d+(\s+\S+){5}"
    exact_lines = lines_matching(out, head + "%")  # relative errors in %
    mc_lines = lines_matching(out, head + r"\s+[\d.]+\s+[\d.]+$")  # fractions in the interval
    cases = list(theorem1_expectation.cases())
    exact_cases = [c for c in cases if c.part == "exact"]
    mc_cases = [c for c in cases if c.part == "mc"]
    assert len(exact_lines) == len(exact_cases) == 16 and len(mc_lines) == len(mc_cases) == 6
    worst = [0.0, 0.0]
    for line, case in zip(exact_lines, exact_cases, strict=True):
        alpha, x, n = case.alpha.numpy(), case.x.numpy(), case.n
        length, pn, ex, der, main, rms, rel_der, rel_main = nums(line)
        assert line.split()[0] == case.kind and (length, pn) == (case.length, n)
        exact, second = enumerate_selections(alpha, x, n)
        derived, main_text, _, _ = closed_forms(alpha, x, n)
        rms_enum = (case.length - n) / case.length * np.sqrt(second).sum(-1)
        assert np.allclose(rms_enum, rms_finite_population(alpha, x, n))
        for printed, value in ((ex, exact), (der, derived), (main, main_text), (rms, rms_enum)):
            assert close(printed, value.mean(), 4)
        assert close(rel_der * 100, rel(derived, exact) * 100, 2)
        assert close(rel_main * 100, rel(main_text, exact) * 100, 2)
        tol = 1 + 1e-10
        sandwich = bool(np.all((derived <= exact * tol) & (exact <= rms_enum * tol)))
        assert line.split()[-1] == str(sandwich) == "True"
        worst = [max(worst[0], rel(derived, exact)), max(worst[1], rel(main_text, exact))]
    (line,) = lines_matching(out, "worst mean relative error")
    for printed_worst, value in zip(nums(line), worst, strict=True):
        assert close(printed_worst * 100, value * 100, 2)

    rng = np.random.default_rng(0)
    for line, case in zip(mc_lines, mc_cases, strict=True):
        alpha, x, n = case.alpha.numpy(), case.x.numpy(), case.n
        length, pn, mc, ci, der, main, rms, _, in_main = nums(line)
        assert line.split()[0] == case.kind and (length, pn) == (case.length, n)
        derived, main_text, _, _ = closed_forms(alpha, x, n)
        rms_fp = rms_finite_population(alpha, x, n)
        for printed, value in ((der, derived), (main, main_text), (rms, rms_fp)):
            assert close(printed, value.mean(), 4)
        assert in_main == 0.0  # the main text's summand is never inside the interval
        # derived ≤ E ≤ rms holds for the exact E; the estimate sits within its interval
        assert derived.mean() - ci <= mc <= rms_fp.mean() + ci
        if (case.kind, case.length, n) in (("random", 256, 20), ("peaked", 64, 5)):
            mean, se = monte_carlo(alpha, x, n, 2000, rng)
            spread = 4 * math.hypot(ci / 1.96, float(np.sqrt((se**2).sum())) / len(se))
            assert abs(mc - mean.mean()) <= spread


def test_theorem1_jensen_gap_table(capsys):
    theorem1_jensen_gap.main()
    out = capsys.readouterr().out
    printed = lines_matching(out, r"^\s*\d+\s+\d+\s+\d+\s+-?\d+\.\d{4}\s")
    cases = list(theorem1_jensen_gap.cases())
    assert len(printed) == len(cases) == 16
    totals = np.zeros(5, int)  # violations main, appendix, sharp; main-text E off; ε < 0
    for line, (c, length, n, alpha, x) in zip(printed, cases, strict=True):
        alpha, x = alpha.numpy(), x.numpy()
        pc, pl, pn, eps_min, r_main, r_app, r_sharp, *counts = nums(line)
        assert (pc, pl, pn) == (c, length, n)
        exact, second = enumerate_selections(alpha, x, n)
        derived, main_text, mu, others_sq = closed_forms(alpha, x, n)
        eps = exact - derived
        pre = (length - n) / length
        bounds = {
            "main": pre * (n / (length - 1) * others_sq / (2 * mu)).sum(-1),
            "app": pre * (n * (length - n - 1) * others_sq / (2 * mu)).sum(-1),
            "sharp": pre * (np.sqrt(second) - mu).sum(-1),  # E||Y_i||² by enumeration
        }
        assert close(eps_min, eps.min(), 4)
        for printed_ratio, key, places in zip(
            (r_main, r_app, r_sharp), bounds, (3, 5, 3), strict=True
        ):
            assert close(printed_ratio, lower_median(eps / bounds[key]), places)
        viol = [int((eps > bounds[k] + 1e-10 * exact).sum()) for k in ("main", "app", "sharp")]
        main_off = int((np.abs(exact - main_text) > bounds["main"]).sum())
        assert counts == [*viol, main_off]
        totals += [*viol, main_off, int((eps < -1e-10 * exact).sum())]
    (line,) = lines_matching(out, "rows: ")
    expected = [512, totals[4], *totals[:4]]
    assert nums(line.replace("ε < 0", "")) == expected == [512, 0, 0, 0, 0, 472]


# --- Corollary 2 ------------------------------------------------------------------------------


def test_theorem1_large_context_limits(capsys):
    theorem1_large_context.main()
    out = capsys.readouterr().out
    printed = lines_matching(out, r"^\s*(isotropic|anisotropic)\s+\d+\s")
    cases = list(theorem1_large_context.cases())
    assert len(printed) == len(cases) - 1 == 8
    n = theorem1_large_context.N
    gaps = {}
    for line, (tokens, length, alpha, x) in zip(printed, cases[:-1], strict=True):
        alpha, x = alpha.numpy(), x.numpy()
        pl, e, lim, gap, n_xbar = nums(line)
        assert line.split()[0] == tokens and pl == length
        derived, *_ = closed_forms(alpha, x, n)
        limit = np.linalg.norm(alpha[:, :, None] * x[None], axis=-1).sum(-1)
        assert close(e, derived.mean(), 4) and close(lim, limit.mean(), 4)
        assert close(gap * 100, (np.abs(derived - limit) / derived).mean() * 100, 2)
        xbar = np.einsum("rk,kd->rd", alpha, x)
        assert close(n_xbar, n * np.linalg.norm(xbar, axis=-1).mean(), 3)
        gaps[tokens, length] = gap
    # the stated conclusion: the gap closes for isotropic tokens only
    anisotropic = min(v for k, v in gaps.items() if k[0] == "anisotropic")
    assert gaps["isotropic", 4096] < 0.02 < 0.6 < anisotropic
    tokens, length, alpha, x = cases[-1]
    small = lines_matching(out, r"^\s+N = \d+: exact")
    assert [int(nums(s)[0]) for s in small] == list(theorem1_large_context.SMALL_NS)
    for line in small:
        k, ex, der = nums(line)
        exact, _ = enumerate_selections(alpha.numpy(), x.numpy(), int(k))
        derived, *_ = closed_forms(alpha.numpy(), x.numpy(), int(k))
        assert close(ex, exact.mean(), 4) and close(der, derived.mean(), 4)
    # at N = L − 1 the selection given i ∉ I_N is forced, so Jensen is tight
    exact, _ = enumerate_selections(alpha.numpy(), x.numpy(), length - 1)
    assert np.allclose(exact, closed_forms(alpha.numpy(), x.numpy(), length - 1)[0])
