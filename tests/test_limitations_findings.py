"""Paper A's claims (``experiments/limitations/claims.py``, ``findings.py``) judged on
synthetic tables (tests/limitations_tables.py) built so that each must come out reproduced,
partly and not reproduced, through ``claims(tables, meta)`` as a run calls it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnlimits.experiments.limitations import claims
from attnlimits.experiments.limitations.corollary2 import claim_ii_d
from attnlimits.experiments.limitations.findings import (
    claim_ii,
    claim_iv,
    claim_v,
    critical_from_tests,
    slope_bounds,
)
from limitations_tables import (
    LENGTHS,
    META,
    NA,
    NT,
    PAPER_CRIT,
    N,
    P,
    R,
    alg2_table,
    alg3_tables,
    alg4_table,
    alg5_table,
    row,
    tables,
    verdict,
)


def test_every_finding_reproduced_on_tables_built_to_the_papers_statements():
    got = claims(tables(), META)
    for c in ("(i) ", "(ii) ", "(iii) ", "(iv) ", "(v) "):
        assert verdict(got, c) == R, row(got, c).to_dict()
    # n/a, not testable, checks that cannot fail or cannot pass (Theorem 2 at N = 1)
    # no run has their numbers, or the paper gives no tolerance (round 8's points 1 and 8)
    unmeasured = ("Normalisers:", "Selectivity:", "Noise:", "Dilution:", "Outside:", "Capacity:")
    shown = ("Larger", "(v.b)", "(v.h)", "(iv.d)", "(iv.f)", "Lemma", "Heads", *unmeasured)
    rest = ~got["claim"].str.startswith(shown)
    statements = got[(got["role"] != "finding") & rest]
    assert (statements["verdict"] == R).all(), statements[statements["verdict"] != R]
    assert verdict(got, "Larger") == NA  # no run of ours has a larger variant
    # round 7's point 8: the slope over T ≥ 10ε beside, in a form the slope parsers skip
    assert (
        "over T ≥ 10ε only (shown, not judged): -1.00 at ε = 0.001 (2 T)"
        in (row(got, "(v.a)")["measured"])
    )
    for key in unmeasured:
        assert verdict(got, key) == NA and "n/a: " in row(got, key)["measured"]
    assert verdict(got, "(v.b)") == NT  # the run's ε grid: no T < 0.1 has two ε below it
    assert verdict(got, "(v.h)") == NA  # reading (c) of the drop: near certain (max over heads)
    assert verdict(got, "(iv.d)") == NA  # the upper bound is ≥ e^(−1/4) whatever the tokens
    assert verdict(got, "(iv.f)") == NA  # fails at N = 1 by arithmetic, vacuous at N ≥ 2
    assert verdict(got, "Lemma") == NA and verdict(got, "Heads") == NA  # not stored; arithmetic


def test_each_finding_names_its_headline_and_checks_are_never_evidence():
    """The roles as issue 40 fixes them: (iii)'s headline is '≈ 0.06L' / 'fewer than 6 %',
    theorem-guaranteed properties are checks, every finding has a headline."""
    got = claims(tables(), META).set_index("claim")
    heads = {c.split(" ")[0] for c in got.index[got["role"] == "headline"]}
    assert heads == {"(i.a)", "(ii.c)", "(iii.b)", "(iv.c)", "(v.a)"}  # (i): the distance
    checks = {c.split(" ")[0] for c in got.index[got["role"] == "check"]}
    assert checks == {
        "(i.c)",
        "(iii.a)",
        "(iv.d)",
        "(iv.f)",
        "(v.h)",
        "Corollary",
        "Assumption",
        "Lemma",
        "Heads",
        "Normalisers:",
        "Selectivity:",
        "Noise:",
        "Dilution:",
        "Outside:",
        "Capacity:",
    }
    assert "6 %" in got.loc[got.index.str.startswith("(iii.b)"), "paper"].iloc[0]


def test_a_finding_follows_its_headline_not_its_supporting_statements_or_checks():
    """(iv): the band holds; the bound is 1.00 at every N (tracks nothing) and the bounds fail
    (a check): the finding is still reproduced. Then the band fails: not reproduced, whatever
    the rest says."""
    alg4 = alg4_table()
    alg4.loc[alg4["N"] > 1, "upper"] = 1.0
    alg4.loc[alg4["N"] > 1, "lower"] = 2.0  # above N_s/N: Theorem 2's lower bound fails
    got = claims(tables(alg4=alg4), META)
    assert verdict(got, "(iv.d)") == NA and verdict(got, "(iv.f)") == NA
    assert verdict(got, "(iv) ") == R
    alg4 = alg4_table()
    alg4.loc[alg4["N"] >= 16, "ratio"] = 0.6  # below the band, the rest as the paper says
    alg4.loc[alg4["N"] >= 16, "upper"] -= 0.2
    got = claims(tables(alg4=alg4), META)
    assert verdict(got, "(iv.c)") == N and verdict(got, "(iv.a)") == R
    assert verdict(got, "(iv) ") == N  # any headline not reproduced: not reproduced


def test_iv_each_verdict():
    assert verdict(claims(tables(alg4={"paper": False}), META), "(iv) ") == N
    alg4 = alg4_table()
    alg4.loc[alg4["N"] == 16, "ratio"] = 0.9  # N = 16 alone outside the band
    got = claims(tables(alg4=alg4), META)
    assert verdict(got, "(iv.c)") == P and verdict(got, "(iv) ") == P


def test_iv_bounds_not_testable_where_assumption_2_fails_everywhere():
    alg4 = alg4_table().assign(assumption2=False, delta=0.0)
    rows = claim_iv(alg4)
    for key in ("(iv.d)", "(iv.e)", "(iv.f)"):
        r = _sub_row(rows, key)
        assert r["verdict"] == NT and "Assumption 2 fails" in r["measured"], r
    assert rows[0]["verdict"] == R  # the band decides (iv); the bounds are not its headline


def test_iv_d_the_upper_bound_is_shown_not_judged():
    """(iv.d): the upper bound is at least e^(−1/4) whatever the tokens on the sphere and 1.00
    on the saved run's heads; whether it 'tracks' the maxima is shown, not judged (n/a), a
    check (round-4 referee, point 7)."""
    alg4 = alg4_table()
    alg4.loc[alg4["N"] > 1, "upper"] = 1.0
    r = _sub_row(claim_iv(alg4), "(iv.d)")
    assert r["verdict"] == NA and r["role"] == "check"
    assert "N=2: 0.96/1.00" in r["measured"] and "range over N 0.000" in r["measured"]


def test_iv_e_is_judged_where_the_lower_bound_says_something():
    """(iv.e) "the lower bound is intentionally conservative": a lower bound ≤ 0 lies below any
    N_s/N (vacuous); the gap is judged over the (head, N) where it is > 0 (round-4 referee,
    point 7), and with none, not testable."""
    alg4 = alg4_table()
    far = alg4["N"] >= 8
    alg4.loc[far, "lower"] = -1.0  # vacuous from N = 8 on: a gap of about 1.8 there
    alg4.loc[~far, "lower"] = alg4.loc[~far, "ratio"] - 0.05  # tight where it is > 0
    r = _sub_row(claim_iv(alg4), "(iv.e)")
    assert r["verdict"] == N, r
    assert "lower bound ≤ 0 (vacuous) in 24 of 36" in r["measured"]
    assert "median N_s/N − lower bound = 0.05" in r["measured"]
    alg4.loc[:, "lower"] = -1.0
    r = _sub_row(claim_iv(alg4), "(iv.e)")
    assert r["verdict"] == NT and "the lower bound is ≤ 0 at every" in r["measured"]


def test_iv_f_shows_both_shares_and_judges_neither():
    """(iv.f) Theorem 2's bounds at every N: at N = 1 the upper bound is below N_s/N = 1 by
    arithmetic (docs/errata.md), at N ≥ 2 it is ≥ e^(−1/4) whatever the tokens: a check that
    cannot pass at N = 1 and can barely fail at N ≥ 2, so both shares are shown and neither is
    judged (n/a; round-5 referee, point 6: it read not reproduced on any data)."""
    r = _sub_row(claim_iv(alg4_table()), "(iv.f)")
    assert r["verdict"] == NA and r["role"] == "check"
    assert "at N = 1: 0.0%" in r["measured"] and "at N ≥ 2: 100.0%" in r["measured"]
    assert "fails by arithmetic" in r["measured"] and "lower bound ≤ 0 in" in r["measured"]
    alg4 = alg4_table()
    alg4.loc[alg4["N"] == 1, "upper"] = 1.0
    alg4.loc[alg4["N"] == 2, "upper"] = 0.0  # N ≥ 2 now fails at N = 2: shown, still n/a
    r = _sub_row(claim_iv(alg4), "(iv.f)")
    assert r["verdict"] == NA and "at N = 1: 100.0%" in r["measured"]
    assert "at N ≥ 2: 100.0%" not in r["measured"]


def test_iv_the_median_over_heads_not_the_mean():
    """One head far below the band pulls the mean out of it; the median stays."""
    alg4 = alg4_table()
    low = (alg4["head"] == 0) & (alg4["N"] >= 16)
    alg4.loc[low, "ratio"] = 0.0
    assert _sub_verdict(claim_iv(alg4), "(iv.c)") == R


def test_v_b_orders_the_eps_below_t_only():
    """(v.b) "smaller ε gives larger values", stated for T < 0.1, over the ε below T only
    (referee round 3, point 20): at ε ≥ T the cap g ≤ √2/ε orders the curves by arithmetic.
    On the run's ε grid (10⁻³, 0.1, 10) no T < 0.1 has two such ε: not testable, named."""
    got = claims(tables(), META)
    assert verdict(got, "(v.b)") == NT
    assert "at no T < 0.1 are two ε below T" in row(got, "(v.b)")["measured"]
    four = (1e-4, 1e-3, 0.1, 10.0)  # ε = 10⁻⁴ and 10⁻³ lie below T = 0.002 … 0.03
    got = claims(tables(alg5={"eps": four, "order_above": True}), META)
    assert verdict(got, "(v.b)") == R and "at 4 of 4 T < 0.1" in row(got, "(v.b)")["measured"]
    assert verdict(got, "(v) ") == R  # the order at T ≥ 0.3 (reversed there) says nothing
    reversed_ = claim_v(alg5_table(eps=four, order=0.1))  # larger ε, larger values
    assert _sub_verdict(reversed_, "(v.b)") == N
    capped = alg5_table(eps=four)  # the capped ε (≥ T) out of order: they do not count
    big = (capped["eps"] >= 0.1) & (capped["T"] < 0.1)
    capped.loc[big, ["sensitivity", "sensitivity_row_max"]] *= 100
    assert _sub_verdict(claim_v(capped), "(v.b)") == R
    one = alg5_table(eps=four)  # at T = 0.01 ε = 10⁻³ above ε = 10⁻⁴: one T of four
    at = (one["eps"] == 1e-3) & (one["T"] == 1e-2)
    one.loc[at, ["sensitivity", "sensitivity_row_max"]] *= 2
    assert _sub_verdict(claim_v(one), "(v.b)") == P
    single = alg5_table()
    assert _sub_verdict(claim_v(single[single["eps"] == 1e-3]), "(v.b)") == NA  # one ε


