"""attnlimits.claims.statistics: known answers against naive references kept here, scipy's own
functions where scipy has one, and clear errors for bad inputs."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from attnlimits.claims.statistics import (
    LEVEL,
    difference_interval,
    loglog_slope,
    paired_seeds_questions,
    proportion_interval,
    quantile,
    seeds_questions,
    slope_interval,
)


# ---- quantile and a difference with its standard error ----------------------------------
def test_quantile_is_the_normal_one_at_infinite_df_and_students_else() -> None:
    assert float(quantile()) == pytest.approx(1.959963984540054, rel=1e-12)
    # Student's t on 2 degrees of freedom in closed form: (2q − 1)·√(2 / (4q(1 − q)))
    assert float(quantile(0.95, 2)) == pytest.approx(0.95 * math.sqrt(2 / 0.0975), rel=1e-9)
    assert float(quantile(0.90)) == pytest.approx(1.6448536269514722, rel=1e-12)
    assert LEVEL == 0.95


@pytest.mark.parametrize("level", [0.0, 1.0, -0.5, 95])
def test_a_level_outside_zero_one_is_refused(level: float) -> None:
    with pytest.raises(ValueError, match="level must lie in"):
        quantile(level)


def test_difference_interval_known_answers() -> None:
    r = difference_interval(0.3, 0.1)  # z-interval: 0.3 ± 1.96 · 0.1, p of z = 3
    assert (float(r.low), float(r.high)) == pytest.approx((0.104004, 0.495996), abs=1e-6)
    assert float(r.p_value) == pytest.approx(2 * stats.norm.sf(3.0), rel=1e-9)
    t = difference_interval(0.3, 0.1, df=4)
    assert float(t.high - t.estimate) == pytest.approx(0.1 * 2.7764451051977987, rel=1e-9)
    assert float(t.p_value) == pytest.approx(2 * stats.t.sf(3.0, 4), rel=1e-9)


def test_difference_interval_of_no_spread_is_a_point() -> None:
    r = difference_interval([0.2, 0.0, -0.1], 0.0)
    assert r.low.tolist() == r.high.tolist() == [0.2, 0.0, -0.1]
    assert r.p_value.tolist() == [0.0, 1.0, 0.0]
    nan = difference_interval(0.2, math.nan)
    assert math.isnan(float(nan.low)) and math.isnan(float(nan.p_value))


def test_difference_interval_refuses_a_negative_se_or_df() -> None:
    with pytest.raises(ValueError, match="standard error must be >= 0"):
        difference_interval(0.1, -0.01)
    with pytest.raises(ValueError, match="degrees of freedom must be > 0"):
        difference_interval(0.1, 0.01, df=0)


@settings(max_examples=60, deadline=None)
@given(
    est=st.floats(-10, 10),
    se=st.floats(1e-6, 10),
    df=st.one_of(st.just(math.inf), st.floats(1, 500)),
)
def test_difference_interval_matches_the_t_test(est: float, se: float, df: float) -> None:
    r = difference_interval(est, se, df)
    assert float(r.low) <= est <= float(r.high)
    assert float(r.p_value) == pytest.approx(2 * stats.t.sf(abs(est / se), df), abs=1e-12)
    # the interval excludes 0 exactly when p < 1 − level
    if abs(float(r.p_value) - (1 - LEVEL)) > 1e-9:
        assert (float(r.low) > 0 or float(r.high) < 0) == (float(r.p_value) < 1 - LEVEL)


# ---- seeds × shared questions --------------------------------------------------------------
def _naive(d: np.ndarray) -> tuple[float, float, float, float]:
    """The reference by loops: ``d[s][q]`` → (mean, low, high, p): per-seed mean differences,
    their variance; per-question means over seeds, their variance; Welch–Satterthwaite's ν."""
    seeds, questions = range(len(d)), range(len(d[0]))
    n, nq = len(seeds), len(questions)
    per_seed = [sum(d[s][q] for q in questions) / nq for s in seeds]
    per_q = [sum(d[s][q] for s in seeds) / n for q in questions]
    mean = sum(per_seed) / n
    a = sum((x - mean) ** 2 for x in per_seed) / (n - 1) / n
    mq = sum(per_q) / nq
    b = sum((x - mq) ** 2 for x in per_q) / (nq - 1) / nq
    nu = (a + b) ** 2 / (a**2 / (n - 1) + b**2 / (nq - 1))
    half = stats.t.ppf(0.975, nu) * math.sqrt(a + b)
    p = 2 * stats.t.sf(abs(mean) / math.sqrt(a + b), nu)
    return mean, mean - half, mean + half, p


