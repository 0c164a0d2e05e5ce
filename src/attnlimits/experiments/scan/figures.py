"""Figures of a scan: layer × head heatmaps per diagnostic, head kinds, dispersion with length.

Every figure reads the ``heads`` / ``head_summary`` tables and ``run.json`` only; its title names
the model and the length it shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from attnlimits.experiments.scan.taxonomy import KINDS

__all__ = ["HEATMAPS", "fig_dispersion", "fig_heatmaps", "fig_kinds", "figures"]

#: (column of ``heads``, panel title, colour map) of the heatmap figure, at the longest length.
HEATMAPS = (
    ("entropy_norm", "entropy / log(keys)", "viridis"),
    ("max_weight", "maximum weight", "magma"),
    ("sink_mass", "sink mass (first token)", "magma"),
    ("logit_spread", "logit spread Δ (B, Prop. 3.1)", "cividis"),
    ("beta", "adaptive β(H) (B, Fig. 4)", "cividis"),
    ("support_fraction", "active set exp(H) / L", "plasma"),
    ("critical_n_over_L", "critical N / L of the layer (A, Alg. 3)", "plasma"),
    ("separability", "N_s/N (A, Alg. 4)", "viridis"),
    ("jacobian_norm", "‖J‖₂ at T = 1 (A, Alg. 5)", "viridis"),
    ("dispersion_slope", "slope of log max weight vs log L", "coolwarm"),
    ("prev_token", "weight on the previous token", "magma"),
    ("local_mass", "weight on the last 8 tokens", "magma"),
)
_KIND_COLORS = ("C3", "0.25", "C2", "C8", "C1", "C0")  # induction, sink, prev, local, sharp, broad


def _model(meta: Mapping[str, Any]) -> str:
    return str(meta.get("model", {}).get("id", "model"))


def _grid(df: pd.DataFrame, column: str, like: pd.DataFrame | None = None) -> np.ndarray:
    """``column`` as a layer × head array, every layer and head of ``like`` present (NaN holes)."""
    full = df if like is None else like
    wide = df.pivot(index="layer", columns="head", values=column)
    wide = wide.reindex(index=sorted(full["layer"].unique()), columns=sorted(full["head"].unique()))
    return wide.to_numpy(dtype=float)


def fig_heatmaps(heads: pd.DataFrame, meta: Mapping[str, Any]) -> Figure:
    """One layer × head heatmap per diagnostic, each at the longest length where it was
    measured (Alg. 3-5 stop at ``analysis_max_length``; the title says which L)."""
    fig = Figure(figsize=(13, 8.5))
    axes = fig.subplots(3, 4, sharex=True, sharey=True)
    for ax, (column, title, cmap) in zip(axes.flat, HEATMAPS, strict=True):
        measured = heads.dropna(subset=[column]) if column in heads else heads[:0]
        grid, where = np.full((1, 1), np.nan), "not measured"
        if len(measured):
            length = int(measured["length"].max())
            at = measured[measured["length"] == length]
            grid, where = _grid(at, column, heads), f"L = {length}"
            if column == "dispersion_slope":
                where = "over lengths"
        im = ax.imshow(grid, aspect="auto", cmap=cmap, interpolation="nearest")
        ax.set_title(f"{title}, {where}", fontsize=8)
        fig.colorbar(im, ax=ax, shrink=0.9)
    for ax in axes[-1]:
        ax.set_xlabel("head")
    for ax in axes[:, 0]:
        ax.set_ylabel("layer")
    fig.suptitle(f"{_model(meta)}: per-head diagnostics (mean over windows)")
    fig.tight_layout()
    return fig


def fig_kinds(summary: pd.DataFrame, meta: Mapping[str, Any]) -> Figure:
    """The kind of every head (its kind at most lengths), as a categorical layer × head map."""
    names = [k[0] for k in KINDS]
    codes = summary.assign(code=summary["kind"].map({k: i for i, k in enumerate(names)}))
    grid = _grid(codes, "code")
    fig = Figure(figsize=(6.5, max(3.5, 0.22 * grid.shape[0] + 1.5)))
    ax = fig.add_subplot()
    cmap = ListedColormap(list(_KIND_COLORS))
    norm = BoundaryNorm(np.arange(len(names) + 1) - 0.5, cmap.N)
    im = ax.imshow(grid, aspect="auto", cmap=cmap, norm=norm, interpolation="nearest")
    bar = fig.colorbar(im, ax=ax, ticks=range(len(names)))
    bar.ax.set_yticklabels(names)
    ax.set(xlabel="head", ylabel="layer", title=f"{_model(meta)}: head kinds (rules: report)")
    fig.tight_layout()
    return fig


def fig_dispersion(heads: pd.DataFrame, summary: pd.DataFrame, meta: Mapping[str, Any]) -> Figure:
    """Maximum weight and entropy / log(keys) against L, one line per head coloured by kind;
    the dotted line is 1/L dispersion through the heads' median at the shortest length."""
    kind = summary.set_index(["layer", "head"])["kind"]
    colors = dict(zip([k[0] for k in KINDS], _KIND_COLORS, strict=True))
    fig = Figure(figsize=(11, 4.2))
    left, right = fig.subplots(1, 2)
    ordered = heads.sort_values(["layer", "head", "length"])
    head_kinds = [str(kind.get(key, "broad")) for key, _ in ordered.groupby(["layer", "head"])]
    for ax, column in ((left, "max_weight"), (right, "entropy_norm")):  # one collection a panel
        wide = ordered.pivot_table(index=["layer", "head"], columns="length", values=column)
        x = wide.columns.to_numpy(dtype=float)
        segments = [np.column_stack([x, row]) for row in wide.to_numpy(dtype=float)]
        ax.add_collection(
            LineCollection(
                segments, colors=[colors[k] for k in head_kinds], linewidths=0.6, alpha=0.5
            )
        )
        ax.autoscale_view()
    lengths = np.sort(heads["length"].unique()).astype(float)
    start = float(heads.loc[heads["length"] == lengths[0], "max_weight"].median())
    left.plot(lengths, start * lengths[0] / lengths, "k:", lw=2, label="∝ 1/L")
    for name, c in colors.items():
        left.plot([], [], color=c, label=name)
    left.set(xscale="log", yscale="log", xlabel="L (tokens)", ylabel="maximum weight (row mean)")
    right.set(xscale="log", xlabel="L (tokens)", ylabel="entropy / log(keys) (row mean)")
    for ax in (left, right):
        ax.set_xticks(lengths, [str(int(n)) for n in lengths])
        ax.xaxis.set_minor_formatter(NullFormatter())
    left.legend(fontsize=7, ncol=2)
    fig.suptitle(f"{_model(meta)}: dispersion with length (paper B, Lemma 2.1), mean over windows")
    fig.tight_layout()
    return fig


def figures(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> dict[str, Figure]:
    heads, summary = tables["heads"], tables["head_summary"]
    return {
        "heatmaps": fig_heatmaps(heads, meta),
        "kinds": fig_kinds(summary, meta),
        "dispersion": fig_dispersion(heads, summary, meta),
    }
