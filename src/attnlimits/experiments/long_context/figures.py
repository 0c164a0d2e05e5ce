"""Figures of a long-context (max-finding) run: accuracy, entropy per mode and n, spreads.

Each figure function takes one of the run's tables and returns a matplotlib Figure;
:func:`figures` draws them all from the tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

__all__ = ["fig_accuracy", "fig_head_entropy", "fig_mean_entropy", "fig_spread", "figures"]

_STYLE = {"softmax": ("C0", "o"), "adaptive": ("C3", "s")}


def fig_accuracy(acc: pd.DataFrame) -> Figure:
    """Exact-match accuracy vs n (log x), one line per mode, ±1 standard error; chance = 1/n."""
    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.add_subplot()
    for mode, g in acc.groupby("mode"):
        color, marker = _STYLE.get(str(mode), ("C2", "^"))
        ax.errorbar(
            g["n"],
            g["accuracy"],
            yerr=g["se"],
            color=color,
            marker=marker,
            capsize=3,
            label=str(mode),
        )
    ns = np.sort(acc["n"].unique())
    ax.plot(ns, 1.0 / ns, "k:", label="chance (1/n)")
    ax.set_xscale("log", base=2)
    ax.set(xlabel="n numbers in the prompt", ylabel="exact-match accuracy", ylim=(-0.02, 1.02))
    ax.set_title("Max-finding accuracy, greedy decoding")
    ax.legend()
    fig.tight_layout()
    return fig


def fig_mean_entropy(mean: pd.DataFrame) -> Figure:
    """Mean head entropy at the answer position vs n, with the ceiling log(kept keys)."""
    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.add_subplot()
    for mode, g in mean.groupby("mode"):
        color, marker = _STYLE.get(str(mode), ("C2", "^"))
        ax.plot(g["n"], g["entropy"], color=color, marker=marker, label=f"{mode}: applied")
        if mode == "adaptive":
            ax.plot(
                g["n"],
                g["entropy_base"],
                color=color,
                ls="--",
                alpha=0.6,
                label="adaptive: before β",
            )
    ceiling = mean.groupby("n")["log_keys"].mean()
    ax.plot(ceiling.index, ceiling.to_numpy(), "k:", label="log(prompt tokens)")
    ax.set_xscale("log", base=2)
    ax.set(xlabel="n numbers in the prompt", ylabel="mean head entropy (nats)")
    ax.set_title("Attention entropy of the answer position")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def fig_head_entropy(head: pd.DataFrame) -> Figure:
    """Every head's entropy vs n (one thin line per head, coloured by layer), one panel per mode."""
    modes = list(dict.fromkeys(head["mode"]))
    fig = Figure(figsize=(5 * len(modes), 3.8))
    axes = fig.subplots(1, len(modes), squeeze=False, sharey=True)
    n_layers = int(head["layer"].max()) + 1
    cmap = matplotlib.colormaps["viridis"]
    for ax, mode in zip(axes[0], modes, strict=True):
        g = head[head["mode"] == mode]
        for (layer, _), h in g.groupby(["layer", "head"]):
            ax.plot(
                h["n"],
                h["entropy"],
                color=cmap(int(layer) / max(n_layers - 1, 1)),
                lw=0.6,
                alpha=0.6,
            )
        ceiling = g.groupby("n")["log_keys"].mean()
        ax.plot(ceiling.index, ceiling.to_numpy(), "k:", lw=2, label="log(prompt tokens)")
        ax.set_xscale("log", base=2)
        ax.set(xlabel="n numbers in the prompt", title=f"{mode}: per-head entropy")
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("entropy (nats)")
    sm = ScalarMappable(cmap=cmap, norm=Normalize(0, n_layers - 1))
    fig.colorbar(sm, ax=axes[0].tolist(), label="layer")
    return fig


def fig_spread(spread: pd.DataFrame) -> Figure:
    """Histogram of per-head logit spreads on War and Peace (paper B's Gemma values, which its
    Fig. 3 analogue would sit beside, are lost in our copy of the paper)."""
    per_head = spread.groupby(["layer", "head"])[["spread_max", "spread_mean"]].mean()
    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.add_subplot()
    top = float(np.nanmax(per_head.to_numpy()))
    bins = np.linspace(0, max(top, 15.0) * 1.02, 40).tolist()
    ax.hist(per_head["spread_max"], bins=bins, alpha=0.6, label="max over rows")
    ax.hist(per_head["spread_mean"], bins=bins, alpha=0.6, label="mean over rows")
    L = int(spread["length"].iloc[0])
    ax.set(xlabel=f"spread max − min of scaled scores (L = {L})", ylabel="heads")
    ax.set_title("Per-head logit spread (paper B, Fig. 3 analogue)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def figures(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> dict[str, Figure]:
    """All figures of a run from its tables (the spread figure where the run measured spreads)."""
    figs = {
        "accuracy": fig_accuracy(tables["accuracy"]),
        "mean_entropy": fig_mean_entropy(tables["mean_entropy"]),
        "head_entropy": fig_head_entropy(tables["head_entropy"]),
    }
    if "spread" in tables:
        figs["spread"] = fig_spread(tables["spread"])
    return figs
