"""Paper B: Lemma 2.1 (dispersion), Proposition 3.1 (spread bound), Proposition 3.2 (dH/dβ)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnlimits.metrics.entropy import entropy_from_scores, logit_spread
from attnlimits.theory.dispersion import (
    dispersion_bounds,
    entropy_beta_derivative,
    projected_spread_bound,
)
from attnlimits.theory.vanishing import logit_magnitude_bound, softmax_weight_bounds

seeds = st.integers(0, 2**31 - 1)


@given(
    length=st.integers(1, 300), scale=st.floats(0.0, 10.0), theta=st.floats(0.05, 10.0), seed=seeds
)
def test_lemma21_holds(length, scale, theta, seed):
    g = torch.Generator().manual_seed(seed)
    e = scale * torch.randn(length, generator=g, dtype=torch.float64)
    alpha = torch.softmax(e / theta, -1)
    spread = float(e.max() - e.min())
    lo, hi = dispersion_bounds(length, spread, theta)
    assert bool((alpha >= lo * (1 - 1e-9)).all()) and bool((alpha <= hi * (1 + 1e-9)).all())


@given(length=st.integers(2, 100), spread=st.floats(0.0, 20.0), theta=st.floats(0.1, 10.0))
def test_lemma21_is_attained(length, spread, theta):
    # top logit with the others at the bottom attains the upper bound, and vice versa
    e = torch.zeros(length, dtype=torch.float64)
    e[0] = spread
    lo, hi = dispersion_bounds(length, spread, theta)
    assert float(torch.softmax(e / theta, -1)[0]) == pytest.approx(hi, rel=1e-10)
    assert float(torch.softmax(-e / theta, -1)[0]) == pytest.approx(lo, rel=1e-10)


@given(length=st.integers(1, 200), d=st.integers(1, 6), theta=st.floats(0.1, 5.0), seed=seeds)
def test_lemma21_is_sharper_than_corollary1(length, d, theta, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(d, generator=g, dtype=torch.float64)
    k = torch.randn(length, d, generator=g, dtype=torch.float64)
    delta = float(logit_magnitude_bound(q, k))
    lo_b, hi_b = dispersion_bounds(length, 2 * delta, theta)
    lo_a, hi_a = softmax_weight_bounds(length, delta, theta)
    assert lo_b >= lo_a * (1 - 1e-12) and hi_b <= hi_a * (1 + 1e-12)


def test_lemma21_vanishes_with_length():
    uppers = [dispersion_bounds(n, 5.0, 1.0)[1] for n in (10, 10**3, 10**6)]
    assert uppers[0] > uppers[1] > uppers[2] and uppers[2] < 1e-3
    lo, hi = dispersion_bounds(torch.tensor([1.0, 4.0]), torch.tensor(0.0))
    torch.testing.assert_close(lo, torch.tensor([1.0, 0.25]))
    torch.testing.assert_close(hi, torch.tensor([1.0, 0.25]))


@given(n=st.integers(1, 50), d=st.integers(1, 6), d_out=st.integers(1, 6), seed=seeds)
def test_prop31_holds(n, d, d_out, seed):
    g = torch.Generator().manual_seed(seed)
    wq = torch.randn(d_out, d, generator=g, dtype=torch.float64)
    wk = torch.randn(d_out, d, generator=g, dtype=torch.float64)
    q = torch.randn(d, generator=g, dtype=torch.float64)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    e = (x @ wk.T) @ (wq @ q)
    bound = projected_spread_bound(wq, wk, q, x)
    assert float(logit_spread(e)) <= float(bound) * (1 + 1e-12)


def test_prop31_batched_and_tight_direction():
    # Q = K = I, x_1 = q, x_2 = −q: spread 2||q||², the bound itself
    q = torch.tensor([3.0, 4.0], dtype=torch.float64)
    x = torch.stack([q, -q])
    eye = torch.eye(2, dtype=torch.float64)
    assert float(projected_spread_bound(eye, eye, q, x)) == pytest.approx(50.0)
    wq = torch.randn(4, 3, 2, dtype=torch.float64)
    out = projected_spread_bound(
        wq, wq, torch.randn(4, 2, dtype=torch.float64), torch.randn(4, 7, 2, dtype=torch.float64)
    )
    assert out.shape == (4,)


def test_prop31_bad_inputs():
    with pytest.raises(ValueError):
        projected_spread_bound(torch.eye(2), torch.eye(3), torch.ones(2), torch.ones(4, 2))
    with pytest.raises(ValueError):
        projected_spread_bound(torch.eye(2), torch.eye(2), torch.ones(3), torch.ones(4, 2))
    with pytest.raises(ValueError):
        projected_spread_bound(
            torch.eye(2), torch.eye(2), torch.tensor([math.nan, 1.0]), torch.ones(4, 2)
        )


@given(length=st.integers(2, 40), beta=st.floats(-5.0, 5.0), seed=seeds)
def test_prop32_matches_autograd(length, beta, seed):
    g = torch.Generator().manual_seed(seed)
    e = torch.randn(3, length, generator=g, dtype=torch.float64)
    b = torch.tensor(beta, dtype=torch.float64, requires_grad=True)
    h = entropy_from_scores(b * e)  # H(β) of p ∝ exp(β e)
    (grad,) = torch.autograd.grad(h.sum(), b)
    assert float(entropy_beta_derivative(e, beta).sum()) == pytest.approx(float(grad), abs=1e-9)


def test_prop32_finite_difference_and_monotone_entropy():
    g = torch.Generator().manual_seed(1)
    e = torch.randn(5, 30, generator=g, dtype=torch.float64)
    beta, h = 1.7, 1e-6
    fd = (entropy_from_scores(e * (beta + h)) - entropy_from_scores(e * (beta - h))) / (2 * h)
    torch.testing.assert_close(entropy_beta_derivative(e, beta), fd, atol=1e-7, rtol=1e-6)
    betas = torch.linspace(0, 10, 50, dtype=torch.float64)
    hs = entropy_from_scores(e.unsqueeze(0) * betas.view(-1, 1, 1))  # [50, 5]
    assert bool((hs.diff(dim=0) <= 1e-12).all())  # entropy falls as β grows
    assert bool((entropy_beta_derivative(e, betas.view(-1, 1)) <= 0).all())


def test_prop32_mask_equals_truncation_and_empty_rows():
    g = torch.Generator().manual_seed(2)
    e = torch.randn(4, 10, generator=g, dtype=torch.float64)
    mask = torch.ones(4, 10, dtype=torch.bool)
    mask[:, 6:] = False
    mask[3] = False
    out = entropy_beta_derivative(e, 2.0, mask=mask)
    torch.testing.assert_close(out[:3], entropy_beta_derivative(e[:3, :6], 2.0))
    assert math.isnan(float(out[3]))
    # dim argument: keys on axis 0
    torch.testing.assert_close(
        entropy_beta_derivative(e.T, 2.0, dim=0), entropy_beta_derivative(e, 2.0)
    )


@pytest.mark.parametrize("args", [(0, 1.0, 1.0), (5, -1.0, 1.0), (5, 1.0, 0.0), (5, math.nan, 1.0)])
def test_dispersion_bounds_bad_inputs(args):
    with pytest.raises(ValueError):
        dispersion_bounds(*args)


def test_prop32_bad_inputs():
    with pytest.raises(ValueError):
        entropy_beta_derivative(torch.tensor([math.nan, 1.0]), 1.0)
    with pytest.raises(ValueError):
        entropy_beta_derivative(torch.ones(3), math.inf)
    with pytest.raises(ValueError):
        entropy_beta_derivative(torch.ones(3), 1.0, mask=torch.ones(4, dtype=torch.bool))


def test_gradcheck_float64():
    g = torch.Generator().manual_seed(4)
    e = torch.randn(3, 6, generator=g, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([True, True, True, False, True, True])
    assert torch.autograd.gradcheck(lambda x: entropy_beta_derivative(x, 1.3, mask=mask), (e,))
    b = torch.tensor([0.5, -2.0, 1.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: entropy_beta_derivative(e.detach(), x), (b,))
    spread = torch.tensor([0.1, 1.0, 4.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda s: dispersion_bounds(10.0, s, 0.7), (spread,))


def test_entropy_beta_derivative_near_the_largest_float64_spread() -> None:
    """Found by the API fuzz (2026-11-28): a spread near float64's maximum with a subnormal β
    has a finite dH/dβ = −β·Var (here −β·Δ²/4 ≈ −4e292, the weights still even), which squaring
    e − mean first turned into an overflow error. Against the closed form for two keys,
    −β·Δ²·p(1 − p)."""
    top = torch.finfo(torch.float64).max
    e = torch.tensor([[0.78246, -top]], dtype=torch.float64)
    for beta in (5e-324, 1e-320, 1e-310):
        delta = 0.78246 + top  # rounds to top; the closed form's own Δ
        p = 1 / (1 + math.exp(-beta * delta))
        want = -(beta * delta) * delta * p * (1 - p)
        got = float(entropy_beta_derivative(e, beta))
        assert math.isfinite(got) and got == pytest.approx(want, rel=1e-9), beta
    # |dH/dβ| = (β·Δ)·p(1 − p)·Δ is at most about 0.44·Δ, so float32 logits of both signs near
    # its maximum (a spread past it) still give a finite value, and the weights their own
    e32 = torch.tensor([[3e38, -3e38]])
    for beta_delta in (0.5, 2.4, 10.0):
        p = 1 / (1 + math.exp(-beta_delta))
        got32 = float(entropy_beta_derivative(e32, beta_delta / 6e38))
        assert got32 == pytest.approx(-beta_delta * p * (1 - p) * 6e38, rel=1e-5), beta_delta


def test_entropy_beta_derivative_ignores_a_far_key_of_no_weight() -> None:
    """A key at −3.4e38 beside logits near 0 has weight 0 and adds nothing to Var_p(e); it once
    widened the range the variance was scaled by, so a rounding error of the weights' sum
    (about 1e-7) became an overflow in float32 (and a wrong 0 in float64). Found by the API fuzz."""
    far = -torch.finfo(torch.float32).max
    e = torch.tensor([0.78246, far, -1.4186])
    near = e[[0, 2]].double()  # the two keys that carry weight
    p = torch.softmax(near, -1)
    want = -float((p * (near - (p * near).sum()) ** 2).sum())  # −β·Var_p(e), β = 1
    assert float(entropy_beta_derivative(e, 1.0)) == pytest.approx(want, rel=1e-5)
    assert float(entropy_beta_derivative(e.double(), 1.0)) == pytest.approx(want, rel=1e-12)
