"""Round 4's point 19: paper B's statements that had no row (App. A's stable baseline, §5's
"does not escape the conclusions of our theory", §2's Gemma spreads, App. B's Corollary B.1),
each on a made-up summary with a known answer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnlimits.claims import CHECK, NA, NOT, NOT_TESTABLE, PARTLY, REPRODUCED, SUPPORTING
from attnlimits.experiments.softmax_not_enough.findings import claims
from attnlimits.experiments.softmax_not_enough.unjudged import (
    corollary_b1,
    escapes,
    gemma_spreads,
    stable_baseline,
)
from made_up_tables import paired_argmax, softmax_not_enough_tables


def _summary(arms: dict[str, dict[int, tuple[float, float, float]]]) -> dict[str, pd.DataFrame]:
    """A run's summary: per arm and size, (mean, ci_low, ci_high)."""
    rows = [
        {"norm": norm, "size": n, "mean": m, "ci_low": lo, "ci_high": hi}
        for norm, sizes in arms.items()
        for n, (m, lo, hi) in sizes.items()
    ]
    return {"summary": pd.DataFrame(rows)}


FALLS = {16: (0.996, 0.993, 1.0), 1024: (0.5, 0.45, 0.55), 16384: (0.18, 0.07, 0.29)}
FLAT = {16: (0.996, 0.993, 1.0), 16384: (0.99, 0.98, 1.0)}


def test_stable_baseline_reads_the_training_sizes_interval():
    row = stable_baseline(_summary({"softmax": FALLS}), 16)
    assert row["verdict"] == PARTLY and row["role"] == SUPPORTING  # at most partly (round 6)
    assert "99.6 [99.3, 100.0]" in row["measured"] and "not tested" in row["reading"]
    wobbly = stable_baseline(_summary({"softmax": {16: (0.96, 0.9, 1.0)}}), 16)
    assert wobbly["verdict"] == NOT  # the mean near 100 %, its interval not
    assert stable_baseline(_summary({"softmax": {32: (1.0, 1.0, 1.0)}}), 16)["verdict"] == NA


def _entropies(arm: dict[int, float], seeds: int = 4, sets: int = 8) -> pd.DataFrame:
    """A set_attention table whose adaptive entropy at size n is ``arm[n]`` plus a small
    per-(seed, set) wobble."""
    rng = np.random.default_rng(0)
    rows = [
        {"norm": "adaptive", "seed": s, "size": n, "set": k, "entropy": h + 0.01 * rng.random()}
        for n, h in arm.items()
        for s in range(seeds)
        for k in range(sets)
    ]
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("entropy", "verdict"),
    [
        ({16: 0.05, 128: 0.15, 1024: 0.28, 8192: 0.44}, REPRODUCED),  # disperses at every step
        ({16: 0.05, 128: 0.15, 1024: 0.15}, PARTLY),  # then stops
        ({16: 0.3, 128: 0.3, 1024: 0.2}, NOT),  # adaptive stays sharp: it escapes
    ],
)
def test_escapes_is_judged_on_adaptive_dispersing(entropy, verdict):
    """Round 5's point 8: (2.h) on the theory's conclusion, adaptive's entropy rising at every
    step (as (1.b) on softmax's); its accuracy, flat here, is a reading and does not decide."""
    tables = _summary({"adaptive": FLAT}) | {"set_attention": _entropies(entropy)}
    row = escapes(tables, 16)
    assert row["verdict"] == verdict and row["claim"].startswith("(2.h)")
    assert (
        "all but guaranteed, like (1.b): β = max(poly(H), 1) stays within [1, 2.42]"
        in (row["measured"])
    )  # the listing's maximum, at H = 4.41 nats
    assert "adaptive's normalised entropy" in row["measured"]
    assert "not reproduced by the accuracy-falls rule" in row["measured"]


def test_escapes_without_adaptive_entropy_is_na():
    assert escapes(_summary({"adaptive": FALLS}), 16)["verdict"] == NA
    softmax_only = _entropies({16: 0.1, 128: 0.4}).assign(norm="softmax")
    assert escapes({"set_attention": softmax_only}, 16)["verdict"] == NA
    # a table set without the summary (e.g. the argmax arm's claims alone): n/a, no KeyError
    assert escapes({}, 16)["verdict"] == NA and stable_baseline({}, 16)["verdict"] == NA


