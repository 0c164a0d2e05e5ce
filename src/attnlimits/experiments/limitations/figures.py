"""Figures 2a–c, 3 and 4 of *Limitations of Normalization in Attention* (Mudarisov et al., 2025).

Each function takes the tidy table of its algorithm (see :mod:`.compute`) and returns a
matplotlib Figure with the paper's axes and legend; nothing is computed here beyond the
aggregation over heads that the figure shows. :func:`figures` draws all five from the tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch
from matplotlib.figure import Figure

from attnlimits import theory

__all__ = ["fig2a", "fig2b", "fig2c", "fig3", "fig4", "figures"]

_SERIES = (
    ("distance", "true distance $\\tilde d$ (Eq. 7)", "C0", "-"),
    ("expectation", "expectation $E$ (Thm 1.2)", "C1", "--"),
    ("bound", "upper bound (Thm 1.1)", "C3", ":"),
)


def _head_means(df: pd.DataFrame, by: str) -> pd.DataFrame:
    """Per-head values (averaged over windows), then mean and 10–90% band over heads."""
    per_head = df.groupby([by, "layer", "head"])[[s[0] for s in _SERIES]].mean().reset_index()
    grouped = per_head.groupby(by)
    return pd.concat(
        {
            "mean": grouped.mean(numeric_only=True),
            "lo": grouped.quantile(0.1, numeric_only=True),
            "hi": grouped.quantile(0.9, numeric_only=True),
        },
        axis=1,
    )


def _distance_figure(df: pd.DataFrame, by: str, xlabel: str, title: str) -> Figure:
    stats = _head_means(df, by)
    fig = Figure(figsize=(5.5, 4))
    ax = fig.add_subplot()
    xs = stats.index.to_numpy()
    for col, label, color, style in _SERIES:
        ax.plot(xs, stats[("mean", col)], style, color=color, marker="o", ms=3, label=label)
        ax.fill_between(xs, stats[("lo", col)], stats[("hi", col)], color=color, alpha=0.15)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("distance (mean over rows; heads: mean, 10–90% band)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def fig2a(alg1: pd.DataFrame) -> Figure:
    """Fig. 2a: distance, expectation and bound against sequence length L at fixed N."""
    n = int(alg1["N"].iloc[0])
    return _distance_figure(alg1, "L", "sequence length L", f"Fig. 2a: distances vs L (N = {n})")


def fig2b(alg2: pd.DataFrame) -> Figure:
    """Fig. 2b: distance, expectation and bound against the number N of selected tokens."""
    length = int(alg2["L"].iloc[0])
    return _distance_figure(
        alg2, "N", "selected tokens N", f"Fig. 2b: distances vs N (L = {length})"
    )


def fig2c(alg3: pd.DataFrame) -> Figure:
    """Fig. 2c: critical N against L (one line per form of E), with the paper's 0.06·L line."""
    fig = Figure(figsize=(5.5, 4))
    ax = fig.add_subplot()
    for i, (form, sub) in enumerate(alg3.groupby("e_form")):
        sub = sub.sort_values("L")
        found = sub[sub["critical_n"] > 0]
        ax.plot(found["L"], found["critical_n"], "o-", color=f"C{i}", label=f"critical N, E {form}")
        missing = sub[sub["critical_n"] <= 0]
        if len(missing):
            ax.plot(
                missing["L"],
                np.ones(len(missing)),
                "x",
                color=f"C{i}",
                label=f"none found (E {form}), drawn at 1",
            )
    ls = np.asarray(sorted(alg3["L"].unique()), dtype=float)
    ax.plot(ls, 0.06 * ls, "--", color="gray", label="0.06·L (paper)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length L")
    ax.set_ylabel("critical N")
    alpha = alg3["alpha"].iloc[0]
    ax.set_title(f"Fig. 2c: critical N vs L (KS, α = {alpha})")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def fig3(alg4: pd.DataFrame) -> Figure:
    """Fig. 3: box plots over heads of N_s/N per N, with the Theorem 2 bounds."""
    per_head = alg4.groupby(["N", "layer", "head"])[["ratio", "lower", "upper"]].mean()
    per_head = per_head.reset_index()
    ns = sorted(per_head["N"].unique())
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    data = [per_head.loc[per_head["N"] == n, "ratio"].to_numpy() for n in ns]
    pos = np.arange(len(ns))
    ax.boxplot(data, positions=pos, widths=0.5, showfliers=False)
    upper = per_head.groupby("N")["upper"].max().reindex(ns)
    lower = per_head.groupby("N")["lower"].mean().reindex(ns)
    ax.plot(
        pos, upper.clip(upper=1.05), "v-", color="C3", label="upper bound (Eq. 11), max over heads"
    )
    ax.plot(pos, lower.clip(lower=-0.05), "^-", color="C2", label="lower bound (Eq. 11), mean")
    ax.set_xticks(pos, [str(n) for n in ns])
    ax.set_xlabel("selected tokens N")
    ax.set_ylabel("$N_s / N$ (heads)")
    ax.set_ylim(-0.05, 1.1)
    ax.set_title("Fig. 3: geometric separability")
    ax.legend(fontsize=8, loc="lower left")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def fig4(alg5: pd.DataFrame) -> Figure:
    """Fig. 4: max over heads of the mean sensitivity against T, with both Jacobian bounds."""
    fig = Figure(figsize=(5.5, 4))
    ax = fig.add_subplot()
    per_head = alg5.groupby(["eps", "T", "layer", "head"])["sensitivity"].mean().reset_index()
    for i, (eps, sub) in enumerate(per_head.groupby("eps")):
        top = sub.groupby("T")["sensitivity"].max()
        ax.plot(top.index, top.to_numpy(), "o-", ms=3, color=f"C{i}", label=f"ε = {eps:g}")
    if "jacobian_norm" in alg5:
        jac = alg5.groupby(["T", "layer", "head"])["jacobian_norm"].mean().groupby("T").max()
        ax.plot(jac.index, jac.to_numpy(), "k.", label="exact ‖J‖₂, max over heads")
    ts = np.logspace(np.log10(alg5["T"].min()), np.log10(alg5["T"].max()), 200)
    t = torch.tensor(ts)
    printed = theory.corollary3_bound_as_printed(t)
    corrected = theory.softmax_jacobian_norm_bound(t)
    ax.plot(ts, np.asarray(printed), "--", color="gray", label="min{1/(4T), √2} (paper)")
    ax.plot(ts, np.asarray(corrected), ":", color="C3", label="1/(2T) (corrected)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("temperature T")
    ax.set_ylabel("sensitivity ‖Δα‖ / ε (max over heads)")
    ax.set_title("Fig. 4: gradient sensitivity")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def figures(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> dict[str, Figure]:
    """Figs. 2a–c, 3, 4 from a run's tables; x_i is the run's first x source."""
    head = meta["params"]["x_sources"][0]

    def pick(name: str) -> pd.DataFrame:
        df = tables[name]
        return df[df["x_source"] == head]

    return {
        "fig2a": fig2a(pick("alg1")),
        "fig2b": fig2b(pick("alg2")),
        "fig2c": fig2c(pick("alg3")),
        "fig3": fig3(pick("alg4")),
        "fig4": fig4(tables["alg5"]),
    }
