"""Referee point 21: a phrase in single quotes in a rule's text or a threshold's reason is
presented as the paper's words, so it is word for word (up to whitespace) in our copy of that
paper; a paraphrase or an elision ('tracks ... closely') loses its marks or is quoted whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnlimits.claims.verdicts import missing_quotes
from attnlimits.experiments.limitations import rules as paper_a
from attnlimits.experiments.softmax_not_enough import rules as paper_b

PAPERS = Path(__file__).resolve().parents[1].parent / "shared" / "papers"
#: A phrase in '…' (an apostrophe inside a word, as in paper's, opens none).
QUOTED = re.compile(r"(?<!\w)'([^']+?)'(?!\w)")


def _quoted(module) -> list[str]:
    texts = [t.reason for t in module.THRESHOLDS.values()] + [r.text() for r in module.RULES]
    return [q for text in texts for q in QUOTED.findall(text)]


@pytest.mark.skipif(not PAPERS.is_dir(), reason="../shared/papers is absent")
@pytest.mark.parametrize(
    ("module", "files"),
    [
        (paper_a, ["paper-a-limitations-arxiv-v3.txt", "paper-a-limitations-neurips.txt"]),
        (paper_b, ["paper-b-softmax-not-enough.txt"]),
    ],
)
def test_rule_and_threshold_quotes_are_the_papers_words(module, files):
    quotes = _quoted(module)
    assert len(quotes) >= 3, quotes  # the search finds the quotes at all
    texts = [(PAPERS / f).read_text(encoding="utf-8") for f in files]
    assert missing_quotes(quotes, texts) == []
    # the check catches an elided quote, as 'tracks ... closely' was
    assert missing_quotes(["tracks ... closely"], texts) == ["tracks ... closely"]
