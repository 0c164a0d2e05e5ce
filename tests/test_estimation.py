"""theory.estimation: the binomial standard error and the sets it takes, against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from attnlimits.theory import binomial_standard_error, sets_for_standard_error


def test_standard_error_known_values() -> None:
    assert binomial_standard_error(0.5, 10_000) == pytest.approx(0.005)
    assert binomial_standard_error(1.0, 10) == 0.0
    assert sets_for_standard_error(0.005) == 10_000
    assert sets_for_standard_error(0.005, p=0.9) == 3600


def test_standard_error_matches_simulated_binomials() -> None:
    rng = np.random.default_rng(0)
    for p, n in ((0.5, 400), (0.9, 1000), (0.1, 250)):
        means = rng.binomial(n, p, size=20_000) / n
        assert binomial_standard_error(p, n) == pytest.approx(means.std(), rel=0.03)


def test_sets_reach_the_target() -> None:
    for p in (0.05, 0.3, 0.5, 0.97):
        n = sets_for_standard_error(0.01, p)
        assert binomial_standard_error(p, n) <= 0.01 + 1e-12
        assert binomial_standard_error(p, n - 1) > 0.01 or n == 1


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_targets_and_counts(bad: float) -> None:
    with pytest.raises(ValueError, match="target_se"):
        sets_for_standard_error(bad)
    with pytest.raises(ValueError, match="n"):
        binomial_standard_error(0.5, 0)
