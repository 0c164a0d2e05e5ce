"""Small samples of each head's attention pattern, for the scan's page (``report.html``).

At every length where rows are materialised (up to ``analysis_max_length``), the ``rows`` query
rows that :func:`~attnlimits.experiments.scan.heads.sampled_rows` uses (evenly spaced over the
length's band, the same in every run: no randomness) keep their weights, summed into at most
:data:`PATTERN_BINS` equal bins of keys so that a page of a 30-layer model stays a few MB. Bin
``b`` of a length-L row holds the keys ``[b·L/B, (b+1)·L/B)``; every row's bins sum to 1.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from attnlimits.capture import LayerQKV
from attnlimits.capture.token_rows import band_rows
from attnlimits.experiments.scan.config import Config, band
from attnlimits.normalizers import softmax

__all__ = ["PATTERN_BINS", "bin_columns", "pattern_sample", "row_weights"]

#: Key bins of a stored pattern row (fewer where L is shorter).
PATTERN_BINS = 64


def bin_columns(bins: int = PATTERN_BINS) -> list[str]:
    """The ``patterns`` table's weight columns, ``w0`` … ``w{bins-1}``."""
    return [f"w{b}" for b in range(bins)]


def row_weights(
    qkv: LayerQKV, length: int, rows: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``rows`` query rows evenly spaced over length L's band (the same in every run: no
    randomness): (their indices ``[R]``, their softmax weights over the first ``length`` keys
    ``[head, R, L]`` in float64, masked keys exactly 0, and the keep-mask ``[R, L]``)."""
    a, b = band(length, qkv.causal)
    idx = band_rows(a, b, rows)
    q = qkv.q[0, :, idx.to(qkv.q.device)].double()  # (head, R, d)
    k = qkv.k[0, qkv.kv_head_of, :length].double()  # (head, L, d)
    scores = q @ k.transpose(-1, -2) * qkv.scaling  # (head, R, L)
    keys = torch.arange(length, device=scores.device)
    keep = torch.ones(len(idx), length, dtype=torch.bool, device=scores.device)
    if qkv.causal:
        keep = keep & (keys[None, :] <= idx[:, None].to(keep.device))
    if qkv.mask is not None:
        keep = keep & qkv.mask[0, 0][idx][:, :length].to(keep.device)
    attn = torch.nan_to_num(softmax(scores, mask=keep).double(), nan=0.0)
    return idx, attn, keep


def pattern_sample(qkv: LayerQKV, length: int, cfg: Config) -> pd.DataFrame:
    """One row per (head, sampled query row): the row's weights over the first ``length`` keys,
    summed into ``min(PATTERN_BINS, length)`` equal key bins (columns ``w0`` …; the rest NaN),
    with ``keys``: how many keys the row sees. Batched over heads and rows."""
    idx, attn, keep = row_weights(qkv, length, cfg.rows)
    keys = torch.arange(length, device=attn.device)
    n_bins = min(PATTERN_BINS, length)
    bin_of = keys * n_bins // length  # equal bins of keys, the first holding the sink
    binned = torch.zeros(*attn.shape[:2], n_bins, dtype=attn.dtype, device=attn.device)
    binned.index_add_(-1, bin_of, attn)
    heads, rows = binned.shape[:2]
    flat = binned.reshape(heads * rows, n_bins).cpu().numpy().astype(np.float32)
    weights = np.full((heads * rows, PATTERN_BINS), np.nan, dtype=np.float32)
    weights[:, :n_bins] = flat
    grid = np.indices((heads, rows)).reshape(2, -1)
    out = pd.DataFrame(
        {
            "length": length,
            "head": grid[0],
            "row": idx.numpy()[grid[1]],
            "keys": keep.sum(-1).cpu().numpy()[grid[1]],
            "bins": n_bins,
        }
    )
    return pd.concat([out, pd.DataFrame(weights, columns=bin_columns())], axis=1)
