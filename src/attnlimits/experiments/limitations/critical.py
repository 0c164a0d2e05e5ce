"""Alg. 3 of paper A over a run's distance grid: the critical N per L and form of E, and again
on subsets of the heads the size of the paper's GPT-2 (12 × 12 = 144).

Per L, each head contributes its row-mean d̄ (Eq. 7) and Ē (Eq. 8 or a closed form of
Theorem 1.2); a two-sample Kolmogorov–Smirnov test over the heads compares the two samples at
every N of the grid, and the critical N is the first N the test does not reject. Where it
rejects up to the grid's end (``alg3_top``·L) the critical N is missing (``<NA>``) and
``n_max`` says how far the grid went: the report writes "> n_max", never −1.

The KS p-value depends on how many heads enter it (270 on SmolLM2, 144 in the paper), so
:func:`head_draws_table` reruns the test on seeded draws of ``heads`` heads; its statistic is
vectorised over draws and N, and its p-value is scipy's (``ks_2samp``) for that statistic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import cache

import numpy as np
import pandas as pd
from scipy import stats

from attnlimits.experiments.limitations.config import E_COLUMNS
from attnlimits.metrics import critical_n

__all__ = ["critical_n_table", "head_draws_table", "ks_p_values", "ks_statistics"]

_KEYS = ["layer", "head"]


def _per_head(grid: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Per (L, N, layer, head) the mean over windows of d̄ and each form of Ē."""
    e_cols = [c for c in E_COLUMNS if c in grid and grid[c].notna().any()]
    return grid.groupby(["L", "N", *_KEYS])[["distance", *e_cols]].mean(), e_cols


def _n_values(sub: pd.DataFrame, length: int, grids: Mapping[int, Sequence[int]]) -> list[int]:
    present = set(sub.index.get_level_values("N"))
    return [n for n in sorted(grids.get(length, ())) if n in present]