def test_v_each_verdict():
    flat = tables(alg5={"slope": 0.0, "drop": 1.0, "order": 0.1})
    assert verdict(claims(flat, META), "(v) ") == N
    # a curve rising as T falls, slower than 1/T (the committed runs: −0.31 to −0.35): partly
    got = claims(tables(alg5={"slope": -0.5}), META)
    assert verdict(got, "(v.a)") == P and verdict(got, "(v) ") == P
    got = claims(tables(alg5={"slope": 0.05}), META)  # no rise
    assert verdict(got, "(v.a)") == N and verdict(got, "(v) ") == N
    # from T = 0.01 to T = 1 (reading (b), deciding since the round-4 referee's point 3):
    # 10·drop for ε = 10⁻³ (the one ε below T = 0.01), so 5× is partly and 1× not; the 1/T
    # trend below 0.1 holds, so (v) stays reproduced
    got = claims(tables(alg5={"drop": 0.5}), META)
    assert verdict(got, "(v.c)") == P and verdict(got, "(v) ") == R
    assert "from T = 0.01 to T = 1: 5× (reading (b))" in row(got, "(v.c)")["measured"]
    got = claims(tables(alg5={"drop": 0.1}), META)
    assert verdict(got, "(v.c)") == N and verdict(got, "(v) ") == R
    # across T ≥ 1 (reading (c)) cannot fail: the check (v.h), n/a whatever it measures
    for fall in (1.0, 0.1):
        got = claims(tables(alg5={"fall": fall}), META)
        assert verdict(got, "(v.c)") == R and verdict(got, "(v.h)") == NA
        assert row(got, "(v.h)")["role"] == "check"
    assert "T = 1 to 100: 1.58×" in row(got, "(v.h)")["measured"]
    # 10× from T = 0.1 (reading (a) falls short) is 100× from T = 0.01: reading (b) holds
    got = claims(tables(alg5={"drop": 10.0}), META)
    assert verdict(got, "(v.c)") == R
    assert "from T = 0.1: 10× (reading (a))" in row(got, "(v.c)")["measured"]


