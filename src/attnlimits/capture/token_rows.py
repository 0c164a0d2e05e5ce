"""Attention over the real tokens, shared by the scan, ``compare`` and the monitor: a few query
rows per head with their largest weights (every weight at short lengths), and a window's
tokens as text.

The pages' token views (:mod:`attnlimits.view.tokens`, ``view/token_view.js``) show these
tables. Per length, :data:`TOKEN_ROWS` query rows evenly spaced over its band keep

- their :data:`TOP_K` largest weights and those keys (``rank`` 1 … TOP_K, ties to the earlier
  key), at every length, however long;
- every weight of the row (``rank`` 1 … keys) where L ≤ :data:`FULL_ROWS_UP_TO`.

Only the keys a row attends to appear (a causal row's later keys, masked padding: not stored).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch

__all__ = ["FULL_ROWS_UP_TO", "TOKEN_ROWS", "TOP_K", "band_rows", "rows_table", "token_table"]

#: Query rows per head and length kept with their tokens.
TOKEN_ROWS = 4
#: Largest weights kept per row at every length.
TOP_K = 8
#: Lengths up to which a row keeps every weight, not only its top-k.
FULL_ROWS_UP_TO = 256


def band_rows(lo: int, hi: int, rows: int = TOKEN_ROWS) -> torch.Tensor:
    """``rows`` query positions evenly spaced over ``[lo, hi)`` (rounded, distinct): the same
    in every run, no randomness."""
    return torch.linspace(lo, hi - 1, rows).round().long().unique()


def rows_table(
    idx: torch.Tensor,
    attn: torch.Tensor,
    keep: torch.Tensor,
    length: int,
    *,
    top_k: int = TOP_K,
    full_up_to: int = FULL_ROWS_UP_TO,
) -> pd.DataFrame:
    """The kept weights of query rows ``idx`` ``[R]`` (positions), ``attn`` ``[head, R, L]`` over
    the first ``length`` keys, ``keep`` ``[R, L]`` the keys each row attends to: one row per
    (head, query row, kept key) with ``length``, ``head``, ``row``, ``key``, ``weight``
    (float32), ``rank`` (1 = the row's largest) and ``keys`` (how many keys the row attends
    to). Batched over heads, rows and keys."""
    attn = torch.nan_to_num(attn, nan=0.0)
    order = torch.argsort(-attn, dim=-1, stable=True)  # largest first, ties to the earlier key
    rank = torch.empty_like(order).scatter_(
        -1, order, torch.arange(1, attn.shape[-1] + 1, device=order.device).expand_as(order)
    )  # (head, R, L): 1 for the largest weight
    chosen = keep[None] & ((rank <= top_k) | (length <= full_up_to))
    head, row, key = chosen.nonzero(as_tuple=True)
    return pd.DataFrame(
        {
            "length": length,
            "head": head.cpu().numpy(),
            "row": idx.cpu().numpy()[row.cpu().numpy()],
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
