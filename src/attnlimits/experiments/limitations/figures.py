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

__all__ = ["fig2a", "fig2b", "fig2c", "fig3", "fig4", "figures", "subtitle"]

#: (column, label, colour, line style, marker): each series its own dash and marker, so that
#: two equal series (E exact and E derived often are) both stay visible.
_SERIES = (
    ("distance", "true distance $\\tilde d$ (Eq. 7)", "C0", "-", "o"),
    ("expectation_exact", "E exact (Eq. 8, Monte Carlo)", "C1", "-", "s"),
    ("expectation", "E derived (appendix form)", "C2", "--", "D"),
    ("expectation_main_text", "E printed (main-text form)", "C4", "-.", "^"),
    ("bound", "upper bound (Thm 1.1)", "C3", ":", "v"),
)


def subtitle(meta: Mapping[str, Any] | None, x_source: str | None = None) -> str:
    """The second title line of every figure: model, x_i, windows (and of what length)."""
    if not meta:
        return ""
    params = meta.get("params", {})
    parts = [str(params.get("model", "?"))]
    if x_source:
        parts.append(f"x = {x_source}")
    n_win = params.get("windows")
    if n_win:
        parts.append(
            f"{n_win} window{'s' if n_win != 1 else ''} of {max(params['lengths'])} tokens"
        )
    return " · ".join(parts)


def _window_means(df: pd.DataFrame, by: str, cols: list[str]) -> pd.DataFrame:
    """Per window the mean over heads (rows already averaged), then mean, min and max over
    windows: the spread the figures draw as a band."""
    if "window" not in df:
        df = df.assign(window=0)
    per_window = df.groupby([by, "window"])[cols].mean()
    grouped = per_window.groupby(level=by)
    return pd.concat(
        {"mean": grouped.mean(), "lo": grouped.min(), "hi": grouped.max()},
        axis=1,
    )


