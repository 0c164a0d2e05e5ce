"""Theorem 2 (Eqs. 10–12) and the per-row separability metric (paper A, Section 2.2)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from attnlimits.metrics import row_mean
from attnlimits.metrics.separability import (
    min_pairwise_distance,
    normalize_to_sphere,
    separability_curve,
    separability_metrics,
)
from attnlimits.theory.geometry import separability_bounds, xi

F64 = torch.float64


def _sphere_inputs(gen, q, k, d=6, c=2.0, radius=1.0, mask=None, lead=()):
    logits = c * torch.randn(*lead, q, k, generator=gen, dtype=F64)
    if mask is not None:
        logits = logits.masked_fill(~mask, -math.inf)
    x = normalize_to_sphere(torch.randn(*lead, k, d, generator=gen, dtype=F64), radius)
    return torch.softmax(logits, -1), x


def _naive_xi(alpha, m, delta):
    out = []
    for i in range(len(alpha)):
        others = [j for j in range(len(alpha)) if j != i]
        sq = m**2 * sum(float(alpha[j]) ** 2 for j in others)
        cross = sum(float(alpha[j] * alpha[k]) for j in others for k in others if j != k)
        out.append(math.sqrt(max(sq + (m**2 - delta**2 / 2) * cross, 0.0)))
    return out


def _naive_row(a, x, n, keep, m, delta):
    kept = [i for i in range(len(a)) if keep[i]]
    if len(kept) < n + 1:
        return None
    top = sorted(kept, key=lambda i: -float(a[i]))[:n]
    s = sum(a[i] * x[i] for i in top)
    r = min(float((s - a[j] * x[j]).norm()) for j in kept if j not in top)
    ratio = sum(float((s - a[i] * x[i]).norm()) <= r for i in top) / n
    xis = _naive_xi([a[i] for i in top], m, delta)
    lower = 1 - sum(xis) / (r * n)
    upper = sum(math.exp(-((r - v) ** 2) / (16 * m**2)) for v in xis) / n
    return ratio, lower, upper, r


def _naive_delta(x, keep):
    idx = [i for i in range(x.shape[0]) if keep[i]]
    return min(float((x[i] - x[j]).norm()) for i in idx for j in idx if i < j)


@pytest.mark.parametrize("kind", ["none", "causal", "random"])
@pytest.mark.parametrize("n", [1, 2, 4])
def test_metric_matches_naive_loop(gen, kind, n):
    q, k, radius = 7, 9, 1.5
    mask = None
    if kind == "causal":
        mask = torch.ones(q, k, dtype=torch.bool).tril(k - q)
    elif kind == "random":
        mask = torch.rand(q, k, generator=gen) > 0.3
        mask[:, 0] = True
    attn, x = _sphere_inputs(gen, q, k, radius=radius, mask=mask, lead=(2,))
    m = separability_metrics(attn, x, n, mask=mask)
    keep = torch.ones(q, k, dtype=torch.bool) if mask is None else mask
    key_keep = keep.any(0)
    for b in range(2):
        delta = _naive_delta(x[b], key_keep)
        for row in range(q):
            ref = _naive_row(attn[b, row], x[b], n, keep[row], radius, delta)
            if ref is None:
                assert not m.valid[b, row] and math.isnan(m.ratio[b, row])
                continue
            for g, r in zip((m.ratio, m.lower, m.upper, m.r), ref, strict=True):
                assert float(g[b, row]) == pytest.approx(r, rel=1e-9, abs=1e-12)


def test_xi_matches_naive():
    alpha = torch.tensor([[0.5, 0.3, 0.15, 0.05], [0.25, 0.25, 0.25, 0.25]], dtype=F64)
    got = xi(alpha, 2.0, 0.7)
    for row in range(2):
        assert got[row].tolist() == pytest.approx(_naive_xi(alpha[row].tolist(), 2.0, 0.7))


@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 8),
    d=st.integers(2, 8),
    radius=st.floats(0.1, 10.0),
    c=st.floats(0.0, 10.0),
)
@example(seed=1987, n=2, d=2, radius=1.0, c=10.0)  # α_2 = 4e-9: Σα² − α_1² cancelled to 0
def test_xi_bounds_x_i_and_is_nonnegative(seed, n, d, radius, c):
    """X_i = ||Σ_{j≠i} α_j x_j|| ≤ ξ_i for points on the sphere, δ their minimum distance."""
    gen = torch.Generator().manual_seed(seed)
    alpha = torch.softmax(c * torch.randn(n, generator=gen, dtype=F64), -1)
    x = normalize_to_sphere(torch.randn(n, d, generator=gen, dtype=F64), radius)
    delta = float(min_pairwise_distance(x)) if n > 1 else 0.0
    bound = xi(alpha, radius, delta)
    s = alpha @ x
    x_i = (s - alpha[:, None] * x).norm(dim=-1)
    assert (bound >= 0).all()
    assert (x_i <= bound + 1e-9 * radius).all()


@given(
    seed=st.integers(0, 2**31),
    k=st.integers(3, 24),
    n_frac=st.floats(0.0, 0.99),
    c=st.floats(0.0, 16.0),
    causal=st.booleans(),
)
def test_lower_bound_holds_for_direct_count(seed, k, n_frac, c, causal):
    gen = torch.Generator().manual_seed(seed)
    n = min(1 + int(n_frac * (k - 1)), k - 1)
    mask = torch.ones(k, k, dtype=torch.bool).tril() if causal else None
    attn, x = _sphere_inputs(gen, k, k, d=4, c=c, mask=mask)
    m = separability_metrics(attn, x, n, mask=mask)
    ok = m.valid
    assert (m.ratio[ok] >= m.lower[ok] - 1e-9).all()
    assert (m.upper[ok] <= 1).all() and (m.ratio[ok] <= 1).all()


def test_upper_bound_fails_at_n1():
    """Counterexample (erratum theorem2_bounds): X_1 = 0 so N_s/N = 1 > exp(−r²/16M²)."""
    gen = torch.Generator().manual_seed(0)
    attn, x = _sphere_inputs(gen, 10, 10)
    m = separability_metrics(attn, x, 1)
    assert (m.ratio == 1).all()
    assert (m.upper < 1).all()
    _, upper = separability_bounds(torch.ones(1, 1, dtype=F64), torch.tensor([0.5]), 1.0, 0.1)
    assert float(upper) == pytest.approx(math.exp(-0.25 / 16))


def test_normalize_to_sphere(gen):
    x = torch.randn(3, 5, 4, generator=gen, dtype=F64)
    y = normalize_to_sphere(x, 2.5)
    torch.testing.assert_close(y.norm(dim=-1), torch.full((3, 5), 2.5, dtype=F64))
    torch.testing.assert_close(y / 2.5, x / x.norm(dim=-1, keepdim=True))
    with pytest.raises(ValueError, match="zero"):
        normalize_to_sphere(torch.zeros(2, 3))
    with pytest.raises(ValueError):
        normalize_to_sphere(x, 0.0)


def test_min_pairwise_distance(gen, metric_path):
    x = torch.randn(2, 7, 3, generator=gen, dtype=F64)
    mask = torch.tensor([True, False, True, True, False, True, True])
    got = min_pairwise_distance(x, mask)
    for b in range(2):
        assert float(got[b]) == pytest.approx(_naive_delta(x[b], mask))
        assert float(min_pairwise_distance(x)[b]) == pytest.approx(_naive_delta(x[b], [True] * 7))
    one = torch.zeros(7, dtype=torch.bool)
    one[0] = True
    assert math.isnan(float(min_pairwise_distance(x[0], one)))
    dup = torch.cat([x[0], x[0, :1]])
    assert float(min_pairwise_distance(dup)) == 0.0
    # distinct=True: the repeated vector is left out, δ is that of the distinct ones
    assert float(min_pairwise_distance(dup, distinct=True)) == pytest.approx(
        _naive_delta(x[0], [True] * 7)
    )
    assert math.isnan(float(min_pairwise_distance(torch.stack([x[0, 0]] * 3), distinct=True)))


def test_invalid_rows_excluded_and_counted(gen):
    mask = torch.ones(8, 8, dtype=torch.bool).tril()
    attn, x = _sphere_inputs(gen, 8, 8, mask=mask)
    m = separability_metrics(attn, x, 2, mask=mask)
    assert m.valid.tolist() == [False] * 2 + [True] * 6
    rm = row_mean(m.ratio, m.valid)
    assert int(rm.n_excluded) == 2 and torch.isfinite(rm.mean)


def test_bad_input_raises(gen):
    attn, x = _sphere_inputs(gen, 5, 6)
    with pytest.raises(ValueError, match="sphere"):
        separability_metrics(attn, x * torch.linspace(1, 2, 6, dtype=F64)[:, None], 2)
    with pytest.raises(ValueError, match="sphere"):
        separability_metrics(attn, x, 2, radius=2.0)
    with pytest.raises(ValueError):
        separability_metrics(attn, x, 6)
    with pytest.raises(ValueError, match="NaN"):
        separability_metrics(attn.clone().fill_(math.nan), x, 2)
    with pytest.raises(ValueError):
        xi(torch.full((2, 3), 0.3), 0.0, 0.1)  # M ≤ 0
    with pytest.raises(ValueError):
        xi(torch.full((2, 3), 0.3), -1.0, 0.1)
    with pytest.raises(ValueError, match="2M"):
        xi(torch.full((2, 3), 0.3), 1.0, 2.5)
    with pytest.raises(ValueError, match="delta"):
        xi(torch.full((2, 3), 0.3), 1.0, -0.1)
    with pytest.raises(ValueError):
        separability_bounds(torch.full((2, 3), 0.3), 0.0, 1.0, 0.1)  # r ≤ 0


def test_fp16_input_gives_finite_values(gen):
    mask = torch.ones(16, 16, dtype=torch.bool).tril()
    attn, x = _sphere_inputs(gen, 16, 16, d=8, mask=mask)
    m = separability_metrics(attn.half(), x.half(), 3, mask=mask, rtol=2e-3)
    for v in m[:4]:
        assert v.dtype == torch.float32 and torch.isfinite(v[m.valid]).all()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("radius", [None, 1.0, 3.0])
def test_low_precision_x_from_normalize_to_sphere_is_on_the_sphere(gen, dtype, radius):
    """bf16 norms are off by up to ~2⁻⁷ after rounding: x that normalize_to_sphere put on the
    sphere in its own dtype passes the check at the default rtol (a tolerance from the
    dtype's eps), while x clearly off the sphere is still refused."""
    attn = torch.softmax(torch.randn(2, 12, 64, generator=gen), -1)
    x = normalize_to_sphere(torch.randn(2, 64, 48, generator=gen).to(dtype), radius or 1.0)
    for a in (attn, attn.to(dtype)):
        m = separability_metrics(a, x, 3, radius=radius)
        assert torch.isfinite(m.ratio[m.valid]).all()
    off = x * torch.linspace(1, 1.1, 64)[:, None].to(dtype)
    with pytest.raises(ValueError, match="not on"):
        separability_metrics(attn, off, 3, radius=radius)


@pytest.mark.parametrize("d", [3, 40])  # d = 40 > K: s_N is built over several gathers
@pytest.mark.parametrize("shared_x", [False, True])
@pytest.mark.parametrize("route", ["fused", "torch dense", "torch gram"])
def test_curve_matches_naive_loop_for_every_n(gen, monkeypatch, d, shared_x, route):
    """The grid agrees with the row loop at every N: through the fused kernels and both routes
    of the torch path (nested s_N by dense products or sparse Gram rows)."""
    from attnlimits.metrics import _topn

    if route == "fused":
        pytest.importorskip("numba")
    monkeypatch.setenv("ATTNLIMITS_FUSED", "1" if route == "fused" else "0")
    monkeypatch.setattr(_topn, "_GRAM_FACTOR", 0 if route == "torch gram" else 10**9)
    q, k, ns = 10, 12, (1, 2, 3, 5, 9)
    mask = torch.ones(q, k, dtype=torch.bool).tril(k - q)
    attn, _ = _sphere_inputs(gen, q, k, mask=mask, lead=(3,))
    x = normalize_to_sphere(torch.randn(1 if shared_x else 3, k, d, generator=gen, dtype=F64))
    curve = separability_curve(attn, x, ns, mask=mask)
    assert curve.ratio.shape == (3, q, len(ns))
    for b, (j, n) in ((b, jn) for b in range(3) for jn in enumerate(ns)):
        xb = x[0 if shared_x else b]
        delta = _naive_delta(xb, mask.any(0))
        for row in range(q):
            ref = _naive_row(attn[b, row], xb, n, mask[row], 1.0, delta)
            if ref is None:
                assert not curve.valid[b, row, j] and math.isnan(curve.ratio[b, row, j])
                continue
            got = (curve.ratio, curve.lower, curve.upper, curve.r)
            for g, r in zip(got, ref, strict=True):
                assert float(g[b, row, j]) == pytest.approx(r, rel=1e-9, abs=1e-12)
