"""``attnlimits reproduce clrs-text`` (paper B §4.2): the claims (``clrs_text/claims.py``): known
answers of each rule (learned, outcome, profile, the comparison and outlier verdicts), the
verdicts over seeds on synthetic answers, and the paper's words. (The rules' thresholds moved:
tests/test_clrs_text_rules.py.)"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from attnlimits.claims import verdicts
from attnlimits.experiments.clrs_text import Config
from attnlimits.experiments.clrs_text.claims import (
    S,
    claims,
    comparison_verdict,
    learned,
    outcome,
    outlier_verdict,
    profile,
)
from attnlimits.experiments.clrs_text.config import regime
from attnlimits.experiments.clrs_text.evaluate import (
    accuracy_table,
    paired_table,
)


@pytest.mark.parametrize(("accuracy", "expected"), [(0.95, True), (0.9, True), (0.89, False)])
def test_learned_rule(accuracy, expected):
    assert learned(accuracy) is expected


@pytest.mark.parametrize(
    ("accs", "met"), [((0.95, 0.91), True), ((0.95, 0.80), False), ((0.85, 0.85), False)]
)
def test_reaching_the_ceiling_is_judged_on_the_pooled_training_lengths(accs, met):
    """The precondition: exact match in distribution, the training lengths pooled, ≥ 90 %; a
    supporting row of verdict n/a (it is ours, not a claim of the paper)."""
    acc = pd.DataFrame({"arm": "softmax", "algorithm": "minimum", "length": [4, 5],
                        "in_distribution": True, "questions": 10,
                        "accuracy": list(accs)})  # fmt: skip
    paired = pd.DataFrame(columns=["arm", "regime", "algorithm", "scope"])
    got = claims({"accuracy": acc, "paired": paired}, {"params": {"arms": ["softmax"]}})
    assert got.loc[0, "verdict"] == verdicts.NA and got.loc[0, "role"] == verdicts.SUPPORTING
    assert got.loc[0, "measured"].startswith("precondition met" if met else "precondition not met")
    assert ("below the ceiling: minimum" in got.loc[0, "measured"]) is not met


@pytest.mark.parametrize(
    ("lo", "hi", "lengths", "expected"),
    [(0.06, 0.3, (), "better"), (-0.3, -0.01, (), "worse"), (-0.04, 0.03, (), "equivalent"),
     (-0.05, 0.05, (), "equivalent"), (0.01, 0.04, (), "equivalent"),  # significant, but tiny
     (-0.1, 0.2, (), "inconclusive"), (0.0, 0.2, (), "inconclusive"),
     (math.nan, math.nan, (), "inconclusive"),
     (0.06, 0.3, ((0.1, 0.4), (-0.3, -0.05)), "mixed"),
     (0.06, 0.3, ((0.1, 0.4), (-0.3, 0.1)), "better"), (-0.3, -0.1, ((0.02, 0.2),), "mixed"),
     (-0.1, 0.2, ((0.1, 0.4), (-0.3, -0.05)), "mixed"),  # a sign change under a wide pool
     (-0.04, 0.04, ((0.01, 0.2), (-0.2, -0.01)), "mixed")],
)  # fmt: skip
def test_outcome_rule_reads_the_interval_and_each_length(lo, hi, lengths, expected):
    assert outcome(lo, hi, lengths) == expected


@pytest.mark.parametrize(
    ("outs", "expected"),
    [([], "not testable"), ([("in distribution", "equivalent")], "inconclusive"),
     ([("in distribution", "equivalent"), ("extrapolation", "better")], "better"),
     ([("in distribution", "better"), ("extrapolation", "worse")], "mixed"),
     ([("extrapolation", "worse"), ("interpolation", "inconclusive")], "worse"),
     ([("interpolation", "equivalent"), ("extrapolation", "equivalent")], "equivalent"),
     ([("in distribution", "equivalent"), ("extrapolation", "equivalent")], "equivalent"),
     ([("extrapolation", "equivalent"), ("interpolation", "inconclusive")], "inconclusive"),
     ([("extrapolation", "mixed")], "mixed"),
     ([("in distribution", "inconclusive")], "inconclusive"),
     ([("in distribution", "better"), ("extrapolation", "mixed")], "mixed"),
     ([("in distribution", "better"), ("interpolation", "inconclusive"),
       ("extrapolation", "better")], "better")],
)  # fmt: skip
def test_profile_rule_per_algorithm(outs, expected):
    """A tie in distribution counts for nothing; a mixed regime makes the algorithm mixed."""
    assert profile(outs) == expected


@pytest.mark.parametrize(
    ("better", "against", "equivalent", "undecided", "expected"),
    [(3, 0, 0, 0, "reproduced"), (27, 3, 0, 0, "reproduced"),  # three outliers of thirty
     (26, 4, 0, 0, "partly"), (2, 0, 1, 0, "partly"), (2, 1, 0, 0, "partly"),
     (1, 1, 1, 0, "not reproduced"), (0, 0, 3, 0, "not reproduced"),
     (0, 3, 0, 0, "not reproduced"), (2, 0, 0, 1, "partly"), (1, 0, 0, 2, "not testable"),
     (0, 0, 0, 3, "not testable"), (0, 0, 0, 0, "n/a"), (1, 0, 0, 0, "reproduced"),
     # the second review's cases: worse algorithms never lift a verdict, undecided ones never
     # decide it
     (1, 18, 0, 11, "not reproduced"), (0, 19, 0, 11, "not reproduced"),
     (19, 0, 0, 11, "partly"), (19, 1, 0, 10, "partly"), (24, 6, 0, 0, "partly"),
     (23, 0, 0, 7, "partly"), (0, 0, 1, 2, "not testable"), (12, 0, 0, 18, "not testable")],
)  # fmt: skip
def test_comparison_verdict_rule(better, against, equivalent, undecided, expected):
    assert comparison_verdict(better, against, equivalent, undecided) == expected


def test_comparison_verdict_never_rises_when_an_undecided_algorithm_turns_against():
    """Monotone: turning one undecided algorithm against never raises the verdict, turning it
    better never lowers it (not testable left out: it is no rank), for every count up to 12."""
    rank = {"not reproduced": 0, "partly": 1, "reproduced": 2}
    for n in range(1, 13):
        for b in range(n + 1):
            for a in range(n + 1 - b):
                for u in range(1, n + 1 - b - a):
                    e = n - b - a - u
                    v = comparison_verdict(b, a, e, u)
                    up, down = (
                        comparison_verdict(b + 1, a, e, u - 1),
                        comparison_verdict(b, a + 1, e, u - 1),
                    )
                    if v in rank and up in rank:
                        assert rank[up] >= rank[v], (b, a, e, u)
                    if v in rank and down in rank:
                        assert rank[down] <= rank[v], (b, a, e, u)
    with pytest.raises(ValueError, match="counts"):
        comparison_verdict(-1, 0, 0, 0)


@pytest.mark.parametrize(
    ("outs", "expected"),
    [({}, "not testable"), ({"minimum": "worse"}, "not testable"),
     ({"heapsort": "worse", "mst_kruskal": "mixed", "bubble_sort": "worse"}, "reproduced"),
     ({"heapsort": "worse", "mst_kruskal": "better", "bubble_sort": "worse"}, "partly"),
     ({"heapsort": "worse"}, "partly"),  # one of the three in the run: at most partly
     ({"heapsort": "better", "mst_kruskal": "equivalent", "bubble_sort": "better"},
      "not reproduced"),
     ({"heapsort": "worse", "mst_kruskal": "inconclusive", "bubble_sort": "better"}, "partly"),
     ({"heapsort": "worse", "mst_kruskal": "worse", "bubble_sort": "not testable"},
      "not testable"),  # reproduced or partly, by the undecided one
     ({"heapsort": "better", "mst_kruskal": "not testable"}, "not testable")],
)  # fmt: skip
def test_outlier_verdict_rule(outs, expected):
    """§4.2's named outliers: behind softmax (worse or mixed) on all three in the run is
    reproduced, on some partly, on none not reproduced; undecided ones that could change the
    verdict make it not testable, and so does a run without any of the three."""
    verdict, reason = outlier_verdict(outs)
    assert verdict == expected
    assert bool(reason) is (expected == "not testable")


def _synthetic(cells: dict[tuple[str, str, int], list[int]], chance: float = 0.2, q: int = 10):
    """Answers where (arm, algorithm, length) has ``cells[...][seed]`` of ``q`` questions right
    (the first ones), lengths 4 and 6 in distribution, 5 interpolation, 8 and 10 extrapolation,
    the tables, and the claims."""
    rows = [
        {"arm": arm, "seed": seed, "algorithm": algo, "length": length,
         "regime": regime(length, (4, 6)), "in_distribution": length in (4, 6),
         "question": f"{algo}-{length}-{i}", "answer": "0", "correct": i < right,
         "result_correct": i < right}
        for (arm, algo, length), per_seed in cells.items()
        for seed, right in enumerate(per_seed)
        for i in range(q)
    ]  # fmt: skip
    answers = pd.DataFrame(rows)
    keys = answers[["algorithm", "length"]].drop_duplicates()
    acc = accuracy_table(answers, keys.assign(baseline=chance))
    paired = paired_table(answers, acc)
    got = claims({"accuracy": acc, "paired": paired},
                 {"params": {"arms": ["softmax", "adaptive"]}})  # fmt: skip
    return paired, got.set_index("claim")["verdict"].to_dict(), got


_FINDING = (
    'adaptive "they demonstrate a significant advantage of the adaptive temperature-backed model '
    'on nearly all of the thirty algorithms under study" (§4.2)'
)


_HEAD = "(h) adaptive has an advantage on nearly all algorithms, each judged over its profile"


_IN = "(a) adaptive in distribution (the training lengths)"


_OUT = "(c) adaptive by extrapolation (lengths outside the training range)"


_HIGH, _LOW, _CHANCE = [9, 9, 10], [5, 6, 5], [2, 1, 3]


_TOP = [50, 50, 50]  # of 50 questions


_M8 = {("softmax", "m", 8): [10, 5, 15], ("adaptive", "m", 8): [45, 45, 48]}  # 0.2 vs 0.92


@pytest.mark.parametrize(
    ("cells", "in_dist", "out_dist", "head"),
    [
        # both at the ceiling in distribution (a tie: (a) not reproduced, but it counts for
        # nothing in the profile); out of distribution softmax at chance, adaptive far above:
        # the algorithm is better over its profile
        ({("softmax", "m", 4): _TOP, ("adaptive", "m", 4): _TOP, **_M8},
         "not reproduced", "reproduced", "reproduced"),
        # adaptive below the 90 % ceiling in distribution: not testable in any regime
        ({("softmax", "m", 4): _TOP, ("adaptive", "m", 4): [40, 42, 41], **_M8},
         "not testable", "not testable", "not testable"),
        # both at the ceiling, both at chance out of distribution: the tie in distribution
        # decides nothing, so nothing is decided
        ({("softmax", "m", 4): _TOP, ("adaptive", "m", 4): _TOP,
          ("softmax", "m", 8): [10, 10, 10], ("adaptive", "m", 8): [10, 9, 11]},
         "not reproduced", "not testable", "not testable"),
        # worse out of distribution
        ({("softmax", "m", 4): _TOP, ("adaptive", "m", 4): _TOP,
          ("softmax", "m", 8): [45, 45, 46], ("adaptive", "m", 8): [20, 22, 21]},
         "not reproduced", "not reproduced", "not reproduced"),
        # one algorithm better, one undecided: the undecided one could make it either way
        ({("softmax", "m", 4): _TOP, ("adaptive", "m", 4): _TOP, **_M8,
          ("softmax", "k", 4): _TOP, ("adaptive", "k", 4): _TOP,
          ("softmax", "k", 8): [10, 10, 10], ("adaptive", "k", 8): [10, 9, 11]},
         "not reproduced", "not testable", "not testable"),
        # three algorithms, two better out of distribution, one undecided: at least partly
        ({("softmax", "m", 4): _TOP, ("adaptive", "m", 4): _TOP, **_M8,
          ("softmax", "j", 4): _TOP, ("adaptive", "j", 4): _TOP,
          ("softmax", "j", 8): [10, 5, 15], ("adaptive", "j", 8): [45, 45, 48],
          ("softmax", "k", 4): _TOP, ("adaptive", "k", 4): _TOP,
          ("softmax", "k", 8): [10, 10, 10], ("adaptive", "k", 8): [10, 9, 11]},
         "not reproduced", "partly", "partly"),
        # two seeds only: nothing is decided
        ({("softmax", "m", 4): _TOP[:2], ("adaptive", "m", 4): _TOP[:2]},
         "not testable", None, "not testable"),
    ],
)  # fmt: skip
def test_comparison_verdicts_known_answers_over_seeds(cells, in_dist, out_dist, head):
    """Each verdict of the comparison on small tables whose per-seed accuracies decide it (50
    questions a cell, chance 0.2); the finding has one headline, so it takes its verdict."""
    paired, got, _ = _synthetic(cells, q=50)
    assert (got[_IN], got.get(_OUT), got[_HEAD], got[_FINDING]) == (in_dist, out_dist, head, head)
    untestable = paired[(paired["scope"] == "length") & ~paired["testable"]]
    reasons = "above the trivial baseline|below the 90% ceiling|fewer than 3"
    assert untestable["why"].str.contains(reasons).all()


def test_adaptive_also_gets_the_outliers_and_inference_only_statements():
    """§4.2's two other statements about adaptive temperature are rows of their own: the named
    outliers judged on the run's profiles (here heapsort, behind softmax out of distribution:
    partly, as mst_kruskal and bubble_sort are not in the run), inference only not testable."""
    cells = {("softmax", "heapsort", 4): _TOP, ("adaptive", "heapsort", 4): _TOP,
             ("softmax", "heapsort", 8): [45, 45, 46],
             ("adaptive", "heapsort", 8): [20, 22, 21]}  # fmt: skip
    _, got, rows = _synthetic(cells, q=50)
    head = "(o) adaptive is behind softmax on heapsort, mst_kruskal and bubble_sort"
    assert (
        got[head] == "partly" and "heapsort: worse" in rows.set_index("claim").loc[head, "measured"]
    )
    only = [c for c in got if c.startswith("(i) adaptive temperature at inference only")]
    assert [got[c] for c in only] == ["not testable"]
    findings = rows[rows["role"] == verdicts.FINDING].set_index("claim")["verdict"]
    assert sorted(findings) == ["not reproduced", "not testable", "partly"]


def test_pooling_over_lengths_does_not_hide_a_sign_change():
    """Extrapolation: far better at length 8, significantly worse at 10 (100 questions): the
    pooled interval is above 0, but the algorithm is mixed, not better."""
    cells = {("softmax", "m", 4): [100] * 3, ("adaptive", "m", 4): [100] * 3,
             ("softmax", "m", 8): [20, 10, 30], ("adaptive", "m", 8): [100] * 3,
             ("softmax", "m", 10): [100] * 3, ("adaptive", "m", 10): [80] * 3}  # fmt: skip
    paired, got, rows = _synthetic(cells, q=100)
    pooled = paired[(paired["scope"] == "pooled") & (paired["regime"] == "extrapolation")]
    assert pooled["ci_low"].iloc[0] > 0
    at10 = paired[(paired["scope"] == "length") & (paired["lengths"] == "10")]
    assert at10["ci_high"].iloc[0] < 0
    assert "m: mixed" in rows.set_index("claim").loc[_HEAD, "measured"]
    assert got[_OUT] == "not reproduced" and got[_HEAD] == "not reproduced"


def test_seeds_not_question_pairs_are_the_unit_of_the_paired_test():
    """Two seeds better and one worse, 100 questions each, both arms at the ceiling: 20
    questions won against 10 lost over the 300 (seed, question) pairs, but over the three seeds
    (+0.1, +0.1, −0.1) the difference's interval holds 0: inconclusive, so undecided."""
    cells = {("softmax", "m", 4): [90, 90, 100], ("adaptive", "m", 4): [100, 100, 90]}
    paired, got, _ = _synthetic(cells, chance=0.1, q=100)
    pooled = paired[paired["scope"] == "pooled"].iloc[0]
    assert (pooled["wins"], pooled["losses"], pooled["pairs"]) == (20, 10, 300)
    assert pooled["ci_low"] < 0 < pooled["ci_high"] and pooled["seeds"] == 3
    assert got[_IN] == "not testable"


