"""Paper A's findings (``experiments/limitations/findings.py``): the readings, at which T, N
and α each statement is judged, on synthetic tables (tests/limitations_tables.py).
"""

from __future__ import annotations

import pandas as pd

from attnlimits.claims import verdicts
from attnlimits.experiments.limitations import Config, claims, rules
from attnlimits.experiments.limitations.findings import (
    claim_i,
    claim_ii,
    claim_iii,
    claim_iv,
    claim_v,
    critical_from_tests,
)
from attnlimits.experiments.paper_a_readings import grid_floor, grid_limits
from limitations_tables import (
    META,
    NA,
    NT,
    PAPER_CRIT,
    N,
    P,
    R,
    alg1_table,
    alg2_table,
    alg3_tables,
    alg4_table,
    alg5_table,
    row,
    tables,
    verdict,
)


def _sub_row(rows: list[dict[str, str]], prefix: str) -> dict[str, str]:
    return next(r for r in rows if r["claim"].startswith(prefix))


def _sub_verdict(rows: list[dict[str, str]], prefix: str) -> str:
    return _sub_row(rows, prefix)["verdict"]


def test_v_slope_is_fitted_over_t_below_0_1_only():
    """T = 0.1 itself is not "T < 0.1": a curve that bends there still follows 1/T below."""
    alg5 = alg5_table()
    at = alg5["T"] == 0.1
    alg5.loc[at, ["sensitivity", "sensitivity_row_max"]] *= 0.01
    assert _sub_verdict(claim_v(alg5), "(v.a)") == R


def test_v_slope_sign():
    """A curve that rises as T^1 below T = 0.1 is not 1/T (the slope's sign matters)."""
    assert _sub_verdict(claim_v(alg5_table(slope=1.0)), "(v.a)") == N


def test_v_a_an_eps_with_fewer_than_four_t_is_not_testable():
    """Each ε needs MIN_T = 4 temperatures in (ε, 0.1): with three (T = 0.002 dropped), ε =
    10⁻³ is not testable, named; every ε not testable: the statement is not testable."""
    alg5 = alg5_table()
    rows = claim_v(alg5[alg5["T"] != 2e-3])
    assert _sub_verdict(rows, "(v.a)") == NT
    assert "ε=0.001: not testable (3 such T)" in _sub_row(rows, "(v.a)")["measured"]
    assert "no ε has 4 T in (ε, 0.1)" in _sub_row(rows, "(v.a)")["measured"]
    assert _sub_verdict(claim_v(alg5), "(v.a)") == R  # four: judged


def test_v_c_reading_b_decides_and_reading_c_is_a_check():
    """(v.c) "Once T ≥ 1 all curves collapse and drop by two orders": reading (b), from
    T = 0.01 to T = 1, decides (round-4 referee, point 3); reading (c), across T ≥ 1, falls as
    1/T for the max over heads and is the check (v.h), its numbers shown, never judged (n/a).
    Each factor is the smallest over the ε below the lower T: at ε ≥ T, g ≤ √2/ε is capped."""
    got = claims(tables(), META)
    measured = row(got, "(v.c)")["measured"]
    assert "from T = 0.01 to T = 1: 100× (reading (b))" in measured
    assert verdict(got, "(v.c)") == R and verdict(got, "(v) ") == R
    assert "T = 0.01 to 1" in row(got, "(v.c)")["rule"]
    check = row(got, "(v.h)")
    assert check["verdict"] == NA and check["role"] == "check"
    assert "T = 1 to 100: 100×" in check["measured"] and "over T ≥ 1: -1.00" in check["measured"]
    capped = alg5_table()  # ε = 0.1 and 10 ≥ T = 0.01 fall only 2× to T = 1: left out
    capped.loc[
        (capped["eps"] >= 0.1) & (capped["T"] == 1e-2), ["sensitivity", "sensitivity_row_max"]
    ] /= 50
    assert _sub_verdict(claim_v(capped), "(v.c)") == R
    slow = alg5_table(eps=(1e-4, 1e-3, 0.1, 10.0))  # ε = 10⁻³ < T = 0.01 falls only 2×
    at = (slow["eps"] == 1e-3) & (slow["T"] == 1e-2)
    slow.loc[at, ["sensitivity", "sensitivity_row_max"]] /= 50
    rows = claim_v(slow)
    assert (
        _sub_verdict(rows, "(v.c)") == N
        and "from T = 0.01 to T = 1: 1.8×" in _sub_row(rows, "(v.c)")["measured"]
    )
    only_large = alg5_table()  # no ε below T = 0.01: nothing to judge
    assert _sub_verdict(claim_v(only_large[only_large["eps"] >= 0.1]), "(v.c)") == NA


