"""Paper A's Lemma 1 / Corollary 1 and the discussion's H = 3 as check rows (round-5 referee,
point 11)."""

from __future__ import annotations

import pandas as pd
import pytest

from attnlimits.experiments.limitations.text_checks import claim_heads, claim_lemma1, heads_needed
from limitations_tables import NA


@pytest.mark.parametrize(
    ("p", "cover", "want"),
    [
        (0.8, 0.99, 3),  # the discussion's: 1 − 0.2³ = 0.992
        (0.8, 0.992, 3),  # at the edge
        (0.8, 0.993, 4),
        (0.9, 0.99, 2),  # 1 − 0.1² = 0.99 exactly, not 2.98… heads
        (0.5, 0.99, 7),  # 1 − 0.5⁷ = 0.992
        (0.99, 0.99, 1),
    ],
)
def test_heads_needed_known_answers(p, cover, want):
    assert heads_needed(p, cover) == want
    assert 1 - (1 - p) ** want >= cover - 1e-12 and (want == 1 or 1 - (1 - p) ** (want - 1) < cover)


@pytest.mark.parametrize("p", [0.0, 1.0, -0.1, 1.5])
def test_heads_needed_refuses_a_level_outside_0_1(p):
    with pytest.raises(ValueError, match="separability level"):
        heads_needed(p)


def test_heads_row_shows_the_arithmetic_and_this_columns_p():
    alg4 = pd.DataFrame(
        {"N": [16, 64, 64, 64], "layer": 0, "head": [0, 0, 1, 2], "ratio": [0.9, 0.5, 0.6, 0.7]}
    )
    (row,) = claim_heads(alg4)
    assert row["verdict"] == NA and row["role"] == "check"
    assert "H = 2: 0.960, H = 3: 0.992" in row["measured"]
    assert "the least H with ≥ 99%: 3" in row["measured"]
    assert "at N = 64 as p (0.60): H = 6" in row["measured"]  # 1 − 0.4⁶ = 0.9959


def test_lemma1_row_is_n_a_and_says_why():
    (row,) = claim_lemma1()
    assert row["verdict"] == NA and row["role"] == "check"
    assert "do not keep" in row["measured"] and "keeps no statistic" in row["measured"]


def test_lemma1_shows_how_the_weights_fall_with_l_where_the_run_stores_them():
    """With Alg. 1's max α_i and ᾱ_N stored: the medians at the smallest and largest L and
    their log-log slopes (weights of order 1/L give −1; a sink that holds its weight, 0); the
    row stays n/a (the bounds need the logits' Δ)."""
    import pandas as pd

    ls = [32, 64, 128, 256]
    alg1 = pd.DataFrame(
        {
            "L": ls * 2,
            "N": 5,
            "layer": 0,
            "head": [0] * 4 + [1] * 4,
            "max_weight": [4 / n for n in ls] * 2,
            "top_mass": [0.6] * 8,
        }
    )
    (row,) = claim_lemma1(alg1)
    assert row["verdict"] == "n/a"
    assert (
        "max α_i 0.125 at L = 32, 0.0156 at L = 256 (log-log slope -1.00; between "
        in (row["measured"])
    )
    assert "neighbouring L -1.00, -1.00, -1.00)" in row["measured"]
    assert "ᾱ_5 (top-5 mass) 0.6 at L = 32, 0.6 at L = 256 (log-log slope 0.00" in row["measured"]
    # L·max α_i: a constant (4) for weights of order 1/L (round-7 referee, point 6)
    assert "L·max α_i 4, 4, 4, 4 at L = 32, 64, 128, 256" in row["measured"]
    (old,) = claim_lemma1(alg1.drop(columns=["max_weight", "top_mass"]))
    assert "as L grows" not in old["measured"]
