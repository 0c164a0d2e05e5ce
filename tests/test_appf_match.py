"""App. F's rule (softmax_not_enough.appf_match): known answers for every verdict of the rule
on the published polynomial, of (G)'s floor verdict, and the claims row built from it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnlimits.claims.verdicts import (
    FINDING,
    HEADLINE,
    NA,
    NOT,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
    missing_quotes,
)
from attnlimits.experiments.softmax_not_enough.appf_match import (
    CAP_WINDOW,
    CAPPED,
    FIT_LEVEL,
    FLOOR_RULE,
    FLOORS,
    H_AT,
    INTERVAL_RULE,
    PUBLISHED_RULE,
    Q_FIT,
    Q_RANGE,
    SHOWN_FLOORS,
    T_PLACE,
    appf_rows,
    capped_shares,
    floor_table,
    floor_verdict,
    interval_table,
    judge_published,
    match_table,
    rise_interval,
    training_inputs,
)
from attnlimits.experiments.softmax_not_enough.fits import poly_beta
from attnlimits.normalizers.adaptive import POLY_COEFFS


def _points(
    beta,
    *,
    seeds: int = 10,
    per_seed: int = 60,
    lo: float = 0.6,
    hi: float = 4.4,
    noise: float = 0.05,
    seed: int = 0,
) -> pd.DataFrame:
    """App. F points whose β* is ``beta(H)`` times a per-seed factor 1 ± ``noise`` (each seed
    a slightly different model), H uniform on [lo, hi]."""
    rng = np.random.default_rng(seed)
    parts = []
    for s in range(seeds):
        H = rng.uniform(lo, hi, per_seed)
        b = beta(H) * (1 + noise * rng.uniform(-1, 1))
        parts.append(
            pd.DataFrame({"seed": s, "entropy": H, "beta_star": b, "theta_star": 1 / b, "edge": ""})
        )
    return pd.concat(parts, ignore_index=True)


def published(H: np.ndarray) -> np.ndarray:
    return poly_beta(H, POLY_COEFFS)


def _jittered(points: pd.DataFrame, jitter: float = 0.02) -> pd.DataFrame:
    """``points`` with each β* times its own 1 ± ``jitter`` (the per-seed factor alone leaves
    every seed's rise fit(4)/fit(2) equal, and its interval of width 0)."""
    rng = np.random.default_rng(1)
    out = points.copy()
    out["beta_star"] *= 1 + jitter * rng.uniform(-1, 1, len(out))
    out["theta_star"] = 1 / out["beta_star"]
    return out


@pytest.mark.parametrize(
    ("matches", "n_seeds", "verdict"),
    [
        ([True, True, True, True], 10, REPRODUCED),
        ([True, True, True, True], 5, REPRODUCED),  # MIN_SEEDS is enough
        ([True, False, True, True], 10, PARTLY),
        ([True, None, None, None], 10, PARTLY),  # matching where tested, H 2-4 untested
        ([False, False, False, False], 10, NOT),
        ([False, None, None, None], 10, NOT),
        ([None, None, None, None], 10, NOT_TESTABLE),
        ([True, True, True, True], 4, NOT_TESTABLE),  # fewer than MIN_SEEDS seeds
    ],
)
def test_published_rule_known_answers(matches, n_seeds, verdict):
    assert judge_published(matches, n_seeds) == verdict
    assert PUBLISHED_RULE(matches, n_seeds) == verdict
    assert "5 seeds" in PUBLISHED_RULE.text()  # the text formatted from MIN_SEEDS


def test_points_on_the_published_polynomial_reproduce_it_and_twice_it_does_not():
    same = match_table(_points(published))
    assert same["tested"].all() and same["matches"].tolist() == [True] * 4
    assert judge_published(list(same["matches"]), 10) == REPRODUCED
    np.testing.assert_allclose(same["published"], [1.27, 2.099, 2.25, 2.389], atol=1e-3)
    double = match_table(_points(lambda H: 2 * published(H)))
    assert double["matches"].tolist() == [False] * 4
    assert judge_published(list(double["matches"]), 10) == NOT


def test_h_outside_the_points_is_not_tested_and_few_seeds_is_not_testable():
    narrow = match_table(_points(published, lo=0.7, hi=1.6))
    assert narrow["tested"].tolist() == [True, False, False, False]
    assert narrow["matches"].tolist() == [True, None, None, None]
    assert judge_published(list(narrow["matches"]), 10) == PARTLY
    few = _points(published, seeds=10, per_seed=3)  # 3 points a seed: no seed fits degree 4
    m = match_table(few)
    assert int(m["n_seeds"].iloc[0]) == 0 and m["matches"].isna().all()
    assert judge_published(list(m["matches"]), 0) == NOT_TESTABLE


def test_the_seeds_spread_is_the_tolerance():
    """The same published-shaped data, but with seeds spread ±1 % or ±30 %: a 10 % offset of
    every point is outside the narrow spread and inside the wide one."""

    def off(H):
        return 1.1 * published(H)

    narrow = match_table(_points(off, noise=0.01))
    wide = match_table(_points(off, noise=0.3))
    assert not any(narrow["matches"]) and all(wide["matches"])


def test_floor_verdict_known_answers():
    """Round 6's point 1: (G) reads the verdict on the H no cap decides (``counted``) and the
    rise with neither H capped (``rise_counted``), not the verdict on every H."""

    def table(counted, rises, every=None):
        every = every or counted
        return pd.DataFrame({"verdict": every, "counted": counted, "rise_counted": rises})

    assert floor_verdict(table([NOT, REPRODUCED], [False, False])) == "supported"
    assert floor_verdict(table([NOT, PARTLY], [False, False])) == "partly supported"
    assert floor_verdict(table([NOT, NOT], [False, True])) == "partly supported"
    assert floor_verdict(table([NOT, NOT_TESTABLE], [False, False])) == "not supported"
    assert floor_verdict(table([NOT_TESTABLE] * 2, [False, False])) == NA
    # a floor partly on every H but not on the H its cap leaves: not supported (20,000 steps)
    assert floor_verdict(table([NOT, NOT], [False, False], [NOT, PARTLY])) == "not supported"
    assert FLOOR_RULE(table([NOT, PARTLY], [False, False])) == "partly supported"


def test_a_match_the_cap_makes_is_not_counted():
    """β* = 3H from H = 1 on, θ* raised to 0.4: every point is on the floor (β* ≥ 3 > 2.5), so
    the cap decides every H (shares 1) and (G) has nothing left to test: n/a; a floor of 0.2
    caps none of published-shaped points (β* < 5): shares 0, and it reproduces."""
    t = floor_table(_points(lambda H: 3 * H, lo=1.0), floors=(0.4,))
    assert t[[f"capped_H{h:g}" for h in H_AT]].to_numpy().min() == 1.0
    assert t["counted"].iloc[0] == NOT_TESTABLE and not t["rise_counted"].iloc[0]
    assert floor_verdict(t) == NA
    under = floor_table(_points(published), floors=(0.2,))
    assert under[[f"capped_H{h:g}" for h in H_AT]].to_numpy().max() == 0.0
    assert under["counted"].iloc[0] == REPRODUCED and floor_verdict(under) == "supported"


def test_capped_shares_count_the_points_near_each_h():
    pts = pd.DataFrame(
        {"entropy": [0.9, 1.1, 1.2, 2.0, 3.5], "theta_star": [0.1, 0.5, 0.2, 0.3, 0.1]}
    )
    shares = capped_shares(pts, 0.25)
    assert shares[1.0] == pytest.approx(2 / 3) and shares[2.0] == 0.0
    assert np.isnan(shares[3.0]) and np.isnan(shares[4.0])  # 3.5 is 0.5 nats from either
    assert CAPPED.value == 0.5 and CAP_WINDOW.value == 0.25


def test_a_floor_that_caps_a_rising_curve_makes_a_plateau():
    """β* = 3H (rising) raised θ* to 0.4 caps β* at 2.5 wherever 3H > 2.5: the fit at H = 2 … 4
    is 2.5 and its rise fit(4)/fit(2) is 1; points already under the cap (published values,
    all below 5) are unchanged by a floor of 0.2, so they still reproduce."""
    rising = floor_table(_points(lambda H: 3 * H, lo=1.0), floors=(0.4,))
    np.testing.assert_allclose(rising[["fit_H2", "fit_H3", "fit_H4"]], 2.5, rtol=1e-6)
    assert rising["rise"].iloc[0] == pytest.approx(1.0, abs=1e-6)
    under = floor_table(_points(published), floors=(0.2,))
    assert under["verdict"].iloc[0] == REPRODUCED
    assert floor_verdict(under) == "supported"
    r, r_pub, low, high = rise_interval(_jittered(_points(published)))
    assert r_pub == pytest.approx(2.389 / 2.099, rel=1e-3) and r == pytest.approx(r_pub, 0.02)
    assert low <= r_pub <= high
    assert not rising["rise_matches"].iloc[0]  # a plateau's rise of 1 is not the published 1.14


def test_g_and_t_are_judged_by_the_interval_rule():
    """Round 4's point 17: (G)'s per-floor verdict is INTERVAL_RULE's, not the max-spread
    rule's. Published-shaped points offset by 30 % with seeds spread ±50 %: the largest
    single-seed deviation covers the offset at every H (the former rule: reproduced), the
    seeds' 95 % interval of the mean does not (not reproduced); the rise (unchanged by a
    constant factor) still matches inside its interval."""
    pts = _jittered(_points(lambda H: 1.3 * published(H), noise=0.5, per_seed=200, seed=4))
    assert all(match_table(pts)["matches"])  # the former rule would say reproduced
    table = floor_table(pts, floors=(0.2,))  # a floor of 0.2 caps nothing here (β* < 5)
    m = interval_table(pts)
    assert table["verdict"].iloc[0] == INTERVAL_RULE(list(m["matches"]), 10) == NOT
    np.testing.assert_allclose(table[["low_H1", "high_H4"]].iloc[0], [m["low"][0], m["high"][3]])
    assert bool(table["rise_matches"].iloc[0])
    assert floor_verdict(table) == "partly supported"  # the rise alone


def test_rise_interval_known_answers():
    """The rise's interval: a rise twice the published one does not match; points that do not
    reach H = 4, or four seeds, give no interval."""
    steep = _points(lambda H: published(H) * (H / 2.0))  # r = 2 × 1.14
    r, r_pub, low, high = rise_interval(steep)
    assert r == pytest.approx(2 * r_pub, rel=0.05) and not low <= r_pub <= high
    assert np.isnan(rise_interval(_points(published, hi=3.5))[2])
    assert np.isnan(rise_interval(_points(published, seeds=4))[3])


def test_floors_are_grid_points_from_point_two_to_point_five():
    grid = np.round(0.005 + 0.005 * np.arange(400), 12)
    assert FLOORS[0] == 0.2 and FLOORS[-1] == 0.5 and len(FLOORS) == 31
    assert all(np.isclose(grid, f).any() for f in FLOORS)
    assert set(SHOWN_FLOORS) <= set(FLOORS) and H_AT == (1.0, 2.0, 3.0, 4.0)


def test_the_claims_row():
    rows = appf_rows({"temperature_fit_points": _points(published)})
    assert [r["role"] for r in rows] == [FINDING, HEADLINE]
    assert rows[1]["verdict"] == REPRODUCED == rows[0]["verdict"]
    assert "readings (not deciding)" in rows[1]["measured"]
    off = appf_rows({"temperature_fit_points": _points(lambda H: 3 * published(H))})
    assert off[1]["verdict"] == NOT and off[0]["verdict"] == NOT
    assert appf_rows({})[1]["verdict"] == NA


def test_the_quote_is_word_for_word(paper_texts):
    assert missing_quotes([Q_FIT, Q_RANGE], paper_texts) == []


def test_t_outcome_for_the_claims_row():
    """Round 6's point 6: (T)'s verdict and its tested H's intervals, the longest run first;
    the row names the place the doc module fills."""
    inputs = pd.DataFrame(
        {
            "entropy": ["1.0", "2.0", "1.0"],
            "tested": ["True", "False", "True"],
            "published": ["1.27", "2.099", "1.27"],
            "seeds_mean": ["3.74", "-500", "3.8"],
            "low": ["3.21", "-9", "3.17"],
            "high": ["4.28", "9", "4.43"],
            "steps": ["20000", "20000", "5000"],
            "inputs": ["training sizes: n = 2 … 16"] * 3,
            "entropy_range": ["0.54–1.21", "0.54–1.21", "0.64–1.34"],
        }
    )
    verdicts = pd.DataFrame(
        {"steps": ["20000", "5000"], "explanation": ["(T) rule"] * 2, "verdict": [NOT, PARTLY]}
    )
    said = training_inputs(inputs, verdicts)
    assert said.index("20,000 steps: not reproduced (H = 1: seeds' mean fit 3.74 [3.21, 4.28]") < (
        said.index("5,000 steps: partly (H = 1: seeds' mean fit 3.80 [3.17, 4.43]")
    )
    assert "1 H outside the points' entropies 0.54–1.21" in said
    assert training_inputs(inputs.iloc[:0], verdicts) == T_PLACE
    assert T_PLACE in appf_rows({"temperature_fit_points": _points(published)})[1]["measured"]


def test_interval_rule_known_answers():
    """(F)'s rule since referee point 1: the published β(H) inside the seeds' 95 % interval.
    Published-shaped seeds: every H matches (reproduced); doubled: none (not reproduced);
    points only over H in [0.7, 1.6]: H = 1 alone tested and matching (partly); four seeds:
    not testable."""
    same = interval_table(_points(published))
    assert same["tested"].all() and all(same["matches"])
    assert INTERVAL_RULE(list(same["matches"]), 10) == REPRODUCED
    double = interval_table(_points(lambda H: 2 * published(H)))
    assert not any(double["matches"])
    assert INTERVAL_RULE(list(double["matches"]), 10) == NOT
    narrow = interval_table(_points(published, lo=0.7, hi=1.6))
    assert list(narrow["tested"]) == [True, False, False, False]
    assert INTERVAL_RULE(list(narrow["matches"]), 10) == PARTLY
    few = interval_table(_points(published, seeds=4))
    assert int(few["n_seeds"].iloc[0]) == 4 and few["matches"].isna().all()
    assert INTERVAL_RULE(list(few["matches"]), 4) == NOT_TESTABLE


def test_interval_is_the_t_interval_of_the_seeds_mean_fit():
    """The interval against a naive computation: each seed's np.polyfit, their mean ± t·sd/√S
    (scipy's t on S − 1 df); and one far seed widens it less than it widens the max spread."""
    from scipy import stats

    pts = _points(published, noise=0.2)
    table = interval_table(pts)
    fits = np.stack(
        [
            np.polyval(np.polyfit(p["entropy"], p["beta_star"], 4), np.asarray(H_AT))
            for _, p in pts.groupby("seed")
        ]
    )
    half = stats.t.ppf((1 + FIT_LEVEL.value) / 2, 9) * fits.std(0, ddof=1) / np.sqrt(10)
    np.testing.assert_allclose(table["seeds_mean"], fits.mean(0), rtol=1e-10)
    np.testing.assert_allclose(table["high"] - table["low"], 2 * half, rtol=1e-10)
    far = pts.copy()
    far.loc[far["seed"] == 0, "beta_star"] *= 5  # one far seed
    wide_max = match_table(far)["spread"] / match_table(pts)["spread"]
    wide_int = (interval_table(far)["high"] - interval_table(far)["low"]) / (
        table["high"] - table["low"]
    )
    assert (wide_int < wide_max).all()


def test_fit_level_is_labelled_after_runs_and_the_text_says_so():
    from attnlimits.claims import AFTER_RUNS

    assert FIT_LEVEL.provenance == AFTER_RUNS and "2026-11-27" in FIT_LEVEL.reason
    assert "set after earlier runs were public" in INTERVAL_RULE.text()
    assert "95%" in INTERVAL_RULE.text()
