"""Compare's own view on its page: one head's sampled query rows under two normalisers, side by
side, as coloured tokens (the renderer's token view, ``view/token_view.js``).

The presets (:mod:`attnlimits.experiments.presets`) draw the summary's plots above it. The data
are the run's ``tokens`` (the first sequence as text) and ``attention_rows`` (per normaliser,
:mod:`attnlimits.capture.token_rows`), packed per normaliser by
:func:`attnlimits.view.tokens.token_data`; ``tokens.js`` beside this module keeps the
selectors (layer, head, L, query row, the two normalisers) and both views in step.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from importlib import resources
from typing import Any

import pandas as pd

from attnlimits.view import Page, json_script
from attnlimits.view.tokens import token_data, token_script

__all__ = ["page", "tokens_data"]


def tokens_data(rows: pd.DataFrame, tokens: pd.DataFrame) -> dict[str, Any]:
    """``{text, layers, heads, lengths, normalizers, packed: {normaliser: {L: packed rows}}}``;
    the normalisers in the order the table has them (the baseline first)."""
    missing = [c for c in ("normalizer", "layer") if c not in rows]
    if missing:
        raise ValueError(f"attention_rows lacks the column(s) {missing}: pass compare's table")
    layers = sorted(int(v) for v in rows["layer"].unique())
    heads = sorted(int(v) for v in rows["head"].unique())
    specs = list(dict.fromkeys(rows["normalizer"].astype(str)))
    packed = {s: token_data(at, tokens, layers, heads) for s, at in rows.groupby("normalizer")}
    text = next(iter(packed.values()))["text"]
    return {
        "text": text,
        "layers": layers,
        "heads": heads,
        "lengths": sorted(int(v) for v in rows["length"].unique()),
        "normalizers": specs,
        "packed": {s: packed[s]["lengths"] for s in specs},
    }


def _options(values: list[Any]) -> str:
    return "".join(
        f'<option value="{html.escape(str(v))}">{html.escape(str(v))}</option>' for v in values
    )


def page(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> Page:
    """The token view of two normalisers (none without the tables: a run from before them)."""
    rows, tokens = tables.get("attention_rows"), tables.get("tokens")
    if rows is None or tokens is None or rows.empty or tokens.empty:
        return Page()
    data = tokens_data(rows, tokens)
    specs = data["normalizers"]
    body = f"""<h2 id="compare-tokens-title">Attention over the tokens, two normalisers side by
side</h2>
<div class="controls">
 <label>layer <select id="ct-layer">{_options(data["layers"])}</select></label>
 <label>head <select id="ct-head">{_options(data["heads"])}</select></label>
 <label>length L <select id="ct-length">{_options(data["lengths"])}</select></label>
 <label>query row <select id="ct-row"></select></label>
 <label>left <select id="ct-a">{_options(specs)}</select></label>
 <label>right <select id="ct-b">{_options(specs)}</select></label>
</div>
<p class="note">The first sequence's text; per length, the same query rows of the band
[L/2, L) under each normaliser: the weights it applies (its own, not summing to
one for maps such as softmax1), the query outlined, each key shaded by its weight over the row's
largest, the weight on hover. Every weight of a row at L ≤ 128, its largest 8 (in context)
beyond. Tables: attention_rows, tokens.</p>
<div class="row"><div id="ct-left"></div><div id="ct-right"></div></div>"""
    glue = resources.files(__package__).joinpath("tokens.js").read_text(encoding="utf-8")
    scripts = [json_script("COMPARE_TOKENS", data), token_script(), f"<script>{glue}</script>"]
    return Page(body, scripts, unlisted={"attention_rows", "tokens"})
