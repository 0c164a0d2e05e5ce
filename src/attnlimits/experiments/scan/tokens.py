"""Attention over the real tokens: a few query rows per head, for the scan page's token view.

For the first window, at every scanned length, :data:`TOKEN_ROWS` query rows evenly spaced over
the length's band (the same rows for every head and in every run: no randomness) keep their
:data:`TOP_K` largest weights and those keys, and every weight of the row where
L ≤ :data:`FULL_ROWS_UP_TO` (:func:`attnlimits.capture.token_rows.rows_table`, which
``compare`` uses too). The weights are the row's softmax over its first L keys (the model's own
``q·kᵀ`` and scale, float64, stored as float32), as
:func:`~attnlimits.experiments.scan.patterns.row_weights` computes them for the binned
patterns. :func:`token_table` holds the window's tokens as text. A default scan of SmolLM2-135M
(30 × 9 heads, L = 256 … 4096) keeps about 240,000 rows.
"""

from __future__ import annotations

import pandas as pd

from attnlimits.capture import LayerQKV
from attnlimits.capture.token_rows import (
    FULL_ROWS_UP_TO,
    TOKEN_ROWS,
    TOP_K,
    rows_table,
    token_table,
)
from attnlimits.experiments.scan.patterns import row_weights

__all__ = ["FULL_ROWS_UP_TO", "TOKEN_ROWS", "TOP_K", "attention_rows", "token_table"]


def attention_rows(qkv: LayerQKV, length: int) -> pd.DataFrame:
    """One row per (head, sampled query row, kept key): ``length``, ``head``, ``row`` (the query's
    position), ``key`` (the key's position), ``weight``, ``rank`` (1 = the row's largest) and
    ``keys`` (how many keys the row attends to). Batched over heads, rows and keys."""
    idx, attn, keep = row_weights(qkv, length, TOKEN_ROWS)  # (R,), (head, R, L), (R, L)
    return rows_table(idx, attn, keep, length, top_k=TOP_K, full_up_to=FULL_ROWS_UP_TO)
