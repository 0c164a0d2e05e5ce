"""Paper B's statements with no row until round 6 (softmax_not_enough.unstated): each is n/a
with its reason, its reading computed from the tables it names, and its quote word for word."""

from __future__ import annotations

import pandas as pd

from attnlimits.claims import NA, SUPPORTING
from attnlimits.claims.verdicts import missing_quotes
from attnlimits.experiments.softmax_not_enough.unstated import (
    QUOTES,
    dispersion_rows,
    retrieval_rows,
)


def _tables() -> dict[str, pd.DataFrame]:
    sets = pd.DataFrame(
        {
            "norm": ["softmax", "adaptive"] * 3,
            "size": [16, 16, 128, 128, 1024, 1024],
            "entropy": [0.05, 0.05, 0.2, 0.1, 0.4, 0.3],
        }
    )
    argmax = pd.DataFrame(
        {"norm": "argmax", "size": [16, 16, 16384, 16384], "accuracy": [1.0, 0.98, 0.4, 0.3]}
    )
    points = pd.DataFrame(
        {
            "size": [16, 512, 2048, 2048],
            "theta_star": [0.005, 0.1, 0.3, 0.45],
            "weight_one": [0.1, 0.2, 0.3, 0.4],
            "edge": ["low", "", "", ""],
        }
    )
    return {"set_attention": sets, "argmax_accuracy": argmax, "temperature_fit_points": points}


def test_every_row_is_na_and_supporting_with_its_reading():
    rows = dispersion_rows(_tables()) + retrieval_rows(_tables(), 16)
    ids = [r["claim"].split(" ")[0] for r in rows]
    assert ids == ["(1.e)", "(1.f)", "(1.g)", "(1.h)", "(2.i)", "(2.j)", "(2.k)"]
    assert {r["verdict"] for r in rows} == {NA} and {r["role"] for r in rows} == {SUPPORTING}
    said = {i: r["measured"] for i, r in zip(ids, rows, strict=True)}
    assert "n = 16: 99.0 %, n = 16,384: 35.0 %" in said["(1.f)"]
    assert (
        "n = 16 … 2,048, 4 (seed, set) pairs" in said["(2.i)"] and "0.250 at θ = 1" in said["(2.i)"]
    )
    assert "n = 128: 0.100 vs 0.200, n = 1,024: 0.300 vs 0.400" in said["(2.j)"]
    assert "1 of 4 optima lie on an end; 50.0% / 75.0% / 100.0%" in said["(2.k)"]


def test_without_the_tables_the_readings_say_so():
    rows = dispersion_rows({}) + retrieval_rows({}, 16)
    said = " ".join(r["measured"] for r in rows)
    assert "the run has no argmax_accuracy table" in said
    assert "the run has no App. F points" in said and "has no entropy" in said
    assert {r["verdict"] for r in rows} == {NA}


def test_the_quotes_are_word_for_word(paper_texts):
    assert missing_quotes(QUOTES, paper_texts) == []
    quoted = {r["paper"] for r in dispersion_rows({}) + retrieval_rows({}, 16)}
    assert quoted == set(QUOTES)
