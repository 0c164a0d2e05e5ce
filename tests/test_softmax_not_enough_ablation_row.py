"""(2.g): §3's wrong-top likelihood read with its subject, parameter size, across the steps
ablation's training lengths (referee round 4, point 11), and its place in the claims table."""

from __future__ import annotations

import pandas as pd

from attnlimits.claims import NA, NOT, NOT_TESTABLE, PARTLY, REPRODUCED
from attnlimits.experiments.softmax_not_enough.ablation_row import (
    DEFAULT_GRID,
    with_row,
    wrong_top_by_length,
)


def _tables(kept: list[str], spread: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    steps = ["5000", "10000", "20000"][: len(kept)]
    sens = pd.DataFrame(
        {
            "steps": ["—", *steps, *steps],
            "grid": ["published", *[DEFAULT_GRID] * len(steps), *["0.05…2"] * len(steps)],
            "kept": ["—", *kept, *["1"] * len(steps)],  # another grid's counts are not read
        }
    )
    loss = pd.DataFrame({"steps": steps, "final spread": spread})
    return sens, loss


def test_the_committed_ablation_reads_not_reproduced():
    """The committed numbers: 1,978 → 1,509 kept sets while the spread grows 131 → 172."""
    row = wrong_top_by_length(*_tables(["1978", "1529", "1509"], ["130.9", "157.7", "172.4"]))
    assert row["verdict"] == NOT and row["claim"].startswith("(2.g)")
    assert "× 0.763" in row["measured"] and "130.9, 157.7, 172.4" in row["measured"]
    assert "parameter size" in row["claim"] and "our reading" in row["claim"]


def test_each_verdict_and_the_precondition():
    grows = ["130.9", "172.4"]
    assert wrong_top_by_length(*_tables(["100", "150"], grows))["verdict"] == REPRODUCED
    assert wrong_top_by_length(*_tables(["100", "120"], grows))["verdict"] == PARTLY
    flat = wrong_top_by_length(*_tables(["100", "150"], ["172.4", "130.9"]))
    assert flat["verdict"] == NOT_TESTABLE and "did not grow" in flat["measured"]
    assert wrong_top_by_length(*_tables(["100"], ["130.9"]))["verdict"] == NA


def test_with_row_adds_the_statement_and_remakes_its_finding():
    claims = pd.DataFrame(
        {
            "claim": ["(2) f", "(2.a) h", "(2.e) s", "(2.h) s", "(3) g", "(3.a) h"],
            "role": ["finding", "headline", "supporting", "supporting", "finding", "headline"],
            "verdict": [REPRODUCED, REPRODUCED, REPRODUCED, REPRODUCED, PARTLY, PARTLY],
            "paper": "q",
            "reading": "",
            "measured": ["old", "m", "m", "m", "m3", "m"],
            "rule": "r",
        }
    )
    row = wrong_top_by_length(*_tables(["1978", "1509"], ["130.9", "172.4"]))
    out = with_row(claims, row)
    assert list(out.columns) == list(claims.columns)
    order = ["(2)", "(2.a)", "(2.e)", "(2.g)", "(2.h)", "(3)", "(3.a)"]
    assert list(out["claim"].str.split(" ").str[0]) == order
    top = out.iloc[0]
    assert top["verdict"] == REPRODUCED  # a supporting row never decides the finding
    assert "(2.e) reproduced, (2.g) not reproduced, (2.h) reproduced" in top["measured"]
    assert out.iloc[5]["measured"] == "m3"  # the other findings stay as they were
    assert len(with_row(out, row)) == len(out)  # added once, however often
