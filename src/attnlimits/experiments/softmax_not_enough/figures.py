"""Figures of a *Softmax is not Enough* run: accuracy by set size (Figs. 2/7), the attention
profile, logit spreads in training (Prop. 3.1), entropy against temperature (Fig. 5), the App. F
refit (Fig. 6) beside its binned data, the ablation (training length included) and the
cross-normaliser accuracies. :func:`figures` draws them from the tables. Error bars are the
95 % intervals over seeds and test sets where the tables have them, else the SE over seeds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from attnlimits.experiments.softmax_not_enough.fits import apply_rule, poly_beta
from attnlimits.normalizers.adaptive import ENTROPY_THRESHOLD

__all__ = [
    "figures",
    "plot_ablation",
    "plot_accuracy",
    "plot_attention_profile",
    "plot_entropy_vs_temperature",
    "plot_fit",
    "plot_logit_spread",
    "plot_steps",
]


def _yerr(grp: pd.DataFrame) -> np.ndarray:
    """``[2, n]`` error bars: the interval over seeds and test sets where known, else ± SE."""
    se = grp["se"].fillna(0.0).to_numpy()
    if "ci_low" not in grp:
        return np.stack([se, se])
    low = (grp["mean"] - grp["ci_low"]).to_numpy()
    high = (grp["ci_high"] - grp["mean"]).to_numpy()
    known = np.isfinite(low) & np.isfinite(high)
    return np.stack([np.where(known, low, se), np.where(known, high, se)])


def plot_accuracy(summary: pd.DataFrame) -> Figure:
    """Accuracy vs set size (log x), one line per (norm, mode): one colour per normaliser,
    solid = trained with it, dashed = applied at inference only; bars = 95 % interval over
    seeds and test sets (SE over seeds where the table has no interval)."""
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
            yerr=_yerr(grp),
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
        ylabel="accuracy (95 % interval, seeds and sets)",
        ylim=(0, 1),
        title="Max retrieval: accuracy vs set size",
    )
    ax.axhline(0.1, color="0.7", lw=0.8, ls=":")  # chance
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.subplots_adjust(right=0.68)
    return fig


def plot_ablation(summary: pd.DataFrame) -> Figure:
    """Ablation: accuracy vs set size, one panel per (schedule, regulariser); colour = model
    variant, solid = softmax, dashed = adaptive (inference only); bars = 95 % intervals."""
    panels = summary[["schedule", "regularizer"]].drop_duplicates().to_records(index=False)
    fig = Figure(figsize=(4.2 * len(panels), 3.8))
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    colours = {"listing": "C0", "ours": "C1"}
    for ax, (schedule, reg) in zip(axes, panels, strict=True):
        sub = summary[(summary["schedule"] == schedule) & (summary["regularizer"] == reg)]
        for (variant, norm), grp in sub.groupby(["variant", "norm"], sort=False):
            grp = grp.sort_values("size")
            ax.errorbar(
                grp["size"],
                grp["mean"],
                yerr=_yerr(grp),
                capsize=2,
                marker="o",
                ms=3,
                color=colours.get(str(variant), "C2"),
                ls="-" if norm == "softmax" else "--",
                label=f"{variant}, {norm}",
            )
        ax.axhline(0.1, color="0.7", lw=0.8, ls=":")
        ax.set(xscale="log", xlabel="set size n", title=f"{schedule} LR, {reg} L2", ylim=(0, 1))
    axes[0].set_ylabel("accuracy (95 % interval)")
    axes[0].legend(fontsize=7)
    fig.suptitle("Ablation: schedule × regulariser × model variant")
    fig.tight_layout()
    return fig


def plot_steps(log: pd.DataFrame, summary: pd.DataFrame) -> Figure:
    """Training length: the training loss against the step (mean over seeds, smoothed over
    5 % of the run) per length (left), and accuracy against set size per length, softmax
    solid, adaptive dashed (right)."""
    fig = Figure(figsize=(11, 4))
    ax_l, ax_a = fig.subplots(1, 2)
    for i, (steps, grp) in enumerate(log.groupby("steps", sort=True)):
        curve = grp.groupby("step")["loss"].mean()
        window = max(1, len(curve) // 20)
        ax_l.plot(
            curve.index,
            curve.rolling(window, min_periods=1).mean(),
            color=f"C{i}",
            label=f"{steps:,} steps",
        )
        for norm, ls in (("softmax", "-"), ("adaptive", "--")):
            g = summary[(summary["steps"] == steps) & (summary["norm"] == norm)]
            g = g.sort_values("size")
            ax_a.errorbar(
                g["size"],
                g["mean"],
                yerr=_yerr(g),
                capsize=2,
                marker="o",
                ms=3,
                ls=ls,
                color=f"C{i}",
                label=f"{steps:,}, {norm}",
            )
    ax_l.set(
        xlabel="training step",
        ylabel="training loss (mean over seeds)",
        yscale="log",
        title="Training loss by run length",
    )
    ax_l.legend(fontsize=8)
    ax_a.axhline(0.1, color="0.7", lw=0.8, ls=":")
    ax_a.set(
        xscale="log",
        xlabel="set size n",
        ylabel="accuracy (95 % interval)",
        ylim=(0, 1),
        title="Accuracy by run length",
    )
    ax_a.legend(fontsize=7)
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
    points: pd.DataFrame,
    fits: pd.DataFrame,
    threshold: float = ENTROPY_THRESHOLD,
    bins: pd.DataFrame | None = None,
) -> Figure:
    """Fig. 6 analogue (App. F): per kept input, the grid's best temperature θ* (left) and
    β* = 1/θ* (right) against the entropy H of softmax(e); inputs whose optimum sits on the
    grid's edge are drawn as crosses; black: per-bin median and quartiles of ``bins``. Each
    polynomial on the grid's own lower bound (published and refits) is drawn raw (dashed) and
    under the listing's rule (solid), as θ = 1/β(H) on the left, each fit with its own
    markers (so that one fit never hides another); refits with θ* raised to the larger lower
    bound are dotted (raw)."""
    fig = Figure(figsize=(11, 4.2))
    ax_t, ax_b = fig.subplots(1, 2)
    edge = points["edge"].astype(str) != ""
    for ax, col in ((ax_t, "theta_star"), (ax_b, "beta_star")):
        ax.scatter(
            points.loc[~edge, "entropy"],
            points.loc[~edge, col],
            s=4,
            alpha=0.3,
            color="0.6",
            label=f"interior optimum ({int((~edge).sum())})",
        )
        ax.scatter(
            points.loc[edge, "entropy"],
            points.loc[edge, col],
            s=10,
            marker="x",
            lw=0.6,
            alpha=0.6,
            color="C3",
            label=f"optimum on the grid's edge ({int(edge.sum())})",
        )
    if bins is not None and len(bins):
        med = bins["beta_median"].to_numpy()
        for ax, f in ((ax_t, lambda b: 1.0 / b), (ax_b, lambda b: b)):
            mid, lo, hi = f(med), f(bins["beta_q25"].to_numpy()), f(bins["beta_q75"].to_numpy())
            ax.errorbar(
                bins["entropy_median"],
                mid,
                yerr=[np.abs(mid - lo), np.abs(hi - mid)],
                fmt="s",
                color="k",
                ms=4,
                capsize=2,
                zorder=5,
                label="bin median, quartiles",
            )
    H = np.linspace(0.0, max(float(points["entropy"].max()), 1.0) if len(points) else 6.0, 300)
    if "theta_min" not in fits:  # a table of releases before the θ_min check
        fits = fits.assign(theta_min=0.0, mae_beta=np.nan)
    own = fits["theta_min"] == fits["theta_min"].min()
    colours = {"paper": "C0", "refit": "C1", "refit_inverse": "C2", "refit_median": "C4"}
    for i, row in fits.iterrows():
        c, inv = np.asarray(row["coeffs"], float), bool(row["inverse"])
        color = colours.get(str(row["fit"]), "C5")
        with np.errstate(divide="ignore", invalid="ignore"):
            raw = poly_beta(H, c, inverse=inv)
            raw = np.where(raw > 0, raw, np.nan)  # β ≤ 0 is no temperature
            rule = apply_rule(H, c, threshold, inverse=inv)
            for ax, f in ((ax_t, lambda b: 1.0 / b), (ax_b, lambda b: b)):
                if not own[i]:
                    ax.plot(
                        H,
                        f(raw),
                        ":",
                        color=color,
                        lw=1,
                        label=f"{row['fit']}, θ* ≥ {row['theta_min']:g}",
                    )
                    continue
                mark = {
                    "marker": "osD^v"[int(i) % 5],
                    "ms": 4,
                    "mfc": "none",
                    "markevery": (7 * int(i) % 40, 40),
                }  # equal curves stay told apart
                ax.plot(H, f(raw), "--", color=color, lw=1, **mark)
                ax.plot(
                    H,
                    f(rule),
                    color=color,
                    **mark,
                    label=f"{row['fit']} (MAE in β {row['mae_beta']:.2f})",
                )
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
    ax_b.legend(fontsize=6)
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
        bins = tables.get("temperature_fit_bins")
        figs["temperature_fit"] = plot_fit(tables["temperature_fit_points"], fits, threshold, bins)
    if "ablation_summary" in tables:
        abl, t = tables["ablation_summary"], meta["benchmark"]["train"]
        abl = abl if "steps" in abl else abl.assign(steps=t["steps"])  # earlier releases
        figs["ablation"] = plot_ablation(abl[abl["steps"] == t["steps"]])
        own = (abl["schedule"] == t["schedule"]) & (abl["regularizer"] == t["regularizer"])
        own &= abl["variant"] == meta["benchmark"]["model"]["variant"]
        if "ablation_training_log" in tables:
            figs["ablation_steps"] = plot_steps(tables["ablation_training_log"], abl[own])
    if "cross_summary" in tables:
        figs["cross_accuracy"] = plot_accuracy(tables["cross_summary"])
    return figs
