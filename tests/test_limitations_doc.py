"""Paper A's words and our pages about it: every quote of paper A is its words, the erratum on
finding (v) (docs/errata.md), and docs/limitations.md's numbers are a saved run's.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnlimits.claims import verdicts
from attnlimits.experiments.limitations import claims
from attnlimits.experiments.limitations.statements import ALL
from limitations_tables import (
    META,
    N,
    P,
    R,
    tables,
)

# ---- the paper's words --------------------------------------------------------------------------
PAPERS = Path(__file__).parents[1].parent / "shared" / "papers"


@pytest.mark.skipif(not PAPERS.is_dir(), reason="../shared/papers is absent")
def test_every_quote_of_paper_a_is_the_papers_words():
    """Every statement's ``quote`` (the claims table's ``paper`` column) is in one of paper A's
    copies, word for word up to whitespace."""
    texts = [p.read_text(encoding="utf-8") for p in sorted(PAPERS.glob("paper-a-*.txt"))]
    assert len(texts) == 2
    assert verdicts.missing_quotes([s.quote for s in ALL], texts) == []
    got = claims(tables(), META)
    # the Jensen gap, (ii.d) and (ii.e) need tables the synthetic run lacks (gap bounds, grid)
    judged = {
        s.quote for s in ALL if not s.claim.startswith(("Theorem", "Jensen", "(ii.d)", "(ii.e)"))
    }
    assert set(got["paper"]) == judged
    assert verdicts.missing_quotes(["grows sub-linearly (≈ 0.06·L)"], texts)  # it can fail


# ---- the erratum on finding (v) ----------------------------------------------------------------
def test_figure4_erratum_numbers_and_doc():
    from attnlimits.errata import figure4_low_temperature as fig4

    below, above = fig4.printed_slopes()
    assert below == pytest.approx(0.0, abs=1e-12) and above == pytest.approx(-1.0, abs=1e-12)
    t = np.asarray(fig4.TEMPERATURES)
    by = {(c.row, c.eps): c for c in fig4.curves()}
    for c in by.values():  # δ ≤ min{1/(2T), √2/ε}: the bounds that make the statements clash
        assert (c.values <= np.minimum(1 / (2 * t), math.sqrt(2) / c.eps) * (1 + 1e-9)).all()
    tied = by[("tied top two", 1e-3)]
    assert tied.slope_low == pytest.approx(-1.0, abs=0.01)
    assert by[("tied top two", 10.0)].slope_low == pytest.approx(0.0, abs=0.01)
    sharp = by[("top 1 above the next", 1e-3)]
    assert sharp.values[0] < 1e-100 and sharp.slope_low > 50  # δ → 0 as T → 0
    doc = (Path(__file__).parents[1] / "docs" / "errata.md").read_text(encoding="utf-8")
    section = doc.split("## Figure 4 and finding (v)")[1].replace("−", "-")
    for (row_name, eps), label in {("tied top two", 1e-3): "10⁻³", ("tied top two", 0.1): "0.1",
                                   ("tied top two", 10.0): "10"}.items():  # fmt: skip
        c = by[(row_name, eps)]
        line = f"| two tied top logits | {label} | {c.slope_low:.2f} | {c.drop:.2g} |"
        assert line.replace("-0.00", "0.00") in section, line


# ---- docs/limitations.md: its numbers are a saved run's ----------------------------------------
DOC = Path(__file__).parents[1] / "docs" / "limitations.md"


DOC_DATA = Path(__file__).parents[1] / "docs" / "data" / "limitations"


def test_doc_numbers_are_the_saved_runs_tables():
    """Every generated block of docs/limitations.md is what the saved run's tables
    (docs/data/limitations, written by ``python -m attnlimits.experiments.limitations.doc
    RESULTS``) render to; ATTNLIMITS_WRITE_DOCS=1 rewrites the blocks from those tables."""
    from attnlimits.experiments.limitations import doc

    blocks = doc.render(doc.load(DOC_DATA))
    text = DOC.read_text(encoding="utf-8")
    if os.environ.get("ATTNLIMITS_WRITE_DOCS"):
        text = doc.fill(text, blocks)
        DOC.write_text(text, encoding="utf-8")
    stale = "rerun python -m attnlimits.experiments.limitations.doc RESULTS"
    for name, want in blocks.items():
        assert doc.block(text, name) == want, f"block {name!r} is not the saved run's: {stale}"
    assert set(re.findall(r"<!-- generated: (.+?) -->", text)) == set(blocks)
    claims = doc.load(DOC_DATA)["claims"]
    assert set(claims["model"]) == {"smollm2-135m", "minilm-l6"}
    assert set(claims["x_source"]) == {"values", "hidden", "—"}  # "—": (v), once per model
    per_x = claims[claims["claim"].str.match(r"^\(v[.)]|^Corollary 3")]
    assert (per_x["x_source"] == "—").all() and len(per_x) == 2 * 10
    assert "hand measurement" not in text


def _claims_run(folder: Path, model: str, windows: int, verdicts: list[str]) -> None:
    """A run folder as ``doc.other_windows`` reads it: run.json and tables/claims.parquet."""
    import json

    (folder / "tables").mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"params": {"model": model, "windows": windows}}))
    names = [f"({i})" for i in range(len(verdicts))]
    pd.DataFrame({"x_source": "values", "claim": names, "verdict": verdicts}).to_parquet(
        folder / "tables" / "claims.parquet"
    )


def test_the_windows_block_lists_exactly_the_verdicts_another_count_changes(tmp_path):
    from attnlimits.experiments.limitations import doc

    _claims_run(tmp_path / "two", "m", 2, [R, P, N])
    _claims_run(tmp_path / "four", "m", 4, [R, R, N])
    pairs = doc.other_windows(tmp_path / "two", tmp_path / "four")
    assert pairs["verdict_other"].tolist() == [R, R, N] and set(pairs["windows_other"]) == {4}
    doc.save({"windows": pairs}, tmp_path / "data")  # the block renders from the saved CSV
    text = doc.render({**_doc_minimum(), **doc.load(tmp_path / "data")})["windows"]
    assert text.startswith("With `--windows 4` instead of 2, 2 of 3 verdicts")
    assert "| m | values | (1) | partly | reproduced |" in text and "(0)" not in text
    same = doc.other_windows(tmp_path / "two", tmp_path / "two")
    assert doc.render({**_doc_minimum(), "windows": same})["windows"].endswith("are the same.")
    _claims_run(tmp_path / "other", "m", 4, [R, P])  # a claim fewer: not the same code
    with pytest.raises(ValueError, match="claims of m differ"):
        doc.other_windows(tmp_path / "two", tmp_path / "other")
    _claims_run(tmp_path / "model", "n", 4, [R, P, N])
    with pytest.raises(ValueError, match="ran"):
        doc.other_windows(tmp_path / "two", tmp_path / "model")


def _doc_minimum() -> dict[str, pd.DataFrame]:
    """The tables every render needs (one model, one claim, one critical N)."""
    run = pd.DataFrame(
        {"model": ["m"], "windows": ["2"], "L_max": ["64"], "x_sources": ["values"],
         "heads": ["4"], "ks_alpha": ["0.01"]}
    )  # fmt: skip
    claims = pd.DataFrame(
        {"model": ["m"], "x_source": ["values"], "claim": ["(0)"], "role": ["headline"],
         "verdict": [R], "windows": ["—"], "e_form": ["-"], "robust": ["yes"],
         "alternatives": [""], "measured": [""]}
    )  # fmt: skip
    crit = pd.DataFrame(
        {"model": ["m"], "x_source": ["values"], "L": ["64"], "e_form": ["exact"],
         "critical_n": ["4"]}
    )  # fmt: skip
    return {"run": run, "claims": claims, "critical_n": crit}


def test_a_rows_reading_names_its_form_of_e():
    """The round-4 referee's point 9: the committed claims table's reading says which E."""
    from attnlimits.experiments.limitations.doc import with_e_reading

    claims = pd.DataFrame(
        {
            "reading": ["slope of d̃", "E / d̃ at N = 100", "", ""],
            "e_form": ["—", "exact", "", "exact"],
        }
    )
    got = list(with_e_reading(claims)["reading"])
    assert got == ["slope of d̃", "E / d̃ at N = 100; E exact", "—", "E exact"]


_COUNTS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}


def prose_counts(prose: str) -> list[int]:
    """The present-tense counts of moving sub-claims a hand-written paragraph states ("five
    sub-claims move"; a past "moved" is history and left out)."""
    found = re.findall(r"\b(\w+)\s+sub-claims?\s+moves?\b", prose)
    return [_COUNTS.get(w.lower(), int(w) if w.isdigit() else -1) for w in found]


def test_hand_written_counts_match_the_windows_block():
    """The round-8 referee's point 5: the paragraph above the windows block said "five
    sub-claims move" while the block listed four. A count it states now must be the block's
    row count (the paragraph states none: it points at the block)."""
    from attnlimits.experiments.limitations import doc

    text = DOC.read_text(encoding="utf-8")
    rows = [line for line in doc.block(text, "windows").splitlines() if line.startswith("| ")]
    paragraph = text.split("<!-- generated: windows -->")[0].rsplit("\n\n", 2)[-2:]
    assert all(n == len(rows) - 1 for n in prose_counts(" ".join(paragraph)))
    assert prose_counts("five sub-claims\nmove, each one step; three sub-claims moved") == [5]
