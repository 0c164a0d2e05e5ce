"""The shared verdict vocabulary (``claims/verdicts.py``): known answers for every verdict of
the finding rule, pooled against parts, statements and the quote check."""

from __future__ import annotations

import pytest

from attnlimits.claims import verdicts as V
from attnlimits.claims.verdicts import NA, NOT, NOT_TESTABLE, PARTLY, REPRODUCED

R, P, N, NT = REPRODUCED, PARTLY, NOT, NOT_TESTABLE

COMBINE = [
    # headline verdicts -> the finding's verdict
    ([R], R),
    ([R, R], R),
    ([N], N),
    ([R, N], N),  # any not reproduced: not reproduced (the old rule said partly)
    ([P, N], N),
    ([R, P, R], P),
    ([P], P),
    ([R, NT], P),  # not testable ones are left out, and the finding is then at most partly
    ([N, NT], N),
    ([P, NA], P),  # n/a ones too
    ([R, NA, NT], P),
    ([R, NA], P),
    ([NT], NT),
    ([NT, NT], NT),
    ([NT, NA], NT),  # none judged: not testable if any headline was
    ([NA], NA),
    ([NA, NA], NA),
]


@pytest.mark.parametrize(("headlines", "want"), COMBINE)
def test_combine_known_answers(headlines, want):
    assert V.combine(headlines) == want


def test_combine_reaches_every_verdict_and_rejects_unknown_ones():
    assert {w for _, w in COMBINE} == set(V.VERDICTS)
    with pytest.raises(ValueError, match="unknown verdicts"):
        V.combine(["reproduced (2 of 3)"])


AGREE = [
    # pooled, parts -> text; the pooled verdict is never changed by the parts
    (N, [P, N], "P N: 1 of 2 windows agree"),
    (R, [R, R], "R R: 2 of 2 windows agree"),
    (R, [N, N], "N N: 0 of 2 windows agree"),
    (P, [NT], "NT: 0 of 1 window agree"),
]


@pytest.mark.parametrize(("pooled", "parts", "want"), AGREE)
def test_agreement_known_answers(pooled, parts, want):
    assert V.agreement(pooled, parts) == want


def test_agreement_names_the_unit():
    assert V.agreement(R, [R, R, N], unit="seed") == "R R N: 2 of 3 seeds agree"


HEAD = V.Statement("(x.a) it holds", V.HEADLINE, "the paper's words")
SUPPORT = V.Statement("(x.b) it also holds", V.SUPPORTING, "more words", "our reading")
CHECK = V.Statement("(x.c) a theorem holds", V.CHECK, "a theorem")
FIND = V.Statement("(x) a finding", V.FINDING, "the paper's words")


def test_a_finding_follows_its_headlines_alone():
    rows = [HEAD.judged("1", "r", R), SUPPORT.judged("2", "r", N), CHECK.judged("3", "r", N)]
    out = V.finding(FIND, rows)
    assert out[0]["verdict"] == R and out[0]["role"] == V.FINDING and out[1:] == rows
    assert "headline: (x.a) reproduced" in out[0]["measured"]
    assert "supporting (not deciding): (x.b) not reproduced" in out[0]["measured"]
    rows[0] = HEAD.judged("", "r", NT, "the grid ends below N = 16")
    out = V.finding(FIND, rows)
    assert out[0]["verdict"] == NT and "left out: (x.a) not testable" in out[0]["measured"]
    assert out[0]["measured"].startswith("not testable: no headline statement could be tested; "
                                         "headline: —; supporting")  # fmt: skip
    other = V.Statement("(x.d) it holds too", V.HEADLINE, "more of the paper's words")
    mixed = V.finding(FIND, [HEAD.judged("1", "r", R), other.judged("", "r", NT, "no data")])
    assert mixed[0]["verdict"] == P
    assert mixed[0]["measured"].count("(x.d)") == 1  # named once, as left out, not as counted
    assert mixed[0]["measured"].startswith("headline: (x.a) reproduced; supporting")
    assert mixed[0]["measured"].endswith("; left out: (x.d) not testable")
    assert rows[0]["measured"] == "not testable: the grid ends below N = 16"
    with pytest.raises(ValueError, match="no headline"):
        V.finding(FIND, rows[1:])


def test_statement_rows_carry_the_quote_and_reading_and_refuse_bad_input():
    row = SUPPORT.judged("slope 0.5", "rule", P)
    assert row == {
        "claim": "(x.b) it also holds",
        "role": "supporting",
        "paper": "more words",
        "reading": "our reading",
        "measured": "slope 0.5",
        "rule": "rule",
        "verdict": "partly",
    }
    with pytest.raises(ValueError, match="without a reason"):
        HEAD.judged("", "r", NT)
    with pytest.raises(ValueError, match="unknown verdict"):
        HEAD.judged("", "r", "mostly")
    with pytest.raises(ValueError, match="role"):
        V.Statement("(y)", "evidence", "words")
    with pytest.raises(ValueError, match="no quote"):
        V.Statement("(y)", V.HEADLINE, "  ")


def test_quotes_match_up_to_whitespace_only():
    text = "Once $T \\geq 1$ all curves\n   collapse and drop"
    assert V.missing_quotes(["all curves collapse", "Once $T \\geq 1$"], [text]) == []
    assert V.missing_quotes(["all curves collapsed"], ["x", text]) == ["all curves collapsed"]
    assert V.normalise(" a \n\tb ") == "a b"
