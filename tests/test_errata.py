"""Every errata script (``python -m attnlimits.errata NAME``): the numbers its ``main()`` prints.
Here the listing, Theorem 2, Corollary 3, Lemma 2, the §2.3 swap example and findings (iii) and
(v); Theorem 1 and Corollary 2 are in tests/test_errata_theorem1.py.

Each test runs the script's ``main()`` once, parses the printed table and compares every printed
number with an independent computation written here: numpy instead of torch, direct vectors
instead of Gram tricks, enumeration of subsets instead of closed-form variances, autograd
instead of the Jacobian formula. The inputs come from the script's own seeded ``cases()`` /
``inputs()``, so the comparison is row for row. Tolerances are the printed precision.

The numpy side avoids BLAS calls (einsum, not matmul; SVDs through torch): OpenBLAS threads
that spin after each call slow the torch work of the next test threefold on a busy machine.
"""

from __future__ import annotations

import importlib
import itertools
import math

import numpy as np
import pytest
import torch

from attnlimits.errata import __main__ as errata_cli
from attnlimits.errata import (
    corollary3,
    finding_iii_sublinear,
    finding_v_two_orders,
    lemma2,
    swap_example,
    theorem2_bounds,
)
from conftest import REPO
from errata_numbers import close, close_sig, lines_matching, nums, softmax

SCRIPTS = {
    "corollary3",
    "figure4_low_temperature",
    "finding_iii_sublinear",
    "finding_v_two_orders",
    "lemma2",
    "swap_example",
    "theorem1_bound",
    "theorem1_expectation",
    "theorem1_jensen_gap",
    "theorem1_large_context",
    "theorem1_probability",
    "theorem2_bounds",
}

# --- the command and the doc ----------------------------------------------------------------


def test_listing_names_every_script_and_the_doc_gives_each_command(capsys):
    assert errata_cli.main([]) == 0
    listed = set(capsys.readouterr().out.split()[2:])
    assert listed == SCRIPTS
    doc = (REPO / "docs" / "errata.md").read_text(encoding="utf-8")
    for name in SCRIPTS:
        assert f"python -m attnlimits.errata {name}`" in doc
        module_doc = importlib.import_module(f"attnlimits.errata.{name}").__doc__ or ""
        assert "Paper A" in module_doc and f"python -m attnlimits.errata {name}" in module_doc
    assert errata_cli.main(["no_such_erratum"]) == 2
    assert "unknown erratum" in capsys.readouterr().err


# --- Theorem 2 --------------------------------------------------------------------------------


def naive_separability(attn: np.ndarray, x: np.ndarray, n: int):
    """N_s/N (fewest, most) and Eq. 11's two sides per valid causal row; M = 1, δ = min dist.

    N_s compares ||s − α_i x_i|| with r = min_{j∉I_N} ||s − α_j x_j|| through the differences
    d_i = ||s − α_i x_i||² − ||s||² = α_i²||x_i||² − 2α_i⟨x_i, s⟩, free of the cancellation in
    the norms: for α_i below ~1e-16 two norms agree to every float64 digit and a norm-based
    count is decided by rounding. Such comparisons (|d_i − min d_j| ≤ 1e-13·||s||²) may go
    either way, so the count comes as a range; elsewhere both ends are the exact count.
    """
    k = attn.shape[-1]
    keep = np.tril(np.ones((k, k), bool))
    valid = keep.sum(-1) >= n + 1
    attn, keep = attn[valid], keep[valid]
    top = np.argsort(-attn, axis=-1, kind="stable")[:, :n]
    sel = np.zeros_like(keep)
    np.put_along_axis(sel, top, True, axis=-1)
    s = np.einsum("qk,kd->qd", attn * sel, x)
    d = attn**2 * (x**2).sum(-1) - 2 * attn * np.einsum("qd,kd->qk", s, x)
    d_out = np.where(keep & ~sel, d, np.inf).min(-1)
    d_in = np.take_along_axis(d, top, -1)
    tol = 1e-13 * (s**2).sum(-1, keepdims=True)
    fewest = (d_in < d_out[:, None] - tol).sum(-1) / n
    most = (d_in <= d_out[:, None] + tol).sum(-1) / n
    exact = (d_in <= d_out[:, None]).sum(-1) / n
    r = np.sqrt((s**2).sum(-1) + d_out)
    pair = np.linalg.norm(x[:, None] - x[None], axis=-1)
    delta = pair[~np.eye(k, dtype=bool)].min()
    a = np.take_along_axis(attn, top, -1)  # [Q, N]
    i, j, l = np.ogrid[:n, :n, :n]
    cross = (j != l) & (j != i) & (l != i)  # Σ_{j≠k; j,k≠i} α_j α_k
    xi2 = (
        (a**2).sum(-1, keepdims=True)
        - a**2
        + (1 - delta**2 / 2) * np.einsum("qj,ql,ijl->qi", a, a, cross.astype(float))
    )
    xi = np.sqrt(np.clip(xi2, 0, None))
    lower = 1 - xi.sum(-1) / (r * n)
    upper = np.exp(-((r[:, None] - xi) ** 2) / 16).mean(-1)
    return (fewest, exact, most), lower, upper


