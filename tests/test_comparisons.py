"""The one comparison vocabulary (attnlimits.claims.comparisons): known answers of by_interval
for every outcome on both sides of 0 and of the margin, the pages colouring each outcome from
the engine's words, and no experiment or page retyping them."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pandas as pd
import pytest

from attnlimits.claims import (
    BETTER,
    EQUIVALENT,
    INCONCLUSIVE,
    MIXED,
    OUTCOMES,
    WORSE,
    by_interval,
)
from attnlimits.view._page import OUTCOME_COLOURS, document, table_html

E9 = 1e-9
SRC = Path(__file__).resolve().parents[1] / "src" / "attnlimits"


@pytest.mark.parametrize(
    ("low", "high", "margin", "want"),
    [
        (0.1, 0.3, None, BETTER),
        (E9, 0.3, None, BETTER),
        (0.0, 0.3, None, INCONCLUSIVE),  # touching 0 is not above it
        (-0.3, -0.1, None, WORSE),
        (-0.3, -E9, None, WORSE),
        (-0.3, 0.0, None, INCONCLUSIVE),
        (-0.1, 0.2, None, INCONCLUSIVE),
        (0.0, 0.0, None, INCONCLUSIVE),  # no margin: never equivalent
        (-0.05, 0.05, 0.05, EQUIVALENT),  # the margin's ends are inside
        (0.01, 0.04, 0.05, EQUIVALENT),  # significant, but inside the margin
        (-0.05 - E9, 0.05, 0.05, INCONCLUSIVE),
        (0.01, 0.05 + E9, 0.05, BETTER),  # past the margin and above 0
        (math.nan, 0.1, 0.05, INCONCLUSIVE),
        (0.1, math.nan, None, INCONCLUSIVE),
    ],
)
def test_by_interval_known_answers(low, high, margin, want) -> None:
    assert by_interval(low, high, margin) == want


def test_by_interval_refuses_a_reversed_interval_or_a_negative_margin() -> None:
    with pytest.raises(ValueError, match="low end"):
        by_interval(0.2, 0.1)
    with pytest.raises(ValueError, match="margin"):
        by_interval(-0.1, 0.1, -0.01)


def test_every_outcome_has_a_colour_and_its_cells_are_coloured() -> None:
    assert tuple(OUTCOME_COLOURS) == OUTCOMES
    df = pd.DataFrame({"claim": ["better than softmax when L ≫ k", "x"], "outcome": [WORSE, MIXED]})
    page = table_html(df)
    assert '<td class="outcome-worse">worse</td>' in page
    assert '<td class="outcome-mixed">mixed</td>' in page
    assert "outcome-better" not in page  # a claim that merely starts with the word
    style = document("t", "", plotly=False)
    assert all(f".outcome-{w} {{ background: {c}; }}" in style for w, c in OUTCOME_COLOURS.items())


#: The words every experiment used before the one vocabulary; none may come back as a literal.
_OLD = {
    "helps",
    "hurts",
    "neutral",
    "untested",
    "no difference",
    "no significant difference",
    "adaptive significantly better",
    "softmax significantly better",
}


#: Literals that are the same word but no outcome: (file under src/attnlimits, word) → why.
_NOT_OUTCOMES = {
    ("experiments/clrs_text/compute.py", "mixed"): "a dataset of both formats, not an outcome",
}


def _literals(path: Path) -> list[tuple[int, str]]:
    """The string constants of ``path`` that are an outcome word, docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and node.value.strip() in {*OUTCOMES, *_OLD}
    ]


def test_no_experiment_or_page_retypes_an_outcome_word() -> None:
    """Outcomes come from attnlimits.claims.comparisons' constants, never a literal."""
    files = sorted((SRC / "experiments").rglob("*.py")) + sorted((SRC / "view").rglob("*.py"))
    found = {
        (str(p.relative_to(SRC)), word): line
        for p in files
        for line, word in _literals(p)
        if (str(p.relative_to(SRC)), word) not in _NOT_OUTCOMES
    }
    assert found == {}
