"""Paper A, Lemma 1 / Corollary 1 (Eq. 5): bounds on every softmax weight with bounded logits."""

from __future__ import annotations

import math
import sys

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from attnlimits.theory.vanishing import (
    logit_magnitude_bound,
    normalizer_weight_bounds,
    softmax_weight_bounds,
)

TOL = 1e-12


@example(length=1, d=2, scale=3.0, temperature=0.0625, seed=0)  # 2Δ/T = 1017: e^{2Δ/T} = inf
@given(
    length=st.integers(1, 200),
    d=st.integers(1, 8),
    scale=st.floats(0.01, 3.0),
    temperature=st.floats(0.05, 10.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_corollary1_holds_for_random_queries_and_keys(length, d, scale, temperature, seed):
    g = torch.Generator().manual_seed(seed)
    q = scale * torch.randn(d, generator=g, dtype=torch.float64)
    k = scale * torch.randn(length, d, generator=g, dtype=torch.float64)
    alpha = torch.softmax(k @ q / temperature, dim=-1)
    delta = logit_magnitude_bound(q, k)
    assert bool(((k @ q).abs() <= delta * (1 + TOL)).all())
    if 2 * float(delta) / temperature > math.log(sys.float_info.max):  # e^{2Δ/T} overflows
        with pytest.raises(ValueError, match="overflows the float range"):
            softmax_weight_bounds(length, delta, temperature)
        return
    lo, hi = softmax_weight_bounds(length, delta, temperature)
    assert bool((alpha >= lo * (1 - 1e-9)).all()) and bool((alpha <= hi * (1 + 1e-9)).all())


def test_corollary1_values_and_vanishing():
    lo, hi = softmax_weight_bounds(10, 1.0, 2.0)
    assert lo == pytest.approx(math.exp(-1) / 10) and hi == pytest.approx(math.e / 10)
    # both sides are Θ(1/L): L·bound is independent of L
    for length in (10, 1000, 10**6):
        lo, hi = softmax_weight_bounds(length, 1.0, 2.0)
        assert lo * length == pytest.approx(math.exp(-1)) and hi * length == pytest.approx(math.e)


def test_corollary1_tensor_inputs_broadcast():
    lengths = torch.tensor([1.0, 10.0, 100.0])
    lo, hi = softmax_weight_bounds(lengths, torch.tensor(0.5), 1.0)
    assert isinstance(lo, torch.Tensor) and lo.shape == (3,)
    torch.testing.assert_close(hi, math.e / lengths)


def test_corollary1_brackets_extreme_logits():
    # L = 2, logits (Δ, −Δ): the most spread row Δ allows; both weights stay inside Eq. 5
    delta, t = 1.0, 1.0
    alpha = torch.softmax(torch.tensor([delta, -delta], dtype=torch.float64) / t, -1)
    lo, hi = softmax_weight_bounds(2, delta, t)
    assert lo < float(alpha[1]) < float(alpha[0]) < hi


@given(
    length=st.integers(1, 100),
    a=st.floats(0.01, 3.0),
    seed=st.integers(0, 2**31 - 1),
    which=st.sampled_from(["exp", "softplus", "sq1"]),
)
def test_lemma1_holds_for_positive_f(length, a, seed, which):
    fns = {
        "exp": torch.exp,
        "softplus": torch.nn.functional.softplus,
        "sq1": lambda x: x * x + 1,
    }
    f = fns[which]
    g = torch.Generator().manual_seed(seed)
    logits = (2 * torch.rand(length, generator=g, dtype=torch.float64) - 1) * a
    grid = torch.linspace(-a, a, 2001, dtype=torch.float64)
    vals = f(grid)
    f_min, f_max = float(vals.min()), float(vals.max())
    alpha = f(logits) / f(logits).sum()
    lo, hi = normalizer_weight_bounds(length, f_min * (1 - 1e-6), f_max * (1 + 1e-6))
    assert bool((alpha >= lo).all()) and bool((alpha <= hi).all())


def test_lemma1_softmax_recovers_corollary1():
    lo1, hi1 = normalizer_weight_bounds(7, math.exp(-0.3), math.exp(0.3))
    lo2, hi2 = softmax_weight_bounds(7, 0.3, 1.0)
    assert lo1 == pytest.approx(lo2) and hi1 == pytest.approx(hi2)


@pytest.mark.parametrize(
    "args",
    [
        (0, 1.0, 1.0),
        (10, -1.0, 1.0),
        (10, 1.0, 0.0),
        (10, 1.0, -2.0),
        (10, math.nan, 1.0),
        (10, 1.0, math.inf),
        (torch.tensor([5.0, 0.5]), 1.0, 1.0),
    ],
)
def test_softmax_weight_bounds_bad_inputs(args):
    with pytest.raises(ValueError):
        softmax_weight_bounds(*args)


@pytest.mark.parametrize(
    "args", [(10, 0.0, 1.0), (10, 2.0, 1.0), (0, 1.0, 2.0), (3, math.nan, 1.0)]
)
def test_normalizer_weight_bounds_bad_inputs(args):
    with pytest.raises(ValueError):
        normalizer_weight_bounds(*args)


def test_logit_magnitude_bound_shape_mismatch():
    with pytest.raises(ValueError):
        logit_magnitude_bound(torch.zeros(3), torch.zeros(5, 4))