def test_theorem2_bounds_counts(capsys):
    theorem2_bounds.main()
    out = capsys.readouterr().out
    printed = lines_matching(out, r"^\s*\d+\s+\d+\s+-?\d+\.\d{3}\s")
    x, maps = theorem2_bounds.inputs()
    cases = [(c, attn.numpy(), n) for c, attn in maps for n in theorem2_bounds.NS]
    assert len(printed) == len(cases) == 15
    below_total = 0
    for line, (c, attn, n) in zip(printed, cases, strict=True):
        pc, pn, ratio_m, lower_m, upper_m, below, valid, above, valid2 = nums(line)
        assert (pc, pn) == (c, n)
        (fewest, exact, most), lower, upper = naive_separability(attn, x.numpy(), n)
        assert valid == valid2 == exact.size == theorem2_bounds.K - n
        assert fewest.mean() - 5e-4 <= ratio_m <= most.mean() + 5e-4
        if np.array_equal(fewest, most):  # no rounding-decided comparison: the exact count
            assert close(ratio_m, exact.mean(), 3)
        assert close(lower_m, lower.mean(), 3) and close(upper_m, upper.mean(), 3)
        assert below == int((exact < lower - 1e-12).sum()) == int((most < lower - 1e-12).sum()) == 0
        assert above == int((exact > upper + 1e-12).sum()) == int((fewest > upper + 1e-12).sum())
        if n == 1:  # X_1 = 0 so N_s/N = 1 > exp(−r²/16): the upper side fails in every row
            assert above == valid
        below_total += int(below)
    (line,) = lines_matching(out, "rows below the lower bound")
    assert nums(line) == [below_total] == [0]
    (line,) = lines_matching(out, "counterexample N = 1")
    assert nums(line)[-1] == round(math.exp(-(0.5**2) / 16), 4) == 0.9845


# --- Corollary 3 ------------------------------------------------------------------------------


def softmax_jacobian_np(alpha: np.ndarray, t: float) -> np.ndarray:
    """(diag(α) − ααᵀ)/T, ``[..., L] -> [..., L, L]``."""
    outer = alpha[..., :, None] * alpha[..., None, :]
    return (alpha[..., :, None] * np.eye(alpha.shape[-1]) - outer) / t


def top_eigenvalue(alpha: np.ndarray) -> np.ndarray:
    """λ_max of diag(α) − ααᵀ per row: bisection on 1 − Σ α_i²/(α_i − λ) in [α_(2), α_(1)]."""
    ordered = np.sort(alpha, -1)
    lo, hi = ordered[:, -2].copy(), ordered[:, -1].copy()
    for _ in range(80):
        mid = (lo + hi) / 2
        with np.errstate(divide="ignore", invalid="ignore"):
            f = 1 - (alpha**2 / (alpha - mid[:, None])).sum(-1)
        lo, hi = np.where(f > 0, mid, lo), np.where(f > 0, hi, mid)
    return (lo + hi) / 2