def test_v_a_judges_each_eps_where_it_is_below_t():
    """1/T is the derivative's trend; g(T, ε) approximates it only while ε < T (at ε ≥ T the
    change saturates: ‖Δα‖₂ ≤ √2, g ≤ √2/ε, flat in T). Each ε is judged over the T in
    (ε, 0.1): ε = 0.1 and 10 have none on this grid and are named and left out, so their flat
    curves do not sink the verdict; with only such ε, not testable."""
    alg5 = alg5_table()
    flat = (alg5["eps"] >= 0.1) & (alg5["T"] < 0.1)
    for col in ("sensitivity", "sensitivity_row_max"):
        alg5.loc[flat, col] = 0.13 / alg5.loc[flat, "eps"]  # saturated: flat in T
    rows = claim_v(alg5)
    measured = _sub_row(rows, "(v.a)")["measured"]
    assert _sub_verdict(rows, "(v.a)") == R and "ε=10: not testable (0 such T)" in measured
    assert "ε=0.001: -1.00 (4 T)" in measured
    rows = claim_v(alg5[alg5["eps"] >= 0.1])
    assert _sub_verdict(rows, "(v.a)") == NT
    assert "not the derivative" in _sub_row(rows, "(v.a)")["measured"]
    # ε = 10⁻³ judged over T in (10⁻³, 0.1) only: a bent point at T = ε does not count
    alg5 = alg5_table()
    at_eps = (alg5["eps"] == 1e-3) & (alg5["T"] == 1e-3)
    for col in ("sensitivity", "sensitivity_row_max"):
        alg5.loc[at_eps, col] *= 0.01
    assert _sub_verdict(claim_v(alg5), "(v.a)") == R


