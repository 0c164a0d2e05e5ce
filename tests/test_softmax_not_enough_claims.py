"""Paper B's verdict rules on the claims engine: a known answer for every verdict of every rule,
on both sides of each threshold, and the rules' texts following their thresholds."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from attnlimits.claims import AFTER_RUNS, NA, NOT, NOT_TESTABLE, PARTLY, PROVENANCES, REPRODUCED
from attnlimits.experiments.softmax_not_enough import rules


@pytest.mark.parametrize(
    ("value", "verdict"),
    [
        (0.95, REPRODUCED),
        (0.9, REPRODUCED),
        (0.89, PARTLY),
        (0.5, PARTLY),
        (0.49, NOT),
        (math.nan, NA),
        (None, NA),
    ],
)
def test_sharp(value, verdict):
    assert rules.sharp(value) == verdict


def test_sharp_is_after_runs_and_flips_at_the_measured_value():
    """SHARP was written after 0.922 was public: its flip point on that value is 0.922 (moved
    above it, the verdict falls to partly)."""
    assert rules.SHARP.provenance == AFTER_RUNS and rules.MOST.provenance == AFTER_RUNS
    assert rules.sharp.flips(0.922) == {"SHARP": 0.922}
    assert rules.sharp.flips(0.6) == {"SHARP": 0.6, "MOST": 0.6}


@pytest.mark.parametrize(
    ("slope", "verdict"),
    [
        (-1.0, REPRODUCED),
        (-0.8, REPRODUCED),
        (-1.2, REPRODUCED),
        (-0.79, PARTLY),
        (-1.21, PARTLY),
        (-0.01, PARTLY),
        (0.0, NOT),
        (0.3, NOT),
        (math.nan, NA),
    ],
)
def test_towards_uniform(slope, verdict):
    assert rules.towards_uniform(slope) == verdict


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (0.01, 0.2, REPRODUCED),
        (-0.2, -0.01, NOT),
        (-0.1, 0.1, PARTLY),
        (0.0, 0.1, PARTLY),
        (math.nan, 0.1, NA),
    ],
)
def test_pooled_gain(low, high, verdict):
    assert rules.pooled_gain(low, high) == verdict


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (-0.2, -0.01, REPRODUCED),  # argmax below softmax: temperature zero degrades
        (0.01, 0.2, NOT),  # argmax above softmax
        (-0.1, 0.1, PARTLY),
        (-0.1, 0.0, PARTLY),  # touching 0 is not wholly below it
        (0.0, 0.1, PARTLY),
        (math.nan, -0.1, NA),
    ],
)
def test_degrades(low, high, verdict):
    """§3's argmax row: the interval of argmax − softmax, (2.a)'s rule with the sign turned."""
    assert rules.degrades(low, high) == verdict


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (0.01, 0.2, REPRODUCED),  # argmax above softmax: softmax errs beyond its top logit
        (-0.2, -0.01, NOT),  # softmax above argmax
        (-0.1, 0.1, PARTLY),
        (0.0, 0.1, PARTLY),  # touching 0 is not wholly above it
        (math.nan, 0.1, NA),
    ],
)
def test_dispersion_errors(low, high, verdict):
    """Corollary B.1 since round 5's point 8: the interval of argmax − softmax above 0."""
    assert rules.dispersion_errors(low, high) == verdict
    assert "never disperses" in rules.dispersion_errors.text()


def test_entropy_rises():
    """(1.b) since referee point 10: each step's interval low end above 0 counts a rise."""
    assert rules.entropy_rises([0.1, 0.2, 0.01]) == REPRODUCED
    assert rules.entropy_rises([0.1, -0.01, 0.2]) == PARTLY
    assert rules.entropy_rises([0.1, 0.0]) == PARTLY  # an interval touching 0 is no rise
    assert rules.entropy_rises([-0.1, -0.2]) == NOT
    assert rules.entropy_rises([math.nan, math.nan]) == NA
    assert rules.entropy_rises([]) == NA


