"""Every run's tables as interactive line plots: the kind's own presets, and an explorer.

:func:`explore_data` puts a run's small tables (at most :data:`MAX_ROWS` rows each) on the page
as columns; ``explore.js`` draws each preset the experiment hands over (layers of lines,
markers, intervals, shaded training ranges; see :mod:`attnlimits.experiments.presets`) and an
explorer in which the reader picks the table, x, y and grouping. A kind without presets gets
the explorer alone, its defaults guessed from the columns (x: a length-like column, lines: the
first text column).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

import pandas as pd

from attnlimits.view._page import json_script

__all__ = ["MAX_ROWS", "explore_body", "explore_data", "explore_scripts", "figure_targets"]

#: Rows of a table put on the page for plotting; a larger table is not plotted (a plot of
#: part of it would average part of it), the page names it.
MAX_ROWS = 5000
#: Plots one faceted preset makes at most (one per value of its facet column).
MAX_FACETS = 24
#: How a facet's column is named in its plots' titles.
_FACET_LABEL = {"x_source": "x", "e_form": "E form"}
_INDEX_LIKE = ("layer", "head", "window", "seed", "row", "sequence")  # not what a y shows
_X_LIKE = ("length", "L", "step", "N", "n", "size", "train_length", "keys", "x")
_NOT_KEYS = ("name", "edge", "verdict")  # text columns that describe a row, not select it


def _table(df: pd.DataFrame) -> dict[str, Any]:
    numeric = [str(c) for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]
    text = [str(c) for c in df.columns if str(c) not in numeric]
    data = {
        str(c): (df[c].astype(float) if str(c) in numeric else df[c].astype(str)).tolist()
        for c in df.columns
    }
    keys = [c for c in text if c not in _NOT_KEYS] + [
        c for c in numeric if c in _INDEX_LIKE or c in _X_LIKE
    ]  # what a row is of (a plot that averages rows differing in one says so)
    return {"numeric": numeric, "text": text, "keys": keys, "rows": len(df), "data": data}


def _guess(name: str, table: Mapping[str, Any]) -> tuple[str, str, str, str | None, str] | None:
    numeric, text = table["numeric"], table["text"]
    x = next((c for c in _X_LIKE if c in numeric), numeric[0] if numeric else None)
    y = next((c for c in numeric if c != x and c not in _INDEX_LIKE), None)
    if x is None or y is None:
        return None
    varied = [c for c in text if len(set(table["data"][c])) > 1]  # a constant makes one line
    return (name, x, y, varied[0] if varied else None, f"{name}: {y} against {x}")


def _layer(spec: Mapping[str, Any], shown: Mapping[str, Any]) -> dict[str, Any] | None:
    """The layer with what the run's table has: its y columns that exist, its filters on
    columns that exist; None where the table, x or grouping is missing."""
    t = shown.get(spec["table"])
    if t is None or spec["x"] not in t["data"]:
        return None
    ys = (spec["y"],) if isinstance(spec["y"], str) else spec["y"]
    ys = [y for y in ys if y in t["numeric"]]
    if not ys:
        return None
    out = {**spec, "y": ys[0] if isinstance(spec["y"], str) else ys}
    if out.get("group") not in t["data"]:  # a run of one arm, say: one line
        out["group"] = None
    out["where"] = {k: v for k, v in (spec.get("where") or {}).items() if k in t["data"]}
    for key in ("low", "high", "err", "count"):
        if key in out and out[key] not in t["numeric"]:
            del out[key]
    return out


def _presets(
    presets: Sequence[Mapping[str, Any]], shown: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The presets drawable from ``shown``, a faceted one once per facet value."""
    out = []
    for spec in presets:
        layers = [x for x in (_layer(s, shown) for s in spec["layers"]) if x is not None]
        if not layers:
            continue
        first = shown[layers[0]["table"]]["data"]
        base = {**spec, "layers": layers}
        if base.get("shade") not in first:
            base.pop("shade", None)
        facets = base.pop("facet", None)
        facets = [facets] if isinstance(facets, str) else list(facets or ())
        facets = [f for f in facets if f in first]
        if not facets:
            out.append(base)
            continue
        combos = sorted(set(zip(*(first[f] for f in facets), strict=True)))
        for values in combos[:MAX_FACETS]:
            fixed = dict(zip(facets, values, strict=True))
            label = " · ".join(
                f"{_FACET_LABEL.get(f, f)}\u00a0=\u00a0{v}" for f, v in fixed.items()
            )
            out.append(
                {
                    **base,
                    "title": f"{base['title']} · {label}",
                    "layers": [
                        {
                            **x,
                            "where": {
                                **x["where"],
                                **{
                                    f: v for f, v in fixed.items() if f in shown[x["table"]]["data"]
                                },
                            },
                        }
                        for x in layers
                    ],
                }
            )
    for i, spec in enumerate(out):
        spec["id"] = f"preset-{i}"
    return out


def figure_targets(data: Mapping[str, Any]) -> dict[str, str]:
    """Figure name -> the id of the first interactive plot that mirrors it."""
    out: dict[str, str] = {}
    for spec in data["presets"]:
        if spec.get("figure"):
            out.setdefault(spec["figure"], spec["id"])
    return out


def explore_data(
    tables: Mapping[str, pd.DataFrame],
    names: list[str],
    presets: Sequence[Mapping[str, Any]] = (),
    extra: Mapping[str, pd.DataFrame] | None = None,
) -> dict[str, Any]:
    """The tables ``names`` as columns (with ``extra``: tables the presets draw that the run's
    lack, or copies with a column more), the ``presets`` whose columns exist, and the
    explorer's first choice."""
    extra = dict(extra or {})
    tables = {**tables, **extra}
    names = [*names, *(n for n in extra if n not in names)]
    shown = {
        n: _table(tables[n]) for n in names if len(tables[n].columns) and len(tables[n]) <= MAX_ROWS
    }
    too_big = {n: len(tables[n]) for n in names if len(tables[n]) > MAX_ROWS}
    first = next((g for n in shown if (g := _guess(n, shown[n]))), None)
    start = None
    if first:
        start = dict(zip(("table", "x", "y", "group", "title"), first, strict=True))
    drawn = _presets(presets, shown)
    return {"tables": shown, "presets": drawn, "start": start, "too_big": too_big}


def explore_body(data: Mapping[str, Any]) -> str:
    """The presets' plots and the explorer's controls (empty without tables to plot)."""
    if data["start"] is None and not data["presets"]:
        return ""
    presets = "".join(
        f'<div id="{p["id"]}" class="preset" style="height:380px"></div>' for p in data["presets"]
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
 <label>and by <select id="ex-and"></select></label>
</div>
<p class="note">Rows sharing an x (and a line) are averaged; the note under the title names the
columns a point pools over: split the lines by them to see each.</p>
<div id="explore" style="height:420px"></div>
{note}"""


def explore_scripts(data: Mapping[str, Any]) -> list[str]:
    glue = resources.files("attnlimits.view").joinpath("explore.js").read_text(encoding="utf-8")
    return [json_script("EXPLORE", data), f"<script>{glue}</script>"]
