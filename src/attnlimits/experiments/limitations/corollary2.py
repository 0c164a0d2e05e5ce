"""Corollary 2(ii)'s collapse over the whole N grid at L_max (Alg. 3's extension to about
0.9·L): paper A's rows (ii.d), E → 0 as N → L, and (ii.e), the conclusions' "the representation
distance collapses once N grows proportionally to L", each judged by a rule of :mod:`.rules`:
(ii.d) a check (E = 0 at N = L by definition), (ii.e) supporting, read at N ≈ PROPORTIONAL·L,
where it can fail (the round-4 referee's point 6).
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
    (ii.e) the conclusions' "the representation distance collapses once N grows proportionally
    to L": d̃ at the grid's N nearest PROPORTIONAL·L over its peak (supporting; at the largest N,
    shown beside it, d̃ → 0 by definition)."""
    at = grid[grid["L"] == grid["L"].max()]
    per_head = at.groupby(["N", "layer", "head"])[[form, "distance"]].mean()  # windows first
    means = per_head.groupby("N").mean()
    mean, dist = means[form], means["distance"]
    ratio = float(mean.iloc[-1] / mean.max()) if len(mean) and mean.max() > 0 else math.nan
    d_ratio = float(dist.iloc[-1] / dist.max()) if len(dist) and dist.max() > 0 else math.nan
    top = int(at["L"].max()) if len(at) else 0
    n_end = int(dist.index[-1]) if len(dist) else 0

    def near(fraction: float) -> tuple[int, float]:
        """The grid's N nearest ``fraction``·L and d̃ there over its peak."""
        if not len(dist) or not dist.max() > 0:
            return 0, math.nan
        n = min(dist.index, key=lambda n: abs(n - fraction * top))
        return int(n), float(dist.loc[n] / dist.max())

    def first(limit: float) -> str:
        """The first N / L at or past the peak where d̃ / peak is at most ``limit``."""
        if not len(dist) or not dist.max() > 0:
            return "—"
        curve = dist / dist.max()
        past = curve[(curve.index >= curve.idxmax()) & (curve <= limit)]
        return f"{past.index[0] / top:.3f}·L" if len(past) else "never on the grid"

    n_q, q_ratio = near(rules.PROPORTIONAL.value)
    n_6, ratio_6 = near(rules.PAPER_FRACTION.value)
    n_peak = int(dist.idxmax()) if len(dist) else 0
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
            f"d̃ (mean over heads) at L = {top} over its peak ({dist.max():.4g} at N = {n_peak}, "
            f"{n_peak / top if top else math.nan:.3f}·L): {ratio_6:.2f} at N = {n_6} "
            f"(≈ 0.06·L), {q_ratio:.2f} at N = {n_q} (≈ {rules.PROPORTIONAL}·L); "
            f"{d_ratio:.2f} at the largest N {n_end} ({n_end / top if top else math.nan:.2f}·L: "
            f"d̃ = 0 at N = L by definition, not judged); d̃ / peak first ≤ {rules.VANISHES:g} "
            f"from N = {first(rules.VANISHES.value)}, ≤ {rules.D_COLLAPSED:g} from "
            f"N = {first(rules.D_COLLAPSED.value)}",
            rules.d_collapses,
            q_ratio,
        ),
    ]
