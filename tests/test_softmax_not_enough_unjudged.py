"""Round 4's point 19: paper B's statements that had no row (App. A's stable baseline, §5's
"does not escape the conclusions of our theory", §2's Gemma spreads, App. B's Corollary B.1),
each on a made-up summary with a known answer."""

from __future__ import annotations

import pandas as pd

from attnlimits.claims import CHECK, NA, NOT, REPRODUCED, SUPPORTING
from attnlimits.experiments.softmax_not_enough.findings import claims
from attnlimits.experiments.softmax_not_enough.unjudged import (
    corollary_b1,
    escapes,
    gemma_spreads,
    stable_baseline,
)
from made_up_tables import softmax_not_enough_tables


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
    assert row["verdict"] == REPRODUCED and row["role"] == SUPPORTING
    assert "99.6 [99.3, 100.0]" in row["measured"] and "not tested" in row["reading"]
    wobbly = stable_baseline(_summary({"softmax": {16: (0.96, 0.9, 1.0)}}), 16)
    assert wobbly["verdict"] == NOT  # the mean near 100 %, its interval not
    assert stable_baseline(_summary({"softmax": {32: (1.0, 1.0, 1.0)}}), 16)["verdict"] == NA


def test_adaptive_and_softmax_falling_out_of_distribution():
    tables = _summary({"softmax": FALLS, "adaptive": FLAT})
    b1 = corollary_b1(tables, 16)
    assert b1["verdict"] == REPRODUCED and b1["role"] == CHECK
    assert "n = 16,384: 18.0 [7.0, 29.0]" in b1["measured"]
    held = escapes(tables, 16)  # adaptive stays at 99 %: it escapes
    assert held["verdict"] == NOT and held["claim"].startswith("(2.h)")
    assert escapes(_summary({"adaptive": FALLS}), 16)["verdict"] == REPRODUCED
    assert escapes(_summary({"adaptive": {16: FALLS[16]}}), 16)["verdict"] == NA
    # a table set without the summary (e.g. the argmax arm's claims alone): n/a, no KeyError
    assert escapes({}, 16)["verdict"] == NA and stable_baseline({}, 16)["verdict"] == NA


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
    assert "λ = 0.001 only" in lam["measured"] and "about 4,412 s (1.2 h)" in lam["measured"]
    three = got.filter(like="(3) ", axis=0).iloc[0]
    assert three["verdict"] == "partly"
    assert got.filter(like="(3.a)", axis=0)["verdict"].item() == REPRODUCED
    untimed = claims(softmax_not_enough_tables(0.1), {"benchmark": meta["benchmark"]})
    assert (
        "time is not recorded"
        in untimed.set_index("claim").filter(like="(3.c)", axis=0)["measured"].item()
    )
