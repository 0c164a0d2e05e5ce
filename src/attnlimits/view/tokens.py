"""The token view's data: a run's ``attention_rows`` over its ``tokens``, packed for the page.

The tables are :mod:`attnlimits.capture.token_rows`'s (the scan's, and ``compare``'s per
normaliser); ``token_view.js`` (beside this module, :func:`token_script`) draws them.

Per length, every (layer, head) keeps the same sampled query rows (:mod:`.tokens`), each with
the same number of kept keys in every head, so one length packs as, per layer, the heads' rows
one after the other: weights as base64 uint16 (weight · 65535, rounded, as the patterns) and,
unless every row's keys are simply ``0 … keys − 1`` (a full causal row: ``dense``), the keys
as base64 uint16 (uint32 past 65,535 positions). A row with fewer stored keys than another
head's same row is padded with weight 0 at key ``2**bits − 1``. ``token_view.js`` unpacks it.
"""

from __future__ import annotations

import base64
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["token_data", "token_script"]

_COLUMNS = ("layer", "head", "length", "row", "key", "weight", "rank", "keys")


def _b64(values: np.ndarray) -> list[str]:
    """One base64 string per leading index (a layer)."""
    return [base64.b64encode(v.tobytes()).decode("ascii") for v in values]


def _one_length(at: pd.DataFrame, layers: list[int], heads: list[int]) -> dict[str, Any]:
    at = at.sort_values(["layer", "head", "row", "key"])
    rows = sorted(int(r) for r in at["row"].unique())
    by_row = at.groupby(["layer", "head", "row"])
    width = by_row.size().groupby(level="row").max().reindex(rows).to_numpy()  # slots per row
    offset = np.concatenate([[0], np.cumsum(width)[:-1]]).astype(np.int64)
    col = offset[np.searchsorted(rows, at["row"].to_numpy())] + by_row.cumcount().to_numpy()
    li = np.searchsorted(layers, at["layer"].to_numpy())
    hi = np.searchsorted(heads, at["head"].to_numpy())
    total = int(width.sum())
    wide = np.dtype("<u4") if int(at["key"].max()) >= 65535 else np.dtype("<u2")
    weights = np.zeros((len(layers), len(heads), total), dtype="<u2")
    keys = np.full((len(layers), len(heads), total), np.iinfo(wide).max, dtype=wide)
    w = np.clip(at["weight"].to_numpy(dtype=np.float64), 0.0, 1.0)
    weights[li, hi, col] = np.round(w * 65535).astype("<u2")
    keys[li, hi, col] = at["key"].to_numpy()
    # a full causal row holds keys 0 … keys − 1: the page need not be told them
    dense = bool((keys == np.arange(total) - np.repeat(offset, width)).all())
    seen = at.drop_duplicates("row").set_index("row")["keys"].reindex(rows)
    return {
        "rows": rows,
        "counts": [int(c) for c in width],
        "seen": [int(k) for k in seen],
        "dense": dense,
        "keyBytes": wide.itemsize,
        "weights": _b64(weights.reshape(len(layers), -1)),
        "keys": None if dense else _b64(keys.reshape(len(layers), -1)),
    }


def token_data(
    rows: pd.DataFrame | None, tokens: pd.DataFrame | None, layers: list[int], heads: list[int]
) -> dict[str, Any]:
    """``{"text": [token strings by position], "lengths": {L: packed rows}}``; empty without
    the tables (a scan from before they existed)."""
    if rows is None or tokens is None or rows.empty or tokens.empty:
        return {}
    missing = [c for c in _COLUMNS if c not in rows]
    if missing:
        raise ValueError(f"attention_rows lacks the column(s) {missing}: pass the scan's table")
    text = tokens.sort_values("position")["text"].astype(str).tolist()
    return {
        "text": text,
        "lengths": {
            str(int(n)): _one_length(at, layers, heads) for n, at in rows.groupby("length")
        },
    }


def token_script() -> str:
    """The token view's renderer (``token_view.js``) as a ``<script>`` element: a page that
    shows token rows puts it before its own glue."""
    js = resources.files(__package__).joinpath("token_view.js").read_text(encoding="utf-8")
    return f"<script>{js}</script>"
