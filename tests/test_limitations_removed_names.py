"""No removed threshold or rule of paper A is named as if it still decided a verdict (the
round-5 referee's point 3: four places still named ``TRACKS``, ``about_fraction`` and reading (c)
after round 4 had removed or replaced them).

A removed name may stay in the docs only where the sentence says it is gone (the history of a
rule change); the committed claims tables, generated from the rules of the moment, name none.
``about_fraction`` is not removed: it is the scan experiment's rule, so a doc names it only
beside the scan.
"""

from __future__ import annotations

import re

import pytest

from attnlimits.experiments.limitations import rules
from conftest import REPO

#: removed names and the round that removed them
REMOVED = {
    "TOWARDS_N": "round 4, point 1",
    "TRACKS": "round 4, point 7",
    "FLAT": "round 4, point 7",
    "tracks": "round 4, point 7 (the rule; 'tracks' is also the paper's word)",
    "bounds_hold": "round 5, point 6",
}
#: what a paragraph that names a removed name must also say
GONE = re.compile(r"\b(gone|removed|no longer)\b")
DOCS = ("docs/limitations.md", "docs/errata.md", "README.md")
CSVS = ("docs/data/limitations/claims.csv", "docs/data/limitations/windows.csv")


def _paragraphs(text: str) -> list[str]:
    """Blank-line paragraphs, each bullet (a line starting '- ') on its own."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        out.extend(p for p in re.split(r"\n(?=\s*- )", block) if p.strip())
    return out


def _named(name: str, text: str) -> bool:
    """``name`` as code (`name`), or bare where it cannot be an English word (upper case)."""
    if f"`{name}`" in text:
        return True
    return name.isupper() and re.search(rf"(?<![\w`]){re.escape(name)}(?![\w`])", text) is not None


def test_the_removed_names_are_gone_from_the_rules():
    names = {r.name for r in rules.RULES} | set(rules.THRESHOLDS)
    for name in REMOVED:
        assert name not in names and not hasattr(rules, name), name


@pytest.mark.parametrize("path", DOCS)
def test_a_doc_names_a_removed_name_only_to_say_it_is_gone(path):
    text = (REPO / path).read_text(encoding="utf-8")
    stale = [
        (name, p.strip()[:160])
        for p in _paragraphs(text)
        for name in REMOVED
        if _named(name, p) and not GONE.search(p)
    ]
    assert not stale, stale


@pytest.mark.parametrize("path", DOCS)
def test_about_fraction_is_named_only_as_the_scans_rule(path):
    text = (REPO / path).read_text(encoding="utf-8")
    wrong = [
        p.strip()[:160] for p in _paragraphs(text) if "about_fraction" in p and "scan" not in p
    ]
    assert not wrong, wrong


@pytest.mark.parametrize("path", CSVS)
def test_the_committed_claims_tables_name_no_removed_rule(path):
    file = REPO / path
    if not file.is_file():
        pytest.skip(f"no {path}")
    text = file.read_text(encoding="utf-8")
    for name in [*(n for n in REMOVED if n.isupper() or "_" in n), "about_fraction"]:
        assert re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is None, name


def test_the_check_catches_a_stale_name():
    """The paragraph test is not vacuous: a stale sentence fails it, its history passes."""
    stale = "(iv.d) is judged by `TRACKS` at every N."
    history = "(iv.d) is a check (`TRACKS` and `FLAT` are gone)."
    assert _named("TRACKS", stale) and not GONE.search(stale)
    assert _named("TRACKS", history) and GONE.search(history)
    assert not _named("tracks", "the upper bound tracks the maxima")
    assert _named("TOWARDS_N", "at least TOWARDS_N of them")
