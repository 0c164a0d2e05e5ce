"""Theorem 1's remark on its residual as a row (the round-4 referee's point 20)."""

from __future__ import annotations

import math

import pandas as pd

from attnlimits.experiments.limitations.residual import claim_small_residual
from limitations_tables import NA, N, R


def _cells(eps: list[float], exact: float = 10.0, se: float = 0.0) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "expectation_exact": [exact] * len(eps),
            "expectation_exact_se": [se] * len(eps),
            "expectation": [exact - e for e in eps],
        }
    )


def test_a_small_residual_everywhere_reproduces_and_says_its_numbers():
    (row,) = claim_small_residual(_cells([0.5, 1.0]))
    assert row["verdict"] == R and row["role"] == "check"
    assert "median 0.075" in row["measured"] and "largest 0.1" in row["measured"]
    assert "in 100.0% of them" in row["measured"]


def test_a_larger_residual_leaves_the_whenever_unjudged():
    (row,) = claim_small_residual(_cells([0.5, 3.0]))
    assert row["verdict"] == NA and "in 50.0% of them" in row["measured"]


def test_a_large_negative_residual_is_not_small():
    """|ε|: ε < 0 is against Theorem 1.2's ε ≥ 0 and not 'small' (round-5 referee, point 9)."""
    (row,) = claim_small_residual(_cells([0.5, -3.0]))
    assert row["verdict"] == NA and "in 50.0% of them" in row["measured"]
    assert "ε < 0 beyond 3 SE in 50.0%" in row["measured"] and "largest 0.3" in row["measured"]


def test_a_run_without_exact_e_is_not_computed():
    (row,) = claim_small_residual(pd.DataFrame({"expectation": [1.0]}))
    assert row["verdict"] == NA and row["measured"] == "not computed in this run"


def test_with_max_weight_the_cells_of_spread_weights_decide():
    """Where the run stores max α_i: the cells at or below its median decide; a large ε on
    concentrated weights does not count, one on spread weights reads not reproduced; the
    top-N mass split and the rank correlation are described beside it."""
    cells = _cells([0.5, 0.5, 3.0, 3.0]).assign(
        max_weight=[0.1, 0.2, 0.8, 0.9], top_mass=[0.3, 0.4, 0.5, 0.9]
    )
    (row,) = claim_small_residual(cells)
    assert row["verdict"] == R
    assert "small in 100.0% of the cells at or below the median, 0.0% above" in row["measured"]
    assert "Spearman ρ(max α_i, |ε| / E exact) = 0.89" in row["measured"]
    assert "100.0% at or below its median, 0.0% above" in row["measured"]
    (row,) = claim_small_residual(cells.assign(max_weight=[0.9, 0.8, 0.2, 0.1]))
    assert row["verdict"] == N and "small in 0.0% of the cells at or below" in row["measured"]
    assert "not stored" not in row["measured"]


def test_a_run_without_max_weight_keeps_the_one_sided_reading():
    (row,) = claim_small_residual(_cells([0.5, 3.0]).assign(max_weight=math.nan))
    assert row["verdict"] == NA and "not stored" in row["measured"]