def test_corollary3_tables(capsys):
    corollary3.main()
    out = capsys.readouterr().out
    tied = lines_matching(out, r"^tied top two")
    temps = corollary3.TEMPERATURES
    assert len(tied) == 2 * len(temps)
    for line, (length, t) in zip(tied, itertools.product((2, 64), temps), strict=True):
        assert line.startswith(f"tied top two, L={length} ")
        pt, exact, eig, printed, half = nums(line[26:].split("printed ")[0])
        logits = np.full(length, -30.0)
        logits[:2] = 0.0
        norm = np.linalg.norm(softmax_jacobian_np(softmax(logits / t), t), 2)
        assert pt == t
        assert close_sig(exact, norm, 6) and close_sig(eig, norm, 6)
        if length == 2:
            assert close_sig(exact, 1 / (2 * t), 6)
        assert close_sig(printed, min(1 / (4 * t), math.sqrt(2)), 4)
        assert close_sig(half, 1 / (2 * t), 4)
        # every tied row breaks the printed bound and meets 1/(2T)
        assert "printed FAILS" in line and norm > min(1 / (4 * t), math.sqrt(2))
        assert line.endswith("1/(2T) holds") and norm <= (1 + 1e-12) / (2 * t)

    inputs = corollary3.inputs()
    rows, mask = inputs.rows.numpy(), inputs.mask.numpy()
    table = lines_matching(out, r"^\s*\d+(\.\d+)?(\s+\S+){4}\s+\d+\s+\d+$")
    assert len(table) == len(temps)
    quarter = []
    for line, t in zip(table, temps, strict=True):
        pt, max_norm, max_diag, q, h, above_q, above_h = nums(line)
        alpha = softmax(np.where(mask, rows, -np.inf) / t)
        norms = top_eigenvalue(alpha) / t
        dense = softmax_jacobian_np(alpha[:300], t)  # the helper against a dense eigensolver
        assert np.allclose(norms[:300], np.linalg.eigvalsh(dense)[:, -1], rtol=1e-10, atol=1e-12)
        diag = (alpha * (1 - alpha) / t).max(-1)
        assert pt == t and close_sig(max_norm, norms.max(), 5)
        assert close_sig(max_diag, diag.max(), 5) and diag.max() <= (1 + 1e-12) / (4 * t)
        assert close_sig(q, 1 / (4 * t), 4) and close_sig(h, 1 / (2 * t), 4)
        assert above_q == int((norms > (1 + 1e-9) / (4 * t)).sum()) > 0
        assert above_h == int((norms > (1 + 1e-9) / (2 * t)).sum()) == 0
        quarter.append(above_q / rows.shape[0])
    assert 0.19 < min(quarter) and max(quarter) < 0.24  # "about 19–23 % of the rows" (docs)
    (line,) = lines_matching(out, r"\s+max difference")
    diff = np.linalg.norm(inputs.sharp_a.numpy() - inputs.sharp_b.numpy(), axis=-1).max()
    assert close(nums(line)[0], diff, 6) and diff <= math.sqrt(2)


# --- Lemma 2 ----------------------------------------------------------------------------------

#: F as plain torch functions (no shift for exp); F′ and the Jacobian come from autograd
F_PLAIN = {
    "exp": torch.exp,
    "softplus": torch.nn.functional.softplus,
    "x^2 + 1": lambda v: v * v + 1,
    "x (x > 0)": lambda v: v,
}


def autograd_case(f, logits: torch.Tensor):
    """(||∂α/∂l||₂ by SVD of the autograd Jacobian, F, F′) as numpy, α = F/ΣF."""
    logits = logits.detach().to(torch.float64)
    jac = torch.autograd.functional.jacobian(lambda v: f(v) / f(v).sum(), logits, vectorize=True)
    deriv = torch.autograd.functional.jacobian(lambda v: f(v).sum(), logits)
    norm = float(torch.linalg.matrix_norm(jac, ord=2))  # torch: one thread, as conftest sets
    return norm, f(logits).numpy(), deriv.numpy()


