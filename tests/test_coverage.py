"""Paper A, Discussion: H independent heads with separability p cover 1 − (1 − p)^H."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnlimits.theory.coverage import heads_for_coverage, multihead_coverage


def test_paper_example_p08_needs_three_heads_for_99_percent():
    assert heads_for_coverage(0.8, 0.99) == 3
    assert multihead_coverage(0.8, 3) == pytest.approx(0.992)
    assert multihead_coverage(0.8, 2) == pytest.approx(0.96)


def test_coverage_values_and_tensors():
    assert multihead_coverage(0.3, 0) == 0.0
    assert multihead_coverage(1.0, 1) == 1.0
    assert multihead_coverage(0.0, 5) == 0.0
    out = multihead_coverage(torch.tensor([0.5, 0.5]), torch.tensor([1, 2]))
    torch.testing.assert_close(out, torch.tensor([0.5, 0.75]))


def test_coverage_matches_monte_carlo():
    g = torch.Generator().manual_seed(0)
    p, h = 0.35, 4
    hits = (torch.rand(200_000, h, generator=g) < p).any(-1).float().mean()
    assert float(hits) == pytest.approx(multihead_coverage(p, h), abs=5e-3)


@given(p=st.floats(0.01, 1.0), target=st.floats(0.0, 0.999999))
def test_heads_for_coverage_is_the_smallest_sufficient(p, target):
    h = heads_for_coverage(p, target)
    assert multihead_coverage(p, h) >= target
    if h > 0:
        assert multihead_coverage(p, h - 1) < target


@given(p=st.floats(0.0, 1.0), h=st.integers(0, 50))
def test_coverage_is_monotone_in_heads_and_p(p, h):
    c = multihead_coverage(p, h)
    assert 0.0 <= c <= 1.0
    assert multihead_coverage(p, h + 1) >= c
    assert multihead_coverage(min(1.0, p + 0.1), h) >= c


def test_exact_powers_are_not_rounded_up():
    assert heads_for_coverage(0.5, 0.75) == 2
    assert heads_for_coverage(0.5, 0.875) == 3
    assert heads_for_coverage(0.9, 0.0) == 0
    assert heads_for_coverage(1.0, 0.999) == 1


@pytest.mark.parametrize("p", [-0.1, 1.1, math.nan])
def test_p_outside_unit_interval_raises(p):
    with pytest.raises(ValueError):
        multihead_coverage(p, 2)
    with pytest.raises(ValueError):
        heads_for_coverage(p, 0.5)
    with pytest.raises(ValueError):
        multihead_coverage(torch.tensor([0.5, p]), 2)


@pytest.mark.parametrize("target", [-0.1, 1.0, 1.5, math.nan])
def test_bad_target_raises(target):
    with pytest.raises(ValueError):
        heads_for_coverage(0.5, target)


def test_bad_heads_and_unreachable_target_raise():
    with pytest.raises(ValueError):
        multihead_coverage(0.5, -1)
    with pytest.raises(ValueError):
        multihead_coverage(0.5, 1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        multihead_coverage(0.5, torch.tensor([1.0]))
    with pytest.raises(ValueError):
        heads_for_coverage(0.0, 0.5)