def test_other_arms_are_marked_as_our_extension():
    """Only adaptive temperature is §4.2's claim: another arm's rows say the rule is ours."""
    cells = {("softmax", "m", 4): _LOW, ("softmax1", "m", 4): _HIGH}
    rows = []
    for arm, seed_rights in cells.items():
        rows += [{"arm": arm[0], "seed": s, "algorithm": "m", "length": 4,
                  "regime": "in distribution", "in_distribution": True, "question": f"q{i}",
                  "answer": "0", "correct": i < r, "result_correct": i < r}
                 for s, r in enumerate(seed_rights) for i in range(10)]  # fmt: skip
    answers = pd.DataFrame(rows)
    acc = accuracy_table(answers, pd.DataFrame({"algorithm": ["m"], "length": [4],
                                                "baseline": [0.2]}))  # fmt: skip
    got = claims({"accuracy": acc, "paired": paired_table(answers, acc)},
                 {"params": {"arms": ["softmax", "softmax1"]}})  # fmt: skip
    other = got[got["claim"].str.contains("softmax1") & ~got["claim"].str.contains("learns")]
    assert set(other["role"]) == {"finding", "headline", "supporting"}
    assert other["reading"].str.contains("an extension").all()


PAPERS = Path(__file__).parents[1].parent / "shared" / "papers"


