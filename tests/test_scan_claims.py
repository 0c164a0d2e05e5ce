"""The scan's claims on the shared verdicts: known answers for each rule at both sides of every
threshold, each verdict through ``claims(tables, meta)``, the quotes in the papers' text."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from attnlimits.claims import verdicts
from attnlimits.experiments.scan import rules
from attnlimits.experiments.scan.claims import claims
from attnlimits.experiments.scan.statements import ALL

R, P, N, NT, NA = "reproduced", "partly", "not reproduced", "not testable", "n/a"
E9 = 1e-9  # just across a threshold
NAN = math.nan

CASES = [
    # (rule, args, verdict)
    (rules.about_fraction, ([0.06],), R),
    (rules.about_fraction, ([0.0],), R),  # "fewer than": no floor
    (rules.about_fraction, ([0.06 + E9],), P),
    (rules.about_fraction, ([0.12],), P),
    (rules.about_fraction, ([0.12 + E9],), N),
    (rules.about_fraction, ([None],), N),  # no N of the grid passes (grid past 0.12·L)
    (rules.about_fraction, ([NAN],), N),
    (rules.about_fraction, ([0.03, 0.05],), R),
    (rules.about_fraction, ([0.03, 0.5],), P),  # R at one L, N at another
    (rules.about_fraction, ([0.1, 0.5],), P),
    (rules.about_fraction, ([0.5, None],), N),
    (rules.about_fraction, ([],), NA),
    (rules.in_band, (0.70, 0.6, 0.8), R),
    (rules.in_band, (0.85, 0.8, 0.9), R),
    (rules.in_band, (0.70 - E9, 0.6, 0.8), P),  # median out, IQR meets the band
    (rules.in_band, (0.85 + E9, 0.8, 0.9), P),
    (rules.in_band, (0.6, 0.5, 0.70), P),
    (rules.in_band, (0.6, 0.5, 0.70 - E9), N),  # IQR wholly below
    (rules.in_band, (0.9, 0.85 + E9, 0.95), N),  # wholly above
    (rules.in_band, (NAN, 0.6, 0.8), NA),
    (rules.disperses, (-0.5, 0.5, -0.5), R),
    (rules.disperses, (-1.0, 1.0, -0.5), R),
    (rules.disperses, (-0.5 + E9, 0.1, -0.5), P),
    (rules.disperses, (0.2, 0.0, -0.5), N),
    (rules.disperses, (NAN, 0.0, -0.5), NA),
    (rules.distinct, (0, 8), R),
    (rules.distinct, (1, 8), N),
    (rules.distinct, (0, 0), NA),
]


@pytest.mark.parametrize(("rule", "args", "verdict"), CASES)
def test_rule_known_answers(rule, args, verdict):
    assert rule(*args) == verdict


def test_every_rule_has_every_verdict_it_can_return():
    got = {(rule.__name__, v) for rule, _, v in CASES}
    for rule in (rules.about_fraction, rules.in_band, rules.disperses):
        assert {v for name, v in got if name == rule.__name__} == {R, P, N, NA}, rule
    assert {v for name, v in got if name == "distinct"} == {R, N, NA}


def tables(crit=((100, 6, 50),), sep=(0.75, 0.7, 0.8), n_sep=16, slopes=(-1.0, -0.8, -0.2),
           dup=False):  # fmt: skip
    """heads / head_summary as the scan writes them: one layer, len(sep) heads; ``crit``: per
    length (L, the model's critical N (−1: none), the grid's largest N)."""
    rows = [
        {"layer": 0, "head": h, "length": n, "critical_n_model": c, "n_max_tested": grid,
         "critical_n_over_L": c / n if c > 0 else NAN, "separability": s,
         "n_separability": n_sep, "flag_assumption2": dup and h == 0}
        for n, c, grid in crit for h, s in enumerate(sep)
    ]  # fmt: skip
    summary = pd.DataFrame({"layer": 0, "head": range(len(sep)), "dispersion_slope": slopes})
    return {"heads": pd.DataFrame(rows), "head_summary": summary}


def verdict(got: pd.DataFrame, start: str) -> str:
    (row,) = got[got["claim"].str.startswith(start)].to_dict("records")
    return row["verdict"]


@pytest.mark.parametrize(
    ("crit", "expected"),
    [
        (((100, 6, 50),), R),
        (((100, 7, 50),), P),
        (((100, 13, 50),), N),
        (((100, -1, 50),), N),  # no N passes up to 50 > 0.12·L
        (((100, -1, 10),), NT),  # the grid stops at 10 < 12: it cannot tell
        (((100, 6, 50), (200, 30, 100)), P),
        (((100, 6, 50), (200, -1, 10)), R),  # L = 200 left out
    ],
)
def test_critical_n_claim_on_tables(crit, expected):
    got = claims(tables(crit=crit), {})
    assert verdict(got, "A (iii)") == expected
    if expected == NT:
        assert "not testable: at every length" in got.loc[0, "measured"]


def test_each_claim_on_tables():
    got = claims(tables(), {})
    assert [verdict(got, c) for c in ("A (iii)", "B (", "A (iv)", "A (Ass")] == [R, R, R, R]
    assert got.set_index("claim")["role"].tolist() == ["headline", "check", "headline", "check"]
    low = claims(tables(sep=(0.3, 0.4, 0.5), slopes=(0.0, 0.1, -0.6), dup=True), {})
    assert [verdict(low, c) for c in ("B (", "A (iv)", "A (Ass")] == [P, N, N]
    early = claims(tables(n_sep=8), {})  # the paper's curve still declines at N = 8
    assert verdict(early, "A (iv)") == NT and "N = 8 < 16" in early.loc[2, "measured"]
    none = tables(sep=(NAN, NAN, NAN), slopes=(NAN, NAN, NAN))
    got = claims(none, {})
    assert [verdict(got, c) for c in ("A (iii)", "B (", "A (iv)")] == [NA, NA, NA]


def test_columns_are_the_reproductions():
    """The reproductions' rows are ``Statement.judged``'s; the scan's table has its columns."""
    row = verdicts.Statement("x", verdicts.HEADLINE, "q").judged("", "", NA)
    assert list(claims(tables(), {}).columns) == list(row)


PAPERS = Path(__file__).resolve().parents[1].parent / "shared" / "papers"


@pytest.mark.skipif(not PAPERS.is_dir(), reason="../shared/papers is absent")
def test_every_quote_of_the_scan_is_the_papers_words():
    texts = [p.read_text(encoding="utf-8") for p in sorted(PAPERS.glob("paper-*.txt"))]
    assert len(texts) == 3
    quotes = {s.quote for s in ALL}
    assert verdicts.missing_quotes(quotes, texts) == []
    assert set(claims(tables(), {})["paper"]) == quotes
    assert verdicts.missing_quotes(["≈ 0.06 L on GPT-2"], texts)  # it can fail
