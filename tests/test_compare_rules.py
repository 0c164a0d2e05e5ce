"""compare's rules on the engine: known answers for every outcome of each comparison (on both
sides of the interval's end and of MARGIN; the interval is the statistics module's), every
threshold named once with its provenance, and a moved threshold that changes a verdict and the
text the report prints."""

from __future__ import annotations

import math
import os
import re
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

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
    statistics,
)
from attnlimits.experiments.compare import doc, rules
from attnlimits.experiments.compare.claims import claims, effects, sections
from attnlimits.experiments.report import block, fill

E9 = 1e-9
#: the standard error at which 0.1's 95 % normal interval ends on 0
Z_EDGE = 0.1 / stats.norm.ppf(0.975)


@pytest.mark.parametrize(
    ("delta_nll", "se", "want"),
    [
        (-0.1, 0.01, BETTER),  # perplexity −9.5 %, far beyond 1.96 SE
        (0.1, 0.01, WORSE),
        (-0.1, Z_EDGE - E9, BETTER),  # the interval's end just short of 0 …
        (-0.1, Z_EDGE + E9, INCONCLUSIVE),  # … and just past it
        (0.1, Z_EDGE + E9, INCONCLUSIVE),
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
        (0.1, Z_EDGE - E9, BETTER),
        (0.1, Z_EDGE + E9, INCONCLUSIVE),  # the interval's low end past 0
        (-0.1, Z_EDGE + E9, INCONCLUSIVE),
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
    assert set(rules.READ_BY) <= set(rules.THRESHOLDS)
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


def test_a_moved_level_changes_the_outcome_and_its_text(monkeypatch) -> None:
    """0.1 ± z·0.04: above 0 at 95 % (z 1.96), reaching past it at 99 % (z 2.58)."""
    assert rules.retrieval_outcome(0.1, 0.04) == BETTER and "95% interval" in rules.effects_text()
    monkeypatch.setattr(rules, "LEVEL", replace(rules.LEVEL, value=0.99))
    assert rules.retrieval_outcome(0.1, 0.04) == INCONCLUSIVE
    assert "99% interval" in rules.effects_text()


@pytest.mark.parametrize(("df", "want"), [(math.inf, BETTER), (30, BETTER), (2, INCONCLUSIVE)])
def test_the_perplexity_interval_is_t_on_the_sequences(df, want) -> None:
    """−0.1 with SE 0.03: ±0.059 (normal), ±0.061 (t on 30), ±0.129 (t on 2: 3 sequences)."""
    assert rules.perplexity_outcome(-0.1, 0.03, df) == want


def test_the_interval_is_the_statistics_modules() -> None:
    got = rules.significance(0.3, 0.1, 4)
    want = statistics.difference_interval(0.3, 0.1, 4)
    assert got == pytest.approx((float(want.low), float(want.high)), abs=0)
    assert got[1] - 0.3 == pytest.approx(0.1 * stats.t.ppf(0.975, 4))


def test_a_few_sequences_widen_the_summarys_interval() -> None:
    """The summary's sequences set the degrees of freedom: topk's 3 % fall with a per-sequence
    SD of 0.02 is better over 4 sequences (t on 3: ±0.032 > 0.030: inconclusive) only with
    more of them (t on 29 over 30)."""
    few = effects(_summary(sd=0.02, sequences=4))
    many = effects(_summary(sd=0.02 * math.sqrt(30 / 4), sequences=30))
    assert set(few["ppl_effect"]) == {INCONCLUSIVE}
    assert set(many["ppl_effect"]) == {BETTER}


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