def test_v_c_shows_the_factor_from_each_t_below_0_1_and_v_h_per_head():
    """The round-5 referee's points 16 and 17: (v.c) shows the factor to T = 1 from every
    T < 0.1 of the grid (none where no ε is below T), the verdict still from T = 0.01; (v.h)
    shows the per-head factor beside the max over heads."""
    got = claim_v(alg5_table())
    c = next(r for r in got if r["claim"].startswith("(v.c)"))
    assert (
        "from each T < 0.1 of the grid: T=0.001: no ε < T, T=0.002: 500×, T=0.005: 200×, "
        "T=0.01: 100×, T=0.03: 33.3×" in c["measured"]
    )
    assert c["statistic"] == "100"  # from T = 0.01 (reading (b)) alone
    h = next(r for r in got if r["claim"].startswith("(v.h)"))
    assert "per head (ε = 0.001), the same factor: median 100×" in h["measured"]
    assert "of 6 heads, under 32× for 0" in h["measured"]


def test_v_collapse_is_the_curves_meeting_at_t_1_and_above():
    alg5 = alg5_table()
    apart = (alg5["T"] >= 1) & (alg5["eps"] == 10.0)
    alg5.loc[apart, ["sensitivity", "sensitivity_row_max"]] *= 2.0  # ε = 10 stays apart
    rows = claim_v(alg5)
    assert _sub_verdict(rows, "(v.d)") == N and "T=1: 2.00" in _sub_row(rows, "(v.d)")["measured"]
    alg5 = alg5_table()
    at_1 = (alg5["T"] == 1) & (alg5["eps"] == 10.0)
    alg5.loc[at_1, ["sensitivity", "sensitivity_row_max"]] *= 1.5  # meet only from T = 10
    assert _sub_verdict(claim_v(alg5), "(v.d)") == P
    one = alg5_table()
    assert _sub_verdict(claim_v(one[one["eps"] == 1e-3]), "(v.d)") == NA  # one ε


