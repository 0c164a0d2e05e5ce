"""Every run's tables as interactive line plots: the kind's own presets, and an explorer.

:func:`explore_data` puts a run's small tables (at most :data:`MAX_ROWS` rows each) on the page
as columns; ``explore.js`` draws each preset of :data:`PRESETS` (table, x, y, one line per value
of a grouping column) and an explorer in which the reader picks the table, x, y and grouping.
A kind without presets gets the explorer alone, its defaults guessed from the columns (x: a
length-like column, lines: the first text column).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import Any

import pandas as pd

from attnlimits.view._page import json_script

__all__ = ["MAX_ROWS", "PRESETS", "explore_body", "explore_data", "explore_scripts"]

#: Rows of a table put on the page for plotting; a larger table is not plotted (a plot of
#: part of it would average part of it), the page names it.
MAX_ROWS = 5000
#: Per experiment: (table, x, y column(s), lines by, title) of its interactive figures; rows
#: sharing an x are averaged (over heads, layers, windows: what the report's figures pool).
Preset = tuple[str, str, str | tuple[str, ...], str | None, str]
PRESETS: dict[str, tuple[Preset, ...]] = {
    "compare": (
        ("summary", "length", "perplexity_change", "normalizer",
         "perplexity vs softmax (relative change) against length, per normaliser"),
        ("summary", "length", "accuracy", "normalizer", "retrieval accuracy against length"),
        ("summary", "length", "head_entropy_median", "normalizer",
         "median head entropy (nats) against length: how each normaliser shifts it"),
        ("summary", "normalizer", "seconds_per_forward", None, "cost: seconds per forward"),
        ("heads", "layer", "entropy", "normalizer",
         "head entropy per layer (mean over heads and lengths): how each normaliser shifts it"),
    ),
    "limitations": (
        ("alg1", "N", ("distance", "expectation", "bound"), "x_source",
         "Fig. 2a (Alg. 1): distance d̃ against N, with E (Thm 1.2) and the bound (Thm 1.1)"),
        ("alg2", "L", ("distance", "expectation", "bound"), "x_source",
         "Fig. 2b (Alg. 2): distance d̃ against L, with E and the bound"),
        ("alg3", "L", "critical_n_over_L", "e_form",
         "Fig. 2c (Alg. 3): critical N / L against L (paper: ≈ 0.06)"),
        ("alg4", "N", ("ratio", "lower", "upper"), "x_source",
         "Fig. 3 (Alg. 4): N_s/N against N, with Theorem 2's bounds"),
        ("alg5", "T", "jacobian_norm", None, "Fig. 4 (Alg. 5): ‖J‖₂ against the temperature T"),
    ),
}  # fmt: skip
_INDEX_LIKE = ("layer", "head", "window", "seed", "row", "sequence")  # not what a y shows
_X_LIKE = ("length", "L", "step", "N", "n", "size", "train_length", "keys", "x")


def _table(df: pd.DataFrame) -> dict[str, Any]:
    numeric = [str(c) for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]
    text = [str(c) for c in df.columns if str(c) not in numeric]
    data = {
        str(c): (df[c].astype(float) if str(c) in numeric else df[c].astype(str)).tolist()
        for c in df.columns
    }
    return {"numeric": numeric, "text": text, "rows": len(df), "data": data}


def _guess(name: str, table: Mapping[str, Any]) -> tuple[str, str, str, str | None, str] | None:
    numeric, text = table["numeric"], table["text"]
    x = next((c for c in _X_LIKE if c in numeric), numeric[0] if numeric else None)
    y = next((c for c in numeric if c != x and c not in _INDEX_LIKE), None)
    if x is None or y is None:
        return None
    varied = [c for c in text if len(set(table["data"][c])) > 1]  # a constant makes one line
    return (name, x, y, varied[0] if varied else None, f"{name}: {y} against {x}")


def explore_data(
    experiment: str, tables: Mapping[str, pd.DataFrame], names: list[str]
) -> dict[str, Any]:
    """The tables ``names`` as columns, the kind's presets whose columns exist, and the
    explorer's first choice."""
    shown = {
        n: _table(tables[n]) for n in names if len(tables[n].columns) and len(tables[n]) <= MAX_ROWS
    }
    too_big = {n: len(tables[n]) for n in names if len(tables[n]) > MAX_ROWS}
    presets = [
        {"table": t, "x": x, "y": y, "group": g, "title": title}
        for t, x, y, g, title in PRESETS.get(experiment, ())
        if t in shown
        and {x, *((y,) if isinstance(y, str) else y)} <= set(shown[t]["data"])
        and (g is None or g in shown[t]["data"])
    ]
    first = next((g for n in shown if (g := _guess(n, shown[n]))), None)
    start = None
    if first:
        start = dict(zip(("table", "x", "y", "group", "title"), first, strict=True))
    return {"tables": shown, "presets": presets, "start": start, "too_big": too_big}


def explore_body(data: Mapping[str, Any]) -> str:
    """The presets' plots and the explorer's controls (empty without tables to plot)."""
    if data["start"] is None and not data["presets"]:
        return ""
    presets = "".join(
        f'<div id="preset-{i}" class="preset" style="height:380px"></div>'
        for i in range(len(data["presets"]))
    )
    tables = "".join(f'<option value="{t}">{t}</option>' for t in data["tables"])
    big = ", ".join(f"{t} ({n} rows)" for t, n in data.get("too_big", {}).items())
    note = f'<p class="note">Not plotted here (over {MAX_ROWS} rows): {big}.</p>' if big else ""
    return f"""
<h2>Figures (interactive)</h2>
<div class="row">{presets}</div>
<h3>Explore a table</h3>
<div class="controls">
 <label>table <select id="ex-table">{tables}</select></label>
 <label>x <select id="ex-x"></select></label> <label>y <select id="ex-y"></select></label>
 <label>lines by <select id="ex-group"></select></label>
</div>
<div id="explore" style="height:420px"></div>
{note}"""


def explore_scripts(data: Mapping[str, Any]) -> list[str]:
    glue = resources.files("attnlimits.view").joinpath("explore.js").read_text(encoding="utf-8")
    return [json_script("EXPLORE", data), f"<script>{glue}</script>"]
