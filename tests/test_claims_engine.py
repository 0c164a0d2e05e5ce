"""The claims engine (attnlimits.claims): thresholds with provenance, rule shapes that judge and
state themselves, and the property the engine exists for: a threshold changed in one place
changes the verdict and every sentence that states it."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from attnlimits.claims import (
    AFTER_RUNS,
    NA,
    NOT,
    OURS,
    PAPER,
    PARTLY,
    REPRODUCED,
    Band,
    Graded,
    Holds,
    Rule,
    Share,
    Threshold,
)
from attnlimits.experiments.limitations import findings, rules

LO = Threshold("LO", 0.7, OURS, "a reason")
HI = Threshold("HI", 1.3, OURS, "a reason")
GROWS = Threshold("GROWS", 0.1, AFTER_RUNS, "set after the runs, lenient")
SLOPE = Graded("slope", "log-log slope", Band(LO, HI), Band(lo=GROWS))


def test_a_threshold_needs_a_known_provenance_a_reason_and_a_finite_value() -> None:
    assert Threshold("P", 0.06, PAPER).reason == ""  # the paper's number needs no reason
    with pytest.raises(ValueError, match="provenance"):
        Threshold("X", 1.0, "folklore", "why")
    with pytest.raises(ValueError, match="needs its reason"):
        Threshold("X", 1.0, OURS)
    with pytest.raises(ValueError, match="finite"):
        Threshold("X", math.nan, PAPER)


def test_a_threshold_reads_as_its_number() -> None:
    pct = Threshold("PCT", 0.25, OURS, "why", ".0%")
    assert str(pct) == "25%" and f"{pct}" == "25%" and f"{pct:.2f}" == "0.25"
    assert pct * 2 == 0.5 and 2 * pct == 0.5 and 0.2 < pct <= 0.25 and float(pct) == 0.25


@pytest.mark.parametrize(
    ("value", "want"),
    [(0.7, REPRODUCED), (1.3, REPRODUCED), (1.0, REPRODUCED), (0.1, PARTLY), (5.0, PARTLY),
     (math.nextafter(0.1, 0), NOT), (-1.0, NOT), (math.nan, NA), (None, NA), (math.inf, NA)],
)  # fmt: skip
def test_graded_known_answers_on_both_sides_of_each_threshold(value, want) -> None:
    assert SLOPE(value) == want


def test_band_ends_open_and_closed() -> None:
    zero = Threshold("Z", 0.0, OURS, "any")
    assert 0.0 not in Band(lo=zero, open_lo=True) and 1e-12 in Band(lo=zero, open_lo=True)
    assert 0.0 in Band(lo=zero) and 1.0 not in Band(hi=Threshold("O", 1.0, OURS, "w"), open_hi=True)
    with pytest.raises(ValueError, match="lower or an upper"):
        Band()
    with pytest.raises(ValueError, match=r"band HI = 1\.3 > LO = 0\.7"):
        Band(HI, LO)


def test_magnitude_judges_the_absolute_value() -> None:
    change = Graded("c", "|change|", Band(hi=Threshold("S", 0.05, OURS, "w")), magnitude=True)
    assert change(-0.04) == REPRODUCED and change(0.06) == NOT and change(-0.06) == NOT


def test_the_text_is_formatted_from_the_thresholds_and_follows_a_change() -> None:
    assert SLOPE.text() == (
        "log-log slope in [0.7, 1.3]: reproduced; ≥ 0.1: partly; else not reproduced"
    )
    moved = replace(SLOPE, partly=Band(lo=replace(GROWS, value=0.2)))
    assert "≥ 0.2: partly" in moved.text() and moved(0.15) == NOT and SLOPE(0.15) == PARTLY


def test_flips_name_the_value_at_which_each_threshold_changes_the_verdict() -> None:
    """MiniLM's E slope 0.11 against GROWS = 0.1 (issue 56): partly; GROWS above 0.11 would make
    it not reproduced, LO below it reproduced; HI cannot change it there."""
    assert SLOPE(0.11) == PARTLY
    assert SLOPE.flips(0.11) == {"LO": 0.11, "GROWS": 0.11}
    assert SLOPE.flips(1.0) == {"LO": 1.0, "HI": 1.0}  # either end moved past 1.0: partly
    assert SLOPE.flips(-1.0) == {"LO": -1.0, "GROWS": -1.0}
    assert SLOPE.flips(math.nan) == {}


def test_share_and_holds() -> None:
    each = Share("each", "it holds", "head")
    assert [each([True]), each([True, False]), each([False]), each([])] == [
        REPRODUCED,
        PARTLY,
        NOT,
        NA,
    ]
    assert each.text().startswith("it holds in every head: reproduced")
    bound = Holds("bound", "the bound holds", "head")
    assert [bound(1.0), bound(0.999), bound(math.nan)] == [REPRODUCED, NOT, NA]


def test_a_rule_of_another_shape_judges_and_states_itself() -> None:
    t = Threshold("T", 2.0, OURS, "why")
    rule = Rule("r", lambda x: REPRODUCED if x >= t.value else NOT, lambda: f"x ≥ {t}", (t,))
    assert rule(3) == REPRODUCED and rule.text() == "x ≥ 2" and rule.__name__ == "r"


# ---- paper A's rules on the engine --------------------------------------------------------------


def test_every_threshold_of_paper_a_is_named_once_with_its_provenance() -> None:
    used = {id(t): t for rule in rules.RULES for t in rule.thresholds}.values()
    assert len({t.name for t in used}) == len(used) == len(rules.THRESHOLDS)  # no name twice
    declared = [v for v in vars(rules).values() if isinstance(v, Threshold)]
    assert {t.name for t in declared} == set(rules.THRESHOLDS)  # none that no rule reads
    assert rules.THRESHOLDS["PAPER_FRACTION"].provenance == PAPER
    assert rules.THRESHOLDS["BAND_LO"].provenance == PAPER
    assert all(t.reason for t in rules.THRESHOLDS.values() if t.provenance != PAPER)


def test_a_changed_threshold_changes_the_reports_rule_text(monkeypatch) -> None:
    """The claims row's rule column is the rule's own text: a moved threshold shows there."""
    import pandas as pd

    rows = [
        {"L": L, "layer": 0, "head": 0, "window": 0, "N": 5, "distance": float(L),
         "bound": 3.0 * L, "expectation_exact": 0.2 * L}
        for L in (32, 64, 128)
    ]  # fmt: skip
    table = pd.DataFrame(rows)
    before = {r["claim"]: r["rule"] for r in findings.claim_i(table, "expectation_exact")}
    grows = replace(rules.GROWS, value=0.25)
    monkeypatch.setattr(rules, "linear_growth", replace(rules.linear_growth, partly=Band(grows)))
    loose = replace(rules.LOOSE, value=5.0)
    monkeypatch.setattr(rules, "bound_loose", replace(rules.bound_loose, reproduced=Band(lo=loose)))
    after = {r["claim"]: r["rule"] for r in findings.claim_i(table, "expectation_exact")}
    changed = {k for k in before if before[k] != after[k]}
    assert changed == {c for c in before if c.startswith(("(i.a)", "(i.b)", "(i.d)"))}
    assert any("≥ 0.25: partly" in t for t in after.values())
    assert any("≥ 5: reproduced" in t for t in after.values())


def test_a_changed_threshold_changes_a_custom_rules_text(monkeypatch) -> None:
    before = rules.converges.text()
    monkeypatch.setattr(rules, "CONVERGED", replace(rules.CONVERGED, value=0.5))
    assert before != rules.converges.text() and "[0.5, 1.5]" in rules.converges.text()
    assert rules.converges(0.6, 0.7) == REPRODUCED  # within 1 ± 0.5 now