def test_i_and_ii_each_verdict_and_the_form_of_e():
    got = claims(tables(alg1={"e_slope": 0.3}), META)
    # (i) is judged on the distance (the finding's sentence); E (Fig. 2a's caption) supports
    assert verdict(got, "(i.b)") == P and verdict(got, "(i) ") == R
    got_n = claims(tables(alg1={"e_slope": 0.0}), META)
    assert verdict(got_n, "(i.b)") == N and verdict(got_n, "(i) ") == R
    assert row(got_n, "(i) ")["e_form"] == "—" and row(got_n, "(i) ")["robust"] == "yes"
    got_d = claims(tables(alg1={"d_slope": 0.3}), META)  # d̃ grows, not linearly: partly
    assert verdict(got_d, "(i.a)") == P and verdict(got_d, "(i) ") == P
    # the printed form (∝ L) reproduces what exact does not: the verdict hinges on the form
    assert "E printed: R" in row(got, "(i.b)")["alternatives"]
    robust = row(got, "(i.b)")["robust"]
    assert robust.startswith("no: ") and "E printed" in robust
    assert row(got, "(i.b)")["e_form"] == "exact" and row(got, "(i.a)")["e_form"] == "—"
    flat = tables(alg1={"e_slope": 0.0, "d_slope": 0.0, "bound_ratio": 1.1})
    flat["alg1"]["expectation_main_text"] = 1.0  # no form grows
    flat["alg1"].loc[flat["alg1"]["L"] == 32, "bound"] *= 0.5  # not safe
    assert verdict(claims(flat, META), "(i) ") == N
    got = claims(tables(alg2={"tightens": False}), META)
    assert verdict(got, "(ii.b)") == N and verdict(got, "(ii) ") == R  # converge decides
    none = claims(tables(alg2={"plateau": False, "tightens": False, "converge": False}), META)
    assert verdict(none, "(ii) ") == N and verdict(none, "(ii.c)") == N
    assert row(none, "(ii) ")["e_form"] == "exact"


def test_ii_e_d_collapses_at_a_quarter_of_l_not_at_its_end():
    """(ii.e) contribution 1's "the representation distance collapses once N grows
    proportionally to L": d̃ at the grid's N nearest 0.25·L over its peak over N (round-4
    referee, point 6); at the largest N (≈ 0.9·L) d̃ → 0 by definition, shown, not judged."""
    rows = []
    for n, d in ((1, 0.6), (16, 1.0), (64, 0.9), (100, 0.8), (200, 0.3), (230, 0.1)):
        for h in range(3):
            rows.append({"window": 0, "layer": 0, "head": h, "L": 256, "N": n, "distance": d,
                         "expectation_exact": 1.0, "x_source": "values"})  # fmt: skip
    grid = pd.DataFrame(rows)
    got = claim_ii_d(grid, "expectation_exact")[1]
    assert got["claim"].startswith("(ii.e)") and got["role"] == "supporting"
    assert got["verdict"] == N  # 0.9 of the peak at N = 64 = 0.25·L; 0.1 at 0.9·L is not judged
    assert "0.90 at N = 64 (≈ 0.25·L)" in got["measured"]
    assert "0.10 at the largest N 230" in got["measured"] and "peak (1 at N = 16" in got["measured"]
    assert "1.00 at N = 16 (≈ 0.06·L)" in got["measured"]
    grid.loc[grid["N"] == 64, "distance"] = 0.4  # half the peak or less: partly
    assert claim_ii_d(grid, "expectation_exact")[1]["verdict"] == P
    grid.loc[grid["N"] == 64, "distance"] = 0.25
    assert claim_ii_d(grid, "expectation_exact")[1]["verdict"] == R
    short = grid.assign(L=128, distance=1.0)  # judged at L_max: a shorter L changes nothing
    both = pd.concat([grid, short], ignore_index=True)
    assert claim_ii_d(both, "expectation_exact")[1]["verdict"] == R


def test_ii_converge_shows_a_ratio_moving_towards_one_without_judging_it():
    """(ii.c): E / d̃ wholly outside 1 ± CONVERGED at N = 100 but rising towards 1 at every N
    of the grid (SmolLM2's values: 0.014 → 0.215) is not reproduced: E / d̃ → 1 as N → L on any
    head (round-4 referee, point 1, removed the partly rung of round 3's point 6). The trend is
    shown in the measured text, either way."""
    alg2 = alg2_table()
    alg2["expectation_exact"] *= 0.3  # 0.3·(1 − 0.9·e^(−N/20)): rising, 0.298 at N = 100
    rows = claim_ii(alg2, "expectation_exact")
    assert _sub_verdict(rows, "(ii.c)") == N and rows[0]["verdict"] == N
    measured = _sub_row(rows, "(ii.c)")["measured"]
    assert "; over N: 1: 0.0" in measured and "(towards 1 at every step; shown, not" in measured
    # round 8's point 7: E derived (a proven lower bound on E) beside exact E's ratio, 0.994
    # here (the made-up E derived is the unscaled E), not beside E derived's own row
    assert measured.endswith(
        "a lower bound on E / d̃ free of E exact's sampling; shown, not judged): 0.994"
    )
    assert "lower bound" not in _sub_row(claim_ii(alg2, "expectation"), "(ii.c)")["measured"]
    alg2.loc[alg2["N"] == 20, "expectation_exact"] *= 3  # up past N = 100's ratio, then back
    rows = claim_ii(alg2, "expectation_exact")
    assert _sub_verdict(rows, "(ii.c)") == N
    assert "(not towards 1 at every step" in _sub_row(rows, "(ii.c)")["measured"]