@pytest.mark.parametrize(("diff", "verdict"), [(0.2, REPRODUCED), (-0.2, NOT), (0.0, PARTLY)])
def test_corollary_b1_is_judged_on_the_softmax_argmax_gap(diff, verdict):
    """Round 5's point 8: "due to the dispersion effect" read as softmax erring beyond the
    errors of its own largest logit (argmax above softmax); the accuracy's fall, which the
    argmax shows too, is a reading beside it."""
    tables = _summary({"softmax": FALLS}) | {"argmax_accuracy": paired_argmax(diff)}
    b1 = corollary_b1(tables, 16)
    assert b1["verdict"] == verdict and b1["role"] == CHECK
    assert "argmax − softmax over n = 64…256 (2 sizes)" in b1["measured"]
    assert "n = 16,384: 18.0 [7.0, 29.0], reproduced by the accuracy-falls rule" in b1["measured"]
    assert corollary_b1(_summary({"softmax": FALLS}), 16)["verdict"] == NA


def test_gemma_spreads_are_na_and_every_row_has_its_place():
    assert gemma_spreads()["verdict"] == NA
    meta = {"benchmark": {"train": {"max_size": 16}}}
    got = claims(softmax_not_enough_tables(0.1), meta)["claim"].str.split(" ").str[0].tolist()
    assert got.index("(1.d)") < got.index("(2)") < got.index("(2.h)") < got.index("(3)")
    assert got.index("(3.d)") < got.index("(4)")
    assert got[-1] == "dispersion"  # Corollary B.1's check, after the other checks


def test_a_second_lambda_is_a_headline_not_run_so_three_is_at_most_partly():
    """Round 4's point 10 (stricter, after runs): (3.c) n/a with the cost of its run, from the
    run's own training time; (3) partly though (3.a) and (3.b) reproduce."""
    meta = {
        "benchmark": {"train": {"max_size": 16, "weight_decay": 1e-3}},
        "wall_time_total_s": {"max_retrieval.train": 4412.0},
    }
    got = claims(softmax_not_enough_tables(0.1), meta).set_index("claim")
    lam = got.filter(like="(3.c)", axis=0).iloc[0]
    assert lam["verdict"] == NA and lam["role"] == "headline"
    assert "λ = 0.001 only" in lam["measured"] and "took 4,412 s (1.2 h) here" in lam["measured"]
    assert "as loaded as it was" in lam["measured"]  # round 6, point 4
    three = got.filter(like="(3) ", axis=0).iloc[0]
    assert three["verdict"] == "partly"
    assert got.filter(like="(3.a)", axis=0)["verdict"].item() == REPRODUCED
    untimed = claims(softmax_not_enough_tables(0.1), {"benchmark": meta["benchmark"]})
    assert (
        "time is not recorded"
        in untimed.set_index("claim").filter(like="(3.c)", axis=0)["measured"].item()
    )


@pytest.mark.parametrize(
    ("growth", "acc", "verdict", "three"),
    [
        (2.0, 0.95, REPRODUCED, REPRODUCED),
        (1.2, 0.95, PARTLY, PARTLY),
        (0.8, 0.95, NOT, NOT),
        (0.8, 0.9, NOT, NOT),  # at LEARNT: learnt
        (0.8, 0.89, NOT_TESTABLE, PARTLY),  # round 8, point 1: nothing learnt, nothing tested
        (2.0, 0.25, NOT_TESTABLE, PARTLY),
    ],
)
def test_the_second_lambdas_run_judges_three_c_as_three_a(growth, acc, verdict, three):
    """With the second λ's training log in the run folder (benchmarks/second_lambda.py), (3.c)
    reads (3.a)'s statistic on it by the growth rule (≥ 1.5, > 1, else; written before that
    run, 2026-11-29) where the model learnt the task at that λ (training accuracy at the last
    step, median over seeds, ≥ 0.9; round 8's point 1, after the run), else not testable and
    (3) reads at most partly on (3.a) and (3.b)."""
    meta = {"benchmark": {"train": {"max_size": 16, "weight_decay": 1e-3}}}
    tables = softmax_not_enough_tables(0.1)
    seeds = sorted(set(tables["training_log"]["seed"]))
    second = pd.DataFrame(
        {
            "seed": [s for s in seeds for _ in (0, 1)],
            "step": [100, 20000] * len(seeds),
            "spread": [10.0, 10.0 * growth] * len(seeds),
            "bound": [50.0, 60.0] * len(seeds),
            "weight_decay": 1e-2,
            "acc": [0.5, acc] * len(seeds),
        }
    )
    got = claims(tables | {"second_lambda_log": second}, meta).set_index("claim")
    lam = got.filter(like="(3.c)", axis=0).iloc[0]
    assert lam["verdict"] == verdict and lam["role"] == "headline"
    assert "λ = 0.01 (the default's λ = 0.001)" in lam["measured"]
    assert f"× {growth:.2f} (the verdict reads it)" in lam["measured"]
    assert "the bound (as (3.b)) × 1.20" in lam["measured"]
    assert f"training accuracy at the last step, median over seeds, {acc:.2f}" in lam["measured"]
    said = "(< 0.9: the model did not learn the task at this λ; the rule written before the run"
    assert (said in lam["measured"]) == (verdict == NOT_TESTABLE)
    assert lam["rule"].startswith("the training accuracy at the last step, median over seeds,")
    assert got.filter(like="(3) ", axis=0)["verdict"].item() == three


