"""Theorem 1's remark on its residual as a row (the round-4 referee's point 20)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from attnlimits.experiments.limitations.residual import (
    BY_DISTANCE,
    BY_TOP_MASS,
    claim_small_residual,
    residual_alternatives,
    residual_quantiles,
    residual_summary,
)
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
    assert "small in 100.0% of the cells at or below the median (100.0% without" in row["measured"]
    assert "median |ε| / E exact 0.05), 0.0% above (0.0%; 0.3)" in row["measured"]
    assert "Spearman ρ(max α_i, |ε| / E exact) = 0.89" in row["measured"]
    assert "100.0% at or below its median, 0.0% above" in row["measured"]
    (row,) = claim_small_residual(cells.assign(max_weight=[0.9, 0.8, 0.2, 0.1]))
    assert row["verdict"] == N and "small in 0.0% of the cells at or below" in row["measured"]
    assert "not stored" not in row["measured"]


def test_a_run_without_max_weight_keeps_the_one_sided_reading():
    (row,) = claim_small_residual(_cells([0.5, 3.0]).assign(max_weight=math.nan))
    assert row["verdict"] == NA and "not stored" in row["measured"]


def _spread(se: float = 0.0) -> pd.DataFrame:
    """Two lengths, two cells each: at each L the cell with spread weights has the large ε."""
    return _cells([3.0, 0.5, 3.0, 0.5], se=se).assign(
        L=[32, 32, 64, 64],
        N=5,
        max_weight=[0.1, 0.6, 0.2, 0.7],
        top_mass=[0.2, 0.9, 0.3, 0.8],
        distance=[100.0] * 4,
    )


def test_the_3se_allowance_is_shown_apart():
    """Round-7 referee, point 1: the share small with and without the 3-SE allowance."""
    (row,) = claim_small_residual(_cells([0.5, 3.0], se=1.0))
    assert "in 100.0% of them (50.0% without the 3-SE allowance" in row["measured"]


def test_the_halves_within_each_length_and_the_flip_points_are_shown():
    """Round-7 referee, points 3 and 4: the split at each L's own median, and where the
    verdict flips: WITHIN_SE at the spread half's share, EPS_SMALL at the WITHIN_SE quantile of
    (|ε| − 3 SE) / E exact there (0.3), the cut's quantile (no quantile: the least
    concentrated cell alone has ε = 3)."""
    (row,) = claim_small_residual(_spread())
    assert row["verdict"] == N
    assert (
        "within each L (2), split at that L's median: small in 0.0%–0.0% of the spread "
        in (row["measured"])
    )
    assert (
        "flip points: WITHIN_SE 0.000 (reproduced at or below it), EPS_SMALL 0.3"
        in (row["measured"])
    )
    assert "the cut: reproduced at no quantile" in row["measured"]
    flipped = _spread().assign(max_weight=[0.6, 0.1, 0.7, 0.2])
    (row,) = claim_small_residual(flipped)
    assert row["verdict"] == R and "at or below the 50.0% quantile of max α_i" in row["measured"]


def test_the_alternatives_judge_by_the_top_mass_and_against_d():
    """Round-7 referee, point 4: the same rule on ᾱ_N's split (not reproduced here, as max
    α_i's) and with d̃ as the scale (|ε| ≤ 0.1·100 everywhere: reproduced); none where the run
    stores no max α_i."""
    alts = residual_alternatives(_spread())
    assert alts[BY_TOP_MASS][0]["verdict"] == N and alts[BY_DISTANCE][0]["verdict"] == R
    assert residual_alternatives(_cells([0.5])) == {}


def test_the_binned_table_recounts_the_halves():
    """Round-7 referee, point 2: per (L, N) the counts the row reads; the spread half's share
    is the sum of small_at_or_below over the sum of at_or_below_median."""
    table = residual_summary(_spread(se=0.5))
    assert list(table["L"]) == [32, 64] and list(table["cells"]) == [2, 2]
    assert list(table["small"]) == [1, 1] and list(table["small_without_se"]) == [1, 1]
    assert list(table["at_or_below_median"]) == [1, 1]
    assert table["small_at_or_below"].sum() == 0
    assert table["median_eps_over_d"].tolist() == pytest.approx([0.0175, 0.0175])
    assert residual_summary(_cells([0.5])).empty


def test_the_binned_table_recounts_the_halves_without_the_allowance_and_within_each_l():
    """Round-8 referee, point 3: the spread half's cells small without the 3-SE allowance, and
    the split at each L's own median (here the global cut, 0.2, puts both cells of L = 32 and
    none of L = 64 at or below it; each L's own median puts one cell of each)."""
    made = _cells([0.5, 3.0, 3.0, 0.5], se=0.5).assign(
        L=[32, 32, 64, 64], N=5, max_weight=[0.1, 0.2, 0.3, 0.4], top_mass=0.5, distance=100.0
    )
    table = residual_summary(made).set_index("L")
    assert table["at_or_below_median"].tolist() == [2, 0]
    assert table["small_at_or_below"].tolist() == [1, 0]
    assert table["small_without_se_at_or_below"].tolist() == [1, 0]
    assert table["at_or_below_L_median"].tolist() == [1, 1]
    assert table["small_at_or_below_L_median"].tolist() == [1, 0]  # L = 64: its ε = 3 cell
    # ε = 1.3 against a limit of 0.1·10 = 1: small only through the 3·0.15 allowance
    point = residual_summary(made.assign(expectation_exact_se=0.15, expectation=8.7))
    assert point["small_without_se"].sum() == 0 and point["small"].sum() == 4


def test_the_quantiles_give_each_halfs_median_and_the_eps_small_flip_point():
    """Round-8 referee, point 3: per half, the quantiles of |ε| / E exact and of the EPS_SMALL
    each cell needs ((|ε| − 3 SE) / E exact); the spread half's q = WITHIN_SE row is the row's
    EPS_SMALL flip point (0.3 here, as the measured text says)."""
    table = residual_quantiles(_spread())
    assert set(table["half"]) == {"spread", "concentrated", "all"}
    spread = table[table["half"] == "spread"].set_index("q")
    assert spread["cells"].iloc[0] == 2 and len(spread) == 101
    assert spread.loc[0.99, "eps_small_needed"] == pytest.approx(0.3)
    assert spread.loc[0.5, "eps_over_e"] == pytest.approx(0.3)  # both spread cells: ε = 3
    low = table[table["half"] == "concentrated"].set_index("q")
    assert low.loc[0.0, "eps_over_e"] == pytest.approx(0.05)
    (row,) = claim_small_residual(_spread())
    assert "EPS_SMALL 0.3 (reproduced at or above it)" in row["measured"]
    assert residual_quantiles(_cells([0.5])).empty


def test_theorem_12_row_places_its_negative_cells():
    """Round-7 referee, point 7: the cells with ε < 0 beyond 3 SE, how many at the largest L
    and by N there, named as estimation artefacts (Jensen gives ε ≥ 0); none: nothing added."""
    from attnlimits.experiments.limitations.claims import claim_jensen

    cells = _cells([-3.0, 0.5, -3.0, 0.5]).assign(
        L=[32, 32, 64, 64], N=[5, 5, 1, 5], gap_bound_appendix=100.0
    )
    (row,) = claim_jensen(cells)
    assert "the 2 cells with ε < 0 beyond 3 SE: 1 at L = 64 (N = 1: 1)" in row["measured"]
    assert "estimation artefacts (our reading)" in row["measured"]
    (row,) = claim_jensen(cells.assign(expectation=cells["expectation_exact"] - 0.5))
    assert "beyond 3 SE:" not in row["measured"]
