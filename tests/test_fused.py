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
from hypothesis import assume, given
from hypothesis import strategies as st

pytest.importorskip("numba")

from attnlimits.metrics import (
    _fused,
    distance_curve,
    expected_distance_curve_mc,
    finite_difference_sensitivity,
    min_pairwise_distances,
    normalize_to_sphere,
    separability_curve,
)

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


@given(**cases, data=st.data())
def test_distance_curve_agrees_with_torch_path(
    seed, heads, q, k, d, mask, layout, dtype, ties, data
):
    attn, x, keep = _case(seed, heads, q, k, d, mask, layout, dtype, ties)
    ns = sorted(data.draw(st.sets(st.integers(1, k - 1), min_size=1)))
    bound_ns = data.draw(st.sets(st.sampled_from(ns)))
    kw = dict(
        mask=keep,
        forms=("derived", "main_text"),
        bound_ns=sorted(bound_ns),
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
    for f in ref.gap or {}:
        # sums of 1/||μ_i||, with ||μ_i|| itself the root of a cancelling difference: in float32
        # a small ||μ_i|| is known to a few per cent only, in either path; compared in float64
        assert fused.gap is not None
        assert torch.equal(fused.gap[f].isnan(), ref.gap[f].isnan())
        if dtype == torch.float64:
            torch.testing.assert_close(
                fused.gap[f], ref.gap[f], rtol=1e-6, atol=1e-9, equal_nan=True
            )


@given(**cases, data=st.data())
def test_separability_curve_agrees_with_torch_path(
    seed, heads, q, k, d, mask, layout, dtype, ties, data
):
    attn, x, keep = _case(seed, heads, q, k, d, mask, layout, dtype, ties)
    assume(keep is None or bool(keep.any()))  # Assumption 1 needs a kept key to check
    # d ≥ 2: distinct keys. With duplicates (d = 1: x = ±1) ||s − α_i x_i|| ties the radius r
    # in exact arithmetic and rounding decides N_s, in either path (docs/benchmarks.md)
    assume(d >= 2)
    x = normalize_to_sphere(x + 0.01)  # no zero vector
    ns = sorted(data.draw(st.sets(st.integers(1, k - 1), min_size=1)))
    fused, ref = _both(lambda: separability_curve(attn, x, ns, mask=keep))
    assert torch.equal(fused.valid, ref.valid)
    torch.testing.assert_close(fused.ratio, ref.ratio, rtol=0, atol=0, equal_nan=True)
    for name in ("lower", "upper", "r"):
        _close(getattr(fused, name), getattr(ref, name), dtype)


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


def test_switched_off_and_on_gpu_tensors_take_the_torch_path(monkeypatch):
    x = torch.zeros(2, 3)
    assert _fused.enabled(x)
    assert not _fused.enabled(x.half())
    assert not _fused.enabled(x.requires_grad_())
    monkeypatch.setenv("ATTNLIMITS_FUSED", "0")
    assert not _fused.enabled(torch.zeros(2))
