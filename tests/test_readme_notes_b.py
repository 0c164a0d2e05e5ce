"""The README's notes under paper B's findings table say what the table's rows say (round 8's
point 2: a fixed note read "no second λ is run, so (3) reads partly" beside a table reading
not reproduced)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from attnlimits.claims import NA, NOT, NOT_TESTABLE, PARTLY, REPRODUCED
from attnlimits.experiments.report import block
from attnlimits.experiments.softmax_not_enough import second_lambda
from attnlimits.experiments.softmax_not_enough.readme_notes import (
    note_four,
    note_three,
    note_two,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data" / "softmax_not_enough"


def _log(lam: float, growth: float, acc: float) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "seed": [0, 0, 1, 1],
            "step": [100, 20000] * 2,
            "spread": [10.0, 10.0 * growth] * 2,
            "bound": [50.0, 60.0] * 2,
            "acc": [0.5, acc] * 2,
            "weight_decay": lam,
        }
    )


def _claims(three: str, c_row: dict[str, str]) -> pd.DataFrame:
    rows = [
        {"claim": "(3) sharpness", "verdict": three, "measured": ""},
        {"claim": "(3.a) spread", "verdict": REPRODUCED,
         "measured": "…; the median of the per-seed ratios last / first: × 5.41 (the verdict …"},
        {"claim": "(3.b) bound", "verdict": REPRODUCED,
         "measured": "…; the median of the per-seed ratios last / first: × 3.98 (the verdict …"},
        {k: c_row[k] for k in ("claim", "verdict", "measured")},
    ]  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("growth", "acc", "c", "three"),
    [
        (0.0, 0.22, NOT_TESTABLE, PARTLY),  # the λ = 1e-2 run: nothing learnt
        (2.0, 0.95, REPRODUCED, REPRODUCED),
        (0.5, 0.95, NOT, NOT),
    ],
)
def test_note_three_says_the_verdicts_of_its_rows(growth, acc, c, three):
    """The note names (3)'s and (3.c)'s verdicts as the rows have them, and (3.c)'s λ, spread
    and training accuracy from its measured text (the row written by second_lambda.run_row)."""
    row = second_lambda.run_row(_log(1e-2, growth, acc), 1e-3)
    assert row["verdict"] == c
    note = note_three(_claims(three, row))
    assert note.startswith(f"- **(3)** reads *{three}*.")
    assert f"(3.c), the growth at a λ not chosen for it, reads *{c}*: at λ = 0.01" in note
    assert f"training accuracy at the last step was {acc:.2f}" in note
    assert "× 5.41 and × 3.98" in note and "no second λ is run" not in note.lower()
    said = "did not learn the task, so the growth is not tested there"
    assert (said in note) == (c == NOT_TESTABLE)
    assert ("the rule written before it read not reproduced" in note) == (c == NOT_TESTABLE)


def test_note_three_names_a_pre_registered_lambda_only_while_it_is_not_run():
    """Each λ of second_lambda.PREREGISTERED missing from (3.c)'s row is said to be not run."""
    one = second_lambda.run_row(_log(1e-2, 0.0, 0.22), 1e-3)
    assert "; λ = 0.003 is pre-registered and not run" in note_three(_claims(PARTLY, one))
    both = pd.concat([_log(1e-2, 0.0, 0.22), _log(3e-3, 2.0, 1.0)], ignore_index=True)
    note = note_three(_claims(PARTLY, second_lambda.run_row(both, 1e-3)))
    assert "at λ = 0.003 the logit spread went" in note and "not run" not in note


def test_note_three_without_the_second_run_says_so():
    row = second_lambda.not_run(1e-3, 100.0)
    note = note_three(_claims(PARTLY, row))
    assert "No second λ is run, so (3.c) is n/a and (3) reads at most partly" in note
    assert row["verdict"] == NA