@pytest.mark.parametrize("shape", [(3, 5), (4, 40), (6, 12), (10, 32)])
def test_paired_seeds_questions_against_the_naive_reference(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(sum(shape))
    arm = (rng.random(shape) < 0.7).astype(float)
    ref = (rng.random(shape) < 0.4).astype(float)
    r = paired_seeds_questions(arm, ref)
    got = [float(v) for v in (r.estimate, r.low, r.high, r.p_value)]
    assert got == pytest.approx(list(_naive((arm - ref).tolist())), rel=1e-9, abs=1e-12)


def test_paired_seeds_questions_is_vectorised_over_leading_axes() -> None:
    rng = np.random.default_rng(3)
    arm = (rng.random((2, 3, 5, 20)) < 0.6).astype(float)
    ref = (rng.random((2, 3, 5, 20)) < 0.5).astype(float)
    whole = paired_seeds_questions(arm, ref)
    assert whole.low.shape == (2, 3)
    one = paired_seeds_questions(arm[1, 2], ref[1, 2])
    assert float(whole.low[1, 2]) == pytest.approx(float(one.low), rel=1e-12)
    assert float(whole.p_value[1, 2]) == pytest.approx(float(one.p_value), rel=1e-12)


def test_unanswered_questions_are_left_out() -> None:
    """NaN marks a question not answered: a NaN tail is the shorter table itself."""
    rng = np.random.default_rng(4)
    d = (rng.random((5, 30)) < 0.5).astype(float)
    padded = np.concatenate([d, np.full((5, 10), np.nan)], axis=1)
    a, b = paired_seeds_questions(padded), paired_seeds_questions(d)
    assert [float(v) for v in a] == pytest.approx([float(v) for v in b], rel=1e-12)


def test_degenerate_designs() -> None:
    """One seed: no interval; no spread at all: the point and p 0; equal seeds over questions
    that differ are not a point (the seeds-only t-interval would be)."""
    one = paired_seeds_questions(np.ones((1, 10)), np.zeros((1, 10)))
    assert float(one.estimate) == 1.0 and math.isnan(float(one.low)) and np.isnan(one.p_value)
    flat = paired_seeds_questions(np.ones((3, 4)), np.zeros((3, 4)))
    assert (float(flat.low), float(flat.high), float(flat.p_value)) == (1.0, 1.0, 0.0)
    equal = paired_seeds_questions(np.tile([1.0, 0.0], (2, 1)))
    assert float(equal.estimate) == 0.5 and float(equal.low) < 0.5 < float(equal.high)


def test_the_interval_counts_the_questions_the_seeds_share() -> None:
    """Ten seeds win the same 2 of 32 questions: the seeds-only t-test sees ten equal gains
    (p tiny), the interval over seeds and questions sees two questions' luck (p large)."""
    rng = np.random.default_rng(2)
    base = rng.random(32) < 0.3
    soft = np.tile(base, (10, 1))
    soft[np.arange(10), rng.integers(0, 32, 10)] ^= True  # a little seed-to-seed noise
    adap = soft.copy()
    adap[:, np.flatnonzero(~base)[:2]] = True  # the same two questions won by every seed
    with warnings.catch_warnings():  # scipy warns of near-equal differences: that is the point
        warnings.simplefilter("ignore", RuntimeWarning)
        seeds_only = stats.ttest_rel(adap.mean(1), soft.mean(1)).pvalue
    r = paired_seeds_questions(adap, soft)
    assert seeds_only < 1e-6 and float(r.p_value) > 0.1 and float(r.low) <= 0 <= float(r.high)
    many = paired_seeds_questions(np.tile(adap, 20), np.tile(soft, 20))  # 40 of 640 questions
    assert float(many.p_value) < 0.01


def test_limits_of_the_interval() -> None:
    """Identical seeds: the binomial error of the questions; unlimited questions with a seed
    effect only: the seeds' t-interval."""
    rng = np.random.default_rng(0)
    m = 2000
    same = np.broadcast_to(rng.random(m) < 0.3, (10, m)).astype(float)
    p = same[0].mean()
    r = paired_seeds_questions(same)
    assert float(r.se) == pytest.approx(math.sqrt(p * (1 - p) / (m - 1)), rel=1e-9)
    seeds = np.repeat(np.linspace(0.3, 0.9, 8)[:, None], 4000, axis=1)  # no question effect
    s = paired_seeds_questions(seeds)
    ci = stats.ttest_1samp(seeds.mean(1), 0).confidence_interval(0.95)
    assert (float(s.low), float(s.high)) == pytest.approx((ci.low, ci.high), rel=1e-9)


def test_the_interval_covers_at_three_seeds() -> None:
    """A seed-dominated design at 3 seeds × 32 questions, 400 simulations at once: the
    interval covers the true mean 0 at least 90 % of the time (benchmarks/stats_coverage.py
    measures it properly)."""
    rng = np.random.default_rng(1)
    sims, seeds, m = 400, 3, 32
    seed = rng.normal(size=(sims, seeds, 1))
    question = 0.3 * rng.normal(size=(sims, 1, m))
    d = seed + question + 0.3 * rng.normal(size=(sims, seeds, m))
    r = paired_seeds_questions(d)
    assert np.mean((r.low <= 0) & (0 <= r.high)) >= 0.90


def test_seeds_questions_from_summaries() -> None:
    r = seeds_questions(0.1, 0.01, 5, 0.04, 100)
    se = math.sqrt(0.01 / 5 + 0.04 / 100)
    nu = se**4 / ((0.01 / 5) ** 2 / 4 + (0.04 / 100) ** 2 / 99)
    assert float(r.se) == pytest.approx(se) and float(r.df) == pytest.approx(nu)
    one_question = seeds_questions(0.1, 0.01, 5, math.nan, 1)  # question variance unknown: 0
    assert float(one_question.df) == pytest.approx(4.0)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: paired_seeds_questions(np.ones(5)), "seeds, questions"),
        (lambda: paired_seeds_questions(np.ones((3, 0))), "seeds, questions"),
        (lambda: paired_seeds_questions(np.full((3, 4), np.nan)), "at least one answered"),
        (lambda: seeds_questions(0.1, 0.01, 0, 0.01, 10), "seeds and questions"),
        (lambda: seeds_questions(0.1, -0.01, 3, 0.01, 10), "variances"),
    ],
)
def test_bad_designs_raise(call, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=match):
        call()


