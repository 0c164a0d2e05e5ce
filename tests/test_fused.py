"""The fused CPU kernels (attnlimits/metrics/_fused.py) against the torch path they replace.

The torch path is itself checked against naive row loops (test_distance, test_separability,
test_jacobian, which run both paths through the ``metric_path`` fixture); here the two paths
are compared over random shapes, masks (all-masked rows included), dtypes, x layouts (one x
per head, one shared by every head, query heads sharing KV heads), tied weights and N grids.
"""

from __future__ import annotations

import math
import os

import pytest
import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st

pytest.importorskip("numba")

from attnlimits import theory
from attnlimits.metrics import (
    _fused,
    distance_curve,
    expected_distance_curve_mc,
    finite_difference_sensitivity,
    min_pairwise_distances,
    normalize_to_sphere,
    separability_curve,
)
from separability_reference import count_range

MASKS = ["none", "causal", "random", "empty_rows"]
LAYOUTS = ["per_head", "shared", "gqa"]


def _case(seed: int, heads: int, q: int, k: int, d: int, mask: str, layout: str, dtype, ties):
    g = torch.Generator().manual_seed(seed)
    logits = 2 * torch.randn(heads, q, k, generator=g, dtype=torch.float64)
    if ties:  # quantised logits: many equal weights in a row
        logits = logits.round()
    keep = None
    if mask != "none":
        keep = torch.ones(q, k, dtype=torch.bool).tril(k - q)
        if mask in ("random", "empty_rows"):
            keep = torch.rand(q, k, generator=g) > 0.3
        if mask == "empty_rows":
            keep[0] = False
        logits = logits.masked_fill(~keep, -math.inf)
    attn = torch.softmax(logits, -1).nan_to_num(0.0).to(dtype)
    if layout == "shared":
        x = torch.randn(1, k, d, generator=g, dtype=dtype)
    elif layout == "gqa":  # query heads 0, 1 read one KV head, 2 another: equal tables
        base = torch.randn(2, k, d, generator=g, dtype=dtype)
        x = base[torch.tensor([0, 0, 1, 1][:heads])]
    else:
        x = torch.randn(heads, k, d, generator=g, dtype=dtype)
    if d > 1:  # one key of large norm (hidden states' attention sinks): d_1's pruning
        x[..., 0, :] *= 10
    return attn, x, keep


def _both(fn):
    """``fn()`` through the fused kernels and through the torch path (hypothesis tests cannot
    take pytest's function-scoped ``monkeypatch``, so the switch is set and restored here)."""
    before = os.environ.get("ATTNLIMITS_FUSED")
    try:
        os.environ["ATTNLIMITS_FUSED"] = "1"
        fused = fn()
        os.environ["ATTNLIMITS_FUSED"] = "0"
        ref = fn()
    finally:
        if before is None:
            os.environ.pop("ATTNLIMITS_FUSED", None)
        else:
            os.environ["ATTNLIMITS_FUSED"] = before
    return fused, ref


def _close(got, want, dtype, scale=1.0, rtol32=2e-5):
    """Relative agreement, and an absolute one of √ε·``scale``: both paths compute ||α_i x_i − s||
    from ||α_i x_i||² − 2α_i⟨x_i, s⟩ + ||s||², whose rounding (ε||s||²) becomes √ε·||s|| under
    the square root where the difference cancels (a key equal to s)."""
    rtol, eps = (1e-9, 1e-16) if dtype == torch.float64 else (rtol32, 1.2e-7)
    atol = 4 * math.sqrt(eps) * scale
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)


cases = dict(
    seed=st.integers(0, 2**31 - 1),
    heads=st.integers(1, 4),
    q=st.integers(1, 9),
    k=st.integers(2, 12),
    d=st.integers(1, 6),
    mask=st.sampled_from(MASKS),
    layout=st.sampled_from(LAYOUTS),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    ties=st.booleans(),
)


