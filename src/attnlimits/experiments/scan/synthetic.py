"""A synthetic scan of any size, for the page's tests and for trying the views without a model.

The tables have the columns of a real scan's ``heads`` and ``patterns`` (``attnlimits scan``),
with values drawn from a seeded generator: no model, no text. They are not measurements.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnlimits.experiments.scan.compute import METRICS
from attnlimits.experiments.scan.patterns import PATTERN_BINS, bin_columns
from attnlimits.experiments.scan.taxonomy import FLAGS, KINDS
from attnlimits.experiments.scan.tokens import FULL_ROWS_UP_TO, TOKEN_ROWS, TOP_K

__all__ = ["synthetic_scan"]

_WORDS = np.array([" the", " cat", " sat", " on", " a", " mat", ".", "\n", " and", " Pierre"])


def synthetic_scan(
    layers: int = 4,
    heads: int = 4,
    lengths: tuple[int, ...] = (128, 256),
    rows: int = 8,
    seed: int = 0,
) -> dict[str, pd.DataFrame]:
    """``{"heads", "patterns", "attention_rows", "tokens"}`` for ``layers`` × ``heads`` heads at
    ``lengths``; patterns at every length, ``rows`` rows each, rows summing to 1; the layer's
    critical N: layer 1's none found (−1), not computed (NaN) past L = 256. Seeded by
    ``seed``."""
    for name, value in (("layers", layers), ("heads", heads), ("rows", rows)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    rng = np.random.default_rng(seed)
    grid = np.stack(np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij"), -1)
    frames = []
    for length in lengths:
        n = layers * heads
        df = pd.DataFrame({"layer": grid[..., 0].ravel(), "head": grid[..., 1].ravel()})
        df.insert(0, "model", "synthetic")
        df["length"] = length
        for col in METRICS:
            df[col] = rng.random(n)
            df[f"{col}_std"] = rng.random(n) / 10
        df["entropy"] = df["entropy_norm"] * np.log(length)
        df["windows"] = 1
        crit = 2.0 ** rng.integers(3, 7, layers)  # the layer's: one value for its heads
        crit[1 % layers] = -1  # none found
        df["critical_n"] = crit[df["layer"]] if length <= 256 else np.nan
        df["critical_n_over_L"] = (df["critical_n"] / length).where(df["critical_n"] > 0)
        df["induction"] = rng.random(n)
        df["dispersion_slope"] = rng.normal(-0.5, 0.3, n)
        df["kind"] = np.array([k[0] for k in KINDS])[rng.integers(0, len(KINDS), n)]
        for flag in FLAGS:
            df[f"flag_{flag}"] = rng.random(n) < 0.15
        frames.append(df)
    table = pd.concat(frames, ignore_index=True)
    patterns = []
    for length in lengths:
        bins = min(PATTERN_BINS, length)
        row_ids = np.linspace(length // 2, length - 1, rows).round().astype(int)
        w = rng.random((layers, heads, rows, bins)) ** 8
        w = w / w.sum(-1, keepdims=True)
        idx = np.indices((layers, heads, rows)).reshape(3, -1)
        df = pd.DataFrame(
            {
                "model": "synthetic",
                "length": length,
                "head": idx[1],
                "row": row_ids[idx[2]],
                "keys": row_ids[idx[2]] + 1,
                "bins": bins,
                "layer": idx[0],
            }
        )
        full = np.full((w.shape[0] * heads * rows, PATTERN_BINS), np.nan, dtype=np.float32)
        full[:, :bins] = w.reshape(-1, bins)
        patterns.append(pd.concat([df, pd.DataFrame(full, columns=bin_columns())], axis=1))
    return {
        "heads": table,
        "patterns": pd.concat(patterns, ignore_index=True),
        "attention_rows": pd.concat(
            [_token_rows(rng, layers, heads, n) for n in lengths], ignore_index=True
        ),
        "tokens": pd.DataFrame(
            {
                "position": np.arange(max(lengths)),
                "token_id": rng.integers(0, len(_WORDS), max(lengths)),
            }
        ).assign(text=lambda t: _WORDS[t["token_id"]]),
    }


def _token_rows(rng: np.random.Generator, layers: int, heads: int, length: int) -> pd.DataFrame:
    """The ``attention_rows`` table at one length: causal rows, top-k past FULL_ROWS_UP_TO."""
    rows = np.unique(np.linspace(length // 2, length - 1, TOKEN_ROWS).round().astype(int))
    keep = np.arange(length)[None, :] <= rows[:, None]  # (R, L)
    w = np.where(keep, rng.random((layers, heads, len(rows), length)) ** 8, 0.0)
    w = w / w.sum(-1, keepdims=True)
    rank = np.argsort(np.argsort(-w, axis=-1, kind="stable"), axis=-1) + 1
    chosen = keep & ((rank <= TOP_K) | (length <= FULL_ROWS_UP_TO))
    layer, head, row, key = np.nonzero(chosen)
    return pd.DataFrame(
        {
            "model": "synthetic",
            "layer": layer,
            "head": head,
            "length": length,
            "row": rows[row],
            "key": key,
            "weight": w[layer, head, row, key].astype(np.float32),
            "rank": rank[layer, head, row, key],
            "keys": keep.sum(-1)[row],
        }
    )
