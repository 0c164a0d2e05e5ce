"""CLRS-Text's rules on the engine (experiments/clrs_text/rules.py): every threshold named once
with its provenance, the outcomes in the one comparison vocabulary, and a moved threshold that
changes the verdict and the rule text the claims table prints. (The known answers of every
outcome, profile and verdict are in tests/test_clrs_text_claims.py.)"""

from __future__ import annotations

import importlib
from dataclasses import replace

import pandas as pd
import pytest

from attnlimits.claims import (
    BETTER,
    EQUIVALENT,
    INCONCLUSIVE,
    MIXED,
    NOT,
    NOT_TESTABLE,
    OUTCOMES,
    PAPER,
    PARTLY,
    PROVENANCES,
    REPRODUCED,
    WORSE,
    Threshold,
)
from attnlimits.experiments.clrs_text import evaluate, rules

clrs_claims = importlib.import_module("attnlimits.experiments.clrs_text.claims")


def test_every_threshold_is_named_once_with_its_provenance_and_reason() -> None:
    declared = {v.name: v for v in vars(rules).values() if isinstance(v, Threshold)}
    assert declared == rules.THRESHOLDS
    assert {"CEILING", "MIN_SEEDS", "MARGIN", "NEARLY_ALL", "OUTLIERS", "OOD_SHARE"} <= set(
        declared
    )
    for t in declared.values():
        assert t.provenance in PROVENANCES and (t.reason or t.provenance == PAPER)
    # the testable gate reads the same objects (written once, in rules.py)
    assert evaluate.CEILING is rules.CEILING and evaluate.MIN_SEEDS is rules.MIN_SEEDS


def test_outcomes_and_profiles_are_the_engines_words() -> None:
    cases = [(0.06, 0.3, ()), (-0.3, -0.06, ()), (-0.04, 0.03, ()), (-0.1, 0.2, ())]
    got = {rules.outcome(lo, hi, ls) for lo, hi, ls in cases}
    got.add(rules.outcome(0.06, 0.3, ((0.1, 0.4), (-0.3, -0.05))))
    assert got == set(OUTCOMES) == {BETTER, WORSE, EQUIVALENT, INCONCLUSIVE, MIXED}
    assert rules.profile([]) == NOT_TESTABLE
    assert set(rules.DECIDED) | set(rules.UNDECIDED) == {*OUTCOMES, NOT_TESTABLE}


def _tables(low: float, high: float) -> tuple[dict[str, pd.DataFrame], dict]:
    """One algorithm, both arms at 0.95 in distribution; adaptive's extrapolation difference
    has the interval [low, high] pooled and at its one length."""
    acc = pd.DataFrame(
        {
            "arm": ["softmax", "adaptive"],
            "algorithm": "minimum",
            "length": 4,
            "in_distribution": True,
            "questions": 10,
            "accuracy": 0.95,
        }
    )
    row = {
        "arm": "adaptive",
        "algorithm": "minimum",
        "regime": "extrapolation",
        "testable": True,
        "difference": (low + high) / 2,
        "ci_low": low,
        "ci_high": high,
        "lengths": "8",
        "why": "",
    }
    paired = pd.DataFrame([row | {"scope": "pooled"}, row | {"scope": "length"}])
    return {"accuracy": acc, "paired": paired}, {"params": {"arms": ["softmax", "adaptive"]}}


def _headline(tables, meta) -> pd.Series:
    got = clrs_claims.claims(tables, meta)
    return got[got["claim"].str.startswith("(h) adaptive")].iloc[0]


def test_a_moved_margin_changes_the_verdict_and_the_printed_rule(monkeypatch) -> None:
    """A gain of 1 to 4 points is equivalent within ±0.05 (not reproduced: no algorithm
    better); within ±0.01 it is better (reproduced), and the rule column says ±0.01."""
    before = _headline(*_tables(0.01, 0.04))
    assert before["verdict"] == NOT and "within ±0.05" in before["rule"]
    assert "minimum: equivalent" in before["measured"]
    monkeypatch.setattr(rules, "MARGIN", replace(rules.MARGIN, value=0.01))
    after = _headline(*_tables(0.01, 0.04))
    assert after["verdict"] == REPRODUCED and "within ±0.01" in after["rule"]
    assert "±0.05" not in after["rule"] and "minimum: better" in after["measured"]


def test_moved_count_thresholds_change_the_verdict_and_the_text(monkeypatch) -> None:
    assert rules.comparison_verdict(3, 1, 0, 0) == PARTLY  # 1 of 4 against: above 10 %
    assert "≤ 10% worse or mixed" in rules.comparison_verdict.text()
    monkeypatch.setattr(rules, "OUTLIERS", replace(rules.OUTLIERS, value=0.25))
    assert rules.comparison_verdict(3, 1, 0, 0) == REPRODUCED
    assert "≤ 25% worse or mixed" in rules.comparison_verdict.text()
    monkeypatch.setattr(rules, "NEARLY_ALL", replace(rules.NEARLY_ALL, value=0.9))
    assert rules.comparison_verdict(3, 1, 0, 0) == PARTLY
    assert "≥ 90% of the run's algorithms better" in rules.comparison_verdict.text()


@pytest.mark.parametrize(("ceiling", "met"), [(0.90, False), (0.80, True)])
def test_a_moved_ceiling_changes_the_precondition_and_its_text(monkeypatch, ceiling, met) -> None:
    monkeypatch.setattr(rules, "CEILING", replace(rules.CEILING, value=ceiling))
    assert rules.learned(0.85) is met
    assert f"≥ {ceiling:.0%} in distribution" in rules.testable_text()


def test_the_docs_rules_table_follows_a_moved_threshold(monkeypatch) -> None:
    """docs/clrs_text.md's rules block is rendered from the rules' own texts."""
    from attnlimits.experiments.clrs_text.doc import rules_table

    assert "within ±0.05" in rules_table(rules.RULES)
    monkeypatch.setattr(rules, "MARGIN", replace(rules.MARGIN, value=0.01))
    assert "within ±0.01" in rules_table(rules.RULES) and "±0.05" not in rules_table(rules.RULES)