@given(
    **cases,
    n_picks=st.sets(st.integers(1, 11), min_size=1),
    bound_picks=st.sets(st.integers(0, 10)),
)
# found by a random run once in about fifteen: ||μ_11|| = 8e-5 (d = 1, tied weights) rounds to
# 0 in float32 in the fused path only, and at N = 9 = L − 1 Eq. 25's factor N(L−N−1) = 0 times
# its 1/||μ_11|| = inf gave NaN there and 0 in the torch path
@example(
    seed=5993, heads=2, q=6, k=12, d=1, mask="random", layout="per_head",
    dtype=torch.float32, ties=True, n_picks={1, 9}, bound_picks={0, 1},
)  # fmt: skip
# found by a long run: ||μ_0|| = 8e-7 beside terms of 0.1, so float64 knows 1/||μ_0|| to 5e-6
# only, in either path; the gaps of that row are not compared
@example(
    seed=241136, heads=1, q=6, k=6, d=1, mask="none", layout="per_head",
    dtype=torch.float64, ties=True, n_picks={1}, bound_picks={0},
)  # fmt: skip
def test_distance_curve_agrees_with_torch_path(
    seed, heads, q, k, d, mask, layout, dtype, ties, n_picks, bound_picks
):
    attn, x, keep = _case(seed, heads, q, k, d, mask, layout, dtype, ties)
    # N in 1..K−1 (picks past K − 1 land on N = K − 1, where Eq. 25's factor is 0); the gap
    # bounds at a subset of them, picked by index
    ns = sorted({min(n, k - 1) for n in n_picks})
    bound_ns = sorted({ns[i % len(ns)] for i in bound_picks})
    kw = dict(
        mask=keep,
        forms=("derived", "main_text"),
        bound_ns=bound_ns,
        gap_forms=("main_text", "appendix", "sharp"),
    )
    fused, ref = _both(lambda: distance_curve(attn, x, ns, **kw))
    assert fused.n_values == ref.n_values and torch.equal(fused.valid, ref.valid)
    # ties: both paths break them by key index (the torch path by a stable argsort)
    scale = k * float(x.norm(dim=-1).max())  # d̃ sums up to K norms of at most max ||x_i||
    _close(fused.distance, ref.distance, dtype, scale)
    _close(fused.bound, ref.bound, dtype, scale)
    for f in ref.expected:
        _close(fused.expected[f], ref.expected[f], dtype, scale)
    assert (fused.gap is None) == (ref.gap is None)
    resolved = _mu_resolved(attn, x, keep, ns) if dtype == torch.float64 else None
    for f in ref.gap or {}:
        # sums of 1/||μ_i||, with ||μ_i|| itself the root of a cancelling difference: in float32
        # a small ||μ_i|| is known to a few per cent only, in either path; compared in float64
        # where float64 resolves every ||μ_i|| of the row
        assert fused.gap is not None
        assert torch.equal(fused.gap[f].isnan(), ref.gap[f].isnan())
        if resolved is not None:
            torch.testing.assert_close(
                fused.gap[f][resolved], ref.gap[f][resolved], rtol=1e-6, atol=1e-9, equal_nan=True
            )


