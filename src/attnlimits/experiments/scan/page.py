"""The scan's page: layer × head heatmaps per diagnostic and length, kinds, flags, patterns.

:func:`scan_data` turns the scan's ``heads`` table (one row per layer, head, length) and its
``patterns`` sample into the page's data: one layer × head grid per column and length, the
kind and flags of every head, the sampled rows' weights in key bins. :func:`scan_body` lays
the page out; ``scan.js`` (beside this module) is the glue that draws it with Plotly and keeps
the selectors, filters and the clicked head's views in step. :func:`page` hands them to the
renderer (:class:`attnlimits.view.Page`). :func:`scan` is the notebook's view of the same
table: a Plotly figure with one heatmap per diagnostic and length.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from attnlimits.experiments.scan.figures import HEATMAPS
from attnlimits.experiments.scan.taxonomy import FLAGS, KINDS
from attnlimits.view import Page, json_script, table_html
from attnlimits.view.tokens import token_data, token_script

__all__ = ["KIND_COLORS", "METRICS", "page", "scan", "scan_body", "scan_data", "scan_script"]

#: (column, title, colour scale) of the heatmaps, in the selector's order: the report's PNG's
#: scales (coolwarm as Plotly's reversed RdBu).
METRICS: tuple[tuple[str, str, str], ...] = (
    ("entropy", "entropy H (nats)", "viridis"),
    *((c, t, "rdbu_r" if m == "coolwarm" else m) for c, t, m in HEATMAPS),
    ("critical_n", "critical N of the layer (A, Alg. 3)", "plasma"),
    ("induction", "induction score", "magma"),
)
#: Colour of each kind of :data:`~attnlimits.experiments.scan.taxonomy.KINDS` (matplotlib's
#: C3, grey, C2, C8, C1, C0, as the report's PNG).
KIND_COLORS = ("#d62728", "#404040", "#2ca02c", "#bcbd22", "#ff7f0e", "#1f77b4")
_KEYS = ("model", "layer", "head", "length", "kind")
#: Columns where −1 means "no N of the grid passes": drawn as "none found", never on the scale
#: (column -> the column whose −1 says so).
_NONE_FOUND = {
    "critical_n": "critical_n",
    "critical_n_over_L": "critical_n",
    "critical_n_model": "critical_n_model",
}


def _grid(df: pd.DataFrame, column: str, layers: list[int], heads: list[int]) -> np.ndarray:
    wide = df.pivot_table(index="layer", columns="head", values=column, aggfunc="first")
    return wide.reindex(index=layers, columns=heads).to_numpy(dtype=float)


def _check_heads(heads: Any) -> pd.DataFrame:
    if not isinstance(heads, pd.DataFrame):
        raise TypeError(f"heads must be a pandas DataFrame, got {type(heads).__name__}")
    missing = [c for c in ("layer", "head", "length") if c not in heads]
    if missing:
        raise ValueError(
            f"heads lacks the column(s) {missing}: pass the scan's heads table "
            "(tables/heads.parquet)"
        )
    if heads.empty:
        raise ValueError("heads is empty: pass the scan's heads table (tables/heads.parquet)")
    return heads


def _patterns(patterns: pd.DataFrame, layers: list[int], heads: list[int]) -> dict[str, Any]:
    """Per length: the sampled rows, their key counts, and every head's weights in key bins as
    base64 uint16 (weight · 65535, rounded), one string per layer (head, row, bin inside), so
    that a click decodes one layer."""
    out: dict[str, Any] = {}
    for length, at in patterns.groupby("length"):
        rows = sorted(at["row"].unique())
        bins = int(at["bins"].max())
        cols = [f"w{b}" for b in range(bins)]
        index = pd.MultiIndex.from_product([layers, heads, rows], names=["layer", "head", "row"])
        full = at.set_index(["layer", "head", "row"])[cols].reindex(index).fillna(0.0)
        values = np.clip(full.to_numpy(dtype=np.float64), 0.0, 1.0)
        quantised = np.round(values * 65535).astype("<u2").reshape(len(layers), -1)
        keys = at.drop_duplicates("row").set_index("row")["keys"].reindex(rows)
        out[str(int(length))] = {
            "rows": [int(r) for r in rows],
            "keys": [int(k) for k in keys],
            "bins": bins,
            "data": [base64.b64encode(q.tobytes()).decode("ascii") for q in quantised],
        }
    return out


def scan_data(
    heads: pd.DataFrame,
    patterns: pd.DataFrame | None = None,
    meta: Mapping[str, Any] | None = None,
    attention_rows: pd.DataFrame | None = None,
    tokens: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """The scan page's data from its ``heads`` table (and ``patterns``, ``attention_rows`` and
    ``tokens``, when stored).

    Every numeric column of ``heads`` becomes one layer × head grid per length (NaN where not
    measured: "not computed"), so hovering can show every number of a head; a critical N of −1
    (no N of the grid passes) becomes NaN there and 1 in ``none`` ("none found"), so it is
    never a colour of the scale; ``kind`` becomes indices into :data:`KINDS`, each ``flag_*``
    column a 0/1 grid.
    """
    heads = _check_heads(heads)
    layers = sorted(int(v) for v in heads["layer"].unique())
    head_ids = sorted(int(v) for v in heads["head"].unique())
    lengths = sorted(int(v) for v in heads["length"].unique())
    numeric = [
        c
        for c in heads.columns
        if c not in _KEYS and not c.startswith("flag_") and pd.api.types.is_numeric_dtype(heads[c])
    ]
    flag_cols = [c for c in heads.columns if c.startswith("flag_")]
    kind_names = [k[0] for k in KINDS]
    cells: dict[str, dict[str, np.ndarray]] = {}
    kind: dict[str, Any] = {}
    flagged: dict[str, dict[str, np.ndarray]] = {}
    none: dict[str, dict[str, np.ndarray]] = {}
    for length in lengths:
        at = heads[heads["length"] == length]
        cells[str(length)] = {c: _grid(at, c, layers, head_ids) for c in numeric}
        none[str(length)] = {
            c: (cells[str(length)][by] == -1).astype(int)
            for c, by in _NONE_FOUND.items()
            if c in numeric and by in numeric
        }
        for c, grid in none[str(length)].items():
            cells[str(length)][c] = np.where(grid > 0, np.nan, cells[str(length)][c])
        if "kind" in at:
            codes = at.assign(code=at["kind"].map({k: i for i, k in enumerate(kind_names)}))
            grid = _grid(codes, "code", layers, head_ids)  # indices, None where unknown
            kind[str(length)] = np.where(np.isnan(grid), None, np.nan_to_num(grid).astype(int))
        flagged[str(length)] = {
            c: np.nan_to_num(_grid(at.assign(**{c: at[c].astype(float)}), c, layers, head_ids))
            for c in flag_cols
        }
    from plotly.colors import get_colorscale

    metrics = [
        {"col": c, "title": t, "scale": get_colorscale(s)}
        for c, t, s in METRICS
        if c in numeric and heads[c].notna().any()
    ]
    model = (meta or {}).get("model", {}).get("id") or (
        str(heads["model"].iloc[0]) if "model" in heads else "model"
    )
    return {
        "model": model,
        "layers": layers,
        "heads": head_ids,
        "lengths": lengths,
        "columns": numeric,
        "metrics": metrics,
        "kinds": kind_names,
        "kindColors": list(KIND_COLORS),
        "flags": [{"col": c, "name": c[5:], "text": FLAGS.get(c[5:], c[5:])} for c in flag_cols],
        "cells": cells,
        "none": none,
        "kind": kind,
        "flagged": flagged,
        "patterns": {}
        if patterns is None or patterns.empty
        else _patterns(patterns, layers, head_ids),
        "tokens": token_data(attention_rows, tokens, layers, head_ids),
    }


_STYLE = """<style>
#thumbs { display: flex; flex-wrap: wrap; gap: 6px; }
#thumbs figure { margin: 0; text-align: center; font-size: 0.75em; cursor: pointer; }
#thumbs canvas { width: 96px; height: 48px; image-rendering: pixelated; border: 1px solid #ccc; }
#thumbs canvas.picked { outline: 2px solid #d62728; } #thumbs p { flex-basis: 100%; }
#empty { color: #a33; font-weight: bold; }
</style>"""


def scan_body(data: Mapping[str, Any], summary: pd.DataFrame | None = None) -> str:
    """The page's interactive part: selectors, filters, the heatmap, the clicked head's views
    (its tokens, its layer's thumbnails, its pattern, its numbers over L)."""
    lengths = "".join(f'<option value="{n}">{n}</option>' for n in data["lengths"])
    metrics = "".join(f'<option value="{m["col"]}">{m["title"]}</option>' for m in data["metrics"])
    kinds = "".join(f'<option value="{i}">{k}</option>' for i, k in enumerate(data["kinds"]))
    flags = "".join(f'<option value="{f["col"]}">{f["name"]}</option>' for f in data["flags"])
    layers = "".join(f'<option value="{n}">{n}</option>' for n in data["layers"])
    legend = " ".join(
        f'<span style="color:{c}">■</span> {k}'
        for k, c in zip(data["kinds"], data["kindColors"], strict=True)
    )
    summary_html = "" if summary is None else f"<h2>Heads</h2>{table_html(summary)}"
    return f"""{_STYLE}
<h2>Heads, layer by layer</h2>
<div class="controls">
 <label>diagnostic <select id="metric">{metrics}
   <option value="kind">head kind</option></select></label>
 <label>length L <select id="length">{lengths}</select></label>
 <label>kind <select id="kind-filter"><option value="">all</option>{kinds}</select></label>
 <label>flag <select id="flag-filter"><option value="">any or none</option>
   <option value="any">flagged</option><option value="none">not flagged</option>{flags}
 </select></label>
 <label><input type="checkbox" id="rescale"> rescale to the filtered heads</label>
</div>
<p class="note">Kinds: {legend}. The colour scale spans every head at this L whatever the
filters (tick "rescale" to fit it to the heads shown); filtered-out heads are left blank,
"none found" (no N of the grid passes) and "not computed" (no value at this L) are their own
marked cells, never a colour of the scale. Flags are drawn as marks (click one in the legend to
show or hide it; a flag most heads raise starts hidden). Hover a head for its kind, flags and
key numbers; click it for its tokens, its pattern and every number. The address keeps the
head, diagnostic and L: copy it to share the view.</p>
<p id="empty" class="note"></p>
<div id="main" style="height:{max(420, 18 * len(data["layers"]) + 160)}px"></div>
<h3>Attention over the tokens</h3>
<div id="tokens"><p class="note">Click a head to see its sampled query rows over the text.</p>
</div>
<h3>Every head of a layer</h3>
<div class="controls"><label>layer <select id="thumb-layer">{layers}</select></label></div>
<div id="thumbs"></div>
<div class="row"><div id="pattern" style="height:420px"></div>
<div id="lengths-plot" style="height:420px"></div></div>
<p id="head-note" class="note">Click a head to see its pattern and its numbers over L.</p>
<div id="head-table"></div>
{summary_html}
"""


def scan_script(data: Mapping[str, Any]) -> list[str]:
    """The page's scripts: its data, the renderer's token view, then the glue (this
    package's ``token_view.js``: thumbnails; ``scan.js``)."""
    here = resources.files(__package__)
    return [json_script("SCAN", data), token_script()] + [
        f"<script>{here.joinpath(js).read_text(encoding='utf-8')}</script>"
        for js in ("token_view.js", "scan.js")
    ]


def page(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> Page:
    """The scan's views for its page: the heatmaps (mirroring the figure ``heatmaps``) over
    the ``heads`` table, which the page then does not list again; none without that table."""
    if "heads" not in tables:
        return Page()
    data = scan_data(
        tables["heads"],
        tables.get("patterns"),
        meta,
        tables.get("attention_rows"),
        tables.get("tokens"),
    )
    return Page(
        scan_body(data),
        scan_script(data),
        {"heatmaps": "main"},
        {"heads"},
        unlisted={"attention_rows", "tokens"},  # the token view's: too long to list
    )


def _kind_and_flags(data: Mapping[str, Any], length: int) -> np.ndarray:
    """Per layer and head at ``length``: its kind and the flags it raises, as one string."""
    names = np.array([*data["kinds"], ""], dtype=object)
    kind = data["kind"].get(str(length))
    shape = (len(data["layers"]), len(data["heads"]))
    codes = (
        np.full(shape, -1)
        if kind is None
        else np.nan_to_num(np.asarray(kind, dtype=float), nan=-1).astype(int)
    )
    text = names[codes]
    for flag in data["flags"]:  # a handful of flags, each a whole grid
        text = text + np.where(
            data["flagged"][str(length)][flag["col"]] > 0, f" {flag['name']}", ""
        )
    return text


def scan(heads: pd.DataFrame, metric: str = "entropy_norm", length: int | None = None) -> Any:
    """A Plotly figure of a scan's ``heads`` table (for a notebook: ``scan(df)``).

    One layer × head heatmap per diagnostic and length, chosen from the figure's menu (it
    starts at ``metric`` and ``length``, default the longest); hovering a head shows its kind
    and flags. The full page, with filters and patterns, is ``report.html``.
    """
    import plotly.graph_objects as go

    data = scan_data(heads)
    cols = [m["col"] for m in data["metrics"]]
    if metric not in cols:
        raise ValueError(f"metric {metric!r} is not among the scan's diagnostics: {cols}")
    lengths = data["lengths"]
    start = lengths[-1] if length is None else length
    if start not in lengths:
        raise ValueError(f"length {length!r} is not a scanned length: {lengths}")
    fig = go.Figure()
    labels = []
    for m in data["metrics"]:
        for n in lengths:
            text = _kind_and_flags(data, n)
            fig.add_trace(
                go.Heatmap(
                    z=data["cells"][str(n)][m["col"]],
                    x=data["heads"],
                    y=data["layers"],
                    text=text,
                    colorscale=m["scale"],
                    visible=(m["col"] == metric and n == start),
                    hovertemplate="layer %{y}, head %{x}<br>"
                    + m["title"]
                    + " = %{z:.4g}<br>%{text}<extra></extra>",
                    name=f"{m['col']} L={n}",
                )
            )
            labels.append(f"{m['title']}, L = {n}")
    buttons = [
        {
            "label": label,
            "method": "update",
            "args": [{"visible": [k == i for k in range(len(labels))]}, {"title": label}],
        }
        for i, label in enumerate(labels)
    ]
    active = cols.index(metric) * len(lengths) + lengths.index(start)
    fig.update_layout(
        title=labels[active],
        xaxis_title="head",
        yaxis_title="layer",
        yaxis_autorange="reversed",
        updatemenus=[{"buttons": buttons, "active": active, "x": 1.0, "y": 1.15}],
    )
    return fig
