"""Small summaries of Algorithms 2, 4 and 5: the statistics paper A's rules read, per N or T.

The claims (:mod:`.findings`) judge per-head tables of a run that are too large to commit; these
summaries are what the rules of (ii), (iv) and (v) actually compare to their thresholds, small
enough to commit under ``docs/data/limitations/`` (:mod:`.doc` writes them), so that a reader
can recompute those verdicts from committed numbers (``tests/test_limitations_summaries.py`` does,
against each row's ``statistic``). Each aggregates as the findings do: per-head means over
windows first, then the mean, median or maximum over heads.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnlimits.experiments.limitations.findings import E_COLS, e_cols

__all__ = ["alg2_summary", "alg4_summary", "alg5_summary", "grid_summary", "weights_summary"]


def _per_head(df: pd.DataFrame, by: str, cols: list[str]) -> pd.DataFrame:
    return df.groupby([by, "layer", "head"])[cols].mean().reset_index()


def alg2_summary(alg2: pd.DataFrame) -> pd.DataFrame:
    """Per N at L_max (Fig. 2b): the mean over heads of d̃, the Thm 1.1 bound and each form of
    E, and E exact's standard error of that mean (the one (ii.c)'s interval uses)."""
    forms = e_cols(alg2)
    cols = ["distance", "bound", *forms]
    out = _per_head(alg2, "N", cols).groupby("N")[cols].mean()
    out = out.rename(columns={c: f"E {E_COLS[c]}" for c in forms} | {"distance": "d̃"})
    if "expectation_exact_se" in alg2:
        se = alg2.groupby("N")["expectation_exact_se"]
        out["E exact SE"] = se.apply(lambda s: float(np.sqrt((s**2).sum()) / len(s)))
    return out.reset_index()


def grid_summary(grid: pd.DataFrame) -> pd.DataFrame:
    """Per N of the whole grid at L_max (Alg. 3's extension to about 0.9·L, the table
    ``distance_grid``): L, the mean over heads of d̃ and of each form of E, and d̃ over its peak
    over N, what (ii.d) and (ii.e) read (the round-5 referee's point 5: the row's inputs were in
    no committed table)."""
    at = grid[grid["L"] == grid["L"].max()]
    forms = e_cols(at)
    cols = ["distance", *forms]
    out = _per_head(at, "N", cols).groupby("N")[cols].mean()
    out = out.rename(columns={c: f"E {E_COLS[c]}" for c in forms} | {"distance": "d̃"})
    out.insert(0, "L", int(at["L"].max()) if len(at) else 0)
    out["d̃ / peak"] = out["d̃"] / out["d̃"].max()
    return out.reset_index()


def weights_summary(alg1: pd.DataFrame) -> pd.DataFrame:
    """Per L at Alg. 1's N (one x source: the weights do not depend on it): the median and the
    maximum over heads of the row-mean max α_i and of the top-N mass ᾱ_N, what Lemma 1's check
    row and finding (i)'s note read; empty for a run that stores neither (before 2026-11-28)."""
    cols = ["max_weight", "top_mass"]
    if not set(cols) <= set(alg1) or not bool(alg1["max_weight"].notna().any()):
        return pd.DataFrame()
    per = _per_head(alg1, "L", cols).groupby("L")[cols]
    out = per.median().add_prefix("median ").join(per.max().add_prefix("max "))
    out.insert(0, "N", int(alg1["N"].iloc[0]))
    return out.reset_index()


def alg4_summary(alg4: pd.DataFrame) -> pd.DataFrame:
    """Per N (Fig. 3): the median and the maximum over heads of N_s/N; over the heads where
    Assumption 2 holds (δ > 0), the maximum of N_s/N, the maximum of the upper bound and the
    median of N_s/N − the lower bound."""
    ph = _per_head(alg4, "N", ["ratio", "lower", "upper"])
    if "assumption2" in alg4:
        ok = alg4.groupby(["N", "layer", "head"])["assumption2"].all().to_numpy()
    else:
        ok = np.ones(len(ph), dtype=bool)
    out = ph.groupby("N")["ratio"].agg(median="median", max="max")
    held = ph[ok].assign(gap=ph["ratio"] - ph["lower"])
    out["max (δ > 0)"] = held.groupby("N")["ratio"].max()
    out["max upper (δ > 0)"] = held.groupby("N")["upper"].max()
    out["median − lower (δ > 0)"] = held.groupby("N")["gap"].median()
    return out.reset_index().rename(columns={"median": "median N_s/N", "max": "max N_s/N"})


def alg5_summary(alg5: pd.DataFrame) -> pd.DataFrame:
    """Per ε and T (Fig. 4): the maximum over heads of g(T, ε) (the row mean, Alg. 5's) and of
    its maximum over rows, and the maximum over heads of the exact ‖J‖₂ (the row mean)."""
    g = alg5.groupby(["eps", "T", "layer", "head"])["sensitivity"].mean()
    out = g.groupby(["eps", "T"]).max().rename("g").to_frame()
    if "sensitivity_row_max" in alg5:
        g_max = alg5.groupby(["eps", "T", "layer", "head"])["sensitivity_row_max"].max()
        out["g (max over rows)"] = g_max.groupby(["eps", "T"]).max()
    jac = alg5.groupby(["T", "layer", "head"])["jacobian_norm"].mean().groupby("T").max()
    out["exact ‖J‖₂"] = out.index.get_level_values("T").map(jac)
    return out.reset_index().rename(columns={"eps": "ε"})
