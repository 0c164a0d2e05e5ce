"""Figures of a comparison: perplexity, retrieval and head entropy against length, and cost.

Every figure reads the ``summary`` table and ``run.json`` only; titles name the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullFormatter

__all__ = ["figures"]

#: (column, error column or None, y label, figure name) of the per-length panels.
PANELS = (
    ("perplexity_change", "delta_nll_sd", "perplexity vs softmax (relative change)", "perplexity"),
    ("accuracy", "accuracy_se", "retrieval accuracy (± s.e.)", "retrieval"),
    ("head_entropy_median", None, "median head entropy (nats)", "entropy"),
)


def _model(meta: Mapping[str, Any]) -> str:
    return str(meta.get("model", {}).get("id", "model"))


def _lines(summary: pd.DataFrame, column: str, err: str | None, ylabel: str, title: str) -> Figure:
    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    ax = fig.subplots()
    lengths = sorted(summary["length"].unique())
    for i, (spec, df) in enumerate(summary.groupby("normalizer", sort=False)):
        y = df[column].to_numpy(dtype=float)
        e = None if err is None else df[err].to_numpy(dtype=float)
        if column == "perplexity_change" and e is not None:
            e = np.expm1(e)  # the spread of the per-sequence change, on the same scale
        style: dict[str, Any] = {"color": f"C{(i - 1) % 10}", "alpha": 0.85}
        if i == 0:  # the baseline on top, dashed, so that identical curves do not hide it
            style = {"color": "k", "lw": 1.6, "ls": "--", "zorder": 10}
        ax.errorbar(df["length"], y, yerr=e, marker="o", ms=4, capsize=3, label=spec, **style)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(lengths))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticklabels([str(n) for n in lengths])
    ax.set_xlabel("context length L (rows seeing L/2 … L tokens)")
    ax.set_ylabel(ylabel)
    if column == "perplexity_change":
        ax.axhline(0, color="0.6", lw=0.8)
        ax.yaxis.set_major_formatter(lambda v, _: f"{v:+.0%}")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    return fig


def _cost(summary: pd.DataFrame, model: str) -> Figure:
    per = summary.drop_duplicates("normalizer")
    fig = Figure(figsize=(6.4, 3.2), layout="constrained")
    ax = fig.subplots()
    ax.barh(per["normalizer"], per["seconds_per_forward"], color="C0")
    ax.invert_yaxis()
    ax.set_xlabel(f"seconds per forward of {int(summary['length'].max())} tokens")
    ax.set_title(f"{model}: cost of each normaliser (mean over sequences)", fontsize=10)
    return fig


def figures(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> dict[str, Figure]:
    summary = tables["summary"]
    model = _model(meta)
    out = {
        name: _lines(summary, column, err, ylabel, f"{model}: {ylabel}, normaliser swapped in")
        for column, err, ylabel, name in PANELS
    }
    out["cost"] = _cost(summary, model)
    return out