def test_v_statements_of_the_discussion_each_verdict():
    """(v.e) close to the limit below T = 0.1, (v.f) tracks 1/(4T) and saturates, (v.g)
    lowering T raises ‖J‖₂: each reproduced on the paper-shaped table, and each fails where its
    own number fails."""
    rows = claim_v(alg5_table())
    assert [_sub_verdict(rows, k) for k in ("(v.e)", "(v.f)", "(v.g)")] == [R, R, R]
    low = alg5_table()
    low[["sensitivity", "sensitivity_row_max"]] *= 0.1  # 0.07·√2 at most: far from the limit
    assert _sub_verdict(claim_v(low), "(v.e)") == N
    steep = alg5_table()
    steep.loc[steep["T"] == 1e-3, ["sensitivity", "sensitivity_row_max"]] *= 2.0  # no saturation
    assert _sub_verdict(claim_v(steep), "(v.f)") == P
    flat = alg5_table()
    flat["jacobian_norm"] = 1.0  # ‖J‖₂ the same at every T
    assert _sub_verdict(claim_v(flat), "(v.g)") == N


def test_v_e_reads_the_largest_ratio_over_t_below_0_1():
    """(v.e) "close to the theoretical limit when T < 10⁻¹" is read at the T where g comes
    closest (the largest g / bound), not the farthest: with g cut tenfold at every T < 0.1 but
    one, the row keeps the paper-shaped table's verdict; cut at that one too, it fails."""
    table = alg5_table()
    below = sorted(t for t in table["T"].unique() if t < 0.1)
    assert len(below) >= 2
    cols = ["sensitivity", "sensitivity_row_max"]
    keep = alg5_table()
    keep.loc[keep["T"].isin(below[1:]), cols] *= 0.1
    assert _sub_verdict(claim_v(keep), "(v.e)") == _sub_verdict(claim_v(table), "(v.e)") == R
    cut = keep.copy()
    cut.loc[cut["T"] == below[0], cols] *= 0.1
    assert _sub_verdict(claim_v(cut), "(v.e)") == N


def test_iv_g_no_more_than_four_fifths():
    got = claim_iv(alg4_table())  # maxima 0.81 at N ≥ 16
    assert _sub_verdict(got, "(iv.g)") == R
    high = alg4_table()
    high.loc[(high["head"] == 2) & (high["N"] == 32), "ratio"] = 0.95
    assert _sub_verdict(claim_iv(high), "(iv.g)") == N
    assert "0.95" in _sub_row(claim_iv(high), "(iv.g)")["measured"]


def test_ii_d_e_vanishes_as_n_approaches_l():
    """Corollary 2(ii), a check over the whole N grid at L_max: E at the largest N against its
    peak."""
    rows = []
    for n, e in ((1, 1.0), (10, 8.0), (100, 10.0), (200, 4.0), (230, 4.0)):
        for h in range(3):
            rows.append({"window": 0, "layer": 0, "head": h, "L": 256, "N": n, "distance": 1.0,
                         "expectation_exact": e, "x_source": "values"})  # fmt: skip
    grid = pd.DataFrame(rows)
    from attnlimits.experiments.limitations.corollary2 import claim_ii_d

    assert _sub_verdict(claim_ii_d(grid, "expectation_exact"), "(ii.d)") == R  # 4 / 10
    grid.loc[grid["N"] == 230, "expectation_exact"] = 6.0
    assert _sub_verdict(claim_ii_d(grid, "expectation_exact"), "(ii.d)") == N  # 6 / 10
    got = claims(tables(distance_grid=grid.assign(expectation=grid["expectation_exact"])), META)
    assert row(got, "(ii.d)")["role"] == "check" and verdict(got, "(ii) ") == R
    # judged at L_max: a shorter L whose E does not fall changes nothing
    falls = grid.assign(expectation_exact=grid["expectation_exact"].where(grid["N"] != 230, 4.0))
    short = grid.assign(L=128, expectation_exact=grid["N"].astype(float))
    both = pd.concat([falls, short], ignore_index=True)
    assert _sub_verdict(claim_ii_d(both, "expectation_exact"), "(ii.d)") == R


