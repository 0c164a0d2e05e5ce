"""Theorem 1 / Corollary 2 closed forms and the per-row distance metric (paper A, Section 2.1)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnlimits.metrics import _topn, normalize_to_sphere, row_mean, separability_curve
from attnlimits.metrics.distance import distance_curve, distance_metrics
from attnlimits.metrics.expectation import (
    expected_distance_curve_mc,
    expected_distance_exact,
    expected_distance_monte_carlo,
)
from attnlimits.theory.distance import (
    expected_distance,
    fixed_selection_bound,
    full_selection_limit,
    jensen_gap_bound,
    large_context_limit,
    prob_not_selected,
)

F64 = torch.float64


def _inputs(gen, lead, q, k, d=5, c=2.0, mask=None):
    logits = c * torch.randn(*lead, q, k, generator=gen, dtype=F64)
    if mask is not None:
        logits = logits.masked_fill(~mask, -math.inf)
    return torch.softmax(logits, -1), torch.randn(*lead, k, d, generator=gen, dtype=F64)


def _naive_row(a, x, n, keep):
    """Every quantity of one row by explicit loops over vectors (the reference)."""
    kept = [i for i in range(len(a)) if keep[i]]
    length = len(kept)
    if length < n + 1:
        return None
    top = sorted(kept, key=lambda i: -float(a[i]))[:n]
    rest = [i for i in kept if i not in top]
    s = sum(a[i] * x[i] for i in top)
    dist = sum(float((a[i] * x[i] - s).norm()) for i in rest)
    mass = float(sum(a[i] for i in top))
    d1 = max(float((x[i] - x[j]).norm()) for i in rest for j in top)
    mx = max(float(x[j].norm()) for j in top)
    bound = (1 - mass) * d1 + mx * (mass * (length - n) - (1 - mass))
    xbar = sum(a[i] * x[i] for i in kept)
    c = n / (length - 1)
    der = (
        (length - n) / length * sum(float((a[i] * (1 + c) * x[i] - c * xbar).norm()) for i in kept)
    )
    main = (length - n) / length * sum(float(((a[i] + c) * x[i] - xbar).norm()) for i in kept)
    return dist, bound, der, main, mass, length


def _naive_exact_row(a, x, n, keep):
    kept = [i for i in range(len(a)) if keep[i]]
    vals = []
    for sub in itertools.combinations(kept, n):
        s = sum(a[i] * x[i] for i in sub)
        vals.append(sum(float((a[i] * x[i] - s).norm()) for i in kept if i not in sub))
    return sum(vals) / len(vals)


MASKS = ["none", "causal", "random"]


def _mask(kind, q, k, gen):
    if kind == "none":
        return None
    if kind == "causal":
        return torch.ones(q, k, dtype=torch.bool).tril(k - q)
    m = torch.rand(q, k, generator=gen) > 0.3
    m[:, 0] = True
    return m


@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("n", [1, 2, 4])
def test_metric_matches_naive_loop(gen, kind, n):
    q, k = 7, 9
    mask = _mask(kind, q, k, gen)
    attn, x = _inputs(gen, (2,), q, k, mask=mask)
    m = distance_metrics(attn, x, n, mask=mask)
    main = distance_metrics(attn, x, n, mask=mask, form="main_text").expected
    keep = torch.ones(q, k, dtype=torch.bool) if mask is None else mask
    for b in range(2):
        for row in range(q):
            ref = _naive_row(attn[b, row], x[b], n, keep[row])
            if ref is None:
                assert not m.valid[b, row] and math.isnan(m.distance[b, row])
                continue
            got = (m.distance, m.bound, m.expected, main, m.selected_mass, m.n_keys)
            for g, r in zip(got, ref, strict=True):
                assert float(g[b, row]) == pytest.approx(r, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("d", [5, 40])  # d = 40 > K: s_N is built over several gathers
def test_curve_matches_naive_loop_for_every_n(gen, kind, d, metric_path):
    q, k, ns = 7, 9, (1, 2, 4, 7)
    mask = _mask(kind, q, k, gen)
    attn, x = _inputs(gen, (2,), q, k, d=d, mask=mask)
    gap_forms = ("main_text", "appendix")
    curve = distance_curve(
        attn, x, ns, mask=mask, forms=("derived", "main_text"), bound_ns=(2,), gap_forms=gap_forms
    )
    assert curve.distance.shape == (2, q, len(ns)) and curve.n_values == ns
    assert curve.bound[..., [0, 2, 3]].isnan().all()  # the bound only where asked
    assert curve.gap is not None and set(curve.gap) == set(gap_forms)
    for f in gap_forms:  # the Jensen-gap bound at N = 2 only, as theory computes it per row
        assert curve.gap[f][..., [0, 2, 3]].isnan().all()
        want = jensen_gap_bound(attn, x.unsqueeze(-3), 2, mask=mask, form=f)  # per row
        ok = curve.valid[..., 1]
        torch.testing.assert_close(curve.gap[f][..., 1][ok], want[ok], rtol=1e-9, atol=1e-12)
        assert curve.gap[f][..., 1][~ok].isnan().all()
    assert distance_curve(attn, x, ns, mask=mask).gap is None
    keep = torch.ones(q, k, dtype=torch.bool) if mask is None else mask
    for b, (j, n), row in itertools.product(range(2), enumerate(ns), range(q)):
        ref = _naive_row(attn[b, row], x[b], n, keep[row])
        if ref is None:
            assert not curve.valid[b, row, j] and math.isnan(curve.distance[b, row, j])
            continue
        got = (curve.distance, curve.expected["derived"], curve.expected["main_text"])
        for g, r in zip(got, (ref[0], ref[2], ref[3]), strict=True):
            assert float(g[b, row, j]) == pytest.approx(r, rel=1e-9, abs=1e-12)
        if n == 2:
            assert float(curve.bound[b, row, j]) == pytest.approx(ref[1], rel=1e-9, abs=1e-12)


def test_curve_rejects_n_not_below_keys(gen):
    attn, x = _inputs(gen, (), 4, 5)
    with pytest.raises(ValueError, match="smaller than the number of keys"):
        distance_curve(attn, x, (1, 5))
    with pytest.raises(ValueError, match="at least one"):
        distance_curve(attn, x, ())


def test_leading_dims_broadcast(gen):
    attn, x = _inputs(gen, (2, 3), 6, 8)
    shared = distance_metrics(attn, x[0, 0], 2)  # x [K, d] for every head
    full = distance_metrics(attn, x[0, 0].expand(2, 3, 8, 5), 2)
    for a, b in zip(shared, full, strict=True):
        torch.testing.assert_close(a, b)
    assert shared.distance.shape == (2, 3, 6)


def test_theory_expected_matches_metric(gen):
    attn, x = _inputs(gen, (), 5, 8)
    m = distance_metrics(attn, x, 3)
    torch.testing.assert_close(expected_distance(attn, x.expand(5, 8, 5), 3), m.expected)
    torch.testing.assert_close(jensen_gap_bound(attn, x, 3), m.gap_bound)


@pytest.mark.parametrize("kind", ["none", "causal"])
def test_exact_matches_naive_enumeration(gen, kind):
    mask = _mask(kind, 6, 6, gen)
    attn, x = _inputs(gen, (), 6, 6, mask=mask)
    exact = expected_distance_exact(attn, x, 2, mask=mask)
    keep = torch.ones(6, 6, dtype=torch.bool) if mask is None else mask
    for row in range(6):
        if int(keep[row].sum()) < 3:
            assert math.isnan(exact[row])
        else:
            assert float(exact[row]) == pytest.approx(_naive_exact_row(attn[row], x, 2, keep[row]))


def test_monte_carlo_agrees_with_exact(gen):
    attn, x = _inputs(gen, (), 4, 9)
    exact = expected_distance_exact(attn, x, 3)
    mean, se = expected_distance_monte_carlo(attn, x, 3, samples=3000, generator=gen)
    assert ((mean - exact).abs() <= 4 * se).all()
    assert (se > 0).all() and (se < 0.05 * exact).all()


@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("shared", [False, True])
def test_monte_carlo_curve_agrees_with_enumeration(gen, kind, shared, metric_path):
    """Every N of the grid from one random order per sample: within 4.5 SE of the exhaustive
    mean over C(L, N) subsets (the naive reference), per row, per head; shared x (one x for
    every head, d large) takes the Gram route."""
    q, k, ns = 6, 8, (1, 2, 4)
    mask = _mask(kind, q, k, gen)
    attn, x = _inputs(gen, (2,), q, k, d=40 if shared else 4, mask=mask)
    if shared:
        x = x[:1]
    mean, se = expected_distance_curve_mc(
        attn, x, ns, mask=mask, samples=3000, generator=torch.Generator().manual_seed(3)
    )
    assert mean.shape == se.shape == (2, q, len(ns))
    keep = torch.ones(q, k, dtype=torch.bool) if mask is None else mask
    for j, n in enumerate(ns):
        for h in range(2):
            for row in range(q):
                if int(keep[row].sum()) < n + 1:
                    assert math.isnan(float(mean[h, row, j])) and math.isnan(float(se[h, row, j]))
                    continue
                want = _naive_exact_row(attn[h, row], x[h if not shared else 0], n, keep[row])
                got, err = float(mean[h, row, j]), float(se[h, row, j])
                assert abs(got - want) <= 4.5 * err + 1e-12, (n, h, row, got, want, err)
                assert err < 0.05 * want + 1e-12


def test_monte_carlo_curve_is_seeded_and_checks_its_inputs(gen):
    attn, x = _inputs(gen, (), 5, 7)
    a = expected_distance_curve_mc(attn, x, [2, 1], generator=torch.Generator().manual_seed(0))
    b = expected_distance_curve_mc(attn, x, [1, 2], generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    with pytest.raises(ValueError, match="samples must be >= 2"):
        expected_distance_curve_mc(attn, x, [1], samples=1)
    with pytest.raises(ValueError):
        expected_distance_curve_mc(attn, x, [7])  # N < K
    with pytest.raises(ValueError, match="at least one N"):
        expected_distance_curve_mc(attn, x, [])


def test_exact_refuses_too_many_subsets(gen):
    attn, x = _inputs(gen, (), 2, 40)
    with pytest.raises(ValueError, match="max_subsets"):
        expected_distance_exact(attn, x, 20)


def test_prob_not_selected_by_counting():
    for length in range(2, 9):
        for n in range(1, length):
            subsets = list(itertools.combinations(range(length), n))
            p = sum(0 not in s for s in subsets) / len(subsets)
            assert prob_not_selected(length, n) == pytest.approx(p)
    assert prob_not_selected(10, 2, form="appendix") == 4.0  # the typo: not a probability


def test_main_text_form_misses_exact(gen):
    """Erratum theorem1_expectation: the printed summand is far from the exact E."""
    attn, x = _inputs(gen, (), 8, 10, d=16, c=1.0)
    exact = expected_distance_exact(attn, x, 3)
    main = expected_distance(attn, x, 3, form="main_text")
    assert (main > 1.5 * exact).all()


@given(
    seed=st.integers(0, 2**31),
    k=st.integers(3, 9),
    n_frac=st.floats(0.0, 0.99),
    c=st.floats(0.0, 8.0),
    d=st.integers(1, 6),
)
def test_jensen_sandwich_and_gap_bounds(seed, k, n_frac, c, d):
    """derived ≤ exact ≤ rms, and 0 ≤ ε ≤ sharp ≤ main-text ≤ appendix bound."""
    gen = torch.Generator().manual_seed(seed)
    n = 1 + int(n_frac * (k - 1))
    if n >= k:
        n = k - 1
    attn, x = _inputs(gen, (), 2, k, d=d, c=c)
    exact = expected_distance_exact(attn, x, n)
    der = expected_distance(attn, x, n)
    tol = 1e-9 * (1 + exact)
    assert (der <= exact + tol).all()
    assert (exact <= expected_distance(attn, x, n, form="rms") + tol).all()
    eps = exact - der
    sharp, main, app = (
        jensen_gap_bound(attn, x, n, form=f) for f in ("sharp", "main_text", "appendix")
    )
    assert (eps <= sharp + tol).all()
    assert (sharp <= main + tol).all()
    if n < k - 1:  # at N = L − 1 the appendix factor N(L−N−1) is 0, and so is ε
        assert (main <= app + tol).all()


@given(
    seed=st.integers(0, 2**31),
    k=st.integers(2, 12),
    n_frac=st.floats(0.0, 0.99),
    c=st.floats(0.0, 20.0),
    causal=st.booleans(),
)
def test_theorem1_bound_holds_for_top_n(seed, k, n_frac, c, causal):  # distance_metrics
    gen = torch.Generator().manual_seed(seed)
    n = min(1 + int(n_frac * (k - 1)), k - 1)
    mask = torch.ones(k, k, dtype=torch.bool).tril() if causal else None
    attn, x = _inputs(gen, (), k, k, d=3, c=c, mask=mask)
    m = distance_metrics(attn, x, n, mask=mask)
    ok = m.valid
    assert (m.distance[ok] <= m.bound[ok] + 1e-9 * (1 + m.bound[ok].abs())).all()


def test_theorem1_bound_fails_for_arbitrary_subset():
    """Counterexample (erratum theorem1_bound): I = {0} is not the top-1 set."""
    alpha = torch.tensor([0.1, 0.9], dtype=F64)
    d_true = 0.9 - 0.1  # x_0 = x_1 = 1
    bound = fixed_selection_bound(alpha[0], torch.tensor(0.0, dtype=F64), torch.tensor(1.0), 2, 1)
    assert d_true > float(bound)


def test_corollary2_limits(gen):
    attn, x = _inputs(gen, (), 3, 10)
    naive = torch.tensor(
        [sum(float((attn[r, i] * x[i]).norm()) for i in range(10)) for r in range(3)], dtype=F64
    )
    torch.testing.assert_close(large_context_limit(attn, x), naive)
    # N → L: the exhaustive E (over all C(L, N) sets) shrinks towards the limit, row by row
    limit = full_selection_limit(attn)
    assert limit.shape == (3,) and limit.dtype == attn.dtype
    e_n = torch.stack([expected_distance_exact(attn, x, n) for n in (6, 7, 8, 9)])
    assert (e_n[1:] < e_n[:-1]).all() and (e_n[-1] > limit).all()
    # at N = L − 1 the derived form is exact (I_N given i ∉ I_N is deterministic)
    torch.testing.assert_close(expected_distance(attn, x, 9), expected_distance_exact(attn, x, 9))
    # large L, isotropic tokens: the limit is approached
    big = torch.softmax(torch.randn(2, 4096, generator=gen, dtype=F64), -1)
    xb = torch.randn(4096, 64, generator=gen, dtype=F64) / 8
    rel = (
        expected_distance(big, xb, 5) - large_context_limit(big, xb)
    ).abs() / large_context_limit(big, xb)
    assert (rel < 0.05).all()


def test_invalid_rows_excluded_and_counted(gen):
    q = k = 8
    mask = torch.ones(q, k, dtype=torch.bool).tril()
    attn, x = _inputs(gen, (), q, k, mask=mask)
    m = distance_metrics(attn, x, 3, mask=mask)
    assert m.valid.tolist() == [False] * 3 + [True] * 5
    assert torch.isnan(m.distance[:3]).all() and torch.isfinite(m.distance[3:]).all()
    assert m.n_keys.tolist() == list(range(1, 9))
    rm = row_mean(m.distance, m.valid)
    assert int(rm.n_excluded) == 3 and int(rm.n_rows) == 5
    assert float(rm.mean) == pytest.approx(float(m.distance[3:].mean()))


def test_bad_input_raises(gen):
    attn, x = _inputs(gen, (), 4, 6)
    with pytest.raises(ValueError):
        distance_metrics(attn, x, 6)
    with pytest.raises(ValueError):
        distance_metrics(attn, x, 0)
    with pytest.raises(ValueError, match="disagree"):
        distance_metrics(attn, x[:5], 2)
    with pytest.raises(ValueError, match="NaN"):
        distance_metrics(attn.clone().fill_(math.nan), x, 2)
    with pytest.raises(ValueError, match="NaN"):
        expected_distance(attn, x.clone().fill_(math.nan), 2)
    with pytest.raises(ValueError, match="boolean"):
        distance_metrics(attn, x, 2, mask=torch.ones(4, 6))
    with pytest.raises(ValueError, match="form"):
        expected_distance(attn, x, 2, form="nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        expected_distance_monte_carlo(attn, x, 2, samples=0)


def test_fp16_input_gives_finite_values(gen):
    attn, x = _inputs(gen, (), 16, 16)
    mask = torch.ones(16, 16, dtype=torch.bool).tril()
    m = distance_metrics(attn.half(), x.half(), 4, mask=mask)
    ref = distance_metrics(attn, x.half().double(), 4, mask=mask)
    assert m.distance.dtype == torch.float32
    for v, r in zip(m[:5], ref[:5], strict=True):
        assert torch.isfinite(v[m.valid]).all()
        torch.testing.assert_close(v[m.valid].double(), r[m.valid], rtol=2e-2, atol=1e-2)


def test_one_head_at_full_size_is_cheap():
    """L = 1024, N = 100, d = 64: runs (memory is O(Q·K) plus O(K²) per head)."""
    gen = torch.Generator().manual_seed(0)
    attn = torch.softmax(torch.randn(1, 1, 1024, 1024, generator=gen), -1)
    x = torch.randn(1, 1, 1024, 64, generator=gen)
    mask = torch.ones(1024, 1024, dtype=torch.bool).tril()
    m = distance_metrics(attn, x, 100, mask=mask)
    assert int(m.valid.sum()) == 1024 - 100
    assert torch.isfinite(m.distance[m.valid]).all()
    assert (m.distance[m.valid] <= m.bound[m.valid] * (1 + 1e-4)).all()


def test_without_bound_skips_only_the_bound(gen):
    attn, x = _inputs(gen, (), 6, 8)
    full, light = distance_metrics(attn, x, 2), distance_metrics(attn, x, 2, with_bound=False)
    assert torch.isnan(light.bound).all()
    torch.testing.assert_close(light.distance, full.distance)
    torch.testing.assert_close(light.expected, full.expected)


@pytest.mark.parametrize("shared_x", [False, True])
@pytest.mark.parametrize("kind", ["none", "causal", "random"])
def test_d1_running_max_path_matches_full_loop(gen, monkeypatch, shared_x, kind, torch_path):
    """d_1 from the running maximum (prefix rows) equals the loop over all selected keys."""
    from attnlimits.metrics import _d1
    from attnlimits.metrics import distance as dm

    q = k = 40
    mask = _mask(kind, q, k, gen)
    attn, _ = _inputs(gen, (3,), q, k, mask=mask)
    x = torch.randn(1 if shared_x else 3, k, 4, generator=gen, dtype=F64)
    looped: list[int] = []
    loop = _d1.d1_loop

    def counting_loop(dist, table, idx, blocked):
        looped.append(idx.shape[0])
        return loop(dist, table, idx, blocked)

    monkeypatch.setattr(_d1, "d1_loop", counting_loop)
    for n in (1, 3, 10):
        r = dm.prepare_rows(attn, x, n, mask)
        pair = _d1.pairwise(r.x)
        idx, sel = dm.top_n(r.attn, r.keep, n)
        got = _d1.d1(r, idx, sel, pair)
        table = torch.arange(x.shape[0]).repeat_interleave(q).repeat(3 // x.shape[0])
        blocked = ~(r.keep & ~sel).expand(3, q, k).reshape(-1, k)
        ref = loop(pair.dist, table, idx.reshape(-1, n), blocked).view(3, q)
        ok = r.valid
        torch.testing.assert_close(got[ok], ref[ok], rtol=0, atol=0)
    rows = sum(looped)
    if kind == "random":  # not prefix-shaped: every scorable row loops
        assert rows > 0
    else:  # both paths taken: most rows from the running maximum, a few by the loop
        assert 0 < rows < 3 * q * 3 // 2


@pytest.mark.parametrize("gram_route", [False, True])
def test_curve_with_x_shared_by_heads_matches_naive_loop(gen, monkeypatch, gram_route, torch_path):
    """One x for every head (hidden states): dense and sparse-Gram routes both match the loop."""

    monkeypatch.setattr(_topn, "_GRAM_FACTOR", 0 if gram_route else 10**9)
    calls: list[int] = []
    sparse = _topn._gram_products
    monkeypatch.setattr(_topn, "_gram_products", lambda *a: calls.append(1) or sparse(*a))
    q, k, ns = 10, 12, (1, 3, 4, 9)
    mask = _mask("causal", q, k, gen)
    attn, _ = _inputs(gen, (3,), q, k, mask=mask)
    x = torch.randn(1, k, 6, generator=gen, dtype=F64)
    curve = distance_curve(attn, x, ns, mask=mask, forms=("derived", "main_text"), bound_ns=(3,))
    assert bool(calls) == gram_route
    for b, (j, n), row in itertools.product(range(3), enumerate(ns), range(q)):
        ref = _naive_row(attn[b, row], x[0], n, mask[row])
        if ref is None:
            assert not curve.valid[b, row, j]
            continue
        got = (curve.distance, curve.expected["derived"], curve.expected["main_text"])
        for g, r in zip(got, (ref[0], ref[2], ref[3]), strict=True):
            assert float(g[b, row, j]) == pytest.approx(r, rel=1e-9, abs=1e-12)
        if n == 3:
            assert float(curve.bound[b, row, j]) == pytest.approx(ref[1], rel=1e-9, abs=1e-12)


def test_query_blocks_give_the_unblocked_curves(gen, monkeypatch, torch_path):
    """Rows split into query blocks (as at L = 1024) join back on the row axis, grid last."""
    q, k, ns = 9, 10, (1, 3, 5)
    mask = torch.ones(q, k, dtype=torch.bool).tril(k - q)
    attn, x = _inputs(gen, (2,), q, k, mask=mask)
    xs = normalize_to_sphere(x)
    whole_d = distance_curve(attn, x, ns, mask=mask, forms=("derived",), bound_ns=(3,))
    whole_s = separability_curve(attn, xs, ns, mask=mask)
    monkeypatch.setattr(_topn, "_QUERY_BLOCK", 2 * k)  # two rows per block
    blocked_d = distance_curve(attn, x, ns, mask=mask, forms=("derived",), bound_ns=(3,))
    blocked_s = separability_curve(attn, xs, ns, mask=mask)
    assert blocked_d.distance.shape == (2, q, len(ns))
    for got, want in [
        (blocked_d.distance, whole_d.distance),
        (blocked_d.expected["derived"], whole_d.expected["derived"]),
        (blocked_d.bound, whole_d.bound),
        (blocked_s.ratio, whole_s.ratio),
        (blocked_s.upper, whole_s.upper),
    ]:
        torch.testing.assert_close(got, want, equal_nan=True)


@pytest.mark.parametrize(
    ("dtype", "big"), [(torch.float16, 6.5e4), (torch.float32, 3.0e38), (torch.float64, 1.7e308)]
)
def test_row_mean_of_values_near_the_dtype_limit_is_finite(dtype: torch.dtype, big: float) -> None:
    """The sum of three values near the dtype's largest overflows; their mean does not (found
    by the API fuzz in half precision)."""
    values = torch.tensor([[big, big, big / 2]], dtype=dtype)
    got = row_mean(values, torch.ones(1, 3, dtype=torch.bool)).mean
    want = torch.tensor([big * (2.5 / 3)], dtype=torch.float64)  # (big + big + big/2) / 3
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got.double(), want, rtol=1e-3, atol=0)