# ---- a proportion ----------------------------------------------------------------------
def test_wilson_known_answers() -> None:
    lo, hi = proportion_interval(0, 10)
    assert float(lo) == 0 and float(hi) == pytest.approx(0.2775, abs=1e-4)
    lo, hi = proportion_interval(5, 10)
    assert (float(lo), float(hi)) == (
        pytest.approx(0.2366, abs=1e-4),
        pytest.approx(0.7634, abs=1e-4),
    )
    lo, hi = proportion_interval([3, 0], [10, 0])
    assert math.isnan(lo[1]) and math.isnan(hi[1]) and lo[0] < 0.3 < hi[0]


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 5000), frac=st.floats(0, 1), level=st.sampled_from([0.8, 0.95, 0.99]))
def test_wilson_is_scipys(n: int, frac: float, level: float) -> None:
    k = round(frac * n)
    lo, hi = proportion_interval(k, n, level)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    assert (float(lo), float(hi)) == pytest.approx((ci.low, ci.high), abs=1e-12)


@pytest.mark.parametrize("k, n", [(-1, 10), (11, 10), (0, -1)])
def test_bad_counts_raise(k: int, n: int) -> None:
    with pytest.raises(ValueError, match="successes <= trials"):
        proportion_interval(k, n)


# ---- a slope ---------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(n=st.integers(3, 40), seed=st.integers(0, 2**16))
def test_slope_is_linregress(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = 0.7 * x + rng.normal(size=n)
    r, ref = slope_interval(x, y), stats.linregress(x, y)
    assert float(r.estimate) == pytest.approx(ref.slope, rel=1e-9, abs=1e-12)
    assert float(r.se) == pytest.approx(ref.stderr, rel=1e-9, abs=1e-12)
    half = stats.t.ppf(0.975, n - 2) * ref.stderr
    assert float(r.high) == pytest.approx(ref.slope + half, rel=1e-9, abs=1e-12)
    assert float(r.p_value) == pytest.approx(ref.pvalue, rel=1e-7, abs=1e-12)


def test_slope_rows_and_missing_points() -> None:
    x = np.log([16.0, 64, 256, 1024])
    y = np.stack([-x + 1, -0.5 * x, [0.0, np.nan, 1.0, np.inf]])  # one row with gaps
    r = slope_interval(x, y)
    assert r.estimate[:2].tolist() == pytest.approx([-1.0, -0.5])
    assert r.se[:2].tolist() == pytest.approx([0.0, 0.0], abs=1e-12)
    assert float(r.estimate[2]) == pytest.approx(1.0 / (x[2] - x[0]))  # two points left
    assert math.isnan(r.low[2]) and math.isnan(r.se[2])
    flat = slope_interval([1.0, 1.0, 1.0], [0.0, 1.0, 2.0])
    assert math.isnan(float(flat.estimate))


def test_slope_needs_an_axis() -> None:
    with pytest.raises(ValueError, match="last axis"):
        slope_interval(1.0, 2.0)


# ---- dispersion (attnlimits.metrics.dispersion) ------------------------------------------
def test_dispersion_slope_known_answers() -> None:
    """1/n weights have slope −1, constant weights 0, 1/√n −0.5; rows at once; a weight of 0
    or NaN is left out; one length: NaN."""
    from attnlimits.metrics.dispersion import dispersion_slope

    n = np.array([16.0, 64, 256, 1024])
    w = np.stack([3 / n, np.full(4, 0.4), 1 / np.sqrt(n), [0.5, np.nan, 0.0, 0.5 / 8]])
    got = dispersion_slope(n, w)
    assert got.tolist() == pytest.approx([-1.0, 0.0, -0.5, -0.5], abs=1e-12)
    assert math.isnan(float(dispersion_slope([16.0], [0.3])))
    with pytest.raises(ValueError, match="lengths must be > 0"):
        dispersion_slope([0.0, 16.0], [0.5, 0.4])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), k=st.integers(2, 12))
