"""Theorem 1's remark on its residual as a claims row (the round-4 referee's point 20): "the
residual ε captures the Jensen gap and is small whenever the individual weights α_i are not too
concentrated", judged by :data:`.rules.small_residual` on the cells the run already holds."""

from __future__ import annotations

import math

import pandas as pd
from scipy.stats import spearmanr

from attnlimits.claims.verdicts import Row
from attnlimits.experiments.limitations import rules
from attnlimits.experiments.limitations.findings import judged_row

__all__ = ["claim_small_residual"]

_NEED = ("expectation_exact", "expectation_exact_se", "expectation")


def _split_shares(small: pd.Series, by: pd.Series) -> tuple[float, float]:
    """The share of ``small`` cells at or below the lower median of ``by``, and above it."""
    median = float(by.sort_values().iloc[(len(by) - 1) // 2])
    low = by <= median
    return float(small[low].mean()), float(small[~low].mean()) if (~low).any() else math.nan


def claim_small_residual(df: pd.DataFrame) -> list[Row]:
    """Per (window, layer, head, L, N) of ``df`` (Alg. 1 and 2's cells) ε = E exact − E derived
    against E exact, to 3 SE of E exact; judged on the cells whose weights are not too
    concentrated where the run stores the row-mean max α_i (``max_weight``), with the split by
    the top-N mass ᾱ_N (``top_mass``) and the rank correlation of max α_i with |ε| / E exact
    beside it (description); not computed where the run lacks E exact."""
    if not set(_NEED) <= set(df):
        return [judged_row("Jensen", "not computed in this run", rules.not_run)]
    stored = "max_weight" in df and bool(df["max_weight"].notna().any())
    cells = df.dropna(subset=[*_NEED, *(("max_weight",) if stored else ())])
    if cells.empty:
        return [judged_row("Jensen", "not computed in this run", rules.not_run)]
    eps = cells["expectation_exact"] - cells["expectation"]
    ratio = eps.abs() / cells["expectation_exact"]
    q = ratio.quantile([0.5, 0.9, 1.0])
    slack = 3 * cells["expectation_exact_se"]
    is_small = eps.abs() <= rules.EPS_SMALL.value * cells["expectation_exact"] + slack
    small = float(is_small.mean())
    negative = float((eps < -slack).mean())
    measured = (
        f"|ε| / E exact over {len(cells)} (window, layer, head, L, N) at Alg. 1/2's N: median "
        f"{q[0.5]:.3g}, 90th percentile {q[0.9]:.3g}, largest {q[1.0]:.3g}; "
        f"≤ {rules.EPS_SMALL:g} (to 3 SE) in {small:.1%} of them; ε < 0 beyond 3 SE in "
        f"{negative:.1%}"
    )
    if not stored:
        measured += " (the weights' concentration is not stored)"
        concentration = None
    else:
        concentration = cells["max_weight"].tolist()
        low, high = _split_shares(is_small, cells["max_weight"])
        rho = spearmanr(cells["max_weight"], ratio).statistic
        measured += (
            f"; by max α_i (median {cells['max_weight'].median():.3g}): small in {low:.1%} of "
            f"the cells at or below the median, {high:.1%} above; Spearman ρ(max α_i, "
            f"|ε| / E exact) = {rho:.2f}"
        )
        if "top_mass" in cells and bool(cells["top_mass"].notna().all()):
            low_n, high_n = _split_shares(is_small, cells["top_mass"])
            measured += (
                f"; by the top-N mass ᾱ_N instead (another reading, not judged): {low_n:.1%} "
                f"at or below its median, {high_n:.1%} above"
            )
    return [
        judged_row(
            "Jensen",
            measured,
            rules.small_residual,
            eps.tolist(),
            cells["expectation_exact"].tolist(),
            cells["expectation_exact_se"].tolist(),
            concentration,
        )
    ]
