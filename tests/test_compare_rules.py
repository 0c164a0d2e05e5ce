"""compare's rules on the engine: known answers for every outcome of each comparison (on both
sides of SIGNIFICANT and MARGIN), every threshold named once with its provenance, and a moved
threshold that changes a verdict and the text the report prints."""

from __future__ import annotations

import math
import os
import re
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from attnlimits.claims import (
    BETTER,
    EQUIVALENT,
    INCONCLUSIVE,
    NOT_TESTABLE,
    OUTCOMES,
    PAPER,
    PROVENANCES,
    REPRODUCED,
    WORSE,
    Threshold,
)
from attnlimits.experiments.compare import doc, rules
from attnlimits.experiments.compare.claims import claims, effects, sections
from attnlimits.experiments.report import block, fill

E9 = 1e-9


@pytest.mark.parametrize(
    ("delta_nll", "se", "want"),
    [
        (-0.1, 0.01, BETTER),  # perplexity −9.5 %, far beyond 2 SE
        (0.1, 0.01, WORSE),
        (-0.1, 0.05 - E9, BETTER),  # just inside 2 SE of 0 …
        (-0.1, 0.05, INCONCLUSIVE),  # … and on it: the interval reaches 0
        (0.1, 0.05 + E9, INCONCLUSIVE),
        (0.001, 0.001, EQUIVALENT),  # interval inside ±0.5 %
        (0.0, 0.0, EQUIVALENT),  # one value, no change (logn within the context)
        (0.01, 0.01, INCONCLUSIVE),  # straddles 0 and reaches past the margin
        (-0.004, 0.0015, INCONCLUSIVE),  # significant, but a change under the margin
        (math.log1p(0.005 + 1e-6), 1e-4, WORSE),  # the change just past the margin …
        (math.log1p(0.005 - 1e-6), 1e-4, INCONCLUSIVE),  # … and just inside it
        (0.1, math.nan, NOT_TESTABLE),  # one sequence: no standard error
    ],
)
def test_perplexity_outcome_known_answers(delta_nll, se, want) -> None:
    assert rules.perplexity_outcome(delta_nll, se) == want


@pytest.mark.parametrize(
    ("gap", "se", "want"),
    [
        (0.2, 0.05, BETTER),
        (-0.2, 0.05, WORSE),
        (0.1, 0.05 - E9, BETTER),
        (0.1, 0.05, INCONCLUSIVE),  # the interval's low end on 0
        (-0.1, 0.05, INCONCLUSIVE),
        (0.0, 0.0, INCONCLUSIVE),  # no margin for accuracy: never equivalent
        (math.nan, 0.1, INCONCLUSIVE),
    ],
)
def test_retrieval_outcome_known_answers(gap, se, want) -> None:
    assert rules.retrieval_outcome(gap, se) == want


def test_the_outcomes_are_the_engines_words() -> None:
    got = {
        rules.perplexity_outcome(d, s)
        for d, s in [(-0.1, 0.01), (0.1, 0.01), (0.0, 0.0), (0.01, 0.01), (0.1, math.nan)]
    }
    assert got == {BETTER, WORSE, EQUIVALENT, INCONCLUSIVE, NOT_TESTABLE}
    assert got - {NOT_TESTABLE} <= set(OUTCOMES)


def test_every_threshold_is_named_once_with_its_provenance_and_reason() -> None:
    declared = {v.name: v for v in vars(rules).values() if isinstance(v, Threshold)}
    assert declared == rules.THRESHOLDS
    for t in rules.THRESHOLDS.values():
        assert t.provenance in PROVENANCES and (t.reason or t.provenance == PAPER)


