"""docs/clrs_text.md's numbers are the committed tables of a saved run (docs/data/clrs_text)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd
import pytest

from attnlimits.experiments.clrs_text import doc

ROOT = Path(__file__).parents[1]
DOC, DOC_DATA = ROOT / "docs" / "clrs_text.md", ROOT / "docs" / "data" / "clrs_text"


def test_doc_numbers_are_the_saved_runs_tables():
    """Every generated block of docs/clrs_text.md is what the saved run's tables render to;
    ATTNLIMITS_WRITE_DOCS=1 rewrites the blocks from those tables."""
    blocks = doc.render(doc.load(DOC_DATA))
    text = DOC.read_text(encoding="utf-8")
    if os.environ.get("ATTNLIMITS_WRITE_DOCS"):
        text = doc.fill(text, blocks)
        DOC.write_text(text, encoding="utf-8")
    stale = "rerun python -m attnlimits.experiments.clrs_text.doc RESULTS"
    for name, want in blocks.items():
        assert doc.block(text, name) == want, f"block {name!r} is not the saved run's: {stale}"
    assert set(re.findall(r"<!-- generated: (.+?) -->", text)) == set(blocks)


def test_the_committed_tables_keep_the_three_regimes_apart_and_the_seeds():
    data = doc.load(DOC_DATA)
    regimes = set(data["accuracy"]["regime"])
    assert regimes == {"in distribution", "interpolation", "extrapolation"}
    assert set(data["paired"]["regime"]) <= regimes
    run = dict(zip(data["run"]["setting"], data["run"]["value"], strict=True))
    assert run["format"] == "trace"
    assert data["per_seed"]["seed"].nunique() == int(run["seeds"])


def test_a_changed_table_is_caught(tmp_path):
    data = doc.load(DOC_DATA)
    text = doc.fill(DOC.read_text(encoding="utf-8"), doc.render(data))
    acc = data["accuracy"].copy()
    acc.loc[0, "accuracy"] = 1 - float(acc.loc[0, "accuracy"])
    changed = doc.render({**data, "accuracy": acc})
    assert doc.block(text, "clrs-accuracy") != changed["clrs-accuracy"]
    with pytest.raises(ValueError, match="holds no clrs-text run"):
        doc.extract(tmp_path)
    assert isinstance(data["trace_lengths"], pd.DataFrame)