def test_higher_with_interval():
    """(2.b) since referee point 15: a ratio counts only with its interval off 1."""
    hw = rules.higher_with_interval
    assert hw([1.2, 1.6], [1.1, 1.3], [1.3, 1.9]) == REPRODUCED
    assert hw([1.07, 1.6], [0.9, 1.3], [1.2, 1.9]) == PARTLY  # n = 128's case: left out
    assert hw([1.07, 1.6], [1.01, 1.3], [1.2, 1.9]) == REPRODUCED  # 1.07 ≥ 1.05, above 1
    assert hw([1.04, 1.6], [1.01, 1.3], [1.1, 1.9]) == PARTLY  # real but below HIGHER
    assert hw([0.8, 1.02], [0.7, 1.01], [0.9, 1.03]) == NOT
    assert hw([1.07], [0.9], [1.2]) == NA  # nothing conclusive
    assert hw([math.nan], [math.nan], [math.nan]) == NA


def test_higher_flip():
    """Round 6's point 10: (2.b)'s flip point, the smallest ratio a size counts higher with,
    where HIGHER moved past it changes the verdict; "" where it would not, or none counts."""
    run = ([1.07, 1.67, 2.16], [1.03, 1.62, 2.14], [1.11, 1.71, 2.18])  # the committed run
    assert rules.higher_flip(*run) == "; the verdict flips if HIGHER passes 1.07"
    assert rules.higher_flip([1.07, 1.5], [0.9, 1.2], [1.2, 1.8]) == (
        "; the verdict flips if HIGHER passes 1.5"  # partly (one left out) → not reproduced
    )
    some = ([1.07, 1.67, 1.01], [1.03, 1.62, 1.005], [1.11, 1.71, 1.02])
    assert rules.higher_with_interval(*some) == PARTLY and rules.higher_flip(*some) == ""
    assert rules.higher_flip([1.07], [0.9], [1.2]) == ""  # nothing counted


def test_significant_sizes_counts_a_size_where_adaptive_is_higher_with_p_below_alpha():
    assert rules.significant_sizes([0.1, 0.2], [0.01, 0.049]) == REPRODUCED
    assert rules.significant_sizes([0.1, 0.2], [0.01, 0.05]) == PARTLY  # p = α is not below it
    assert rules.significant_sizes([0.1, -0.2], [0.01, 0.01]) == PARTLY  # significant, worse
    assert rules.significant_sizes([0.1, 0.2], [0.5, math.nan]) == NOT
    assert rules.significant_sizes([], []) == NA


def test_higher_on_target():
    assert rules.higher_on_target([1.05, 2.0]) == REPRODUCED
    assert rules.higher_on_target([1.04, 2.0]) == PARTLY
    assert rules.higher_on_target([1.04, 0.5]) == NOT
    assert rules.higher_on_target([math.nan, 1.2]) == REPRODUCED  # a size without such sets
    assert rules.higher_on_target([]) == NA


@pytest.mark.parametrize(
    ("ratio", "verdict"),
    [
        (1.5, REPRODUCED),
        (3.0, REPRODUCED),
        (1.49, PARTLY),
        (1.0001, PARTLY),
        (1.0, NOT),
        (0.7, NOT),
        (math.inf, NA),
    ],
)
def test_grows(ratio, verdict):
    assert rules.grows(ratio) == verdict


@pytest.mark.parametrize(
    ("accuracy", "ratio", "verdict"),
    [
        (1.0, 2.0, REPRODUCED),
        (0.9, 1.5, REPRODUCED),  # at LEARNT: learnt
        (0.95, 1.2, PARTLY),
        (0.95, 0.0, NOT),
        (0.8999, 2.0, NOT_TESTABLE),  # the precondition decides whatever the growth
        (0.22, 0.0, NOT_TESTABLE),  # the λ = 1e-2 run: nothing learnt
        (math.nan, 2.0, NA),
        (0.95, math.nan, NA),
    ],
)
def test_grows_if_learnt(accuracy, ratio, verdict):
    """Round 8's point 1 (after the λ = 1e-2 run, more lenient): (3.c)'s growth is judged only
    where the model learnt the task at the second λ (training accuracy ≥ LEARNT)."""
    assert rules.grows_if_learnt(accuracy, ratio) == verdict
    assert rules.LEARNT.provenance == AFTER_RUNS and "more lenient" in rules.LEARNT.reason
    assert rules.grows_if_learnt.text().startswith(
        "the training accuracy at the last step, median over seeds, < 0.9: not testable"
    )