def test_dispersion_slope_is_the_naive_loglog_fit(seed: int, k: int) -> None:
    from attnlimits.metrics.dispersion import dispersion_slope

    rng = np.random.default_rng(seed)
    n = np.sort(rng.choice(np.arange(2, 5000), size=k, replace=False)).astype(float)
    w = rng.uniform(1e-4, 1.0, size=k)
    want = np.polyfit(np.log(n), np.log(w), 1)[0]
    assert float(dispersion_slope(n, w)) == pytest.approx(want, rel=1e-9, abs=1e-9)


def test_falls_throughout() -> None:
    from attnlimits.metrics.dispersion import falls_throughout

    rows = np.array([[0.9, 0.5, 0.2], [0.9, 0.9, 0.2], [0.5, 0.6, 0.1]])
    assert falls_throughout(rows).tolist() == [True, False, False]
    assert bool(falls_throughout([0.3]))  # vacuous: the caller decides whether one n judges
    with pytest.raises(ValueError, match="last axis"):
        falls_throughout(0.3)


def test_loglog_slope_is_a_power_laws_exponent() -> None:
    """y = 3·x² has slope 2; points with x or y ≤ 0, or not finite, are left out."""
    x = np.array([1.0, 2, 4, 8, -1, 16])
    y = np.array([3.0, 12, 48, np.nan, 5, 0.0])
    r = loglog_slope(x, y)
    assert float(r.estimate) == pytest.approx(2.0) and float(r.se) == pytest.approx(0, abs=1e-12)
    assert math.isnan(float(loglog_slope([1.0, 2.0], [0.0, 1.0]).estimate))  # one point left