def _summary(*, sd: float = 0.01, sequences: int = 4) -> pd.DataFrame:
    """softmax and topk:k=4 at L = 32 and 64; topk's perplexity 3 % lower at both."""
    rows = []
    for spec, delta in (("softmax", 0.0), ("topk:k=4", math.log(0.97))):
        for length in (32, 64):
            rows.append(
                {
                    "normalizer": spec,
                    "length": length,
                    "delta_nll": delta,
                    "delta_nll_sd": 0.0 if spec == "softmax" else sd,
                    "sequences": sequences,
                    "perplexity_change": math.expm1(delta),
                    "perplexity": 10.0,
                    "accuracy": 0.5,
                    "accuracy_se": 0.05,
                    "head_entropy_median": 2.0,
                    "head_mass_mean": 1.0,
                    "head_max_weight_median": 0.5,
                    "time_vs_softmax": 1.0,
                    "seconds_per_forward": 0.1,
                }
            )
    return pd.DataFrame(rows)


META = {
    "model": {"id": "m", "max_context": 64},
    "params": {"train_length": 32},
    "normalizers": {
        "softmax": {"name": "softmax"},
        "topk:k=4": {"name": "topk", "params": {"k": 4}},
    },
}


def test_a_moved_threshold_changes_the_verdict_and_the_printed_rule(monkeypatch) -> None:
    """topk:k=4 is better at L = 64 ≥ 10·4: reproduced; with MUCH_LONGER at 20 no L is far
    enough (not testable), and the rule column says 20·k; with MARGIN at 5 % a 3 % fall is no
    longer better (not reproduced), and the effects paragraph says 5%."""
    before = claims({"summary": _summary()}, META).iloc[0]
    assert before["verdict"] == REPRODUCED and "L ≥ 10·k" in before["rule"]
    monkeypatch.setattr(rules, "MUCH_LONGER", replace(rules.MUCH_LONGER, value=20))
    after = claims({"summary": _summary()}, META).iloc[0]
    assert after["verdict"] == NOT_TESTABLE and "L ≥ 20·k" in after["rule"]
    assert "no L ≥ 20·k = 80" in after["measured"]

    monkeypatch.setattr(rules, "MUCH_LONGER", replace(rules.MUCH_LONGER, value=10))
    text = "\n".join(sections({"summary": _summary()}, META))
    assert "±0.5%" in text and "±5.0%" not in text
    monkeypatch.setattr(rules, "MARGIN", replace(rules.MARGIN, value=0.05))
    assert claims({"summary": _summary()}, META).iloc[0]["verdict"] == "not reproduced"
    assert "±5.0%" in "\n".join(sections({"summary": _summary()}, META))


def test_a_moved_significance_factor_changes_the_outcome_and_its_text(monkeypatch) -> None:
    assert rules.retrieval_outcome(0.1, 0.04) == BETTER and "± 2 standard" in rules.effects_text()
    monkeypatch.setattr(rules, "SIGNIFICANT", replace(rules.SIGNIFICANT, value=3.0))
    assert rules.retrieval_outcome(0.1, 0.04) == INCONCLUSIVE
    assert "± 3 standard" in rules.effects_text()


def test_one_sequence_is_not_testable_with_its_reason_in_the_report() -> None:
    table = effects(_summary(sd=math.nan, sequences=1))
    assert set(table["ppl_effect"]) == {NOT_TESTABLE}
    row = claims({"summary": _summary(sd=math.nan, sequences=1)}, META).iloc[0]
    assert f"perplexity {NOT_TESTABLE} ({rules.ONE_SEQUENCE})" in row["measured"]
    text = "\n".join(sections({"summary": _summary(sd=math.nan, sequences=1)}, META))
    assert f"{NOT_TESTABLE} at 32, 64 ({rules.ONE_SEQUENCE})" in text


def test_the_docs_rules_and_thresholds_are_the_codes() -> None:
    """docs/compare.md's generated blocks are compare.doc's rendering of rules.py;
    ATTNLIMITS_WRITE_DOCS=1 rewrites them."""
    path = Path(__file__).parents[1] / "docs" / "compare.md"
    blocks, text = doc.render(), path.read_text(encoding="utf-8")
    if os.environ.get("ATTNLIMITS_WRITE_DOCS"):
        text = fill(text, blocks)
        path.write_text(text, encoding="utf-8")
    for name, want in blocks.items():
        assert block(text, name) == want, f"{name}: python -m attnlimits.experiments.compare.doc"
    assert set(re.findall(r"<!-- generated: (.+?) -->", text)) == set(blocks)