@pytest.mark.parametrize(
    ("ratio", "verdict"),
    [(48.3, REPRODUCED), (1.5, REPRODUCED), (1.49, PARTLY), (1.0001, PARTLY), (1.0, NOT),
     (0.5, NOT), (math.nan, NA)],
)  # fmt: skip
def test_wrong_top_grows(ratio, verdict):
    """§3's growing chance that a wrong item has the largest logit: the share's rise from the
    smallest App. F size to the largest, at least GROWN; any rise partly; none not."""
    assert rules.wrong_top_grows(ratio) == verdict
    assert "largest size over smallest ≥ 1.5: reproduced; > 1: partly" in (
        rules.wrong_top_grows.text()
    )


@pytest.mark.parametrize(
    ("ratio", "verdict"),
    [
        (1.6, REPRODUCED),
        (1.5, REPRODUCED),
        (1.49, PARTLY),
        (1.0001, PARTLY),
        (1.0, NOT),
        (1509 / 1978, NOT),
        (math.nan, NA),
    ],
)
def test_wrong_top_with_training(ratio, verdict):
    """Point 11: the same sentence read with its subject, parameter size, across training
    lengths: the share's rise from the shortest length to the longest, at least GROWN; any
    rise partly; a fall (as the ablation's 1,978 → 1,509 kept sets) not reproduced."""
    assert rules.wrong_top_with_training(ratio) == verdict
    assert "longest training length over shortest ≥ 1.5: reproduced; > 1: partly" in (
        rules.wrong_top_with_training.text()
    )
    assert set(rules.wrong_top_with_training.flips(1509 / 1978)) == {"GROWN", "RISES"}


@pytest.mark.parametrize(
    ("low", "verdict"),
    [(0.993, REPRODUCED), (0.95, REPRODUCED), (0.949, NOT), (0.5, NOT), (math.nan, NA)],
)
def test_stable_baseline(low, verdict):
    """Point 19, App. A's stable baseline: the training size's interval's lower end ≥ STABLE."""
    assert rules.stable_baseline(low) == verdict
    assert rules.STABLE.provenance == AFTER_RUNS
    assert "interval's lower end ≥ 0.95: reproduced; else not reproduced" in (
        rules.stable_baseline.text()
    )


@pytest.mark.parametrize(
    ("low", "verdict"),
    [(0.993, PARTLY), (0.95, PARTLY), (0.949, NOT), (0.5, NOT), (math.nan, NA)],
)
def test_stable_methods(low, verdict):
    """Round 6's point 11: (1.d)'s sentence is that both methods are effective, which no run
    tests, so a stable baseline reads at most partly."""
    assert rules.stable_methods(low) == verdict
    assert "≥ 0.95: partly (at most: that both methods make it so is not tested)" in (
        rules.stable_methods.text()
    )
    assert rules.stable_methods in rules.RULES and rules.stable_baseline not in rules.RULES


@pytest.mark.parametrize(
    ("train_low", "largest_high", "verdict"),
    [
        (0.993, 0.291, REPRODUCED),
        (0.5, 0.499, REPRODUCED),
        (0.5, 0.5, NOT),
        (0.9, 0.95, NOT),
        (math.nan, 0.2, NA),
        (0.9, math.nan, NA),
    ],
)
def test_accuracy_falls(train_low, largest_high, verdict):
    """Point 19, Corollary B.1 and §5's "does not escape": the largest size's interval wholly
    below the training size's; touching or overlapping is not a fall."""
    assert rules.accuracy_falls(train_low, largest_high) == verdict
    assert "95% interval wholly below" in rules.accuracy_falls.text()


