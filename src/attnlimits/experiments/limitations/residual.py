"""Theorem 1's remark on its residual as a claims row (the round-4 referee's point 20): "the
residual ε captures the Jensen gap and is small whenever the individual weights α_i are not too
concentrated", judged by :data:`.rules.small_residual` on the cells the run already holds.

E exact is the Monte Carlo mean over ``mc_rows`` sampled rows per band of L (:mod:`.exact`) and
E derived the closed form's mean over every row, so ε = E exact − E derived carries E exact's
row-sampling error as well as the Jensen gap; E exact's SE (``expectation_exact_se``) counts
that spread, and the rule's 3-SE allowance is what lets it through (the round-7 referee's
point 1: shown with and without the allowance)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from attnlimits.claims.verdicts import Row
from attnlimits.experiments.limitations import rules
from attnlimits.experiments.limitations.findings import judged_row

__all__ = [
    "QUANTILES",
    "cells_at_n",
    "claim_small_residual",
    "residual_alternatives",
    "residual_quantiles",
    "residual_summary",
]

_NEED = ("expectation_exact", "expectation_exact_se", "expectation")
_CELL = ("window", "layer", "head", "L", "N")


def cells_at_n(alg1: pd.DataFrame, alg2: pd.DataFrame) -> pd.DataFrame:
    """Alg. 1 and 2's cells (window, layer, head, L, N) of one x source, each once."""
    both = pd.concat([alg1, alg2])
    return both.drop_duplicates(subset=[c for c in _CELL if c in alg1])