def test_note_two_gives_the_per_size_reading_beside_the_pooled_rule():
    claims = pd.DataFrame(
        {"claim": ["(2) helps", "(2.a) larger inputs"], "verdict": [REPRODUCED, REPRODUCED],
         "measured": ["", "mean gain over n = 32…128 (3 sizes): 8.3 [7.1, 9.4] points. Per size "
                      "(…): by our paired interval over seeds and test sets 2 of 3 (P R R: 2 of "
                      "3 sizes agree; that reading: partly); by the paper's …"]}
    )  # fmt: skip
    sizes = pd.DataFrame(
        {"size": ["16", "32", "64", "128"],
         "adaptive vs softmax (ours)": ["inconclusive", "inconclusive", "better", "better"]}
    )  # fmt: skip
    note = note_two(claims, sizes)
    assert note.startswith("- **(2)** reads *reproduced* on the gain pooled")
    assert "((2.a): 8.3 [7.1, 9.4] points)" in note and "more lenient" in note
    assert "2 of 3 sizes show the gain (32: intervals that hold 0)" in note
    assert "that reading is *partly*" in note


def test_note_four_labels_both_readings():
    claims = pd.DataFrame(
        {"claim": ["(4) our test: zero", "(2.i) §3, the conditional reading (ours): x"],
         "verdict": [NOT, ""], "measured": ["", ""]}
    )  # fmt: skip
    note = note_four(claims)
    assert "read as aggregate accuracy (the plain reading): *not reproduced*" in note
    assert "Read conditionally (our reading since round 5" in note and "((2.i), n/a)" in note


def _table_verdict(text: str, claim_id: str) -> str:
    found = re.search(rf"^\| {re.escape(claim_id)} [^|]*\| ([^|]+?) \|$", text, flags=re.M)
    assert found, f"no {claim_id} row in the README's paper B table"
    return found.group(1)


def test_the_readme_notes_agree_with_the_table_above_them():
    """On the committed README and claims table: each note's verdicts are the table's (the
    finding's, and (3.c)'s from claims.csv), so a stale note fails here."""
    readme = block((ROOT / "README.md").read_text(encoding="utf-8"), "found-max-retrieval")
    claims = pd.read_csv(DATA / "claims.csv", dtype=str, keep_default_na=False)
    verdict = dict(zip(claims["claim"].str.split(" ").str[0], claims["verdict"], strict=True))
    for finding in ("(2)", "(3)"):
        shown = _table_verdict(readme, finding)
        assert shown.startswith(verdict[finding])
        assert f"- **{finding}** reads *{verdict[finding]}*" in readme, finding
    c = verdict["(3.c)"] or NA
    if c == NA:
        assert "No second λ is run" in readme
    else:
        assert f"(3.c), the growth at a λ not chosen for it, reads *{c}*" in readme
    assert f"(the plain reading): *{verdict['(4)']}*" in readme


def test_a_split_among_seeds_is_said_beside_the_median():
    """At λ = 1e-2 three of ten seeds learnt the task while the median did not: the row and
    the note say so (description; the verdict stays the precondition's)."""
    log = pd.concat(
        [
            _log(1e-2, 0.0, 0.2).assign(seed=[10 * k, 10 * k, 10 * k + 1, 10 * k + 1])
            for k in range(2)  # four seeds that learn nothing
        ]
        + [_log(1e-2, 9.0, 1.0).assign(seed=lambda d: d["seed"] + 20)]  # two that do
    )
    row = second_lambda.run_row(log, 1e-3)
    assert row["verdict"] == NOT_TESTABLE
    assert (
        "(2 of 6 seeds reach 0.9 alone; their logit spread 10–10 → 90–90, × 9–9)"
        in (row["measured"])
    )
    note = note_three(_claims(PARTLY, row))
    assert "(2 of 6 seeds did, their spread growing from 10–10 to 90–90)" in note


def test_app_f_sentence_names_our_choice_of_inputs():
    """Round 8, point 6: the README's App. F sentence says the inputs are ours (their sizes
    from fit_sizes.csv), not "App. F's procedure as our copy states it"."""
    from attnlimits.experiments import what_we_found

    beta = pd.DataFrame({"fit": ["paper", "refit"], "theta_min": ["—", "0.005"],
                         "β(H=1)": ["1.27", "3.66"], "β(H=2)": ["2.10", "8.78"]})  # fmt: skip
    sizes = pd.DataFrame({"size": ["16", "32", "2048"]})
    said = what_we_found.app_f_sentence(
        beta, pd.DataFrame(columns=["fit", "evaluated on seeds"]), sizes
    )
    assert "App. F's procedure, with our choice of inputs (n = 16 … 2,048), on our models" in said
    assert "as our copy states it" not in said
    bare = what_we_found.app_f_sentence(beta, pd.DataFrame(columns=["fit", "evaluated on seeds"]))
    assert "with our choice of inputs, on our models" in bare
