"""One verdict vocabulary and one way to combine verdicts, for every reproduction's claims.

**Verdicts.** A statement of a paper is judged :data:`REPRODUCED`, :data:`PARTLY` or :data:`NOT`
(not reproduced) by a rule of its experiment; :data:`NOT_TESTABLE` where the statement's
preconditions fail in the data (the row says which, :meth:`Statement.judged`'s ``reason``);
:data:`NA` where the run lacks the numbers (a grid without the N it needs, one ε where two are
compared).

**Roles.** Each finding lists its statements: :data:`HEADLINE` ones (the quantitative claim the
paper makes) decide it; :data:`SUPPORTING` ones are shown and judged, and never decide it;
:data:`CHECK` ones are properties a theorem guarantees (a bound is safe, a quantity exists),
shown in their own table and never evidence for a finding.

**The finding rule** (:func:`combine`, on the headline verdicts alone): all reproduced →
reproduced; any not reproduced → not reproduced; otherwise partly. Not-testable and n/a
headlines are left out (and named), and a finding with one left out is at most partly: a part
of it was not tested; when none is left: not testable if any headline was not testable, else
n/a.

**Pooled, then parts.** A verdict is judged on the pooled statistic (windows, seeds pooled) with
its interval; :func:`agreement` says how many parts (windows, seeds) alone give the same verdict,
shown beside it, never lifting or lowering it.

**Quotes.** Each statement carries ``quote``: the paper's words, found word for word (up to
whitespace, :func:`normalise`) in the paper's text; where our copy lost a number or a symbol,
the quote stops there and ``reading`` says what follows, labelled as ours. :func:`missing_quotes`
is the check the tests run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "CHECK",
    "FINDING",
    "HEADLINE",
    "NA",
    "NOT",
    "NOT_TESTABLE",
    "PARTLY",
    "REPRODUCED",
    "ROLES",
    "RULE",
    "SHORT",
    "SUPPORTING",
    "VERDICTS",
    "Statement",
    "agreement",
    "combine",
    "finding",
    "missing_quotes",
    "normalise",
]

REPRODUCED, PARTLY, NOT = "reproduced", "partly", "not reproduced"
NOT_TESTABLE, NA = "not testable", "n/a"
VERDICTS = (REPRODUCED, PARTLY, NOT, NOT_TESTABLE, NA)
#: One letter per verdict, for per-window and per-reading lists.
SHORT = {REPRODUCED: "R", PARTLY: "P", NOT: "N", NOT_TESTABLE: "NT", NA: "n/a"}

HEADLINE, SUPPORTING, CHECK = "headline", "supporting", "check"
ROLES = (HEADLINE, SUPPORTING, CHECK)
FINDING = "finding"  # the role column of a finding's own row

RULE = (
    "from its headline statements alone: all reproduced → reproduced; any not reproduced → "
    "not reproduced; else partly (not testable and n/a ones left out, and then at most partly; "
    "none left: not testable if any was, else n/a)"
)

Row = dict[str, str]


def combine(headlines: Iterable[str]) -> str:
    """A finding's verdict from its headline statements' verdicts (the module's rule)."""
    given = list(headlines)
    unknown = [v for v in given if v not in (REPRODUCED, PARTLY, NOT, NOT_TESTABLE, NA)]
    if unknown:
        raise ValueError(f"unknown verdicts {unknown}; known: {', '.join(VERDICTS)}")
    judged = [v for v in given if v not in (NOT_TESTABLE, NA)]
    if not judged:
        return NOT_TESTABLE if NOT_TESTABLE in given else NA
    if NOT in judged:
        return NOT
    whole = len(judged) == len(given) and all(v == REPRODUCED for v in judged)
    return REPRODUCED if whole else PARTLY


def agreement(pooled: str, parts: Sequence[str], unit: str = "window") -> str:
    """How many of ``parts`` (each part alone: a window, a seed) give the pooled verdict:
    "R N: 1 of 2 windows agree". Shown beside the pooled verdict; it never changes it."""
    same = sum(v == pooled for v in parts)
    letters = " ".join(SHORT.get(v, v) for v in parts)
    return f"{letters}: {same} of {len(parts)} {unit}{'' if len(parts) == 1 else 's'} agree"


@dataclass(frozen=True)
class Statement:
    """One statement of a paper as a claims table states it.

    ``claim``: the row's name; ``role``: :data:`HEADLINE`, :data:`SUPPORTING` or :data:`CHECK`
    (or :data:`FINDING` for a finding's own row); ``quote``: the paper's words, word for word;
    ``reading``: what the judgement reads into them beyond the quote ("" for none)."""

    claim: str
    role: str
    quote: str
    reading: str = ""

    def __post_init__(self) -> None:
        if self.role not in (*ROLES, FINDING):
            raise ValueError(f"{self.claim!r}: role {self.role!r} is none of {ROLES}")
        if not self.quote.strip():
            raise ValueError(f"{self.claim!r} has no quote")

    def judged(self, measured: str, rule: str, verdict: str, reason: str = "") -> Row:
        """The statement's row; ``reason`` (required for :data:`NOT_TESTABLE`) says which
        precondition failed, and leads the measured text."""
        if verdict not in VERDICTS:
            raise ValueError(f"{self.claim!r}: unknown verdict {verdict!r}")
        if verdict == NOT_TESTABLE and not reason:
            raise ValueError(f"{self.claim!r} is not testable without a reason")
        if reason:
            measured = f"{verdict}: {reason}" + (f"; {measured}" if measured else "")
        return {
            "claim": self.claim,
            "role": self.role,
            "paper": self.quote,
            "reading": self.reading,
            "measured": measured,
            "rule": rule,
            "verdict": verdict,
        }


def finding(statement: Statement, rows: Sequence[Row]) -> list[Row]:
    """The finding's row (its verdict :func:`combine` of its headline rows' verdicts, the
    statements named by role and verdict), then ``rows``."""
    heads = [r for r in rows if r["role"] == HEADLINE]
    if not heads:
        raise ValueError(f"{statement.claim!r} has no headline statement")

    def names(rs: Iterable[Row]) -> str:
        return ", ".join(f"{r['claim'].split(' ')[0]} {r['verdict']}" for r in rs) or "—"

    left_out = [r for r in heads if r["verdict"] in (NOT_TESTABLE, NA)]
    judged = [r for r in heads if r not in left_out]  # each headline named once: judged or not
    supporting = [r for r in rows if r["role"] == SUPPORTING]
    measured = f"headline: {names(judged)}; supporting (not deciding): {names(supporting)}"
    if left_out:
        measured += f"; left out: {names(left_out)}"
    verdict = combine(r["verdict"] for r in heads)
    reason = "" if verdict != NOT_TESTABLE else "no headline statement could be tested"
    row = Statement(statement.claim, FINDING, statement.quote, statement.reading).judged(
        measured, RULE, verdict, reason
    )
    return [row, *rows]


def normalise(text: str) -> str:
    """``text`` with every run of whitespace one space (quotes match up to whitespace)."""
    return " ".join(text.split())


def missing_quotes(quotes: Iterable[str], texts: Iterable[str]) -> list[str]:
    """The quotes found in none of ``texts`` (word for word, up to whitespace)."""
    haystacks = [normalise(t) for t in texts]
    return [q for q in quotes if not any(normalise(q) in h for h in haystacks)]