def _lower_median(values: pd.Series) -> float:
    return float(values.sort_values().iloc[(len(values) - 1) // 2])


def _split_shares(small: pd.Series, by: pd.Series) -> tuple[float, float]:
    """The share of ``small`` cells at or below the lower median of ``by``, and above it."""
    low = by <= _lower_median(by)
    return float(small[low].mean()), float(small[~low].mean()) if (~low).any() else math.nan


def _cells(df: pd.DataFrame) -> pd.DataFrame:
    """The judged cells with ε, |ε| / E exact and both smallness flags (with and without the
    3-SE allowance)."""
    stored = "max_weight" in df and bool(df["max_weight"].notna().any())
    cells = df.dropna(subset=[*_NEED, *(("max_weight",) if stored else ())])
    eps = cells["expectation_exact"] - cells["expectation"]
    slack = 3 * cells["expectation_exact_se"]
    limit = rules.EPS_SMALL.value * cells["expectation_exact"]
    return cells.assign(
        eps=eps,
        ratio=eps.abs() / cells["expectation_exact"],
        slack=slack,
        small=eps.abs() <= limit + slack,
        small_point=eps.abs() <= limit,
    )


def _quantile_flip(small: pd.Series, by: pd.Series) -> str:
    """The largest share q of the cells, taken from the least concentrated up, whose cells are
    small in at least WITHIN_SE: the cut's quantile at or below which the row would read
    reproduced (ties in ``by`` are cut as the rule cuts them, at or below a value)."""
    order = np.argsort(by.to_numpy(), kind="stable")
    ok = small.to_numpy()[order].cumsum() / np.arange(1, len(order) + 1)
    last_of_tie = np.r_[np.diff(by.to_numpy()[order]) > 0, True]
    good = np.flatnonzero((ok >= rules.WITHIN_SE.value) & last_of_tie)
    if not len(good):
        return "at no quantile (not even the least concentrated cell alone)"
    return f"at or below the {(good[-1] + 1) / len(order):.1%} quantile of max α_i"


def _flip_text(cells: pd.DataFrame) -> str:
    """Where small_residual's verdict flips (the round-7 referee's point 4), on the cells at or
    below the median max α_i: WITHIN_SE at that half's small share, EPS_SMALL at the WITHIN_SE
    quantile of (|ε| − 3 SE) / E exact there, and the cut's quantile."""
    low = cells[cells["max_weight"] <= _lower_median(cells["max_weight"])]
    need = ((low["eps"].abs() - low["slack"]) / low["expectation_exact"]).quantile(
        rules.WITHIN_SE.value, interpolation="higher"
    )
    return (
        f"flip points: WITHIN_SE {low['small'].mean():.3f} (reproduced at or below it), "
        f"EPS_SMALL {need:.3g} (reproduced at or above it), the cut: reproduced "
        + _quantile_flip(cells["small"], cells["max_weight"])
    )


def _within_l(cells: pd.DataFrame) -> str:
    """The halves within each L (split at that L's own lower median of max α_i): the
    round-7 referee's point 3 (the split over all cells is mostly a split by L)."""
    lows, highs = [], []
    for _, at in cells.groupby("L"):
        low, high = _split_shares(at["small"], at["max_weight"])
        lows.append(low)
        highs.append(high)
    return (
        f"within each L ({len(lows)}), split at that L's median: small in "
        f"{min(lows):.1%}–{max(lows):.1%} of the spread halves, "
        f"{np.nanmin(highs):.1%}–{np.nanmax(highs):.1%} of the concentrated ones"
    )


def claim_small_residual(df: pd.DataFrame) -> list[Row]:
    """Per (window, layer, head, L, N) of ``df`` (Alg. 1 and 2's cells) ε = E exact − E derived
    against E exact, to 3 SE of E exact; judged on the cells whose weights are not too
    concentrated where the run stores the row-mean max α_i (``max_weight``), with beside it
    (description): each half's share with and without the 3-SE allowance and median |ε| / E
    exact, the halves within each L, the split by the top-N mass ᾱ_N (``top_mass``), the rank
    correlation of max α_i with |ε| / E exact and the rule's flip points; not computed where
    the run lacks E exact."""
    if not set(_NEED) <= set(df):
        return [judged_row("Jensen", "not computed in this run", rules.not_run)]
    cells = _cells(df)
    if cells.empty:
        return [judged_row("Jensen", "not computed in this run", rules.not_run)]
    q = cells["ratio"].quantile([0.5, 0.9, 1.0])
    negative = float((cells["eps"] < -cells["slack"]).mean())
    measured = (
        f"|ε| / E exact over {len(cells)} (window, layer, head, L, N) at Alg. 1/2's N: median "
        f"{q[0.5]:.3g}, 90th percentile {q[0.9]:.3g}, largest {q[1.0]:.3g}; "
        f"≤ {rules.EPS_SMALL:g} (to 3 SE) in {cells['small'].mean():.1%} of them "
        f"({cells['small_point'].mean():.1%} without the 3-SE allowance, which E exact's "
        "row sampling needs: E exact is the mean over sampled rows per band of L, E derived "
        f"over every row); ε < 0 beyond 3 SE in {negative:.1%}"
    )
    concentration = None
    if "max_weight" not in cells or not bool(cells["max_weight"].notna().any()):
        measured += " (the weights' concentration is not stored)"
    else:
        concentration = cells["max_weight"].tolist()
        low = cells["max_weight"] <= _lower_median(cells["max_weight"])
        rho = spearmanr(cells["max_weight"], cells["ratio"]).statistic
        measured += (
            f"; by max α_i (median {cells['max_weight'].median():.3g}): small in "
            f"{cells['small'][low].mean():.1%} of the cells at or below the median "
            f"({cells['small_point'][low].mean():.1%} without the allowance; median |ε| / E "
            f"exact {cells['ratio'][low].median():.3g}), "
            f"{cells['small'][~low].mean():.1%} above ({cells['small_point'][~low].mean():.1%}; "
            f"{cells['ratio'][~low].median():.3g}); "
            + (f"{_within_l(cells)}; " if "L" in cells else "")
            + f"Spearman ρ(max α_i, |ε| / E exact) = {rho:.2f}"
        )
        if "top_mass" in cells and bool(cells["top_mass"].notna().all()):
            low_n, high_n = _split_shares(cells["small"], cells["top_mass"])
            measured += (
                f"; by the top-N mass ᾱ_N instead (another reading, not judged): {low_n:.1%} "
                f"at or below its median, {high_n:.1%} above"
            )
        measured += "; " + _flip_text(cells)
    return [
        judged_row(
            "Jensen",
            measured,
            rules.small_residual,
            cells["eps"].tolist(),
            cells["expectation_exact"].tolist(),
            cells["expectation_exact_se"].tolist(),
            concentration,
        )
    ]


#: the alternatives column's labels for :func:`residual_alternatives`
BY_TOP_MASS = "split by ᾱ_N"
BY_DISTANCE = "|ε| against d̃"


def residual_alternatives(df: pd.DataFrame) -> dict[str, list[Row]]:
    """Other readings of the residual row (the round-7 referee's point 4), each judged by the
    same rule and none deciding: "not too concentrated" by the top-N mass ᾱ_N in place of
    max α_i, and "small" against d̃ (the statistic E estimates) in place of E exact; empty
    where the run stores no max α_i or lacks E exact."""
    if not set(_NEED) <= set(df) or "max_weight" not in df:
        return {}
    cells = _cells(df)
    if cells.empty or not {"top_mass", "distance"} <= set(cells):
        return {}
    cells = cells.dropna(subset=["top_mass", "distance"])
    eps, se = cells["eps"].tolist(), cells["expectation_exact_se"].tolist()
    by_mass = [cells["expectation_exact"].tolist(), se, cells["top_mass"].tolist()]
    by_d = [cells["distance"].tolist(), se, cells["max_weight"].tolist()]
    return {
        BY_TOP_MASS: [judged_row("Jensen", "", rules.small_residual, eps, *by_mass)],
        BY_DISTANCE: [judged_row("Jensen", "", rules.small_residual, eps, *by_d)],
    }


def _halves(cells_df: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series] | None:
    """(the column's cells, True where a cell's max α_i is at or below the column's lower
    median: the spread half the rule judges), or None where the run stores no max α_i or
    lacks E exact."""
    if not set(_NEED) <= set(cells_df) or "max_weight" not in cells_df:
        return None
    cells = _cells(cells_df)
    if cells.empty:
        return None
    return cells, cells["max_weight"] <= _lower_median(cells["max_weight"])


def residual_summary(cells_df: pd.DataFrame) -> pd.DataFrame:
    """Per (L, N) of one column's cells (:func:`cells_at_n`): the counts and medians the
    residual row reads (the round-7 referee's point 2), so that its halves can be recounted
    from a committed table: cells, the median max α_i and ᾱ_N, the median |ε| / E exact, 3 SE /
    E exact and |ε| / d̃, the cells small with and without the 3-SE allowance, ε < 0 beyond
    3 SE, the cells at or below the column's median max α_i and how many of them are small
    with and without the allowance, and the cells at or below their own L's median max α_i
    and how many of them are small (the round-8 referee's point 3: the row's halves without
    the allowance and within each L recount from these); empty where the run stores no max α_i
    or lacks E exact."""
    halves = _halves(cells_df)
    if halves is None:
        return pd.DataFrame()
    cells, low = halves
    # each L's own lower median (the round-7 referee's point 3; recountable since round 8)
    low_l = cells["max_weight"] <= cells.groupby("L")["max_weight"].transform(_lower_median)
    cells = cells.assign(
        rel_se=cells["slack"] / cells["expectation_exact"],
        vs_d=cells["eps"].abs() / cells["distance"],
        negative=cells["eps"] < -cells["slack"],
        spread=low,
        spread_small=low & cells["small"],
        spread_small_point=low & cells["small_point"],
        spread_l=low_l,
        spread_l_small=low_l & cells["small"],
    )
    out = cells.groupby(["L", "N"]).agg(
        cells=("eps", "size"),
        median_max_weight=("max_weight", "median"),
        median_top_mass=("top_mass", "median"),
        median_eps_over_e=("ratio", "median"),
        median_3se_over_e=("rel_se", "median"),
        median_eps_over_d=("vs_d", "median"),
        small=("small", "sum"),
        small_without_se=("small_point", "sum"),
        negative_beyond_3se=("negative", "sum"),
        at_or_below_median=("spread", "sum"),
        small_at_or_below=("spread_small", "sum"),
        small_without_se_at_or_below=("spread_small_point", "sum"),
        at_or_below_L_median=("spread_l", "sum"),
        small_at_or_below_L_median=("spread_l_small", "sum"),
    )
    return out.reset_index()


#: the quantiles :func:`residual_quantiles` gives, 0 to 1 in steps of 0.01
QUANTILES = np.round(np.linspace(0.0, 1.0, 101), 2)


def residual_quantiles(cells_df: pd.DataFrame) -> pd.DataFrame:
    """Per half of one column's cells (``spread``: at or below the column's median max α_i,
    the cells the rule judges; ``concentrated``: above it; ``all``) and per quantile q in
    :data:`QUANTILES`: the q-quantile of |ε| / E exact and of (|ε| − 3 SE) / E exact, the
    EPS_SMALL a cell needs to count as small (each the cells' value at or above q, as the
    row's flip point takes it). The round-8 referee's point 3: each half's median |ε| / E
    exact is its q = 0.5 row, the share small at any EPS_SMALL the share of the second column
    at or below it, and the row's EPS_SMALL flip point the spread half's q = WITHIN_SE row.
    Empty where the run stores no max α_i or lacks E exact."""
    halves = _halves(cells_df)
    if halves is None:
        return pd.DataFrame()
    cells, low = halves
    need = (cells["eps"].abs() - cells["slack"]) / cells["expectation_exact"]
    frames = []
    for half, keep in (("spread", low), ("concentrated", ~low), ("all", low | ~low)):
        if not keep.any():
            continue
        frames.append(
            pd.DataFrame(
                {
                    "half": half,
                    "cells": int(keep.sum()),
                    "q": QUANTILES,
                    "eps_over_e": np.quantile(cells["ratio"][keep], QUANTILES, method="higher"),
                    "eps_small_needed": np.quantile(need[keep], QUANTILES, method="higher"),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