def _mu_resolved(attn, x, keep, ns):
    """[..., Q, n_N]: rows where every kept key's ||μ_i||² (μ_i = α_i(1+c)x_i − c x̄,
    c = N/(L−1), Theorem 1.2) is at least 1e-8 of the terms both paths compute it from,
    (1+c)²α_i²||x_i||² − 2c(1+c)α_i⟨x_i, x̄⟩ + c²||x̄||². There float64 knows each 1/||μ_i||
    to about 1e-8; below, its last digits are rounding in either path (d = 1 with tied
    weights puts a μ_i at 1e-6 of its terms once in a few thousand cases)."""
    a, xs = attn.double(), x.double()
    kept = torch.ones_like(a, dtype=torch.bool) if keep is None else keep.expand_as(a)
    length = kept.sum(-1, keepdim=True).double()  # (..., Q, 1)
    xbar = a @ xs  # (..., Q, d)
    y = a.unsqueeze(-1) * xs.unsqueeze(-3)  # α_i x_i: (..., Q, K, d)
    cols = []
    for n in ns:
        c = n / (length - 1).clamp_min(1)  # (..., Q, 1)
        mu_sq = ((1 + c[..., None]) * y - c[..., None] * xbar.unsqueeze(-2)).square().sum(-1)
        terms = (1 + c) ** 2 * y.square().sum(-1) + c * c * xbar.square().sum(-1, keepdim=True)
        terms = terms + 2 * c * (1 + c) * (y * xbar.unsqueeze(-2)).sum(-1).abs()
        cols.append(((mu_sq >= 1e-8 * terms) | ~kept).all(-1))
    return torch.stack(cols, -1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_jensen_gap_where_mu_is_zero_in_both_paths(dtype):
    """Known answers where ||μ_i|| = 0 exactly in floating point. Row 0: two keys, α = (½, ½),
    x = (1, 1), N = 1 = L − 1: μ_i = α_i x_i − α_j x_j = 0, and given i ∉ I_N the selection
    is the other key, so s is fixed, the gap is 0 and Eq. 25's factor N(L−N−1) is 0; the main
    text's N/(L−1)·Σ_{j≠i}α_j²||x_j||² / (2||μ_i||) is +inf. Row 1: x = 0, so every term has
    no spread and every form is 0. Both paths gave NaN (0·inf, 0/0) before."""
    attn = torch.tensor([[[0.5, 0.5], [0.5, 0.5]]], dtype=dtype)  # [head, query, key]
    x = torch.tensor([[[1.0], [1.0]]], dtype=dtype).expand(1, 2, 1).contiguous()
    want = {"main_text": [math.inf, 0.0], "appendix": [0.0, 0.0], "sharp": [0.0, 0.0]}
    kw = dict(bound_ns=[1], gap_forms=tuple(want))
    for row, xs in enumerate((x, torch.zeros_like(x))):
        fused, ref = _both(lambda xs=xs: distance_curve(attn, xs, [1], **kw))
        for f, values in want.items():
            for got in (fused, ref):
                assert got.gap is not None
                assert got.gap[f][0, :, 0].tolist() == [values[row]] * 2, (f, row)
            assert theory.jensen_gap_bound(attn, xs, 1, form=f)[0].tolist() == [values[row]] * 2


@given(**cases, data=st.data())
def test_separability_curve_agrees_with_torch_path(
    seed, heads, q, k, d, mask, layout, dtype, ties, data
):
    """Duplicated keys included (d = 1: x = ±1; for d ≥ 2 key 1 copies key 0 where drawn):
    with tied weights they put a non-selected α_j x_j exactly on s (r = 0) or tie an inside
    distance with r. No valid row is NaN; N_s agrees exactly wherever the naive count leaves
    no rounding choice, and lies in the naive range where it does."""
    attn, x, keep = _case(seed, heads, q, k, d, mask, layout, dtype, ties)
    assume(keep is None or bool(keep.any()))  # Assumption 1 needs a kept key to check
    x = normalize_to_sphere(x + 0.01)  # no zero vector
    if d >= 2 and data.draw(st.booleans(), label="duplicate key"):
        x[..., 1, :] = x[..., 0, :]  # a repeated token: bit-identical vectors
    ns = sorted(data.draw(st.sets(st.integers(1, k - 1), min_size=1)))
    fused, ref = _both(lambda: separability_curve(attn, x, ns, mask=keep))
    assert torch.equal(fused.valid, ref.valid)
    for got in (fused, ref):
        for name in ("ratio", "lower", "upper", "r"):
            assert not bool((getattr(got, name).isnan() & got.valid).any()), name
    lo, hi = count_range(attn, x, keep, ns)
    n = torch.tensor(ns, dtype=torch.float64)
    for got in (fused, ref):
        count = (got.ratio.double() * n).round()  # N_s: the ratio is N_s/N in attn's dtype
        assert bool(((count >= lo) & (count <= hi))[got.valid].all())
    sure = (lo == hi) & fused.valid
    torch.testing.assert_close(fused.ratio[sure], ref.ratio[sure], rtol=0, atol=0)
    for name in ("upper", "r"):
        _close(getattr(fused, name), getattr(ref, name), dtype)
    # lower = 1 − Σξ/(rN) amplifies r's rounding (√ε·||s|| where α_j x_j ≈ s) by Σξ/(r²N):
    # compared where r is resolved; r = 0 gives the limit (1, or −inf where Σξ > 0) in both
    resolved = (fused.r.double() > 1e-3) & (ref.r.double() > 1e-3)
    _close(fused.lower[resolved], ref.lower[resolved], dtype)
    zero = (fused.r == 0) & (ref.r == 0)
    assert torch.equal(fused.lower[zero], ref.lower[zero])


@given(**cases, data=st.data())
def test_monte_carlo_curve_agrees_with_torch_path(
    seed, heads, q, k, d, mask, layout, dtype, ties, data
):
    """One seeded draw of uniforms serves both paths: the same random subsets, the same d̃."""
    attn, x, keep = _case(seed, heads, q, k, d, mask, layout, dtype, ties)
    ns = sorted(data.draw(st.sets(st.integers(1, k - 1), min_size=1)))

    def run():
        gen = torch.Generator().manual_seed(seed)
        return expected_distance_curve_mc(attn, x, ns, mask=keep, samples=4, generator=gen)

    (mean, se), (mean_ref, se_ref) = _both(run)
    _close(mean, mean_ref, dtype)
    _close(se, se_ref, dtype, rtol32=1e-3)


@given(
    seed=st.integers(0, 2**31 - 1),
    rows=st.integers(1, 6),
    k=st.integers(1, 12),
    mask=st.sampled_from(MASKS),
    scale=st.floats(0.0, 4.0),
)
def test_finite_differences_agree_with_torch_path(seed, rows, k, mask, scale):
    g = torch.Generator().manual_seed(seed)
    scores = scale * torch.randn(2, rows, k, generator=g, dtype=torch.float64)
    keep = None
    if mask != "none":
        keep = torch.rand(rows, k, generator=g) > 0.3
        if mask == "empty_rows":
            keep[0] = False
    temps, eps = [0.1, 1.0, 10.0], [1e-3, 0.1, 10.0]

    def run():
        gen = torch.Generator().manual_seed(seed)
        return finite_difference_sensitivity(scores, temps, eps, mask=keep, generator=gen)

    fused, ref = _both(run)
    assert torch.equal(fused.valid, ref.valid)
    # differences of two softmaxes over ε = 1e-3: rounding of 1e-16 becomes 1e-13
    torch.testing.assert_close(fused.values, ref.values, rtol=1e-7, atol=1e-11, equal_nan=True)


@given(seed=st.integers(0, 2**31 - 1), k=st.integers(1, 12), d=st.integers(1, 5))
def test_pairwise_minimum_agrees_and_tells_duplicates(seed, k, d):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(3, k, d, generator=g)
    if k > 2:
        x[1, 2] = x[1, 0]  # an exact duplicate: δ = 0 over all pairs, not over distinct ones
        x[2, 1] = x[2, 0] + 1e-6  # a near one: kept
    keep = torch.rand(3, k, generator=g) > 0.2
    for m in (None, keep):
        fused, ref = _both(lambda m=m: min_pairwise_distances(x, m))
        for got, want in zip(fused, ref, strict=True):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7, equal_nan=True)


