"""Paper A §2.3: Lemma 2 (Eq. 13) and Corollary 3, as printed (counterexamples) and corrected."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnlimits.metrics.jacobian import softmax_jacobian_matrix
from attnlimits.theory.sensitivity import (
    corollary3_bound_as_printed,
    lemma2_bound_as_printed,
    normalizer_jacobian,
    normalizer_jacobian_norm_bound,
    softmax_jacobian_norm_bound,
    softmax_perturbation_bound,
)

seeds = st.integers(0, 2**31 - 1)


def spectral(j: torch.Tensor) -> float:
    return float(torch.linalg.matrix_norm(j, ord=2))


def one_big(length: int, big: float, rest: float) -> torch.Tensor:
    row = torch.full((length,), rest, dtype=torch.float64)
    row[0] = big
    return row


# --- Corollary 3 -------------------------------------------------------------------------


@pytest.mark.parametrize("t", [0.05, 0.1, 0.3, 1.0, 4.0])
def test_corollary3_as_printed_fails_at_two_tied_logits(t):
    alpha = torch.softmax(torch.zeros(2, dtype=torch.float64) / t, -1)
    norm = spectral(softmax_jacobian_matrix(alpha, t))
    assert norm == pytest.approx(1 / (2 * t), rel=1e-12)
    assert norm > corollary3_bound_as_printed(t) * 1.4  # at least √2 times too small
    assert norm <= softmax_jacobian_norm_bound(t) * (1 + 1e-12)


def test_corollary3_sqrt2_cap_is_not_a_derivative_bound():
    # T = 0.1: ||J|| = 5 while the printed min{2.5, √2} = √2
    t = 0.1
    assert corollary3_bound_as_printed(t) == pytest.approx(math.sqrt(2))
    alpha = torch.tensor([0.5, 0.5], dtype=torch.float64)
    assert spectral(softmax_jacobian_matrix(alpha, t)) == pytest.approx(5.0)


def test_quarter_bounds_only_the_diagonal():
    alpha = torch.softmax(torch.randn(200, 16, dtype=torch.float64) * 3, -1)
    t = 0.7
    diag = torch.diagonal(softmax_jacobian_matrix(alpha, t), dim1=-2, dim2=-1)
    assert float(diag.max()) <= 1 / (4 * t) + 1e-15


@given(length=st.integers(1, 40), scale=st.floats(0.0, 30.0), t=st.floats(0.01, 10.0), seed=seeds)
def test_corrected_corollary3_bounds_exact_norm(length, scale, t, seed):
    g = torch.Generator().manual_seed(seed)
    l = scale * torch.randn(length, generator=g, dtype=torch.float64)
    alpha = torch.softmax(l / t, -1)
    assert spectral(softmax_jacobian_matrix(alpha, t)) <= softmax_jacobian_norm_bound(t) * (
        1 + 1e-10
    )


def test_corrected_corollary3_is_approached_with_more_keys():
    # L = 64, two tied top logits and the rest `gap` below: ||J|| → 1/(2T) as gap grows
    t = 1.0
    norms = []
    for gap in (1.0, 5.0, 30.0):
        l = torch.full((64,), -gap, dtype=torch.float64)
        l[:2] = 0.0
        norms.append(spectral(softmax_jacobian_matrix(torch.softmax(l, -1), t)))
    assert norms[0] < norms[1] < norms[2] <= 0.5 and norms[2] == pytest.approx(0.5, rel=1e-10)


@given(
    length=st.integers(1, 30),
    scale=st.floats(0.0, 20.0),
    eps=st.floats(1e-4, 100.0),
    t=st.floats(0.01, 10.0),
    seed=seeds,
)
def test_perturbation_bound_holds(length, scale, eps, t, seed):
    g = torch.Generator().manual_seed(seed)
    l = scale * torch.randn(length, generator=g, dtype=torch.float64)
    v = torch.randn(length, generator=g, dtype=torch.float64)
    dl = eps * v / v.norm()
    diff = float((torch.softmax((l + dl) / t, -1) - torch.softmax(l / t, -1)).norm())
    assert diff <= softmax_perturbation_bound(float(dl.norm()), t) * (1 + 1e-9) + 1e-15


def test_perturbation_bound_values():
    assert softmax_perturbation_bound(1.0, 1.0) == pytest.approx(0.5)
    assert softmax_perturbation_bound(100.0, 0.1) == pytest.approx(math.sqrt(2))
    out = softmax_perturbation_bound(torch.tensor([0.0, 1.0, 1e6]), 1.0)
    torch.testing.assert_close(out, torch.tensor([0.0, 0.5, math.sqrt(2)]))
    # the §2.3 swap example: ||α(1) − α(2)|| ~ √2 ε / T is within min{||Δl||/(2T), √2}
    a, eps, t = 2.0, 1e-3, 0.5
    l1 = torch.tensor([0.0, a, a + eps], dtype=torch.float64)
    l2 = torch.tensor([0.0, a + 2 * eps, a], dtype=torch.float64)
    diff = float((torch.softmax(l1 / t, -1) - torch.softmax(l2 / t, -1)).norm())
    assert diff <= softmax_perturbation_bound(float((l1 - l2).norm()), t)


# --- Lemma 2 -----------------------------------------------------------------------------

FUNCTIONS = {
    "exp": (torch.exp, torch.exp),
    "softplus": (torch.nn.functional.softplus, torch.sigmoid),
    "sq1": (lambda x: x * x + 1, lambda x: 2 * x),
    "linear": (lambda x: x, torch.ones_like),
}


def test_normalizer_jacobian_matches_autograd():
    for name, (f, df) in FUNCTIONS.items():
        l = (
            torch.rand(6, dtype=torch.float64) + 0.1
            if name == "linear"
            else torch.randn(6).double()
        )
        jac = torch.autograd.functional.jacobian(lambda x, f=f: f(x) / f(x).sum(), l)
        torch.testing.assert_close(normalizer_jacobian(f(l), df(l)), jac)
    # softmax: exp gives (diag α − ααᵀ)
    l = torch.randn(5, dtype=torch.float64)
    torch.testing.assert_close(
        normalizer_jacobian(torch.exp(l), torch.exp(l)),
        softmax_jacobian_matrix(torch.softmax(l, -1)),
    )


def _bounds(f: torch.Tensor, df: torch.Tensor) -> tuple[float, float, float]:
    norm = spectral(normalizer_jacobian(f, df))
    args = (float(f.max()), float(df.abs().max()), float(f.min()), f.numel())
    return norm, float(lemma2_bound_as_printed(*args)), float(normalizer_jacobian_norm_bound(*args))


@given(
    which=st.sampled_from(sorted(FUNCTIONS)),
    length=st.integers(1, 60),
    scale=st.floats(0.01, 20.0),
    structured=st.booleans(),
    seed=seeds,
)
def test_corrected_lemma2_holds(which, length, scale, structured, seed):
    g = torch.Generator().manual_seed(seed)
    if structured:
        l = one_big(length, scale, float(torch.rand(1, generator=g)) * scale / 10)
    else:
        l = scale * torch.randn(length, generator=g, dtype=torch.float64)
    if which == "linear":
        l = l.abs() + 1e-2
    f, df = FUNCTIONS[which]
    norm, _, fixed = _bounds(f(l), df(l))
    assert norm <= fixed * (1 + 1e-9)


@given(length=st.integers(1, 40), seed=seeds, spread=st.floats(0.0, 5.0))
def test_corrected_lemma2_holds_for_arbitrary_f_and_derivative(length, seed, spread):
    # F and F' at distinct logits are free (any smooth positive F interpolates them)
    g = torch.Generator().manual_seed(seed)
    f = torch.exp(spread * torch.rand(length, generator=g, dtype=torch.float64))
    df = torch.randn(length, generator=g, dtype=torch.float64) * 3
    norm, _, fixed = _bounds(f, df)
    assert norm <= fixed * (1 + 1e-9)


@given(length=st.integers(1, 60), scale=st.floats(0.0, 5.0), seed=seeds)
def test_lemma2_as_printed_holds_for_softmax_at_unit_temperature(length, scale, seed):
    # where it holds: F = F' = exp (T = 1) gives ||J|| ≤ α_max ≤ ||F||/(L min F) ≤ the first term
    g = torch.Generator().manual_seed(seed)
    l = scale * torch.randn(length, generator=g, dtype=torch.float64)
    norm, printed, _ = _bounds(torch.exp(l), torch.exp(l))
    assert norm <= printed * (1 + 1e-9)


def test_lemma2_as_printed_fails_for_linear_f():
    l = one_big(100, 100.0, 1.0)
    norm, printed, fixed = _bounds(l, torch.ones_like(l))
    assert printed == pytest.approx(0.02)
    assert norm == pytest.approx(0.025377, rel=1e-4) and norm > printed
    assert norm == pytest.approx(fixed, rel=1e-9)  # the corrected bound is attained here


def test_lemma2_as_printed_fails_for_softplus():
    l = one_big(300, 100.0, 1.5)
    norm, printed, fixed = _bounds(torch.nn.functional.softplus(l), torch.sigmoid(l))
    assert norm > 1.5 * printed and norm <= fixed


def test_lemma2_as_printed_sqrt2_cap_fails_for_softmax_at_small_t():
    t = 0.1
    f = torch.ones(2, dtype=torch.float64)
    norm, printed, fixed = _bounds(f, f / t)
    assert printed == pytest.approx(math.sqrt(2)) and norm == pytest.approx(5.0)
    assert norm <= fixed * (1 + 1e-12)


def test_looser_closed_form_dominates():
    # corrected ≤ ||F'||·||F||/(L min F²) (paper A's second term with L instead of L²)
    for m, big, length, d in [(1.0, 100.0, 100, 1.0), (0.5, 0.7, 3, 2.0), (2.0, 2.0, 1, 0.3)]:
        fixed = normalizer_jacobian_norm_bound(big, d, m, length)
        assert fixed <= d * big / (length * m * m) * (1 + 1e-12)
    out = normalizer_jacobian_norm_bound(torch.tensor([1.0, 5.0]), 1.0, 1.0, torch.tensor(4.0))
    assert isinstance(out, torch.Tensor) and out.shape == (2,)


@pytest.mark.parametrize("fn", [softmax_jacobian_norm_bound, corollary3_bound_as_printed])
@pytest.mark.parametrize("t", [0.0, -1.0, math.nan, math.inf])
def test_temperature_must_be_positive(fn, t):
    with pytest.raises(ValueError):
        fn(t)


@pytest.mark.parametrize("fn", [lemma2_bound_as_printed, normalizer_jacobian_norm_bound])
@pytest.mark.parametrize(
    "args", [(1.0, 1.0, 0.0, 3), (1.0, 1.0, 2.0, 3), (1.0, -1.0, 1.0, 3), (1.0, 1.0, 1.0, 0)]
)
def test_lemma2_bad_inputs(fn, args):
    with pytest.raises(ValueError):
        fn(*args)


def test_perturbation_and_jacobian_bad_inputs():
    with pytest.raises(ValueError):
        softmax_perturbation_bound(-1.0, 1.0)
    with pytest.raises(ValueError):
        softmax_perturbation_bound(1.0, 0.0)
    with pytest.raises(ValueError):
        normalizer_jacobian(torch.ones(3), torch.ones(4))
    with pytest.raises(ValueError):
        normalizer_jacobian(torch.tensor([1.0, 0.0]), torch.ones(2))
    with pytest.raises(ValueError):
        normalizer_jacobian(torch.tensor([1.0, math.nan]), torch.ones(2))