def _distance_figure(df: pd.DataFrame, by: str, xlabel: str, title: str) -> Figure:
    cols = [c for c, *_ in _SERIES if c in df and df[c].notna().any()]
    stats = _window_means(df, by, cols)
    n_win = int(df["window"].nunique()) if "window" in df else 1
    fig = Figure(figsize=(6, 4.4))
    ax = fig.add_subplot()
    xs = stats.index.to_numpy()
    for i, (col, label, color, style, marker) in enumerate(_SERIES):
        if col not in cols:
            continue
        ax.plot(
            xs,
            stats[("mean", col)],
            style,
            color=color,
            marker=marker,
            ms=7 - i,
            mfc="none",
            label=label,
        )
        if n_win > 1:
            ax.fill_between(xs, stats[("lo", col)], stats[("hi", col)], color=color, alpha=0.15)
    ax.set_xscale("log")
    ax.set_xticks(xs, [str(int(v)) for v in xs])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    spread = f"; band: min–max over {n_win} windows" if n_win > 1 else ""
    ax.set_ylabel(f"distance (mean over rows and heads{spread})", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def fig2a(alg1: pd.DataFrame, meta: Mapping[str, Any] | None = None, x_source: str = "") -> Figure:
    """Fig. 2a: d̃, E (three forms) and the bound against sequence length L at fixed N."""
    n = int(alg1["N"].iloc[0])
    title = f"Fig. 2a: distances vs L (N = {n})\n{subtitle(meta, x_source)}"
    return _distance_figure(alg1, "L", "sequence length L", title)


def fig2b(alg2: pd.DataFrame, meta: Mapping[str, Any] | None = None, x_source: str = "") -> Figure:
    """Fig. 2b: d̃, E (three forms) and the bound against the number N of selected tokens."""
    length = int(alg2["L"].iloc[0])
    title = f"Fig. 2b: distances vs N (L = {length})\n{subtitle(meta, x_source)}"
    return _distance_figure(alg2, "N", "selected tokens N", title)


_FORM_LABEL = {"derived": "derived", "main_text": "printed", "rms": "rms", "exact": "exact"}
_FORM_STYLE = {
    "exact": ("s", "-"),
    "derived": ("D", "--"),
    "main_text": ("^", "-."),
    "rms": ("o", ":"),
}


def fig2c(alg3: pd.DataFrame, meta: Mapping[str, Any] | None = None, x_source: str = "") -> Figure:
    """Fig. 2c: critical N against L, one line per form of E (windows pooled), whiskers over
    the windows, and the paper's 0.06·L line; where KS rejects at every N up to the grid's end
    the critical N is "> N_max", drawn as an open triangle at N_max (a lower limit), never
    as a value."""
    fig = Figure(figsize=(6, 4.4))
    ax = fig.add_subplot()
    windows = alg3["window"] if "window" in alg3 else pd.Series(-1, index=alg3.index)
    # none found: missing (runs before the extended grid wrote −1 and had no n_max)
    crit = pd.to_numeric(alg3["critical_n"]).astype(float)
    alg3 = alg3.assign(critical_n=crit.where(crit > 0))
    if "n_max" not in alg3:
        alg3 = alg3.assign(n_max=np.nan)
    pooled, single = alg3[windows < 0], alg3[windows >= 0]
    colors = {"exact": "C1", "derived": "C2", "main_text": "C4", "rms": "C5"}
    for form, sub in pooled.groupby("e_form"):
        color, label = colors.get(str(form), "C0"), _FORM_LABEL.get(str(form), str(form))
        sub = sub.sort_values("L")
        found = sub[sub["critical_n"].notna()]
        marker, dash = _FORM_STYLE.get(str(form), ("o", "-"))
        ax.plot(
            found["L"],
            found["critical_n"],
            dash,
            marker=marker,
            mfc="none",
            color=color,
            label=f"E {label}, pooled",
        )
        per = single[(single["e_form"] == form) & single["critical_n"].notna()]
        if len(per):
            rng = per.groupby("L")["critical_n"].agg(["min", "max"])
            ax.vlines(rng.index, rng["min"], rng["max"], color=color, alpha=0.5, lw=3)
        missing = sub[sub["critical_n"].isna() & sub["n_max"].notna()]
        if len(missing):
            ax.plot(
                missing["L"],
                missing["n_max"].astype(float),
                "^",
                color=color,
                mfc="w",
                label=f"E {label}: > N_max (KS rejects up to N_max = 0.9·L)",
            )
    ls = np.asarray(sorted(alg3["L"].unique()), dtype=float)
    ax.plot(ls, 0.06 * ls, "--", color="gray", label="0.06·L (paper)")
    ax.set_xscale("log")
    ax.set_xticks(ls, [str(int(v)) for v in ls])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel("sequence length L")
    whiskers = "; whiskers: min–max over windows" if len(single) else ""
    ax.set_ylabel(f"critical N{whiskers}", fontsize=8)
    alpha = alg3["alpha"].iloc[0]
    ax.set_title(
        f"Fig. 2c: critical N vs L (KS, α = {alpha})\n{subtitle(meta, x_source)}", fontsize=9
    )
    ax.legend(fontsize=6)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def fig3(alg4: pd.DataFrame, meta: Mapping[str, Any] | None = None, x_source: str = "") -> Figure:
    """Fig. 3: N_s/N per N over heads (box plots, outliers shown) and the Theorem 2 bounds,
    the bounds over the heads where Assumption 2 (δ > 0) holds only. The lower bound gets its
    own panel (it is mostly far below 0); an upper bound ≥ 1 says nothing and is labelled so."""
    cols = ["ratio", "lower", "upper"]
    holds = alg4["assumption2"] if "assumption2" in alg4 else pd.Series(True, index=alg4.index)
    per_head = alg4.assign(assumption2=holds).groupby(["N", "layer", "head"])
    per_head = per_head.agg({**{c: "mean" for c in cols}, "assumption2": "all"}).reset_index()
    ns = sorted(per_head["N"].unique())
    ok = per_head[per_head["assumption2"]]
    n_heads = per_head.groupby(["layer", "head"]).ngroups
    n_ok = ok.groupby(["layer", "head"]).ngroups
    fig = Figure(figsize=(6.5, 6))
    ax, low = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    pos = np.arange(len(ns))
    data = [per_head.loc[per_head["N"] == n, "ratio"].to_numpy() for n in ns]
    ax.boxplot(data, positions=pos, widths=0.5, showfliers=True, flierprops={"ms": 2})
    upper = ok.groupby("N")["upper"].max().reindex(ns)
    vacuous = upper >= 0.99
    ax.plot(
        pos[~vacuous.to_numpy()],
        upper[~vacuous].to_numpy(),
        "v-",
        color="C3",
        label=f"upper bound (Eq. 11), max over {n_ok} heads with δ > 0",
    )
    if vacuous.any():
        ax.plot(
            pos[vacuous.to_numpy()],
            upper[vacuous].clip(upper=1.08).to_numpy(),
            "v",
            color="C3",
            mfc="w",
            label="upper bound ≥ 0.99: says nothing at this N",
        )
    ax.set_ylabel(
        "$N_s / N$ per head (box: quartiles,\nwhiskers 1.5 IQR, dots: outliers)", fontsize=8
    )
    ax.set_ylim(-0.05, 1.15)
    failed = f"; δ = 0 in {n_heads - n_ok} of {n_heads} heads (repeated vectors): no bounds there"
    ax.set_title(
        f"Fig. 3: geometric separability\n{subtitle(meta, x_source)}"
        + (failed if n_ok < n_heads else ""),
        fontsize=8,
    )
    ax.legend(fontsize=7, loc="lower left")
    ax.grid(True, alpha=0.3)
    lower = ok.groupby("N")["lower"].agg(["mean", "min", "max"]).reindex(ns)
    low.plot(pos, lower["mean"], "^-", color="C2", label="lower bound (Eq. 11), mean over heads")
    low.fill_between(
        pos, lower["min"], lower["max"], color="C2", alpha=0.2, label="min–max over heads"
    )
    low.axhline(0, color="k", lw=0.5)
    low.set_ylabel("lower bound on $N_s/N$", fontsize=8)
    low.set_xticks(pos, [str(n) for n in ns])
    low.set_xlabel("selected tokens N")
    low.legend(fontsize=7)
    low.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def fig4(alg5: pd.DataFrame, meta: Mapping[str, Any] | None = None) -> Figure:
    """Fig. 4: max over heads of the mean (over rows) sensitivity against T, with both
    Jacobian bounds; windows pooled."""
    fig = Figure(figsize=(6, 4.4))
    ax = fig.add_subplot()
    per_head = alg5.groupby(["eps", "T", "layer", "head"])["sensitivity"].mean().reset_index()
    for i, (eps, sub) in enumerate(per_head.groupby("eps")):
        top = sub.groupby("T")["sensitivity"].max()
        ax.plot(
            top.index,
            top.to_numpy(),
            "o-",
            ms=3,
            color=f"C{i}",
            label=f"ε = {eps:g}: mean over rows, max over heads",
        )
    if "jacobian_norm" in alg5:
        jac = alg5.groupby(["T", "layer", "head"])["jacobian_norm"].mean().groupby("T").max()
        ax.plot(jac.index, jac.to_numpy(), "k.", label="exact ‖J‖₂: mean over rows, max over heads")
    ts = np.logspace(np.log10(alg5["T"].min()), np.log10(alg5["T"].max()), 200)
    t = torch.tensor(ts)
    printed = theory.corollary3_bound_as_printed(t)
    corrected = theory.softmax_jacobian_norm_bound(t)
    ax.plot(ts, np.asarray(printed), "--", color="gray", label="min{1/(4T), √2} (paper)")
    ax.plot(ts, np.asarray(corrected), ":", color="C3", label="1/(2T) (corrected)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("temperature T")
    ax.set_ylabel("sensitivity ‖Δα‖ / ε")
    ax.set_title(f"Fig. 4: gradient sensitivity\n{subtitle(meta)} (logits only)", fontsize=9)
    ax.legend(fontsize=6)
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
        "fig2a": fig2a(pick("alg1"), meta, head),
        "fig2b": fig2b(pick("alg2"), meta, head),
        "fig2c": fig2c(pick("alg3"), meta, head),
        "fig3": fig3(pick("alg4"), meta, head),
        "fig4": fig4(tables["alg5"], meta),
    }