def test_checks_are_bounds_with_no_partly():
    assert rules.falls_everywhere(1.0) == REPRODUCED and rules.falls_everywhere(0.99) == NOT
    assert rules.bounded([1.0, 1.0]) == REPRODUCED and rules.bounded([1.0, 0.999]) == NOT
    assert rules.bounded([]) == NA and rules.bounded([math.nan]) == NA
    assert rules.monotone(1.0) == REPRODUCED and rules.spread_bound(0.5) == NOT


def test_every_threshold_is_declared_once_with_a_provenance_and_read_by_a_rule():
    read = [t.name for r in rules.RULES for t in r.thresholds]
    assert set(read) == set(rules.THRESHOLDS)
    assert all(t.provenance in PROVENANCES for t in rules.THRESHOLDS.values())
    from attnlimits.claims import Threshold

    declared = {n for n in dir(rules) if isinstance(getattr(rules, n), Threshold)}
    assert declared == set(rules.THRESHOLDS)


def test_a_changed_threshold_changes_the_rule_text(monkeypatch):
    before = {r.name: r.text() for r in rules.RULES}
    assert "≥ 0.9: reproduced; ≥ 0.5: partly" in before["sharp"]
    assert "in [-1.2, -0.8]: reproduced; < 0: partly" in before["towards_uniform"]
    assert "95% interval" in before["pooled_gain"] and "≥ 1.05" in before["higher_on_target"]
    moved = replace(rules.SHARP, value=0.95)
    graded = replace(rules.sharp, reproduced=replace(rules.sharp.reproduced, lo=moved))
    assert "≥ 0.95: reproduced" in graded.text() and graded(0.922) == PARTLY
    monkeypatch.setattr(rules, "ALPHA", replace(rules.ALPHA, value=0.01))
    assert (
        "99% interval" in rules.pooled_gain.text() and "p < 0.01" in rules.significant_sizes.text()
    )
    assert rules.significant_sizes([0.1], [0.02]) == NOT
    monkeypatch.setattr(rules, "HIGHER", replace(rules.HIGHER, value=1.5))
    assert "≥ 1.5" in rules.higher_on_target.text() and rules.higher_on_target([1.2]) == NOT


def test_set_attention_matches_a_naive_per_set_computation():
    """One row per (norm, seed, size, set): the attention on the max-priority item, whether it
    holds the top logit, and Lemma 2.1's spread and extreme coefficients (float64, θ = 1)."""
    import torch

    from attnlimits.experiments.softmax_not_enough.config import ModelConfig
    from attnlimits.experiments.softmax_not_enough.evaluate import set_attention
    from attnlimits.experiments.softmax_not_enough.model import (
        MaxRetrievalModel,
        make_batch,
        set_generator,
    )

    model = MaxRetrievalModel(ModelConfig(), seeds=(0, 3))
    norms = {"softmax": ("softmax", {}), "adaptive": ("adaptive", {})}
    got = set_attention(model, [5, 12], norms, n_sets=3, chunk_items=20)  # chunks of 1 or 4 sets
    assert len(got) == 2 * 2 * 2 * 3
    mc = model.cfg
    items, query, _ = make_batch(
        3, 12, n_classes=mc.n_classes, query_dim=mc.query_dim, generator=set_generator(0, 12, "cpu")
    )
    with torch.no_grad():
        _, e = model.encode(items, query)
    row = got[(got["norm"] == "softmax") & (got["size"] == 12) & (got["seed"] == 3)]
    row = row[row["set"] == 2].iloc[0]
    logits = e[1, 2].double()
    i = int(items[2, :, 0].argmax())
    a = torch.softmax(logits, -1)
    assert row["top"] == (int(logits.argmax()) == i)
    assert np.isclose(row["target"], float(a[i]), rtol=1e-5)
    assert np.isclose(row["spread"], float(logits.max() - logits.min()), rtol=1e-5)
    assert np.isclose(row["log_max"], float(a.max().log())) and np.isclose(
        row["log_min"], float(a.min().log())
    )
    # adaptive only rescales the logits: the same top flags and Lemma columns, its own target
    soft, adap = (got[got["norm"] == k].reset_index(drop=True) for k in norms)
    cols = ["seed", "size", "set", "top", "spread", "log_max", "log_min"]
    assert soft[cols].equals(adap[cols])