def bounds_np(f: np.ndarray, d: np.ndarray) -> dict[str, float]:
    """Eq. 13's first term under each reading, and the sharp bound maximised on a grid of S."""
    length, m, big = f.size, f.min(), np.abs(f).max()
    d_max = np.abs(d).max()
    s = np.linspace(big + (length - 1) * m, (length - 1) * big + m, 20001)
    two_norm_sq = np.clip((big + m) * s - length * big * m, 0, None)  # max ||F||₂² given S
    sharp = d_max * np.sqrt(length) * (np.sqrt(two_norm_sq) / s**2).max()
    first = 1 / (length * m)
    return {
        "max_printed": d_max * (first + big / (length**2 * m**2)),
        "max_L": d_max * (first + big / (length * m**2)),
        "euclid_printed": np.linalg.norm(d) * (first + np.linalg.norm(f) / (length**2 * m**2)),
        "sharp": sharp,
    }


def one_big(length: int, big: float, rest: float) -> torch.Tensor:
    return torch.tensor([big] + [rest] * (length - 1), dtype=torch.float64)


def test_lemma2_both_readings(capsys, monkeypatch):
    found = {}
    search = lemma2.search
    monkeypatch.setattr(lemma2, "search", lambda: found.update(search()) or found)
    lemma2.main()
    out = capsys.readouterr().out
    readings = ["max_printed", "max_L", "euclid_printed", "sharp"]

    fixed = [line for line in out.splitlines() if line[12:13] == "("]
    cases = [
        (F_PLAIN["x (x > 0)"], one_big(100, 100.0, 1.0)),
        (F_PLAIN["softplus"], one_big(300, 100.0, 1.5)),
        (torch.exp, torch.zeros(2)),
        (lambda v: torch.exp(v / 0.1), torch.zeros(2)),  # softmax at T = 0.1
    ]
    assert len(fixed) == len(cases)
    for line, (f, logits) in zip(fixed, cases, strict=True):
        norm, fv, dv = autograd_case(f, logits)
        exact, *printed = nums(line[30:])[:5]
        assert close_sig(exact, norm, 5)
        b = bounds_np(fv, dv)
        for value, key in zip(printed[:3], readings[:3], strict=True):
            assert close_sig(value, b[key], 5)
        assert printed[3] == pytest.approx(b["sharp"], rel=1e-4)  # b: the max on a grid of S
        exceeded = line.split()[-1].split(",")[0]
        assert ([k for k in readings if norm > b[k] * (1 + 1e-12)] or ["none"])[0] == exceeded
    # the √2 cap: every reading's min{·, √2} is below ||J|| = 5 = 1/(2T)
    assert "the cap fails under every reading" in out and norm == pytest.approx(5.0)

    worst = lines_matching(out, r"^(exp|softplus|x\^2 \+ 1|x \(x > 0\))\s+(max_|euclid|sharp)")
    assert len(worst) == len(found) == 16
    for line in worst:
        fn, reading = line[:12].strip(), line[12:28].strip()
        length, ratio = nums(line[28:])[:2]
        logits = found[fn, reading].logits
        assert length == logits.numel()
        norm, fv, dv = autograd_case(F_PLAIN[fn], logits)
        assert close(ratio, norm / bounds_np(fv, dv)[reading], 6)
        assert ("FAILS" in line) == (ratio > 1)
        # the claims: only the max-norm L² reading fails, and it does for F = x and softplus
        assert (ratio > 1) == (reading == "max_printed" and fn in ("x (x > 0)", "softplus"))
    # the search finds at least the one-big family's violation at L = 256 (F = x, F_0 = L/2)
    norm, fv, dv = autograd_case(F_PLAIN["x (x > 0)"], one_big(256, 128.0, 1.0))
    assert found["x (x > 0)", "max_printed"].ratio >= norm / bounds_np(fv, dv)["max_printed"] > 2.4


def test_lemma2_valid_readings_hold_on_random_rows():
    """Independent of the script's search: random rows, four F, L from 2 to 40."""
    rng = np.random.default_rng(1)
    plain = {
        "exp": (np.exp, np.exp),
        "softplus": (lambda v: np.logaddexp(0, v), lambda v: 1 / (1 + np.exp(-v))),
        "x^2 + 1": (lambda v: v * v + 1, lambda v: 2 * v),
        "x (x > 0)": (lambda v: v, np.ones_like),
    }
    worst = dict.fromkeys(["max_printed", "max_L", "euclid_printed"], 0.0)
    for fn, (f_fn, d_fn) in plain.items():
        for _ in range(150):
            length = int(rng.integers(2, 41))
            logits = rng.normal(size=length) * 10 ** rng.uniform(-1, 1.5)
            if rng.random() < 0.5:
                logits[1:] = logits[0] * rng.uniform(0, 1) * rng.uniform(0, 0.2)
            if fn == "x (x > 0)":
                logits = np.abs(logits) + 1e-3
            f, d = f_fn(logits), d_fn(logits)
            s = f.sum()
            norm = np.linalg.norm(np.diag(d) / s - np.outer(f, d) / s**2, 2)
            b = bounds_np(f, d)
            for key in worst:
                worst[key] = max(worst[key], norm / b[key])
    assert worst["max_L"] <= 1 and worst["euclid_printed"] <= 1
    # the rows do reach the region where the max-norm L² form breaks (not a vacuous check)
    assert worst["max_printed"] > 1


