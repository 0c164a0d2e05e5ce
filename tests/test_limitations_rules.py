"""Paper A's verdict rules (``experiments/limitations/rules.py``).

Every rule gets known answers for each verdict it can return, at both sides of each threshold
(written here as literals: moving a threshold or turning ``≤`` into ``<`` fails a case). The
claims built on them: tests/test_limitations_findings.py and test_limitations_readings.py.
"""

from __future__ import annotations

import math

import pytest

from attnlimits.claims import Graded, Holds
from attnlimits.experiments.limitations import rules
from limitations_tables import (
    NA,
    N,
    P,
    R,
)

E9 = 1e-9  # just across a threshold


CASES = [
    # (rule, args, verdict)
    (rules.linear_growth, (1.0,), R),
    (rules.linear_growth, (0.7,), R),
    (rules.linear_growth, (0.7 - E9,), P),
    (rules.linear_growth, (1.3,), R),
    (rules.linear_growth, (1.3 + E9,), P),
    (rules.linear_growth, (0.1,), P),
    (rules.linear_growth, (0.1 - E9,), N),
    (rules.linear_growth, (-1.0,), N),
    (rules.linear_growth, (math.nan,), NA),
    (rules.bound_loose, (2.0,), R),
    (rules.bound_loose, (2.0 - E9,), P),
    (rules.bound_loose, (1.2,), P),
    (rules.bound_loose, (1.2 - E9,), N),
    (rules.bound_loose, (math.inf,), NA),
    (rules.plateau, (0.25,), R),
    (rules.plateau, (-0.25,), R),
    (rules.plateau, (0.25 + E9,), P),
    (rules.plateau, (-0.5,), P),
    (rules.plateau, (0.5 + E9,), N),
    (rules.plateau, (math.nan,), NA),
    (rules.tightens, (0.9,), R),
    (rules.tightens, (0.9 + E9,), P),
    (rules.tightens, (1.1,), P),
    (rules.tightens, (1.1 + E9,), N),
    (rules.tightens, (math.nan,), NA),
    (rules.converges, (0.75, 1.25), R),  # the 95 % interval of E / d̃ within 1 ± 0.25
    (rules.converges, (0.95, 1.05), R),
    (rules.converges, (0.75 - E9, 1.0), P),  # across the edge: the data cannot tell
    (rules.converges, (1.0, 1.25 + E9), P),
    (rules.converges, (0.7, 1.3), P),
    (rules.converges, (0.5, 0.75 - E9), N),  # wholly outside
    (rules.converges, (1.25 + E9, 2.0), N),
    (rules.converges, (0.16, 0.17), N),  # wholly outside, no trend over N given
    (rules.converges, (0.5, 0.75), P),  # touching the edge from outside: not wholly outside
    (rules.converges, (1.25, 2.0), P),
    (rules.converges, (math.nan, 0.1), NA),
    # (iii.b) paper A: '≈ 0.06L' needed at more than MOST_L = half the testable L (point 8)
    (rules.about_most, ([0.06, 0.03, 0.05],), R),  # in [0.03, 0.06]: both
    (rules.about_most, ([0.06, 0.03, 0.001],), P),  # 0.001: 'fewer than 6 %', not ≈ (point 5)
    (rules.about_most, ([0.03 - E9, 0.06],), P),  # 'fewer than 6 %' at both (round 5, point 4)
    (rules.about_most, ([0.03 - E9, 0.12 + E9],), N),  # below the floor, above the ≈: one of two
    (rules.about_most, ([0.03, 0.12, 0.5],), P),  # the floor itself is within the ≈
    # SmolLM2 hidden, printed E: 'fewer than 6 %' alone at every L (round 5, point 4: the ≈
    # alone and 'fewer than 6 %' alone each give partly)
    (rules.about_most, ([0.004, 0.004, 0.004, 0.004],), P),
    (rules.about_most, ([0.001, 0.001, 0.5],), P),  # 'fewer than 6 %' at two of three
    (rules.about_most, ([0.001, 0.12, 0.5],), N),  # each statement at one of three: neither
    (rules.about_most, ([0.001, 0.001, 0.12, 0.12],), N),  # each at half: not more than half
    # at the grid's resolution: (limits), (floors); L = 128's floor: the first N ≥ 3.84, 4
    (rules.about_most, ([2 / 128], [(0.0625, 0.125)], [4 / 128]), P),  # 'fewer than' alone
    (rules.about_most, ([2 / 128], [(0.0625, 0.125)], [3 / 128]), P),  # below the floor
    (rules.about_most, ([4 / 128], [(0.0625, 0.125)], [4 / 128]), R),
    (rules.about_most, ([0.06, 0.12, 0.5],), P),  # two of three within ≈
    (rules.about_most, ([0.12, 0.12, None],), P),
    (rules.about_most, ([0.06, 0.5],), N),  # one of two: not more than half
    (rules.about_most, ([0.12, None, None],), N),
    (rules.about_most, ([0.12 + E9, 0.12 + E9, 0.06],), N),
    (rules.about_most, ([],), NA),
    (rules.about_most, ([0.0625, 0.5, 0.5], [(0.0625, 0.125)] * 3), N),  # one length passing
    (rules.about_most, ([0.125, 0.125, 0.9], [(0.0625, 0.125)] * 3), P),
    (rules.about_most, ([0.0625, 0.0625], [(0.0625, 0.125)] * 2), R),  # at the grid's resolution
    (rules.d_collapses, (0.25,), R),  # d̃ at N ≈ 0.25·L at most a quarter of its peak
    (rules.d_collapses, (0.13,), R),
    (rules.d_collapses, (0.86,), N),  # SmolLM2's values at N = 256 = 0.25·L (round-3 run)
    (rules.d_collapses, (0.25 + E9,), P),
    (rules.d_collapses, (0.5,), P),
    (rules.d_collapses, (0.5 + E9,), N),
    (rules.d_collapses, (math.nan,), NA),
    # wholly outside is not reproduced, however E / d̃ moves over N (round-4 referee, point 1:
    # the partly rung TOWARDS_N is gone); SmolLM2's values at N = 100: 0.213–0.217
    (rules.converges, (0.213, 0.217), N),
    (rules.converges, (1.5, 1.6), N),  # from above
    (rules.about_fraction, ([0.06, 0.03, 0.001],), R),  # "fewer than 6 %" sets no floor
    (rules.about_fraction, ([0.06 + E9],), P),
    (rules.about_fraction, ([0.12],), P),
    (rules.about_fraction, ([0.12 + E9],), N),
    (rules.about_fraction, ([0.12 + E9, 0.75],), N),
    (rules.about_fraction, ([0.06, 0.75],), P),
    (rules.about_fraction, ([0.06, None],), P),
    (rules.about_fraction, ([None, None],), N),
    (rules.about_fraction, ([],), NA),
    # at the grid's resolution: per L, (the first tested N ≥ 0.06·L, ≥ 0.12·L) / L
    (rules.about_fraction, ([0.0625], [(0.0625, 0.125)]), R),  # L/16: where 0.06·L is measured
    (rules.about_fraction, ([0.0625 + E9], [(0.0625, 0.125)]), P),
    (rules.about_fraction, ([0.125], [(0.0625, 0.125)]), P),
    (rules.about_fraction, ([0.125 + E9], [(0.0625, 0.125)]), N),
    (rules.about_fraction, ([0.0625, 0.0625], [(0.0625, 0.125), (0.06, 0.12)]), P),
    (rules.about_fraction, ([None], [(0.0625, 0.125)]), N),
    (rules.sub_linear, (0.9, 0.9), R),  # (smallest, largest slope the censoring allows)
    (rules.sub_linear, (-0.3, -0.3), R),  # a critical N that stays put: a shrinking share of L
    (rules.sub_linear, (0.5, 0.9), R),
    (rules.sub_linear, (0.9 + E9, 0.9 + E9), P),  # between: sub-linear, barely
    (rules.sub_linear, (1.0 - E9, 1.0 - E9), P),
    (rules.sub_linear, (0.5, 1.5), P),  # censoring leaves both open
    (rules.sub_linear, (1.0, 1.0), N),  # a fixed fraction of L is linear, not sub-linear
    (rules.sub_linear, (1.0, 1.6), N),
    (rules.sub_linear, (math.nan, 1.0), NA),
    (rules.falls, (0.05,), R),
    (rules.falls, (0.05 - E9,), P),
    (rules.falls, (E9,), P),
    (rules.falls, (0.0,), N),
    (rules.falls, (-0.2,), N),
    (rules.falls, (math.nan,), NA),
    (rules.saturates, (0.05,), R),
    (rules.saturates, (-0.05,), R),
    (rules.saturates, (0.05 + E9,), P),
    (rules.saturates, (-0.15,), P),
    (rules.saturates, (0.15 + E9,), N),
    (rules.saturates, (math.nan,), NA),
    (rules.in_band, ([0.70, 0.85, 0.8],), R),
    (rules.in_band, ([0.70 - E9],), N),
    (rules.in_band, ([0.85 + E9],), N),
    (rules.in_band, ([0.8, 0.6],), P),
    (rules.in_band, ([],), NA),
    (rules.lower_loose, (0.3,), R),
    (rules.lower_loose, (0.3 - E9,), P),
    (rules.lower_loose, (0.1,), P),
    (rules.lower_loose, (0.1 - E9,), N),
    (rules.lower_loose, (math.nan,), NA),
    (rules.one_over_t, ([-1.0, -0.8, -1.2],), R),  # per testable ε, the log-log slope
    (rules.one_over_t, ([-0.8],), R),
    (rules.one_over_t, ([-1.2],), R),
    (rules.one_over_t, ([-0.8 + E9],), P),  # rises as T falls, slower than 1/T: the partly rung
    (rules.one_over_t, ([-0.33],), P),  # the committed runs' ε = 0.001 (slopes −0.31 to −0.35)
    (rules.one_over_t, ([-0.1],), P),
    (rules.one_over_t, ([-0.1 + E9],), N),  # flat: no rise
    (rules.one_over_t, ([0.5],), N),
    (rules.one_over_t, ([-1.2 - E9],), P),  # steeper than 1/T: rises, not as 1/T
    (rules.one_over_t, ([-1.0, 0.0],), P),
    (rules.one_over_t, ([0.0, 0.2],), N),
    (rules.one_over_t, ([-0.5, -0.5],), P),
    (rules.one_over_t, ([math.nan, -1.0],), R),
    (rules.one_over_t, ([math.nan],), NA),
    (rules.one_over_t_eps, (-1.0,), R),
    (rules.one_over_t_eps, (-0.8 + E9,), P),
    (rules.one_over_t_eps, (-0.1 + E9,), N),
    # the alternative reading (round-5 referee, point 1): a slope in (−0.8, −0.1] saturates
    (rules.one_over_t_saturating, ([-1.0, -0.8, -1.2],), R),
    (rules.one_over_t_saturating, ([-0.8 + E9],), N),  # no partly rung
    (rules.one_over_t_saturating, ([-0.33],), N),  # the committed runs' ε = 0.001
    (rules.one_over_t_saturating, ([-1.2 - E9],), N),
    (rules.one_over_t_saturating, ([-1.0, -0.33],), P),  # some ε follow 1/T
    (rules.one_over_t_saturating, ([math.nan, -1.0],), R),
    (rules.one_over_t_saturating, ([math.nan],), NA),
    (rules.one_over_t_eps_saturating, (-0.8,), R),
    (rules.one_over_t_eps_saturating, (-1.2,), R),
    (rules.one_over_t_eps_saturating, (-0.8 + E9,), N),
    (rules.one_over_t_eps_saturating, (-1.2 - E9,), N),
    (rules.four_fifths, (0.85,), R),  # "no more than ≈ 80 %": the max over heads at N ≥ 16
    (rules.four_fifths, (0.5,), R),
    (rules.four_fifths, (0.85 + E9,), N),
    (rules.four_fifths, (0.99,), N),
    (rules.four_fifths, (math.nan,), NA),
    (rules.near_limit, (0.5,), R),  # g / min{1/(4T), √2}, smallest over T < 0.1
    (rules.near_limit, (1.0,), R),
    (rules.near_limit, (0.5 - E9,), P),
    (rules.near_limit, (0.1,), P),
    (rules.near_limit, (0.1 - E9,), N),
    (rules.near_limit, (0.02,), N),  # 50× below √2
    (rules.near_limit, (math.nan,), NA),
    # (slope over 0.1 ≤ T ≤ 1, slope over the lowest decade); saturates: above RISES = −0.1
    (rules.tracks_law, (-1.0, -0.05), R),
    (rules.tracks_law, (-1.2, -0.1 + E9), R),
    (rules.tracks_law, (-0.8, -0.1 + E9), R),
    (rules.tracks_law, (-1.0, -0.1), P),  # tracks; rises at the limit: does not saturate
    (rules.tracks_law, (-1.0, -0.3), P),  # rises, slower than 1/T (round-5 referee, point 1)
    (rules.tracks_law, (-1.0, -1.0), P),
    (rules.tracks_law, (-1.2 - E9, -0.05), P),  # saturates, does not track
    (rules.tracks_law, (-0.8 + E9, -0.05), P),
    (rules.tracks_law, (-0.42, -0.06), P),  # SmolLM2's committed slopes
    (rules.tracks_law, (-0.31, -0.48), N),  # MiniLM's: neither tracks nor saturates
    (rules.tracks_law, (-0.5, -1.0), N),
    (rules.tracks_law, (math.nan, -0.3), NA),
    (rules.tracks_law, (-1.0, math.nan), NA),
    # the alternative reading (the rule until round 5): saturates above ONE_OVER_T_HI = −0.8
    (rules.tracks_law_saturating, (-1.0, -0.3), R),
    (rules.tracks_law_saturating, (-1.2, -0.8 + E9), R),
    (rules.tracks_law_saturating, (-0.8, -0.8 + E9), R),
    (rules.tracks_law_saturating, (-1.0, -0.8), P),  # tracks, does not saturate
    (rules.tracks_law_saturating, (-1.2 - E9, -0.3), P),  # saturates, does not track
    (rules.tracks_law_saturating, (-0.8 + E9, -0.3), P),
    (rules.tracks_law_saturating, (-0.31, -0.48), P),  # MiniLM's committed slopes
    (rules.tracks_law_saturating, (-0.5, -1.0), N),
    (rules.tracks_law_saturating, (math.nan, -0.3), NA),
    (rules.increases, (2.0,), R),  # ‖J‖₂ at the smallest T / at T = 0.1
    (rules.increases, (100.0,), R),
    (rules.increases, (2.0 - E9,), P),
    (rules.increases, (1.0 + E9,), P),
    (rules.increases, (1.0,), N),
    (rules.increases, (0.5,), N),
    (rules.increases, (math.nan,), NA),
    (rules.vanishes, (0.5,), R),  # E at the largest N / its peak over N
    (rules.vanishes, (0.3,), R),
    (rules.vanishes, (0.5 + E9,), N),
    (rules.vanishes, (1.0,), N),
    (rules.vanishes, (math.nan,), NA),
    (rules.not_run, (), NA),
    (rules.by_construction, (100.0, -1.0), NA),  # (v.h): shown, never judged
    (rules.by_construction, (1.0,), NA),
    (rules.drops, (10**1.5,), R),
    (rules.drops, (10**1.5 - E9,), P),
    (rules.drops, (10**0.5,), P),
    (rules.drops, (10**0.5 - E9,), N),
    (rules.drops, (math.nan,), NA),
    (rules.collapses, ([1.0, 1.1],), R),  # max / min over ε at each T ≥ 1
    (rules.collapses, ([1.1 + E9],), N),
    (rules.collapses, ([1.05, 1.5],), P),
    (rules.collapses, ([math.nan],), NA),
    (rules.collapses, ([],), NA),
    (rules.within_noise, ([0.99, 1.0],), R),
    (rules.within_noise, ([0.99 - E9, 1.0],), P),
    (rules.within_noise, ([0.5, 0.2],), N),
    # ε, E exact, its SE per cell: ε ≤ 0.1·E exact + 3 SE in ≥ 99 % of them, else n/a
    (rules.small_residual, ([1.0] * 99 + [5.0], [10.0] * 100, [0.0] * 100), R),
    (rules.small_residual, ([1.0] * 98 + [1.0 + E9] * 2, [10.0] * 100, [0.0] * 100), NA),
    (rules.small_residual, ([1.3], [10.0], [0.1]), R),  # within 3 SE
    (rules.small_residual, ([1.3 + 1e-6], [10.0], [0.1]), NA),
    (rules.small_residual, ([math.nan], [10.0], [0.1]), NA),
    # |ε| (round-5 referee, point 9): a large negative ε is not small
    (rules.small_residual, ([-1.0] * 100, [10.0] * 100, [0.0] * 100), R),
    (rules.small_residual, ([1.0] * 98 + [-5.0] * 2, [10.0] * 100, [0.0] * 100), NA),
    (rules.small_residual, ([-1.3], [10.0], [0.1]), R),  # within 3 SE
    (rules.small_residual, ([-1.3 - 1e-6], [10.0], [0.1]), NA),
    # with max α_i per cell: judged on the cells at or below the (lower) median concentration
    # only; a large ε where the weights are concentrated does not count, one where they are
    # not reads not reproduced
    (rules.small_residual, ([1.0, 1.0, 5.0, 5.0], [10.0] * 4, [0.0] * 4, [0.1, 0.2, 0.3, 0.4]), R),
    (rules.small_residual, ([1.0, 5.0, 1.0, 1.0], [10.0] * 4, [0.0] * 4, [0.1, 0.2, 0.3, 0.4]), N),
    (rules.small_residual, ([1.0, 1.0, 5.0], [10.0] * 3, [0.0] * 3, [0.1, 0.2, 0.3]), R),
    (rules.small_residual, ([1.0, 5.0, 1.0], [10.0] * 3, [0.0] * 3, [0.1, 0.2, 0.3]), N),
    (rules.small_residual, ([1.0, 1.0], [10.0] * 2, [0.0] * 2, [0.2, 0.2]), R),  # ties: both in
    (rules.small_residual, ([1.0, 5.0], [10.0] * 2, [0.0] * 2, [0.2, 0.2]), N),
    (rules.small_residual, ([1.0] * 99 + [5.0], [10.0] * 100, [0.0] * 100, [0.1] * 100), R),
    (rules.small_residual, ([1.0] * 98 + [5.0] * 2, [10.0] * 100, [0.0] * 100, [0.1] * 100), N),
    (rules.small_residual, ([1.0, 5.0], [10.0] * 2, [0.0] * 2, [0.1, math.nan]), R),
    (rules.small_residual, ([1.0], [10.0], [0.0], [math.nan]), NA),
    (rules.holds, (1.0,), R),
    (rules.holds, (1.0 - E9,), N),
    (rules.holds, (0.0,), N),
    (rules.holds, (math.nan,), NA),
    (rules.share, ([True, True],), R),
    (rules.share, ([True, False],), P),
    (rules.share, ([False],), N),
    (rules.share, ([],), NA),
    (rules.safe, (1.0,), R),
    (rules.safe, (1.0 - E9,), N),
    (rules.corollary3, (1.0,), R),
    (rules.corollary3, (0.0,), N),
    (rules.exists, ([True, False],), P),
    (rules.exists, ([False],), N),
    (rules.exists, ([True],), R),
    (rules.ordered, ([True, True],), R),
    (rules.ordered, ([],), NA),
    (rules.ordered, ([False, True],), P),
    (rules.ordered, ([False, False],), N),
    (rules.delta_positive, ([True, False],), P),
    (rules.delta_positive, ([False],), N),
    (rules.delta_positive, ([True],), R),
]


def _name(v: object) -> str | None:
    return getattr(v, "__name__", None)


@pytest.mark.parametrize(("rule", "args", "want"), CASES, ids=_name)
def test_rule_known_answers(rule, args, want):
    assert rule(*args) == want


def test_every_rule_reaches_each_of_its_verdicts():
    """A rule that cannot return one of its verdicts is a defect: the table above has each."""
    reached: dict[str, set[str]] = {}
    for rule, _, want in CASES:
        reached.setdefault(rule.__name__, set()).add(want)
    three = {R, P, N}
    for name in rules.__all__:
        rule = getattr(rules, name)
        if name.isupper() or not callable(rule):
            continue
        # a bound holds or it does not; a limit with no partly band; a statement no run has
        two = isinstance(rule, Holds) or (isinstance(rule, Graded) and rule.partly is None)
        never = (rules.not_run, rules.by_construction)  # no run has it; cannot fail
        want = {NA} if rule in never else {R, N} if two else three
        if rule is rules.small_residual:  # small everywhere, or the 'whenever' is not judged
            want = {R, NA}
        assert want <= reached.get(name, set()), (name, reached.get(name))