def test_ii_converge_is_judged_at_n_100_with_its_interval():
    alg2 = alg2_table()
    at = alg2["N"] == 100
    alg2.loc[at, "expectation_exact"] = 0.76 * alg2.loc[at, "distance"]  # E / d̃ = 0.76
    alg2["expectation_exact_se"] = 0.0
    assert _sub_verdict(claim_ii(alg2, "expectation_exact"), "(ii.c)") == R
    # an SE of 3 % of d̃ per cell: over 6 heads the interval is 0.76 ± 0.024, across 0.75
    alg2.loc[at, "expectation_exact_se"] = 0.03 * alg2.loc[at, "distance"]
    rows = claim_ii(alg2, "expectation_exact")
    assert _sub_verdict(rows, "(ii.c)") == P
    assert "E exact / d̃ at N = 100: 0.760 [0.73" in _sub_row(rows, "(ii.c)")["measured"]
    alg2.loc[at, "expectation_exact"] = 0.6 * alg2.loc[at, "distance"]
    assert _sub_verdict(claim_ii(alg2, "expectation_exact"), "(ii.c)") == N


def test_ii_convergence_is_at_n_100_not_at_the_smallest_n():
    alg2 = alg2_table()
    ratio = alg2["N"].map({1: 0.5, 5: 0.7, 10: 0.9, 20: 1.1, 100: 1.2})
    alg2["expectation_exact"] = ratio * alg2["distance"]  # within 0.25 only at N = 20 and 100
    rows = claim_ii(alg2, "expectation_exact")
    assert _sub_verdict(rows, "(ii.c)") == R and "at N = 100: 1.200" in rows[3]["measured"]
    alg2["expectation_exact"] = (
        alg2["N"].map({1: 1.0, 5: 1.0, 10: 1.0, 20: 1.0, 100: 1.5}) * (alg2["distance"])
    )  # met early, apart at N = 100
    assert _sub_verdict(claim_ii(alg2, "expectation_exact"), "(ii.c)") == N


def test_ii_tightens_is_measured_from_n_20():
    """Fig. 2b: "increasing N beyond 20 … the bound tightens". bound / d̃: 1.0 at N = 1 (the
    bound meets d̃ there), 3.0 at N = 20, 2.0 at N = 100: tighter than at N = 20 (reproduced);
    from N = 1 it would loosen; and the other way round."""
    alg2 = alg2_table()
    ratio = alg2["N"].map({1: 1.0, 5: 2.0, 10: 2.5, 20: 3.0, 100: 2.0})
    alg2["bound"] = ratio * alg2["distance"]
    assert _sub_verdict(claim_ii(alg2, "expectation_exact"), "(ii.b)") == R
    alg2["bound"] = alg2["N"].map({1: 3.0, 5: 2.0, 10: 1.5, 20: 1.0, 100: 2.0}) * alg2["distance"]
    assert _sub_verdict(claim_ii(alg2, "expectation_exact"), "(ii.b)") == N


def test_iii_each_verdict_and_beyond_the_grid():
    assert verdict(claims(tables(), META), "(iii) ") == R
    linear = {L: int(0.75 * L) for L in LENGTHS}  # the N → L limit: linear, far above 0.06·L
    got = claims(tables(crit={"exact": linear, "derived": linear, "main_text": linear}), META)
    assert verdict(got, "(iii.b)") == N and verdict(got, "(iii.c)") == N
    # 24, 48, 96 are the grid's last N at L = 32, 64, 128 (⌊0.9·L⌋ or below): there KS accepts
    # only where d̃ and E meet by construction, which shows no critical N (round-4, point 5)
    assert verdict(got, "(iii.a)") == P and verdict(got, "(iii) ") == N  # the check: no help
    assert "at 3 of 4 L only at the grid's last N" in row(got, "(iii.a)")["measured"]
    assert "L=32: 24 (0.750·L, the grid's last N)" in row(got, "(iii.a)")["measured"]
    below_edge = {32: 16, 64: 32, 128: 64, 256: 192}  # one grid point below the edge, or more
    got = claims(tables(crit={"exact": below_edge}), META)
    assert verdict(got, "(iii.a)") == R
    edge = {32: 24, 64: 48, 128: 96, 256: 230}
    got = claims(tables(crit={"exact": edge}), META)
    assert verdict(got, "(iii.a)") == N and verdict(got, "(iii.b)") == N
    never = {"exact": {}, "derived": {}, "main_text": PAPER_CRIT}
    got = claims(tables(crit=never), META)
    measured = row(got, "(iii.a)")["measured"]
    assert verdict(got, "(iii) ") == N and "L=256: > 230" in measured and "-1" not in measured
    assert "E printed: R" in row(got, "(iii) ")["alternatives"]