# --- the §2.3 swap example ----------------------------------------------------------------------


def swap_sensitivity(t: float, eps: float, length: int, a: float, top1, top2) -> float:
    """T·||softmax(ℓ(1)/T) − softmax(ℓ(2)/T)||/ε in numpy, ℓ(k) = (0, …, 0, a + top_k·ε)."""
    l1 = np.concatenate([np.zeros(length - 2), a + np.array(top1) * eps])
    l2 = np.concatenate([np.zeros(length - 2), a + np.array(top2) * eps])
    return t * np.linalg.norm(softmax(l1 / t) - softmax(l2 / t)) / eps


def test_swap_example_constant(capsys):
    swap_example.main()
    out = capsys.readouterr().out
    limit = 3 * math.sqrt(2) / 4
    printed = lines_matching(out, r"^\s+\d+(\.\d+)?(e-\d+)?\s+\d\.\d{6}\s+\d\.\d{6}\s+\d\.\d{6}$")
    assert [nums(line)[0] for line in printed] == list(swap_example.RATIOS)
    for line in printed:
        x, c, closed, diff = nums(line)
        value = swap_sensitivity(1.0, x, 2, 0.0, (0, 1), (2, 0))
        assert close(c, value, 6) and close(diff, value * x, 6)
        sig = 1 / (1 + np.exp(-np.array([2 * x, x])))
        assert close(closed, math.sqrt(2) * (sig.sum() - 1) / x, 6)
        assert value <= limit * (1 + 1e-9)  # c never exceeds 3√2/4, let alone √2
    assert close(nums(printed[0])[1], limit, 6)  # x = 1e-6: the limit
    (line,) = lines_matching(out, "limit x -> 0")
    jacobian_at_tie = np.array([[0.25, -0.25], [-0.25, 0.25]]) @ np.array([2.0, -1.0])
    assert nums(line.split(":")[1].split(";")[0])[-1] == round(limit, 6)
    assert nums(line)[-1] == round(float(np.linalg.norm(jacobian_at_tie)), 6) == 1.06066

    grid = lines_matching(out, r"^\s+\d+(\.\d+)?(\s+\d\.\d{6}){3}\s+\d\.\d{4}$")
    assert [nums(line)[0] for line in grid] == list(swap_example.TEMPERATURES)
    for line in grid:
        t, *cs, ratio = nums(line)
        for c, eps in zip(cs, swap_example.EPSILONS, strict=True):
            assert close(c, swap_sensitivity(t, eps, 64, 10.0, (0, 1), (2, 0)), 6)
        assert close(ratio, cs[0] / math.sqrt(2), 4)
        if t <= 1:  # a/T large, ε/T small: c = 3√2/4, i.e. 3/4 of the printed √2
            assert abs(cs[0] - limit) < 3e-3 and abs(ratio - 0.75) < 3e-3

    swaps = lines_matching(out, r"^\s+(printed|plain swap|symmetric):")
    expected = (limit, math.sqrt(2) / 2, math.sqrt(2))
    assert len(swaps) == len(swap_example.SWAPS) == 3
    for line, (_, top1, top2), value in zip(swaps, swap_example.SWAPS, expected, strict=True):
        c = nums(line.split("c =")[1])[0]
        assert close(c, swap_sensitivity(1.0, 1e-6, 2, 0.0, top1, top2), 6) and close(c, value, 6)
    assert "1.0607·ε/T, not √2·ε/T" in out and "(c/√2 = 0.75)" in out
    # the pure function, vectorised over T and ε, against the same numpy computation
    t = torch.tensor([[0.05], [0.5], [5.0]], dtype=torch.float64)
    eps = torch.tensor([[1e-4, 1e-2, 1.0]], dtype=torch.float64)
    got = swap_example.sensitivity(t, eps, length=8, a=3.0, swap=1)
    for (i, j), value in np.ndenumerate(got.numpy()):
        ref = swap_sensitivity(float(t[i, 0]), float(eps[0, j]), 8, 3.0, (0, 1), (1, 0))
        assert value == pytest.approx(ref, rel=1e-8)  # Δα cancels ~5 digits at ε = 1e-4