def critical_n_table(
    grid: pd.DataFrame, grids: Mapping[int, Sequence[int]], alpha: float
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Alg. 3: per L and form of E, the first N of ``grids[L]`` at which KS no longer separates
    the heads' d̄ from their Ē at level ``alpha``.

    ``grid`` holds one x source (every window: per-head means are taken over rows and
    windows). Returns (one row per L and form: ``critical_n``, missing where every N rejects,
    ``n_max`` the grid's largest N; one row per L, form and N with the statistic, p-value and
    whether d̄ came from the stratified rows of the extended grid).
    """
    per_head, e_cols = _per_head(grid)
    sampled = (
        grid.groupby(["L", "N"])["rows_sampled"].any()
        if "rows_sampled" in grid
        else pd.Series(dtype=bool)
    )
    summary, tests = [], []
    for length, sub in per_head.groupby(level="L"):
        n_values = _n_values(sub, int(length), grids)
        if not n_values:
            continue
        for col in e_cols:
            d = np.stack([sub.xs(n, level="N")["distance"].to_numpy() for n in n_values])
            e = np.stack([sub.xs(n, level="N")[col].to_numpy() for n in n_values])
            res = critical_n(n_values, d, e, alpha=alpha)
            crit = res.critical_n if res.critical_n > 0 else None
            summary.append(
                {
                    "L": int(length),
                    "e_form": E_COLUMNS[col],
                    "critical_n": crit,
                    "n_max": int(max(n_values)),
                    "alpha": alpha,
                    "critical_n_over_L": crit / length if crit else math.nan,
                    "heads": int(d.shape[1]),
                }
            )
            tests += [
                {
                    "L": int(length),
                    "e_form": E_COLUMNS[col],
                    "N": int(n),
                    "ks_statistic": float(st),
                    "p_value": float(p),
                    "rejected": bool(r),
                    "rows_sampled": bool(sampled.get((length, n), False)),
                }
                for n, st, p, r in zip(
                    res.n_values, res.statistics, res.p_values, res.rejected, strict=True
                )
            ]
    out = pd.DataFrame(summary)
    if len(out):
        out["critical_n"] = out["critical_n"].astype("Int64")
    return out, pd.DataFrame(tests)


def ks_statistics(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two-sample KS statistic D = sup_x |F_a(x) − F_b(x)| along the last axis, batched over
    the others (the ECDFs are compared after the last of each run of equal values, as
    ``scipy.stats.ks_2samp`` does)."""
    n, m = a.shape[-1], b.shape[-1]
    v = np.concatenate([a, b], axis=-1)
    order = np.argsort(v, axis=-1, kind="stable")
    sorted_v = np.take_along_axis(v, order, axis=-1)
    steps = np.where(order < n, 1.0 / n, -1.0 / m)
    diff = np.abs(np.cumsum(steps, axis=-1))
    last = np.ones(v.shape, dtype=bool)  # the last position of each run of equal values
    last[..., :-1] = sorted_v[..., 1:] != sorted_v[..., :-1]
    return np.where(last, diff, 0.0).max(axis=-1)


@cache
def _p_of_k(n: int, k: int) -> float:
    """scipy's two-sided p-value of D = k/n for two samples of n: the samples 0…n−1 and
    k − ½ … n − ½ + k have exactly that statistic."""
    if k == 0:
        return 1.0
    base = np.arange(n, dtype=float)
    return float(stats.ks_2samp(base, base + k - 0.5).pvalue)


def ks_p_values(d: np.ndarray, n: int) -> np.ndarray:
    """p-values of KS statistics ``d`` between two samples of ``n`` each (scipy's, looked up
    once per distinct statistic)."""
    k = np.rint(np.asarray(d) * n).astype(int)
    table = {int(v): _p_of_k(n, int(v)) for v in np.unique(k)}
    return np.vectorize(table.__getitem__, otypes=[float])(k)


def head_draws_table(
    grid: pd.DataFrame,
    grids: Mapping[int, Sequence[int]],
    alpha: float,
    heads: int,
    draws: int,
    seed: int,
) -> pd.DataFrame:
    """The critical N per L and form of E on ``draws`` seeded subsets of ``heads`` heads (the
    same subsets at every L and form: each draw is one model of that many heads). Empty when
    the model has no more than ``heads`` heads (or a head lacks a value somewhere)."""
    per_head, e_cols = _per_head(grid)
    columns = ["draw", "L", "e_form", "critical_n", "n_max", "alpha", "heads"]
    total = per_head.groupby(level=_KEYS).ngroups
    if total <= heads or per_head.isna().any().any():
        return pd.DataFrame(columns=columns)
    rng = np.random.default_rng(seed)
    picks = np.stack([rng.choice(total, heads, replace=False) for _ in range(draws)])
    rows = []
    for length, sub in per_head.groupby(level="L"):
        n_values = _n_values(sub, int(length), grids)
        if not n_values:
            continue
        for col in e_cols:
            # (n_N, heads in (layer, head) order) -> (draws, n_N, drawn heads)
            d = np.stack([sub.xs(n, level="N")["distance"].to_numpy() for n in n_values])
            e = np.stack([sub.xs(n, level="N")[col].to_numpy() for n in n_values])
            d_drawn, e_drawn = d[:, picks].swapaxes(0, 1), e[:, picks].swapaxes(0, 1)
            p = ks_p_values(ks_statistics(d_drawn, e_drawn), heads)
            accepted = p >= alpha  # (draws, n_N)
            first = np.where(accepted.any(-1), accepted.argmax(-1), -1)
            for i, j in enumerate(first):
                rows.append(
                    {
                        "draw": i,
                        "L": int(length),
                        "e_form": E_COLUMNS[col],
                        "critical_n": int(n_values[j]) if j >= 0 else None,
                        "n_max": int(max(n_values)),
                        "alpha": alpha,
                        "heads": heads,
                    }
                )
    out = pd.DataFrame(rows, columns=columns)
    out["critical_n"] = out["critical_n"].astype("Int64")
    return out