def test_iii_a_length_that_never_accepts_counts_against_sub_linear():
    """Issue 40's case: critical N 20, 25, 30 at L = 32–128 and none up to 0.9·L at L ≥ 256.
    Dropping those lengths gave slope 0.29, "sub-linear: reproduced"; censored (> 0.9·L) the
    slope is at least 1.5. With one censored length of four the slope lies in [0.98, 1.02]."""
    crit = {32: 20, 64: 25, 128: 30}
    lengths = (32, 64, 128, 256, 512, 1024)
    got = claims(tables(crit={"exact": crit}, lengths=lengths), META)
    assert verdict(got, "(iii.c)") == N, row(got, "(iii.c)")["measured"]
    assert "3 censored" in row(got, "(iii.c)")["measured"]
    assert verdict(got, "(iii.b)") == N  # 0.625·L … 0.23·L and > 0.9·L: none near 0.06·L
    got = claims(tables(crit={"exact": crit}), META)
    assert verdict(got, "(iii.c)") == P  # the censored L = 256 leaves 0.98 … 1.02 open
    assert "slope in [0.98, 1.02]" in row(got, "(iii.c)")["measured"]


def test_iii_slope_sign_and_bounds():
    """A critical N that falls with L is sub-linear; one that grows faster than L is not; a
    censored length at the smallest L lowers the slope's floor, at the largest it raises it."""
    lengths = np.array([32, 64, 128, 256])
    assert slope_bounds(lengths, lengths / 10, lengths / 10) == pytest.approx((1.0, 1.0))
    falling = 64.0 / lengths
    s_min, s_max = slope_bounds(lengths, falling, falling)
    assert s_min == s_max == pytest.approx(-1.0)
    lo, hi = lengths * 0.1, lengths * 0.1
    lo[-1], hi[-1] = 230, 256  # censored at the top: the slope is at least that with 230
    s_min, s_max = slope_bounds(lengths, lo, hi)
    assert 1.0 < s_min < s_max and s_min == pytest.approx(slope_bounds(lengths, lo, lo)[0])
    falling_crit = {32: 8, 64: 6, 128: 4, 256: 3}  # falling; in the ≈ band at L = 64, 128 only
    got = claims(tables(crit={"exact": falling_crit}), META)
    assert verdict(got, "(iii.c)") == R and verdict(got, "(iii.b)") == N
    assert "below 0.03 at 1" in row(got, "(iii.b)")["measured"]  # 3 / 256: under 8 / 256
    got = claims(tables(crit={"exact": {**falling_crit, 256: 8}}), META)
    assert verdict(got, "(iii.b)") == P  # the ≈ at three of four L
    steep = {32: 2, 64: 8, 128: 30}  # slope 1.95, censored at 256
    got = claims(tables(crit={"exact": steep}), META)
    assert verdict(got, "(iii.c)") == N


def test_iii_not_testable_where_ks_accepts_at_the_smallest_n():
    blind = {L: 1 for L in LENGTHS}  # indistinguishable from N = 1 on: no critical N measured
    got = claims(tables(crit={"exact": blind}), META)
    assert verdict(got, "(iii.b)") == NT and verdict(got, "(iii.c)") == NT
    assert verdict(got, "(iii) ") == NT
    assert (
        "KS accepts at the smallest N already at L = 32, 64, 128, 256"
        in (row(got, "(iii.b)")["measured"])
    )
    some = {**PAPER_CRIT, 32: 1, 64: 1}
    got = claims(tables(crit={"exact": some}), META)
    assert (
        verdict(got, "(iii.b)") == R
        and "not testable at L = 32, 64" in (row(got, "(iii.b)")["measured"])
    )


