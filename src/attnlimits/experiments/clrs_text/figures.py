"""Figures of a CLRS-Text run: the Figure 8 analogue (a performance profile per algorithm) and
the training loss curves. They read tables and ``run.json`` only."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import matplotlib

matplotlib.use("Agg")
import pandas as pd
from matplotlib.figure import Figure

__all__ = ["figures"]


def _profile(acc: pd.DataFrame, meta: Mapping[str, Any]) -> Figure:
    algos = sorted(acc["algorithm"].unique())
    cols = min(3, len(algos))
    rows = math.ceil(len(algos) / cols)
    fig = Figure(figsize=(4.2 * cols, 3.2 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, algo in zip(axes, algos, strict=False):
        a = acc[acc["algorithm"] == algo]
        trained = sorted(a.loc[a["in_distribution"], "length"].unique())
        if trained:
            ax.axvspan(min(trained) - 0.5, max(trained) + 0.5, color="0.92", lw=0)
        for arm, g in a.groupby("arm", sort=False):
            g = g.sort_values("length")
            ax.plot(g["length"], g["accuracy"], marker="o", label=str(arm))
            ax.fill_between(g["length"], g["ci_samples_low"], g["ci_samples_high"], alpha=0.2)
        chance = a.drop_duplicates("length").sort_values("length")
        ax.plot(chance["length"], chance["chance"], ls=":", c="0.4", label="chance")
        ax.set_title(algo, fontsize=9)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("length (shaded: training lengths)")
        ax.set_ylabel("exact match")
    for ax in axes[len(algos) :]:
        ax.set_visible(False)
    axes[0].legend(fontsize=7)
    p = meta.get("params", {})
    fig.suptitle(
        f"CLRS-Text, {p.get('model', '?')} model, {p.get('seeds', '?')} seeds: accuracy per "
        "algorithm and length (Fig. 8 analogue; bands: 95 % over samples)",
        fontsize=10,
    )
    return fig


def _loss(train: pd.DataFrame) -> Figure:
    fig = Figure(figsize=(6, 3.5), layout="constrained")
    ax = fig.subplots()
    for (arm, seed), g in train.groupby(["arm", "seed"], sort=False):
        ax.plot(g["step"], g["loss"], label=f"{arm} seed {seed}", alpha=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss on answer tokens")
    ax.legend(fontsize=7)
    ax.set_title("training loss per arm and seed", fontsize=10)
    return fig


def figures(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> dict[str, Figure]:
    return {
        "profile": _profile(tables["accuracy"], meta),
        "training_loss": _loss(tables["training"]),
    }