def _lambda_log(lam, growth, acc, seeds=(0, 1, 2)):
    return pd.DataFrame(
        {
            "seed": [s for s in seeds for _ in (0, 1)],
            "step": [100, 20000] * len(seeds),
            "spread": [10.0, 10.0 * growth] * len(seeds),
            "bound": [50.0, 60.0] * len(seeds),
            "acc": [0.5, acc] * len(seeds),
            "weight_decay": lam,
        }
    )


@pytest.mark.parametrize(
    ("third", "verdict"),
    [
        ((2.0, 0.95), PARTLY),  # 1e-2 not testable is left out, and then at most partly
        ((1.2, 0.95), PARTLY),
        ((0.8, 0.95), NOT),
        ((2.0, 0.5), NOT_TESTABLE),  # nothing learnt at either λ
    ],
)
def test_several_lambdas_combine_as_a_findings_headlines(third, verdict):
    """Round 8 (2026-11-29, before any λ but 1e-2 was run): the pre-registered third λ, 3e-3,
    is judged by grows_if_learnt like the second, and (3.c) combines the λ's verdicts as a
    finding's headlines (a not testable λ left out, and then at most partly)."""
    from attnlimits.experiments.softmax_not_enough import second_lambda

    assert second_lambda.PREREGISTERED == (1e-2, 3e-3)
    log = pd.concat([_lambda_log(1e-2, 0.0, 0.22), _lambda_log(3e-3, *third)])
    row = second_lambda.run_row(log, 1e-3)
    assert row["verdict"] == verdict
    assert "λ = 0.01 (the default's λ = 0.001)" in row["measured"]
    assert "λ = 0.003 (the default's λ = 0.001)" in row["measured"]
    assert f"the λ combined as a finding's headlines: {verdict}" in row["measured"]


def test_a_ratio_of_zero_or_the_precondition_names_its_own_flip_point():
    """Round 8, point 4: no meaningless flip point (GROWN or RISES passing 0)."""
    from attnlimits.experiments.softmax_not_enough import second_lambda

    untestable = second_lambda.run_row(_lambda_log(1e-2, 0.0, 0.22), 1e-3)["measured"]
    assert "the verdict flips if LEARNT passes 0.22" in untestable
    assert "GROWN or RISES passes 0" not in untestable
    assert "a ratio of 0 cannot flip it" in untestable
    zero = second_lambda.run_row(_lambda_log(1e-2, 0.0, 0.95), 1e-3)["measured"]
    assert "cannot flip (ratio 0)" in zero and "passes" not in zero
    grown = second_lambda.run_row(_lambda_log(1e-2, 2.0, 0.95), 1e-3)["measured"]
    assert "the verdict flips if GROWN passes 2" in grown


def test_per_seed_holds_both_lambdas_first_and_last():
    """Round 8, point 4: the committed table behind (3.a)–(3.c), one row per λ and seed."""
    from attnlimits.experiments.softmax_not_enough import second_lambda

    default = _lambda_log(1e-3, 5.0, 1.0).drop(columns="weight_decay")
    table = second_lambda.per_seed(default, _lambda_log(1e-2, 0.0, 0.22), 1e-3)
    assert list(table["λ"].unique()) == ["0.001", "0.01"] and len(table) == 6
    one = table[table["λ"] == "0.001"].iloc[0]
    assert (one["spread first"], one["spread last"], one["spread ratio"]) == ("10", "50", "5")
    assert one["bound ratio"] == "1.2" and one["acc last"] == "1.000"
    assert second_lambda.per_seed(default, None, 1e-3)["λ"].unique().tolist() == ["0.001"]