def test_critical_n_at_the_other_level_comes_from_the_p_values():
    _, tests = alg3_tables({"exact": {32: 2}})
    tests.loc[(tests["L"] == 64) & (tests["N"] == 4), "p_value"] = 0.03  # between 0.01 and 0.05
    at = {a: critical_from_tests(tests, "exact", a).set_index("L") for a in (0.01, 0.05)}
    assert at[0.01].loc[32, "critical_n"] == 2 and at[0.05].loc[32, "critical_n"] == 2
    assert at[0.01].loc[64, "critical_n"] == 4 and pd.isna(at[0.05].loc[64, "critical_n"])
    assert at[0.01].loc[256, "n_max"] == 230 and at[0.01].loc[256, "n_min"] == 1


def test_the_pooled_verdict_decides_and_windows_only_agree_or_not():
    two = tables(windows=(-1, 0, 1))
    tests = two["alg3_tests"]
    tests.loc[(tests["window"] == 1) & (tests["e_form"] == "exact"), "p_value"] = 0.0
    got = claims(two, META)
    assert verdict(got, "(iii) ") == R  # reproduced pooled; window 1 alone never accepts
    assert row(got, "(iii) ")["windows"] == "R N: 1 of 2 windows agree"
    linear = {L: int(0.75 * L) for L in LENGTHS}
    two = tables(windows=(-1, 1), crit={"exact": linear})
    # near 0.06·L at three of four L (more than MOST_L, half, of them): partly in window 0
    _, w0 = alg3_tables({"exact": {**linear, 32: 2, 64: 4, 128: 8}}, windows=(0,))
    two["alg3_tests"] = pd.concat([two["alg3_tests"], w0], ignore_index=True)
    got = claims(two, META)
    assert verdict(got, "(iii.b)") == N  # pooled: not reproduced; window 0 alone: partly
    assert row(got, "(iii.b)")["windows"].startswith("P N: 1 of 2")


def test_head_draws_enter_the_alternatives():
    draws = pd.DataFrame(
        [
            {
                "draw": d,
                "L": L,
                "e_form": "exact",
                "critical_n": c if d else int(0.75 * L),
                "n_max": L,
                "alpha": 0.01,
                "heads": 144,
                "x_source": "values",
            }
            for d in range(3)
            for L, c in PAPER_CRIT.items()
        ]
    )
    got = claims(tables(alg3_heads=draws), META)
    assert "144 heads, 3 draws (pooled): N 1 R 2" in row(got, "(iii) ")["alternatives"]
    assert "head count" in row(got, "(iii) ")["robust"]
    small = claims(tables(), META)  # no draws: a model with no more heads than 144
    assert "144 heads (model has 270): n/a" in row(small, "(iii) ")["alternatives"]


def _sub_row(rows: list[dict[str, str]], prefix: str) -> dict[str, str]:
    return next(r for r in rows if r["claim"].startswith(prefix))


def _sub_verdict(rows: list[dict[str, str]], prefix: str) -> str:
    return _sub_row(rows, prefix)["verdict"]


def test_v_and_corollary3_are_judged_once_per_model_not_per_x_source():
    """Issue 56 (the round-5 referee's point 10): (v), its statements and Corollary 3 read
    Alg. 5 alone (the logits; no x_i enters), so a run with two x sources judges them once,
    x_source "—", among the first source's rows; every other row once per x source. A
    regression to a (v) row per x source fails here."""
    from attnlimits.experiments.limitations.claims import LOGITS_ONLY, X_FREE

    both = tables()
    for name in ("alg1", "alg2", "alg3", "alg3_tests", "alg4"):
        both[name] = pd.concat([both[name], both[name].assign(x_source="hidden")])
    meta = {"params": {**META["params"], "x_sources": ["values", "hidden"]}}
    got = claims(both, meta)
    free = got["claim"].str.match(LOGITS_ONLY)
    # (v), (v.a) … (v.h), Corollary 3, Lemma 1 and the six sentences with no numbers
    assert free.sum() == 17
    assert (got.loc[free, "x_source"] == X_FREE).all()
    assert got.loc[free, "claim"].is_unique  # once, not once per x source
    assert (got.loc[~free, "x_source"].value_counts() == (~free).sum() // 2).all()
    assert list(dict.fromkeys(got["x_source"])) == ["values", X_FREE, "hidden"]
    # the same verdicts a one-source run gives, x_source aside
    one = claims(tables(), META)
    assert (one["x_source"] == got["x_source"].iloc[: len(one)]).all()
    cols = [c for c in one.columns if c != "x_source"]
    pd.testing.assert_frame_equal(one[cols], got[cols].iloc[: len(one)])