@given(
    seed=st.integers(0, 2**31 - 1),
    q=st.integers(1, 6),
    k=st.integers(1, 20),
    m=st.integers(1, 20),
    ties=st.booleans(),
)
def test_top_order_is_the_stable_descending_argsort(seed, q, k, m, ties):
    g = torch.Generator().manual_seed(seed)
    a = torch.rand(q, k, generator=g)
    if ties:
        a = (a * 3).round() / 3
    keep = torch.rand(q, k, generator=g) > 0.3
    a = torch.where(keep, a, 0.0)
    m = min(m, k)
    rows = _fused.flat_rows(a, keep, torch.zeros(1, k, 1))
    got = torch.from_numpy(_fused.top_order(rows, m))
    want = a.masked_fill(~keep, -1.0).argsort(dim=-1, descending=True, stable=True)[:, :m]
    for r in range(q):
        kept = int(keep[r].sum())  # slots past the kept keys are unspecified
        assert torch.equal(got[r, : min(m, kept)], want[r, : min(m, kept)])


@given(
    seed=st.integers(0, 2**31 - 1),
    k=st.integers(1, 300),
    m=st.integers(1, 40),
    law=st.sampled_from(["uniform", "skewed", "ties"]),
)
def test_top_order_of_uniforms_is_the_stable_descending_argsort(seed, k, m, law):
    """E exact's random orders (``uniform=True``: only keys above a threshold enter the heap)
    are the stable descending argsort of the draws; values that are not uniform (skewed: too
    few above the threshold; ties) fall back to every key and still give that order."""
    g = torch.Generator().manual_seed(seed)
    u = torch.rand(3, k, generator=g)
    if law == "skewed":
        u = u**16  # mostly near 0: fewer than m above 1 − (m + 4√m + 8)/n
    elif law == "ties":
        u = (u * 4).floor() / 4 + 0.5
    keep = torch.rand(3, k, generator=g) > 0.2
    m = min(m, k)
    rows = _fused.flat_rows(torch.where(keep, 1.0, 0.0), keep, torch.zeros(1, k, 1))
    got = torch.from_numpy(_fused.top_order(rows, m, u.numpy(), uniform=True))
    want = u.masked_fill(~keep, -1.0).argsort(dim=-1, descending=True, stable=True)[:, :m]
    for r in range(3):
        kept = int(keep[r].sum())  # slots past the kept keys are unspecified
        assert torch.equal(got[r, : min(m, kept)], want[r, : min(m, kept)])


