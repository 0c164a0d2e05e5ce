"""Attention over the real tokens: a few query rows per head, for the scan page's token view.

For the first window, at every scanned length, :data:`TOKEN_ROWS` query rows evenly spaced over
the length's band (the same rows for every head and in every run: no randomness) keep

- their :data:`TOP_K` largest weights and those keys (``rank`` 1 … TOP_K, ties to the earlier
  key), at every length, however long;
- every weight of the row (``rank`` 1 … keys) where L ≤ :data:`FULL_ROWS_UP_TO`.

Only the keys a row attends to appear (a causal row's later keys, masked padding: weight 0, not
stored). The weights are the row's softmax over its first L keys (the model's own ``q·kᵀ`` and
scale, float64, stored as float32), as :func:`~attnlimits.experiments.scan.patterns.row_weights`
computes them for the binned patterns. :func:`token_table` holds the window's tokens as text.
A default scan of SmolLM2-135M (30 × 9 heads, L = 256 … 4096) keeps about 240,000 rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch

from attnlimits.capture import LayerQKV
from attnlimits.experiments.scan.patterns import row_weights

__all__ = ["FULL_ROWS_UP_TO", "TOKEN_ROWS", "TOP_K", "attention_rows", "token_table"]

#: Query rows per head and length kept with their tokens.
TOKEN_ROWS = 4
#: Largest weights kept per row at every length.
TOP_K = 8
#: Lengths up to which a row keeps every weight, not only its top-k.
FULL_ROWS_UP_TO = 256


def attention_rows(qkv: LayerQKV, length: int) -> pd.DataFrame:
    """One row per (head, sampled query row, kept key): ``length``, ``head``, ``row`` (the query's
    position), ``key`` (the key's position), ``weight``, ``rank`` (1 = the row's largest) and
    ``keys`` (how many keys the row attends to). Batched over heads, rows and keys."""
    idx, attn, keep = row_weights(qkv, length, TOKEN_ROWS)  # (R,), (head, R, L), (R, L)
    order = torch.argsort(-attn, dim=-1, stable=True)  # largest first, ties to the earlier key
    rank = torch.empty_like(order).scatter_(
        -1, order, torch.arange(1, length + 1, device=order.device).expand_as(order)
    )  # (head, R, L): 1 for the largest weight
    chosen = keep[None] & ((rank <= TOP_K) | (length <= FULL_ROWS_UP_TO))
    head, row, key = chosen.nonzero(as_tuple=True)
    return pd.DataFrame(
        {
            "length": length,
            "head": head.cpu().numpy(),
            "row": idx.numpy()[row.cpu().numpy()],
            "key": key.cpu().numpy(),
            "weight": attn[head, row, key].cpu().numpy().astype(np.float32),
            "rank": rank[head, row, key].cpu().numpy(),
            "keys": keep.sum(-1)[row].cpu().numpy(),
        }
    )


def token_table(tokenizer: Any, ids: torch.Tensor) -> pd.DataFrame:
    """One row per position of a window's token ids ``[L]``: ``position``, ``token_id`` and
    ``text``, each token decoded on its own (leading spaces kept, as CircuitsVis shows them)."""
    ids = ids.reshape(-1).cpu()
    text = tokenizer.batch_decode(ids[:, None], clean_up_tokenization_spaces=False)
    return pd.DataFrame({"position": np.arange(len(ids)), "token_id": ids.numpy(), "text": text})