@pytest.mark.skipif(not PAPERS.is_dir(), reason="../shared/papers is absent")
def test_every_quote_of_clrs_text_is_the_papers_words():
    """Every statement's ``quote`` (the claims table's ``paper`` column) is in paper B's text,
    word for word up to whitespace."""
    text = (PAPERS / "paper-b-softmax-not-enough.txt").read_text(encoding="utf-8")
    assert verdicts.missing_quotes([s.quote for s in S.values()], [text]) == []
    _, _, got = _synthetic({("softmax", "m", 4): _LOW, ("adaptive", "m", 4): _HIGH,
                            ("softmax", "m", 8): _LOW, ("adaptive", "m", 8): _HIGH})  # fmt: skip
    assert set(got["paper"]) == {s.quote for s in S.values()}
    assert verdicts.missing_quotes(["fine-tuned Gemma 2B solves many CLRS-Text tasks"], [text])


@pytest.mark.skipif(not PAPERS.is_dir(), reason="../shared/papers is absent")
def test_every_phrase_the_set_up_quotes_is_the_papers_words():
    """A phrase in double quotes in the set-up table's "why" (every format and lengths choice)
    is in paper B's text, word for word up to whitespace."""
    import re

    from attnlimits.experiments.clrs_text.provenance import provenance_table

    text = (PAPERS / "paper-b-softmax-not-enough.txt").read_text(encoding="utf-8")
    phrases = []
    for given in ({}, {"lengths": "paper"}, {"format": "answer"}):
        params = json.loads(json.dumps(dataclasses.asdict(Config(**given))))
        phrases += [q for why in provenance_table({"params": params})["why"]
                    for q in re.findall(r'"([^"]+)"', why)]  # fmt: skip
    assert len(set(phrases)) >= 4, phrases  # the search finds the quotes at all
    assert verdicts.missing_quotes(phrases, [text]) == []
