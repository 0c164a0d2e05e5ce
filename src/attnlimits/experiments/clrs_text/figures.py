"""Figures of a CLRS-Text run: the Figure 8 analogue (a performance profile per algorithm), the
training loss curves and the in-distribution validation curves. They read tables and
``run.json`` only."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import matplotlib

matplotlib.use("Agg")
import pandas as pd
from matplotlib.figure import Figure

__all__ = ["figures"]


_MARKER = {"in distribution": "o", "interpolation": "s", "extrapolation": "^"}


def _profile(acc: pd.DataFrame, meta: Mapping[str, Any]) -> Figure:
    """Figure 8's form: exact match against length per algorithm, both arms; the training
    range shaded, each length's regime by its marker (o trained, s interpolation,
    ^ extrapolation)."""
    algos = sorted(acc["algorithm"].unique())
    cols = min(3, len(algos))
    rows = math.ceil(len(algos) / cols)
    fig = Figure(figsize=(4.2 * cols, 3.2 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, algo in zip(axes, algos, strict=False):
        a = acc[acc["algorithm"] == algo]
        trained = sorted(a.loc[a["regime"] == "in distribution", "length"].unique())
        if trained:
            ax.axvspan(
                min(trained) - 0.5, max(trained) + 0.5, color="0.9", lw=0, label="training range"
            )
            ax.axvline(max(trained) + 0.5, c="0.5", lw=0.8, ls="--")
        for k, (arm, g) in enumerate(a.groupby("arm", sort=False)):
            g = g.sort_values("length")
            color = f"C{k}"
            ax.plot(g["length"], g["accuracy"], c=color, label=str(arm))
            ax.fill_between(
                g["length"], g["ci_seeds_low"], g["ci_seeds_high"], color=color, alpha=0.2, lw=0
            )
            for reg, r in g.groupby("regime"):
                ax.scatter(r["length"], r["accuracy"], c=color, marker=_MARKER[str(reg)], s=22)
        base = a.drop_duplicates("length").sort_values("length")
        ax.plot(base["length"], base["baseline"], ls=":", c="0.4", label="trivial baseline")
        ax.set_title(algo, fontsize=9)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("length (o trained, s interpolation, ^ extrapolation)", fontsize=8)
        ax.set_ylabel("exact match (trace and result)", fontsize=8)
    for ax in axes[len(algos) :]:
        ax.set_visible(False)
    axes[0].legend(fontsize=7)
    p = meta.get("params", {})
    fig.suptitle(
        f"CLRS-Text ({p.get('format', '?')} format), {p.get('model', '?')} model, "
        f"{p.get('seeds', '?')} seeds: exact match per algorithm and length (Fig. 8's form; "
        "bands: 95 % over seeds)",
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


def _validation(val: pd.DataFrame, lrs: pd.DataFrame) -> Figure:
    """In-distribution learning curves (issue 57): validation exact match of the whole answer
    against step, per algorithm, a line per (arm, seed) at the arm's chosen rate, the 90 %
    ceiling dashed."""
    from attnlimits.experiments.clrs_text.evaluate import CEILING

    chosen = lrs.loc[lrs["chosen"], ["arm", "lr"]]
    v = val.merge(chosen, on=["arm", "lr"])
    algos = sorted(v["algorithm"].unique())
    cols = min(3, max(1, len(algos)))
    rows = max(1, math.ceil(len(algos) / cols))
    fig = Figure(figsize=(4.2 * cols, 3.2 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    colors = {arm: f"C{k}" for k, arm in enumerate(dict.fromkeys(v["arm"]))}
    for ax, algo in zip(axes, algos, strict=False):
        seen: set[str] = set()
        for (arm, _seed), g in v[v["algorithm"] == algo].groupby(["arm", "seed"], sort=False):
            g = g.sort_values("step")
            label = None if arm in seen else str(arm)
            seen.add(str(arm))
            ax.plot(g["step"], g["accuracy"], c=colors[arm], alpha=0.7, marker=".", label=label)
        ax.axhline(CEILING.value, c="0.5", lw=0.8, ls="--")
        ax.set_title(algo, fontsize=9)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("step", fontsize=8)
        ax.set_ylabel("validation exact match (training lengths)", fontsize=8)
    for ax in axes[len(algos) :]:
        ax.set_visible(False)
    axes[0].legend(fontsize=7)
    fig.suptitle(
        "learning curves in distribution: a line per arm and seed, the 90 % ceiling dashed",
        fontsize=10,
    )
    return fig


def figures(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> dict[str, Figure]:
    out = {
        "profile": _profile(tables["accuracy"], meta),
        "training_loss": _loss(tables["training"]),
    }
    if "validation" in tables and "learning_rate" in tables:
        out["validation"] = _validation(tables["validation"], tables["learning_rate"])
    return out