def test_results_do_not_depend_on_the_thread_count(monkeypatch):
    attn, x, keep = _case(5, 3, 64, 64, 8, "causal", "gqa", torch.float32, False)
    ns = [1, 2, 5, 10, 20]
    kw = dict(mask=keep, forms=("derived", "main_text"), bound_ns=[5, 20], gap_forms=("main_text",))
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = distance_curve(attn, x, ns, **kw)
        torch.set_num_threads(2)
        two = distance_curve(attn, x, ns, **kw)
    finally:
        torch.set_num_threads(before)
    for a, b in [(one.distance, two.distance), (one.bound, two.bound)]:
        assert torch.equal(a.nan_to_num(-1), b.nan_to_num(-1))


def test_the_flattened_map_is_reused_only_for_the_same_unmodified_tensors(monkeypatch):
    """A layer scores one map against several x; a map changed in place is flattened anew."""
    attn, x, keep = _case(2, 2, 16, 16, 4, "causal", "per_head", torch.float32, False)
    first = distance_curve(attn, x, [1, 3], mask=keep)
    attn.mul_(0.5).add_(0.5 / 16)  # still rows summing to one, another map
    attn.masked_fill_(~keep, 0.0)
    again = distance_curve(attn, x, [1, 3], mask=keep)
    monkeypatch.setenv("ATTNLIMITS_FUSED", "0")
    want = distance_curve(attn, x, [1, 3], mask=keep)
    assert not torch.allclose(first.distance.nan_to_num(), again.distance.nan_to_num())
    _close(again.distance, want.distance, torch.float32)


def test_a_map_keeps_its_top_order_while_other_maps_are_scored(monkeypatch):
    """A limitations layer scores its map, then slices of it (the extended Alg. 3 grid), then
    the map again against another x: the map's order is sorted once, not once per call, and the
    numbers equal the torch path's. A map that is garbage-collected leaves the memo; past
    ``_MEMO_SIZE`` live maps the oldest is flattened and sorted anew."""
    import gc

    from attnlimits.metrics._fused import rows as fused_rows

    attn, x, keep = _case(3, 2, 32, 32, 4, "causal", "per_head", torch.float32, False)
    x2 = torch.randn_like(x)
    calls = []
    kernel = fused_rows._top_kernel
    monkeypatch.setattr(
        fused_rows, "_top_kernel", lambda *a: (calls.append(a[-1].shape), kernel(*a))[1]
    )

    def score_slices(n: int, hold: bool) -> list[tuple[torch.Tensor, torch.Tensor]]:
        slices = []
        for start in range(0, 4 * n, 4):
            part = attn[..., start : start + 4, :].clone()
            part_keep = keep[..., start : start + 4, :].clone()
            distance_curve(part, x, [1, 2], mask=part_keep)
            slices += [(part, part_keep)] if hold else []
        return slices

    fused_rows._MEMO.clear()
    first = distance_curve(attn, x, [1, 3, 8], mask=keep)
    score_slices(6, hold=False)  # each slice dies after its call: only the map stays in the memo
    gc.collect()
    assert len(fused_rows._MEMO) == 1
    again = distance_curve(attn, x2, [1, 3, 8], mask=keep)
    assert len(calls) == 1 + 6  # the map's order was reused
    alive = score_slices(fused_rows._MEMO_SIZE, hold=True)  # as many live maps as the memo keeps
    assert len(fused_rows._MEMO) == fused_rows._MEMO_SIZE and alive
    evicted = distance_curve(attn, x2, [1, 3, 8], mask=keep)
    assert len(calls) == 1 + 6 + fused_rows._MEMO_SIZE + 1  # the oldest, the map, went
    monkeypatch.setenv("ATTNLIMITS_FUSED", "0")
    for got, xs in [(first, x), (again, x2)]:
        want = distance_curve(attn, xs, [1, 3, 8], mask=keep)
        _close(got.distance, want.distance, torch.float32)
    assert torch.equal(again.distance.nan_to_num(-1), evicted.distance.nan_to_num(-1))


def test_switched_off_and_on_gpu_tensors_take_the_torch_path(monkeypatch):
    x = torch.zeros(2, 3)
    assert _fused.enabled(x)
    assert not _fused.enabled(x.half())
    assert not _fused.enabled(x.requires_grad_())
    monkeypatch.setenv("ATTNLIMITS_FUSED", "0")
    assert not _fused.enabled(torch.zeros(2))
