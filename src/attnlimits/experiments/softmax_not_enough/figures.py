"""Figures of a *Softmax is not Enough* run: accuracy by set size (Figs. 2/7), the attention
profile, logit spreads in training (Prop. 3.1), entropy against temperature (Fig. 5), the App. F
refit (Fig. 6) and the cross-normaliser accuracies. :func:`figures` draws them from the tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from attnlimits.experiments.softmax_not_enough.temperature_fit import apply_rule, poly_beta
from attnlimits.normalizers.adaptive import ENTROPY_THRESHOLD

__all__ = [
    "figures",
    "plot_ablation",
    "plot_accuracy",
    "plot_attention_profile",
    "plot_entropy_vs_temperature",
    "plot_fit",
    "plot_logit_spread",
]


def plot_accuracy(summary: pd.DataFrame) -> Figure:
    """Accuracy vs set size (log x), one line per (norm, mode): one colour per normaliser,
    solid = trained with it, dashed = applied at inference only; bars = SE over seeds."""
    norms = list(dict.fromkeys(summary["norm"]))
    cmap = colormaps["tab10" if len(norms) <= 10 else "tab20"]
    colours = {n: cmap(i % cmap.N) for i, n in enumerate(norms)}
    fig = Figure(figsize=(7.5, 4.2))
    ax = fig.add_subplot()
    for (norm, mode), grp in summary.groupby(["norm", "mode"], sort=False):
        grp = grp.sort_values("size")
        ax.errorbar(
            grp["size"],
            grp["mean"],
            yerr=grp["se"].fillna(0.0),
            capsize=2,
            color=colours[norm],
            ls="-" if mode == "train" else "--",
            marker="o" if mode == "train" else "s",
            ms=3,
            label=f"{norm}" + ("" if mode == "train" else f" ({mode})"),
        )
    ax.set(
        xscale="log",
        xlabel="set size n",
        ylabel="accuracy (mean ± SE over seeds)",
        ylim=(0, 1),
        title="Max retrieval: accuracy vs set size",
    )
    ax.axhline(0.1, color="0.7", lw=0.8, ls=":")  # chance
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.subplots_adjust(right=0.68)
    return fig


def plot_ablation(summary: pd.DataFrame) -> Figure:
    """Ablation: accuracy vs set size, one panel per (schedule, regulariser); colour = model
    variant, solid = softmax, dashed = adaptive (inference only); bars = SE over seeds."""
    panels = summary[["schedule", "regularizer"]].drop_duplicates().to_records(index=False)
    fig = Figure(figsize=(4.2 * len(panels), 3.8))
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    colours = {"listing": "C0", "ours": "C1"}
    for ax, (schedule, reg) in zip(axes, panels, strict=True):
        sub = summary[(summary["schedule"] == schedule) & (summary["regularizer"] == reg)]
        for (variant, norm), grp in sub.groupby(["variant", "norm"], sort=False):
            grp = grp.sort_values("size")
            ax.errorbar(
                grp["size"], grp["mean"], yerr=grp["se"].fillna(0.0), capsize=2, marker="o",
                ms=3, color=colours.get(str(variant), "C2"),
                ls="-" if norm == "softmax" else "--", label=f"{variant}, {norm}",
            )  # fmt: skip
        ax.axhline(0.1, color="0.7", lw=0.8, ls=":")
        ax.set(xscale="log", xlabel="set size n", title=f"{schedule} LR, {reg} L2", ylim=(0, 1))
    axes[0].set_ylabel("accuracy (mean ± SE over seeds)")
    axes[0].legend(fontsize=7)
    fig.suptitle("Ablation: schedule × regulariser × model variant")
    fig.tight_layout()
    return fig


def plot_attention_profile(profile: pd.DataFrame, top: int = 32) -> Figure:
    """Fig. 2/7 analogue: mean attention on items ranked by priority, per size, per normaliser."""
    sizes = sorted(profile["size"].unique())
    fig = Figure(figsize=(3 * len(sizes), 3))
    axes = fig.subplots(1, len(sizes), sharey=True, squeeze=False)
    for ax, n in zip(axes[0], sizes, strict=True):
        for norm, grp in profile[(profile["size"] == n) & (profile["rank"] < top)].groupby(
            "norm", sort=False
        ):
            ax.plot(grp["rank"] + 1, grp["attention"], marker=".", label=str(norm))
        ax.set(
            title=f"n = {n}", xscale="log", yscale="log", xlabel="priority rank", ylim=(1e-6, 1.5)
        )
    axes[0, 0].set_ylabel("mean attention")
    axes[0, 0].legend(fontsize=8)
    return fig


def plot_logit_spread(log: pd.DataFrame) -> Figure:
    """Fig. 9 analogue: largest logit spread during training and Prop. 3.1's bound."""
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    for i, (_, grp) in enumerate(log.groupby("seed")):
        ax.plot(
            grp["step"],
            grp["spread"],
            color="C0",
            alpha=0.6,
            label="logit spread" if i == 0 else None,
        )
        ax.plot(
            grp["step"],
            grp["bound"],
            color="C3",
            alpha=0.6,
            ls="--",
            label="Prop. 3.1 bound" if i == 0 else None,
        )
    ax.set(
        yscale="log",
        xlabel="training step",
        ylabel="max − min scaled logit",
        title="Logit spread during training (one line per seed)",
    )
    ax.legend()
    return fig