# --- findings (iii) and (v): two self-contradictions -----------------------------------------

PAPER_A = REPO.parent / "shared" / "papers" / "paper-a-limitations-arxiv-v3.txt"


def _in_paper_a(phrase: str) -> bool:
    text = " ".join(PAPER_A.read_text(encoding="utf-8").split())
    return " ".join(phrase.split()) in text


@pytest.mark.skipif(not PAPER_A.is_file(), reason="../shared/papers is absent")
def test_findings_iii_and_v_quote_the_paper_word_for_word():
    for module in (finding_iii_sublinear, finding_v_two_orders):
        assert len(module.QUOTES) >= 2
        for q in module.QUOTES:
            assert _in_paper_a(q), (module.__name__, q)
            # the docstring quotes the same words (its backslashes escaped)
            assert " ".join(q.split()) in " ".join((module.__doc__ or "").split()), q
    assert not _in_paper_a("grows sub-linearly (≈ 0.06·L)")  # the check can fail


def test_finding_iii_fractions_and_threshold(capsys):
    f = finding_iii_sublinear
    assert f.fractions(1.0) == pytest.approx([0.06] * 6)  # a fixed fraction of L is linear
    for a in (1.0, 0.9, 0.5):
        assert f.loglog_slope(a) == pytest.approx(a)
        fr = f.fractions(a)
        assert all(x >= y for x, y in itertools.pairwise(fr))  # sub-linear: a falling fraction
    # the ends of 32 ... 1024 are 32^(±(1−a)/2) from the middle: ±20 % at a = 1 − 2 ln 1.2 / ln 32
    a_min = f.smallest_exponent()
    assert a_min == pytest.approx(1 - 2 * math.log(1.2) / math.log(32))
    ends = f.fractions(a_min)
    assert ends[0] == pytest.approx(0.06 * 1.2) and ends[-1] == pytest.approx(0.06 / 1.2)
    f.main()
    out = capsys.readouterr().out
    assert "needs a ≥ 0.895" in out and "0.50    0.50    0.143" in out


def test_finding_v_drops_slope_and_collapse(capsys):
    f = finding_v_two_orders
    d = f.drops()
    assert d["1/T, from T = 0.1"] == pytest.approx(10.0)
    assert d["1/T, from T = 0.01"] == pytest.approx(100.0)
    # min{1/(4T), √2}: √2 at T ≤ 0.177, 1/4 at T = 1
    assert d["printed min{1/(4T), sqrt 2}, from T = 0.1"] == pytest.approx(4 * math.sqrt(2))
    assert f.slope_for(100) == pytest.approx(-2.0) and f.slope_for(10) == pytest.approx(-1.0)
    spread = f.collapse_spread()
    assert set(spread) == {"tied top two", "top 1 above the next", "Gaussian (σ = 3)"}
    for values in spread.values():
        assert len(values) == 5 and all(v >= 1.0 for v in values)
        assert values[-1] == pytest.approx(1.0, abs=0.02)  # at T = 100 the ε curves meet
    assert spread["Gaussian (σ = 3)"][0] > 2  # ... but not yet at T = 1 on Gaussian logits
    across = f.drop_across_high()  # reading (c): δ(1)/δ(100), about 1/T's 100x on tied rows
    assert across["tied top two"] == pytest.approx([100.0] * 3, rel=0.05)
    assert all(len(v) == 3 and min(v) > 10 for v in across.values())
    f.main()
    out = capsys.readouterr().out
    assert "needs slope -2.0" in out and "falls    5.66x" in out