def test_iii_a_critical_n_at_the_grid_point_nearest_0_06_l_reproduces():
    """On the default Alg. 3 grid the first N at or above 0.06·L is L/16 = 0.0625·L at every
    L, the grid point nearest 0.06·L: a true critical N of 0.06·L is measured there, and
    reproduces; one grid point further up is partly."""
    cfg = Config()
    lengths = (32, 64, 128, 256, 512, 1024)
    for length in lengths:
        grid = sum(cfg.alg3_grid(length), ())
        nearest = min(grid, key=lambda n: abs(n - 0.06 * length))
        assert nearest == length // 16
        assert rules.about_fraction([nearest / length], [grid_limits(length, grid)]) == R
        above = min(n for n in grid if n > nearest)
        assert rules.about_fraction([above / length], [grid_limits(length, grid)]) == P
    tests = pd.DataFrame(
        [
            {"L": L, "e_form": "exact", "N": n, "p_value": 0.5 if n >= L // 16 else 0.0}
            for L in lengths
            for n in sum(cfg.alg3_grid(L), ())
        ]
    )
    crit = critical_from_tests(tests, "exact", 0.01)
    assert (crit["critical_n"] == crit["L"] // 16).all()
    assert _sub_verdict(claim_iii(crit, ""), "(iii.b)") == R
    no_grid = crit.drop(columns=["limit_lo", "limit_hi"])  # the fractions alone: 0.0625 > 0.06
    assert _sub_verdict(claim_iii(no_grid, ""), "(iii.b)") == P
    # a tested N equal to 0.06·L is where 0.06·L is measured; none reaching it: the fraction
    assert grid_limits(50, (1, 2, 3, 4, 6)) == (0.06, 0.12)
    assert grid_limits(50, (1, 2, 4, 8)) == (0.08, 0.16)
    assert grid_limits(50, (1, 2)) == (0.06, 0.12)


def test_judged_row_takes_the_rule_once():
    """A row's printed rule and its verdict come from one rule object; a one-number rule keeps
    its statistic (the sensitivity lines read it)."""
    from attnlimits.experiments.limitations.findings import judged_row

    r = judged_row("(i.a)", "slope 0.5", rules.linear_growth, 0.5)
    assert r["rule"] == rules.linear_growth.text() and r["verdict"] == P
    assert r["statistic"] == "0.5"
    r = judged_row("(iv.c)", "", rules.in_band, [0.8], untested="no N ≥ 16")
    assert r["verdict"] == NT and r["rule"] == rules.in_band.text() and "statistic" not in r


def test_v_drop_from_t_0_01_and_0_1_counts_the_eps_below_t_only():
    # ε = 10⁻³ alone lies below T = 0.01 and 0.1 (k = 1): 20× from T = 0.01 (reading (b),
    # partly), 2× from T = 0.1; the larger ε (k = 0.8, 16× and 1.6×) are capped there
    rows = claim_v(alg5_table(drop=2.0))
    assert _sub_verdict(rows, "(v.c)") == P
    assert "from T = 0.01 to T = 1: 20×" in _sub_row(rows, "(v.c)")["measured"]
    assert "from T = 0.1: 2× (reading (a))" in _sub_row(rows, "(v.c)")["measured"]


def test_iv_saturation_and_band_start_at_n_16():
    alg4 = alg4_table()
    for n, m in {32: 0.9, 64: 0.9}.items():  # up again after N = 16: not saturated from 16
        alg4.loc[alg4["N"] == n, "ratio"] = m
    rows = claim_iv(alg4)
    assert _sub_verdict(rows, "(iv.b)") == P
    assert "from N = 16 to N = 64" in _sub_row(rows, "(iv.b)")["measured"]
    alg4 = alg4_table()
    alg4.loc[alg4["N"] == 16, "ratio"] = 0.9  # N = 16 itself outside the band
    assert _sub_verdict(claim_iv(alg4), "(iv.c)") == P


def test_iv_falls_from_the_first_n_above_one():
    """N_s/N = 1 at N = 1 by definition; from N = 2 (0.82) to N = 16 (0.8) it barely falls."""
    alg4 = alg4_table()
    alg4.loc[alg4["N"].isin([2, 4, 8]), "ratio"] = 0.82
    assert _sub_verdict(claim_iv(alg4), "(iv.a)") == P


def test_ii_plateau_from_n_20():
    alg2 = alg2_table()
    alg2.loc[alg2["N"] == 10, "distance"] *= 0.3  # a big change before N = 20 does not count
    assert _sub_verdict(claim_ii(alg2, "expectation_exact"), "(ii.a)") == R


def test_i_a_bound_equal_to_d_is_safe():
    rows = claim_i(alg1_table(bound_ratio=1.0), "expectation_exact")
    assert _sub_verdict(rows, "(i.c)") == R and _sub_verdict(rows, "(i.d)") == N
    rows = claim_i(alg1_table(bound_ratio=0.999), "expectation_exact")
    assert _sub_verdict(rows, "(i.c)") == N


def test_critical_n_accepts_at_p_equal_to_alpha():
    """Alg. 3 rejects while p < α: p = α is the first N not rejected."""
    _, tests = alg3_tables({"exact": {}})
    tests.loc[(tests["L"] == 128) & (tests["N"] == 8), "p_value"] = 0.01
    crit = critical_from_tests(tests, "exact", 0.01).set_index("L")
    assert crit.loc[128, "critical_n"] == 8 and pd.isna(crit.loc[64, "critical_n"])


def test_claim_functions_return_the_finding_then_its_statements():
    sets = {
        "(i)": claim_i(alg1_table(), "expectation_exact"),
        "(ii)": claim_ii(alg2_table(), "expectation_exact"),
        "(iii)": claim_iii(
            critical_from_tests(alg3_tables({"exact": PAPER_CRIT})[1], "exact", 0.01), ""
        ),
        "(iv)": claim_iv(alg4_table()),
        "(v)": claim_v(alg5_table()),
    }
    for name, rows in sets.items():
        assert rows[0]["claim"].startswith(name + " ") and rows[0]["role"] == "finding"
        subs = [r["claim"].split(" ")[0] for r in rows[1:]]
        assert subs == [f"{name[:-1]}.{chr(97 + i)})" for i in range(len(subs))]
        heads = [r["verdict"] for r in rows[1:] if r["role"] == "headline"]
        assert heads and rows[0]["verdict"] == verdicts.combine(heads)


def _reshape_above(alg5: pd.DataFrame, curve) -> pd.DataFrame:
    """g at T > 0.1 set to ``curve(T)`` times g at T = 0.1, per (ε, head)."""
    cols = ["sensitivity", "sensitivity_row_max"]
    keys = ["eps", "layer", "head"]
    at = alg5[alg5["T"] == 0.1].set_index(keys)[cols]
    out = alg5.copy()
    above = out["T"] > 0.1
    base = at.reindex(pd.MultiIndex.from_frame(out.loc[above, keys])).to_numpy()
    scale = out.loc[above, "T"].map(curve).to_numpy()[:, None]
    out.loc[above, cols] = base * scale
    return out


def test_v_f_tracks_is_judged_over_0_1_to_1_only():
    """(v.f) "tracks the theoretical 1/(4T) law": over T ≥ 1 the max over heads of g falls as 1/T
    (the check (v.h)), so "tracks" is judged over 0.1 ≤ T ≤ 1 (round-4 referee, point 3). A
    curve flat to within T^-0.3 there, 1/T beyond, tracks nothing (partly: it still
    saturates); one on 1/T there and flat beyond tracks (reproduced)."""
    slow = _reshape_above(alg5_table(), lambda t: (t / 0.1) ** -0.3 if t <= 1 else 0.5 / t)
    rows = claim_v(slow)
    assert _sub_verdict(rows, "(v.f)") == P
    assert "over 0.1 ≤ T ≤ 1: -0.30 (3 T;" in _sub_row(rows, "(v.f)")["measured"]
    flat_tail = _reshape_above(alg5_table(), lambda t: 0.1 / min(t, 1.0))
    assert _sub_verdict(claim_v(flat_tail), "(v.f)") == R


def test_v_d_collapse_is_judged_where_some_eps_is_at_least_t():
    """(v.d) "Once T ≥ 1 all curves collapse": where every ε < T each g approximates the same
    derivative, so the curves meet by construction; the collapse is judged at the T ≥ 1 with
    some ε ≥ T only (round-4 referee, point 3). Curves apart at T = 100 (every ε < 100) do
    not count; with no ε ≥ 1 at all, not testable."""
    alg5 = alg5_table()
    far = (alg5["T"] == 100.0) & (alg5["eps"] == 10.0)
    alg5.loc[far, ["sensitivity", "sensitivity_row_max"]] *= 3.0
    rows = claim_v(alg5)
    assert _sub_verdict(rows, "(v.d)") == R
    assert "T=100: 3.00" in _sub_row(rows, "(v.d)")["measured"]
    assert "judged at T ≤ the largest ε (1, 10)" in _sub_row(rows, "(v.d)")["measured"]
    small = alg5_table(eps=(1e-3, 0.1, 0.5))
    small.loc[small["T"] >= 1, ["sensitivity", "sensitivity_row_max"]] *= 1 + small["eps"]
    rows = claim_v(small)
    assert _sub_verdict(rows, "(v.d)") == NT
    assert "the curves meet by construction" in _sub_row(rows, "(v.d)")["measured"]


def test_iii_b_two_sided_band_at_the_grid_resolution():
    """(iii.b)'s '≈ 0.06L' is two-sided (round-4 referee, point 5): on the default Alg. 3 grid
    a critical N of 1–4 at L = 32 … 1024 (SmolLM2's hidden states under the printed E, 0.004·L
    at L = 1024) lies below the floor, the first tested N ≥ 0.03·L: it meets 'fewer than 6 %'
    alone, partly since the round-5 referee's point 4 (each statement alone gives partly; it
    was not reproduced); a critical N at that floor is reproduced, as one at L/16 is; one at
    L/4 meets neither."""
    cfg = Config()
    lengths = (32, 64, 128, 256, 512, 1024)
    grids = {L: sum(cfg.alg3_grid(L), ()) for L in lengths}
    assert [grid_floor(L, grids[L]) * L for L in lengths] == [1, 2, 4, 8, 16, 32]

    def judged(crit: dict[int, int]) -> str:
        tests = pd.DataFrame(
            [
                {"L": L, "e_form": "exact", "N": n, "p_value": 0.5 if n >= crit[L] else 0.0}
                for L in lengths
                for n in grids[L]
            ]
        )
        return _sub_verdict(claim_iii(critical_from_tests(tests, "exact", 0.01), ""), "(iii.b)")

    assert judged({32: 1, 64: 1, 128: 2, 256: 2, 512: 3, 1024: 4}) == P
    assert judged({L: L // 4 for L in lengths}) == N
    assert judged({L: L // 16 for L in lengths}) == R
    floor = {L: int(grid_floor(L, grids[L]) * L) for L in lengths}
    assert judged({**floor, 32: 2}) == R  # at L = 32 the floor, N = 1, is where KS is blind
    assert judged({**floor, 32: 2, 256: 6, 512: 12}) == P  # below the floor at two of five