def plot_entropy_vs_temperature(df: pd.DataFrame, n: int) -> Figure:
    fig = Figure(figsize=(5.5, 4))
    ax = fig.add_subplot()
    for spread, sub in df.groupby("spread"):
        ax.plot(sub["T"], sub["entropy"], label=f"spread {spread:g}")
    ax.axhline(np.log(n), ls="--", color="gray", label=f"log n (n = {n})")
    ax.set_xscale("log")
    ax.set_xlabel("temperature θ")
    ax.set_ylabel("entropy H (nats)")
    ax.set_title("Fig. 5 analogue: entropy rises monotonically with θ (Prop. 3.2)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_fit(
    points: pd.DataFrame, fits: pd.DataFrame, threshold: float = ENTROPY_THRESHOLD
) -> Figure:
    """Fig. 6 analogue (App. F): per kept input, the grid's best temperature θ* (left) and
    β* = 1/θ* (right) against the entropy H of softmax(e); inputs whose optimum sits on the
    grid's edge are drawn as crosses. Each polynomial (published and refits) is drawn raw
    (dashed) and under the listing's rule (solid), as θ = 1/β(H) on the left."""
    fig = Figure(figsize=(11, 4.2))
    ax_t, ax_b = fig.subplots(1, 2)
    edge = points["edge"].astype(str) != ""
    for ax, col in ((ax_t, "theta_star"), (ax_b, "beta_star")):
        ax.scatter(
            points.loc[~edge, "entropy"], points.loc[~edge, col], s=4, alpha=0.3, color="0.4",
            label=f"interior optimum ({int((~edge).sum())})",
        )  # fmt: skip
        ax.scatter(
            points.loc[edge, "entropy"], points.loc[edge, col], s=10, marker="x", lw=0.6,
            alpha=0.6, color="C3", label=f"optimum on the grid's edge ({int(edge.sum())})",
        )  # fmt: skip
    H = np.linspace(0.0, max(float(points["entropy"].max()), 1.0) if len(points) else 6.0, 300)
    for (_, row), color in zip(fits.iterrows(), ("C0", "C1", "C2"), strict=False):
        c, inv = np.asarray(row["coeffs"], float), bool(row["inverse"])
        with np.errstate(divide="ignore", invalid="ignore"):
            raw = poly_beta(H, c, inverse=inv)
            raw = np.where(raw > 0, raw, np.nan)  # β ≤ 0 is no temperature
            rule = apply_rule(H, c, threshold, inverse=inv)
            label = f"{row['fit']} (RMSE in β {row['rmse_beta']:.2f})"
            for ax, f in ((ax_t, lambda b: 1.0 / b), (ax_b, lambda b: b)):
                ax.plot(H, f(raw), "--", color=color, lw=1)
                ax.plot(H, f(rule), color=color, label=label)
    for ax, col in ((ax_t, "theta_star"), (ax_b, "beta_star")):
        ax.axvline(threshold, color="0.7", lw=0.8)
        ax.set(xlabel="entropy H of softmax(e) (nats)", yscale="log")
        if len(points):  # the points' range: a raw polynomial may run off to 0 or ∞
            ax.set_ylim(float(points[col].min()) / 2, float(points[col].max()) * 2)
    ax_t.set(
        ylabel="best temperature θ* (grid argmax)",
        title="Best temperature per input; curves θ = 1/β(H)",
    )
    ax_b.set(
        ylabel="inverse temperature β* = 1/θ*",
        title="β*(H); polynomials raw (dashed) and under the rule (solid)",
    )
    ax_b.legend(fontsize=7)
    fig.tight_layout()
    return fig


def figures(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> dict[str, Figure]:
    """Every figure whose tables the run has."""
    figs = {
        "accuracy": plot_accuracy(tables["summary"]),
        "attention_profile": plot_attention_profile(tables["attention_profile"]),
        "logit_spread": plot_logit_spread(tables["training_log"]),
        "entropy_vs_temperature": plot_entropy_vs_temperature(tables["entropy_vs_temperature"], 64),
    }
    if "temperature_fit_points" in tables:
        fits = tables["temperature_fit_coeffs"]
        threshold = meta.get("temperature_fit", {}).get("threshold", ENTROPY_THRESHOLD)
        figs["temperature_fit"] = plot_fit(tables["temperature_fit_points"], fits, threshold)
    if "ablation_summary" in tables:
        figs["ablation"] = plot_ablation(tables["ablation_summary"])
    if "cross_summary" in tables:
        figs["cross_accuracy"] = plot_accuracy(tables["cross_summary"])
    return figs
