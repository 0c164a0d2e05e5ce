"""The monitor's page: each statistic per layer and head over training steps, with warnings.

:func:`monitor_data` turns :class:`~attnlimits.monitor.AttentionMonitor`'s table (one row per
step, layer and head) into one (layer·head) × step grid per statistic, and the steps where a
head's collapse or dispersion warning holds (the monitor's own rules, recomputed from the
table's ``entropy_max`` and ``entropy_ratio_min``). ``monitor.js`` draws it: a step × head
heatmap and one line per head of the chosen layer, the warnings marked on both.
:func:`write_monitor_page` writes ``attention_monitor.html`` beside the monitor's Parquet. With
the monitor's token rows (it had a tokenizer and its batches input_ids) the page shows them as
coloured tokens per kept step, layer and head; without, one line says why.
"""

from __future__ import annotations

import html
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from attnlimits._files import atomic_write_text
from attnlimits.view import MONITOR_PAGE
from attnlimits.view._page import document, json_script
from attnlimits.view.tokens import token_data, token_script

__all__ = ["MONITOR_PAGE", "monitor_data", "monitor_page", "write_monitor_page"]

_STATS = ("entropy", "max_weight", "sink_mass", "logit_spread")
#: A token view: (rows, tokens, why none) as ``AttentionMonitor.token_rows`` and its reason.
Tokens = tuple[pd.DataFrame, pd.DataFrame, str]


def _token_view(tokens: Tokens | None) -> tuple[str, list[str]]:
    """The token view's HTML and scripts: per kept step, its first sequence's sampled rows as
    coloured tokens (``monitor_tokens.js``); without rows, one line saying why."""
    rows, text, why = tokens if tokens is not None else (pd.DataFrame(), pd.DataFrame(), "")
    if rows.empty or text.empty:
        why = why or "the monitor kept no token rows"
        return f'<p id="monitor-tokens" class="note">No token view: {html.escape(why)}.</p>', []
    layers = sorted(int(v) for v in rows["layer"].unique())
    heads = sorted(int(v) for v in rows["head"].unique())
    steps = sorted(int(v) for v in rows["step"].unique())
    data = {
        "layers": layers,
        "heads": heads,
        "steps": steps,
        "packed": {
            str(s): token_data(rows[rows["step"] == s], text[text["step"] == s], layers, heads)
            for s in steps
        },
    }
    options = {
        k: "".join(f'<option value="{v}">{v}</option>' for v in data[k])
        for k in ("steps", "layers", "heads")
    }
    body = f"""<h2>Attention over the tokens</h2>
<div class="controls">
 <label>step <select id="mt-step">{options["steps"]}</select></label>
 <label>layer <select id="mt-layer">{options["layers"]}</select></label>
 <label>head <select id="mt-head">{options["heads"]}</select></label>
</div>
<p class="note">The first sequence of each kept step's first batch: a few query rows of its
band, the softmax of that call's q·kᵀ under its mask; the query outlined, keys shaded by weight
over the row's largest, the weight on hover; ◀ ▶ through the rows.</p>
<div id="monitor-tokens"></div>"""
    glue = resources.files("attnlimits.view").joinpath("monitor_tokens.js").read_text("utf-8")
    return body, [json_script("MONITOR_TOKENS", data), token_script(), f"<script>{glue}</script>"]


def _check_table(table: Any) -> pd.DataFrame:
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in ("step", "layer", "head") if c not in table]
    if missing or table.empty:
        what = f"lacks the column(s) {missing}" if missing else "is empty"
        raise ValueError(f"table {what}: pass the monitor's table (attention_monitor.parquet)")
    return table


def monitor_data(
    table: pd.DataFrame, collapse_entropy: float = 0.05, disperse_ratio: float = 0.95
) -> dict[str, Any]:
    """The page's data: per statistic a grid ``[layer·head][step]`` (NaN where not recorded),
    and per warning kind the (step, layer, head) where its rule holds."""
    table = _check_table(table)
    steps = sorted(int(s) for s in table["step"].unique())
    heads = table[["layer", "head"]].drop_duplicates().sort_values(["layer", "head"])
    index = pd.MultiIndex.from_frame(heads)
    stats = [s for s in _STATS if s in table] + [
        c
        for c in table.columns
        if c not in (*_STATS, "step", "layer", "head") and pd.api.types.is_numeric_dtype(table[c])
    ]
    grids = {}
    for stat in stats:
        wide = table.pivot_table(index=["layer", "head"], columns="step", values=stat)
        grids[stat] = wide.reindex(index=index, columns=steps).to_numpy(dtype=float)
    warnings: dict[str, list[list[int]]] = {"collapsed": [], "dispersed": []}
    if "entropy_max" in table:
        top = table["entropy_max"].to_numpy(dtype=float)
        hit = np.isfinite(top) & (top < collapse_entropy)
        warnings["collapsed"] = table.loc[hit, ["step", "layer", "head"]].to_numpy().tolist()
    if "entropy_ratio_min" in table and disperse_ratio < 1:
        low = table["entropy_ratio_min"].to_numpy(dtype=float)
        hit = np.isfinite(low) & (low > disperse_ratio)
        warnings["dispersed"] = table.loc[hit, ["step", "layer", "head"]].to_numpy().tolist()
    return {
        "steps": steps,
        "heads": heads.to_numpy().tolist(),
        "layers": sorted(int(v) for v in heads["layer"].unique()),
        "stats": stats,
        "grids": grids,
        "warnings": warnings,
        "rules": {"collapse_entropy": collapse_entropy, "disperse_ratio": disperse_ratio},
    }


def monitor_page(
    table: pd.DataFrame,
    collapse_entropy: float = 0.05,
    disperse_ratio: float = 0.95,
    title: str = "Attention during training",
    tokens: Tokens | None = None,
) -> str:
    """The whole page of a monitor's table (and its token view's ``tokens``)."""
    data = monitor_data(table, collapse_entropy, disperse_ratio)
    stats = "".join(f'<option value="{s}">{s}</option>' for s in data["stats"])
    layers = "".join(f'<option value="{v}">{v}</option>' for v in data["layers"])
    n = len(data["heads"])
    view, view_scripts = _token_view(tokens)
    body = f"""
<p class="note">Per layer and head, the row means AttentionMonitor recorded on every recorded
step. Warnings (marked: × collapsed, entropy below {collapse_entropy:g} nats on every row;
○ dispersed, entropy above {disperse_ratio:g}·log n_keys on every row) are the monitor's rules
applied to the table. The table: attention_monitor.parquet.</p>
<div class="controls">
 <label>statistic <select id="stat">{stats}</select></label>
 <label>layer (lines) <select id="layer">{layers}</select></label>
</div>
<div id="main" style="height:{max(360, 14 * n + 160)}px"></div>
<div id="lines" style="height:420px"></div>
{view}
"""
    glue = resources.files("attnlimits.view").joinpath("monitor.js").read_text(encoding="utf-8")
    scripts = [json_script("MONITOR", data), f"<script>{glue}</script>", *view_scripts]
    return document(title, body, scripts=scripts)


def write_monitor_page(
    out_dir: Path,
    table: pd.DataFrame,
    collapse_entropy: float = 0.05,
    disperse_ratio: float = 0.95,
    tokens: Tokens | None = None,
) -> Path:
    """Write ``out_dir/attention_monitor.html`` atomically; returns its path."""
    path = Path(out_dir) / MONITOR_PAGE
    page = monitor_page(table, collapse_entropy, disperse_ratio, tokens=tokens)
    atomic_write_text(path, page)
    return path
