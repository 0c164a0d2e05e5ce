"""Corollary 2(ii)'s collapse over the whole N grid at L_max (Alg. 3's extension to about
0.9·L): paper A's rows (ii.d), E → 0 as N → L, and (ii.e), contribution 1's "the representation
distance collapses once N grows proportionally to L", each judged by a rule of :mod:`.rules`
(both checks: at N = L they hold by definition).
"""

from __future__ import annotations

import math

import pandas as pd

from attnlimits.experiments.limitations import rules
from attnlimits.experiments.limitations.findings import E_COLS, Row, judged_row

__all__ = ["claim_ii_d"]


def claim_ii_d(grid: pd.DataFrame, form: str) -> list[Row]:
    """(ii.d) Corollary 2(ii): E → 0 as N → L, at L_max over the whole N grid (Alg. 3's extension
    included): E (``form``, mean over heads) at the largest N over its peak over N (a check);
    (ii.e) contribution 1's "the representation distance collapses once N grows proportionally
    to L": d̃ likewise (a check: d̃ = 0 at N = L by definition)."""
    at = grid[grid["L"] == grid["L"].max()]
    per_head = at.groupby(["N", "layer", "head"])[[form, "distance"]].mean()  # windows first
    means = per_head.groupby("N").mean()
    mean, dist = means[form], means["distance"]
    ratio = float(mean.iloc[-1] / mean.max()) if len(mean) and mean.max() > 0 else math.nan
    d_ratio = float(dist.iloc[-1] / dist.max()) if len(dist) and dist.max() > 0 else math.nan
    top = int(at["L"].max()) if len(at) else 0
    n_end = int(dist.index[-1]) if len(dist) else 0
    d_end = float(dist.iloc[-1]) if len(dist) else math.nan
    return [
        judged_row(
            "(ii.d)",
            f"E {E_COLS[form]} (mean over heads) at L = {int(at['L'].max()) if len(at) else 0}: "
            f"peak {mean.max():.4g} at N = {int(mean.idxmax()) if len(mean) else 0}, "
            f"{mean.iloc[-1] if len(mean) else math.nan:.4g} at the largest N "
            f"{int(mean.index[-1]) if len(mean) else 0}",
            rules.vanishes,
            ratio,
            uses_e=True,
        ),
        judged_row(
            "(ii.e)",
            f"d̃ (mean over heads) at L = {top}: peak {dist.max():.4g} at N = "
            f"{int(dist.idxmax()) if len(dist) else 0}, {d_end:.4g} at the largest N {n_end} "
            f"({n_end / top if top else math.nan:.2f}·L); close to "
            "definitional: d̃ = 0 at N = L",
            rules.d_collapses,
            d_ratio,
        ),
    ]