def _sets(rows: list[tuple[str, int, bool, float, float]]) -> pd.DataFrame:
    """A set_attention table from (norm, size, top, target, spread); α_max/α_min at the
    Lemma's bounds in log space, inside them by 0.1, so the bound holds unless a test moves
    them."""
    out = []
    for k, (norm, n, top, target, spread) in enumerate(rows):
        upper = -np.logaddexp(0.0, np.log(n - 1) - spread)
        lower = -np.logaddexp(0.0, np.log(n - 1) + spread)
        out.append(
            {
                "norm": norm,
                "seed": 0,
                "size": n,
                "set": k // 2,
                "top": top,
                "target": target,
                "spread": spread,
                "log_max": upper - 0.1,
                "log_min": lower + 0.1,
            }
        )
    return pd.DataFrame(out)


def test_fig7_row_reads_only_the_sets_where_the_max_item_lacks_the_top_logit():
    """(2.b): the ratio of means over the lost-top sets with its delta-method interval; a
    size whose interval holds 1 is left out (referee point 15)."""
    from attnlimits.experiments.softmax_not_enough.findings import _fig7

    lost = [(0.2, 0.3), (0.25, 0.36), (0.15, 0.24)]  # (softmax, adaptive): ratio 0.9 / 0.6
    rows = [
        (norm, 64, False, t, 3.0) for s, a in lost for norm, t in (("softmax", s), ("adaptive", a))
    ]
    rows += [("softmax", 64, True, 0.9, 3.0), ("adaptive", 64, True, 0.1, 3.0)]  # top: left out
    rows += [("softmax", 16, False, 0.5, 3.0), ("adaptive", 16, False, 0.1, 3.0)]  # training size
    sets = _sets(rows)
    row = _fig7({"set_attention": sets}, id_size=16)
    assert row["verdict"] == REPRODUCED and row["role"] == "supporting"
    # d = a − 1.5 s = 0, −0.015, 0.015: se = 0.015 / (√3 · 0.2), t on 2 df
    half = 4.302652729911275 * 0.015 / (np.sqrt(3) * 0.2)
    assert f"n=64: 1.50 [{1.5 - half:.2f}, {1.5 + half:.2f}] (3 of 4 sets)" in row["measured"]
    lower = [(0.2, 0.19), (0.25, 0.24), (0.15, 0.14)]  # ratio 0.95, tightly below 1
    rows_low = [
        (norm, 64, False, t, 3.0) for s, a in lower for norm, t in (("softmax", s), ("adaptive", a))
    ]
    assert _fig7({"set_attention": _sets(rows_low)}, id_size=16)["verdict"] == NOT
    wide = [(0.2, 0.4), (0.25, 0.1), (0.15, 0.2)]  # interval holds 1: inconclusive, left out
    rows_wide = [
        (norm, 128, False, t, 3.0) for s, a in wide for norm, t in (("softmax", s), ("adaptive", a))
    ]
    both = pd.concat([sets, _sets(rows_wide).assign(set=lambda d: d["set"] + 10)])
    assert _fig7({"set_attention": both}, id_size=16)["verdict"] == PARTLY
    missing = _fig7({}, id_size=16)
    assert missing["verdict"] == NA and "rerun the same command" in missing["measured"]


def test_lemma_check_fails_where_a_coefficient_passes_the_bound():
    from attnlimits.experiments.softmax_not_enough.findings import _bound_share

    sets = _sets([("softmax", 64, True, 0.5, 2.0), ("softmax", 128, True, 0.5, 8.0)])
    assert _bound_share(sets)[0] == 1.0
    upper = -float(np.logaddexp(0.0, np.log(127) - 8.0))
    broken = sets.assign(log_max=[sets["log_max"][0], upper + 1e-3])
    share, said = _bound_share(broken)
    assert share == 0.5 and said.startswith("1 of 2 sets") and rules.bounded([share]) == NOT
    within = sets.assign(log_max=[sets["log_max"][0], upper + 1e-5])  # float32 rounding
    assert _bound_share(within)[0] == 1.0
