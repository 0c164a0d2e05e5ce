"""metrics.entropy: per-row entropy, max weight, spread, support; vs naive per-row loops."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnlimits.metrics.entropy import (
    attention_entropy,
    effective_support,
    entropy_from_scores,
    logit_spread,
    max_weight,
    support_size,
)

seeds = st.integers(0, 2**31 - 1)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor, t: float = 1.0) -> torch.Tensor:
    return torch.softmax(scores.masked_fill(~mask, -math.inf) / t, -1).nan_to_num(0.0)


def naive(scores, weights, mask):
    """Per-row loop over every leading index: (H, max, spread, support, count)."""
    out = {
        k: torch.full(scores.shape[:-1], math.nan, dtype=torch.float64)
        for k in ("h", "max", "spread", "count")
    }
    for idx in itertools.product(*(range(n) for n in scores.shape[:-1])):
        keep = mask[idx]
        w = weights[idx][keep].double()
        out["count"][idx] = float((w > 0).sum())
        if keep.any():
            s = scores[idx][keep].double()
            out["spread"][idx] = float(s.max() - s.min())
        if (w > 0).any():
            out["h"][idx] = -sum(float(x) * math.log(float(x)) for x in w if x > 0)
            out["max"][idx] = float(w.max())
    return out


def check_against_naive(scores, mask):
    weights = masked_softmax(scores, mask)
    ref = naive(scores, weights, mask)
    opts = dict(rtol=1e-9, atol=1e-12, equal_nan=True)
    torch.testing.assert_close(attention_entropy(weights, mask=mask), ref["h"], **opts)
    torch.testing.assert_close(effective_support(weights, mask=mask), ref["h"].exp(), **opts)
    torch.testing.assert_close(max_weight(weights, mask=mask), ref["max"], **opts)
    torch.testing.assert_close(logit_spread(scores, mask=mask), ref["spread"], **opts)
    torch.testing.assert_close(support_size(weights, mask=mask).double(), ref["count"])
    torch.testing.assert_close(entropy_from_scores(scores, mask=mask), ref["h"], **opts)


def test_against_naive_causal_mask():
    g = torch.Generator().manual_seed(0)
    scores = 3 * torch.randn(2, 3, 7, 7, generator=g, dtype=torch.float64)
    causal = torch.ones(7, 7, dtype=torch.bool).tril().expand(2, 3, 7, 7).clone()
    causal[1, 2, 4] = False  # an empty row gives NaN (count 0)
    check_against_naive(scores, causal)
    assert math.isnan(
        float(attention_entropy(masked_softmax(scores, causal), mask=causal)[1, 2, 4])
    )
    h = attention_entropy(masked_softmax(scores, causal), mask=causal)
    assert bool((h[..., 0] == 0).all())  # one kept key: H = 0


@given(
    rows=st.integers(1, 5),
    length=st.integers(1, 16),
    scale=st.floats(0.0, 50.0),
    p_keep=st.floats(0.2, 1.0),
    seed=seeds,
)
def test_against_naive_random_masks(rows, length, scale, p_keep, seed):
    g = torch.Generator().manual_seed(seed)
    scores = scale * torch.randn(rows, length, generator=g, dtype=torch.float64)
    mask = torch.rand(rows, length, generator=g) < p_keep
    check_against_naive(scores, mask)


@given(length=st.integers(1, 64), scale=st.floats(0.0, 20.0), seed=seeds)
def test_entropy_range_and_support(length, scale, seed):
    g = torch.Generator().manual_seed(seed)
    w = torch.softmax(scale * torch.randn(length, generator=g, dtype=torch.float64), -1)
    h = float(attention_entropy(w))
    assert -1e-12 <= h <= math.log(length) + 1e-12
    assert 1 - 1e-9 <= float(effective_support(w)) <= length * (1 + 1e-9)
    assert float(max_weight(w)) >= 1 / length - 1e-15


def test_sparse_weights_zero_log_zero_and_support():
    w = torch.tensor([[0.5, 0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]])
    torch.testing.assert_close(attention_entropy(w), torch.tensor([math.log(2), 0.0, math.log(4)]))
    torch.testing.assert_close(effective_support(w), torch.tensor([2.0, 1.0, 4.0]))
    assert support_size(w).tolist() == [2, 1, 4]
    assert support_size(w, atol=0.3).tolist() == [2, 1, 0]
    assert support_size(w).dtype == torch.int64


def test_dim_argument_and_neg_inf_scores():
    g = torch.Generator().manual_seed(1)
    s = torch.randn(4, 6, generator=g, dtype=torch.float64)
    w = torch.softmax(s, -1)
    for fn in (attention_entropy, max_weight, effective_support, support_size):
        torch.testing.assert_close(fn(w.T, dim=0), fn(w))
    torch.testing.assert_close(logit_spread(s.T, dim=0), logit_spread(s))
    padded = torch.cat([s, torch.full((4, 2), -math.inf, dtype=torch.float64)], -1)
    torch.testing.assert_close(logit_spread(padded), logit_spread(s))
    torch.testing.assert_close(entropy_from_scores(padded), entropy_from_scores(s))
    assert math.isnan(float(logit_spread(torch.full((3,), -math.inf))))


def test_entropy_from_scores_temperature_and_stability():
    s = torch.tensor([[1000.0, 0.0, -1000.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    h = entropy_from_scores(s)
    assert float(h[0]) == pytest.approx(0.0, abs=1e-12) and float(h[1]) == pytest.approx(
        math.log(3)
    )
    x = torch.randn(3, 5, dtype=torch.float64)
    torch.testing.assert_close(entropy_from_scores(x, 0.5), entropy_from_scores(2 * x))


def test_gradcheck_float64():
    g = torch.Generator().manual_seed(2)
    s = torch.randn(3, 5, generator=g, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([True, True, False, True, True]).expand(3, 5)
    assert torch.autograd.gradcheck(lambda x: entropy_from_scores(x, 0.7, mask=mask), (s,))
    w = torch.rand(3, 5, generator=g, dtype=torch.float64).add(0.05).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: attention_entropy(x, mask=mask), (w,))
    # masked scores receive zero gradient, and padding -inf gives finite gradients
    pad = torch.tensor([[0.3, -math.inf, 1.0]], dtype=torch.float64, requires_grad=True)
    entropy_from_scores(pad).sum().backward()
    assert pad.grad is not None and bool(torch.isfinite(pad.grad).all()) and pad.grad[0, 1] == 0


def test_bad_inputs():
    w = torch.full((2, 3), 1 / 3)
    with pytest.raises(ValueError):
        attention_entropy(torch.tensor([[0.5, math.nan]]))
    with pytest.raises(ValueError):
        attention_entropy(torch.tensor([[1.5, -0.5]]))
    with pytest.raises(ValueError):
        max_weight(w, mask=torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError):
        support_size(w, mask=torch.ones(2, 3))  # non-boolean mask
    with pytest.raises(ValueError):
        support_size(w, atol=-1.0)
    with pytest.raises(ValueError):
        logit_spread(torch.tensor([math.nan, 0.0]))
    with pytest.raises(ValueError):
        entropy_from_scores(w, 0.0)
    with pytest.raises(ValueError):
        entropy_from_scores(w, -2.0)
    with pytest.raises(ValueError):
        max_weight(w, dim=3)


def naive_top_mass(weights, mask, ns):
    """Per row: sort the kept weights, sum the N largest (NaN below N kept keys)."""
    out = torch.full((*weights.shape[:-1], len(ns)), math.nan, dtype=torch.float64)
    for idx in itertools.product(*(range(n) for n in weights.shape[:-1])):
        w = sorted(weights[idx][mask[idx]].double().tolist(), reverse=True)
        if not w or max(w) <= 0:
            continue
        for j, n in enumerate(ns):
            if len(w) >= n:
                out[(*idx, j)] = sum(w[:n])
    return out


@given(st.integers(1, 4), st.integers(1, 12), st.floats(0.1, 20.0), st.floats(0.2, 1.0), seeds)
def test_top_mass_against_naive(rows, length, scale, p_keep, seed):
    """ᾱ_N equals the sorted-sum reference per row and N (masks that drop keys, rows with
    fewer kept keys than N), ᾱ_1 is the max weight, and it never falls as N grows."""
    from attnlimits.metrics.entropy import top_mass

    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(2, rows, length, generator=g) * scale
    mask = torch.rand(2, rows, length, generator=g) < p_keep
    weights = masked_softmax(scores, mask)
    ns = sorted({1, 2, 3, length, length + 1})
    got = top_mass(weights, ns, mask=mask)
    want = naive_top_mass(weights, mask, ns)
    assert torch.equal(got.isnan(), want.isnan())
    torch.testing.assert_close(got.double().nan_to_num(-1), want.nan_to_num(-1), atol=1e-6, rtol=0)
    torch.testing.assert_close(got[..., 0], max_weight(weights, mask=mask), equal_nan=True)
    finite = got.nan_to_num(math.inf)
    assert bool((finite[..., 1:] >= finite[..., :-1] - 1e-7).all())  # NaN (too few keys) last


def test_top_mass_dim_half_precision_and_bad_inputs():
    """Another key axis gives the same numbers; fp16 and bf16 rows give no NaN where the
    row is scorable; an empty grid or N < 1 raises."""
    from attnlimits.metrics.entropy import top_mass

    w = torch.softmax(torch.randn(3, 5, 7), -1)
    torch.testing.assert_close(top_mass(w.transpose(1, 2), [2, 4], dim=1), top_mass(w, [2, 4]))
    for dt in (torch.float16, torch.bfloat16):
        half = top_mass(w.to(dt), [1, 7])
        assert not bool(half.isnan().any())
        torch.testing.assert_close(half[..., 1].float(), torch.ones(3, 5), atol=1e-2, rtol=0)
    with pytest.raises(ValueError, match="ns must hold at least one N"):
        top_mass(w, [])
    with pytest.raises(ValueError, match="ns must be whole numbers"):
        top_mass(w, [0, 2])
