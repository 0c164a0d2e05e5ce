"""Figures and the Markdown summary of a long-context (max-finding) run.

Each figure function takes the tidy tables of :func:`attnlimits.experiments.long_context.summarize`
(or the ``spread`` table) and returns a matplotlib Figure; :func:`report_markdown` turns the
tables into a short summary with the measured numbers.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from attnlimits.experiments.store import ResultStore, atomic_write_text

if TYPE_CHECKING:
    from pathlib import Path

    from attnlimits.experiments.long_context import LongContextConfig

__all__ = [
    "GEMMA_SPREADS",
    "fig_accuracy",
    "fig_head_entropy",
    "fig_mean_entropy",
    "fig_spread",
    "paired_counts",
    "report_markdown",
    "summarize",
    "write_report",
]

#: Paper B's Gemma logit spreads over a 9,000-token code file (second-hand, unverified):
#: (lowest head, highest head, mean over heads).
GEMMA_SPREADS = {"Gemma 2B": (2.3, 14.8, 5.7), "Gemma 7B": (0.1, 32.7, 5.8)}
_STYLE = {"softmax": ("C0", "o"), "adaptive": ("C3", "s")}


def _position(numbers: str, predicted: float) -> int:
    """Index of the predicted number in the list as shown, −1 when absent or unparsed."""
    items = numbers.split()
    if predicted is None or (isinstance(predicted, float) and math.isnan(predicted)):
        return -1
    return items.index(str(int(predicted))) if str(int(predicted)) in items else -1


def summarize(answers: pd.DataFrame, heads: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``accuracy`` per (mode, n) with its standard error, ``head_entropy`` per (mode, n, layer,
    head) (means over prompts), ``mean_entropy`` per (mode, n) (means over heads and prompts).

    Besides accuracy: ``parsed`` (the output starts with an integer), ``in_list`` (the answer is
    one of the numbers), ``picked_last`` (the answer is the last number shown, a recency guess).
    """
    pos = [_position(s, p) for s, p in zip(answers["numbers"], answers["predicted"], strict=True)]
    answers = answers.assign(
        position=pos,
        in_list=np.asarray(pos) >= 0,
        picked_last=np.asarray(pos) == answers["n"].to_numpy() - 1,
    )
    g = answers.groupby(["mode", "n"], sort=True)
    acc = g.agg(
        prompts=("correct", "size"),
        accuracy=("correct", "mean"),
        parsed=("predicted", lambda s: float(s.notna().mean())),
        in_list=("in_list", "mean"),
        picked_last=("picked_last", "mean"),
        n_tokens=("n_tokens", "mean"),
    ).reset_index()
    acc["se"] = np.sqrt(acc["accuracy"] * (1 - acc["accuracy"]) / acc["prompts"])
    acc["chance"] = 1.0 / acc["n"]  # naming a random list item
    cols = ["entropy", "entropy_base", "beta", "spread", "n_keys", "log_keys"]
    per_head = heads.groupby(["mode", "n", "layer", "head"], sort=True)
    head = per_head[cols].mean().reset_index()
    head.insert(5, "entropy_sd", per_head["entropy"].std(ddof=1).to_numpy())
    mean = heads.groupby(["mode", "n"], sort=True)[cols].mean().reset_index()
    mean["entropy_ratio"] = mean["entropy"] / mean["log_keys"]
    sharpened = heads.assign(s=heads["beta"] > 1).groupby(["mode", "n"], sort=True)["s"].mean()
    mean["frac_sharpened"] = sharpened.to_numpy()
    return {"accuracy": acc, "head_entropy": head, "mean_entropy": mean}


def fig_accuracy(acc: pd.DataFrame) -> Figure:
    """Exact-match accuracy vs n (log x), one line per mode, ±1 standard error; chance = 1/n."""
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for mode, g in acc.groupby("mode"):
        color, marker = _STYLE.get(str(mode), ("C2", "^"))
        ax.errorbar(g["n"], g["accuracy"], yerr=g["se"], color=color, marker=marker,
                    capsize=3, label=str(mode))  # fmt: skip
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
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for mode, g in mean.groupby("mode"):
        color, marker = _STYLE.get(str(mode), ("C2", "^"))
        ax.plot(g["n"], g["entropy"], color=color, marker=marker, label=f"{mode}: applied")
        if mode == "adaptive":
            ax.plot(g["n"], g["entropy_base"], color=color, ls="--", alpha=0.6,
                    label="adaptive: before β")  # fmt: skip
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
    fig, axes = plt.subplots(1, len(modes), figsize=(5 * len(modes), 3.8), squeeze=False,
                             sharey=True)  # fmt: skip
    n_layers = int(head["layer"].max()) + 1
    cmap = plt.get_cmap("viridis")
    for ax, mode in zip(axes[0], modes, strict=True):
        g = head[head["mode"] == mode]
        for (layer, _), h in g.groupby(["layer", "head"]):
            ax.plot(h["n"], h["entropy"], color=cmap(int(layer) / max(n_layers - 1, 1)),
                    lw=0.6, alpha=0.6)  # fmt: skip
        ceiling = g.groupby("n")["log_keys"].mean()
        ax.plot(ceiling.index, ceiling.to_numpy(), "k:", lw=2, label="log(prompt tokens)")
        ax.set_xscale("log", base=2)
        ax.set(xlabel="n numbers in the prompt", title=f"{mode}: per-head entropy")
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("entropy (nats)")
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, n_layers - 1))
    fig.colorbar(sm, ax=axes[0].tolist(), label="layer")
    return fig


def fig_spread(spread: pd.DataFrame) -> Figure:
    """Histogram of per-head logit spreads on War and Peace, with paper B's Gemma ranges."""
    per_head = spread.groupby(["layer", "head"])[["spread_max", "spread_mean"]].mean()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    top = float(np.nanmax(per_head.to_numpy()))
    bins = np.linspace(0, max(top, 15.0) * 1.02, 40).tolist()
    ax.hist(per_head["spread_max"], bins=bins, alpha=0.6, label="max over rows")
    ax.hist(per_head["spread_mean"], bins=bins, alpha=0.6, label="mean over rows")
    lo, hi, mu = GEMMA_SPREADS["Gemma 2B"]
    ax.axvspan(lo, hi, color="0.8", alpha=0.5, zorder=0, label="paper B, Gemma 2B range")
    ax.axvline(mu, color="k", ls="--", lw=1, label="paper B, Gemma 2B mean")
    L = int(spread["length"].iloc[0])
    ax.set(xlabel=f"spread max − min of scaled scores (L = {L})", ylabel="heads")
    ax.set_title("Per-head logit spread (paper B, Fig. 3 analogue)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def paired_counts(answers: pd.DataFrame) -> pd.DataFrame:
    """Per n, prompts right only under softmax / only under adaptive (same prompts, paired)."""
    wide = answers.pivot_table(index=["n", "prompt"], columns="mode", values="correct")
    if not {"softmax", "adaptive"} <= set(wide.columns):
        return pd.DataFrame(columns=["n", "softmax_only", "adaptive_only"])
    s, a = wide["softmax"].astype(bool), wide["adaptive"].astype(bool)
    out = pd.DataFrame({"softmax_only": s & ~a, "adaptive_only": a & ~s}).groupby("n").sum()
    return out.reset_index()


def _fmt(x: float, digits: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def report_markdown(tables: dict[str, pd.DataFrame], cfg: LongContextConfig) -> str:
    """A short Markdown summary of a run: the accuracy/entropy table and the spread numbers."""
    acc, mean = tables["accuracy"], tables["mean_entropy"]
    merged = acc.merge(mean, on=["mode", "n"])
    lines = [
        "# Dispersion in a real LM: max-finding with softmax vs adaptive temperature",
        "",
        f"Model `{cfg.model}`; {cfg.prompts} prompts per n of distinct integers in "
        f"[{cfg.low}, {cfg.high}], one per line; greedy decoding, exact match of the first "
        "integer generated. Entropy: of the answer position's attention (last prompt token as "
        "query) over all prompt tokens, per head, mean over heads and prompts; for adaptive the "
        "weights actually applied, softmax(β·l), and before β, softmax(l).",
        "",
        "| mode | n | prompt tokens | accuracy ± SE | chance | answer in list | last item | "
        "mean H (nats) | H before β | log L | H / log L | heads with β > 1 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in merged.sort_values(["n", "mode"]).itertuples():
        lines.append(
            f"| {r.mode} | {r.n} | {r.n_tokens:.0f} | {r.accuracy:.2f} ± {r.se:.2f} | "
            f"{r.chance:.3f} | {r.in_list:.2f} | {r.picked_last:.2f} | {_fmt(r.entropy)} | "
            f"{_fmt(r.entropy_base)} | {_fmt(r.log_keys)} | {_fmt(r.entropy_ratio)} | "
            f"{r.frac_sharpened:.1%} |"
        )
    paired = paired_counts(tables["answers"])
    if len(paired):
        pairs = ", ".join(
            f"n={r.n}: {r.softmax_only}/{r.adaptive_only}" for r in paired.itertuples()
        )
        lines += ["", f"Paired prompts right only under softmax / only under adaptive: {pairs}."]
    if "spread" in tables:
        ph = tables["spread"].groupby(["layer", "head"])[["spread_max", "spread_mean"]].mean()
        L = int(tables["spread"]["length"].iloc[0])
        lines += [
            "",
            f"## Per-head logit spread on War and Peace (L = {L}, paper B Fig. 3 analogue)",
            "",
            "| statistic per head | min | median | mean | max |",
            "|---|---:|---:|---:|---:|",
        ]
        for col, label in (("spread_max", "max over rows"), ("spread_mean", "mean over rows")):
            v = ph[col]
            lines.append(
                f"| {label} | {v.min():.2f} | {v.median():.2f} | {v.mean():.2f} | {v.max():.2f} |"
            )
        lo, hi, mu = GEMMA_SPREADS["Gemma 2B"]
        lines += [
            "",
            f"Paper B reports (second-hand, over a 9,000-token code file) Gemma 2B spreads of "
            f"about {lo}–{hi}, mean {mu}; Gemma 7B "
            "{}–{}, mean {}.".format(*GEMMA_SPREADS["Gemma 7B"]),
        ]
    return "\n".join(lines) + "\n"


def write_report(
    store: ResultStore,
    tables: dict[str, pd.DataFrame],
    cfg: LongContextConfig,
    *,
    figures: bool = True,
) -> Path:
    """Save the figures (unless ``figures=False``) and ``report.md``; return the report's path."""
    if figures:
        _save_figures(store, tables)
    path: Path = store.root / "report.md"
    atomic_write_text(path, report_markdown(tables, cfg))
    return path


def _save_figures(store: ResultStore, tables: dict[str, pd.DataFrame]) -> None:
    figs = {
        "accuracy": fig_accuracy(tables["accuracy"]),
        "mean_entropy": fig_mean_entropy(tables["mean_entropy"]),
        "head_entropy": fig_head_entropy(tables["head_entropy"]),
    }
    if "spread" in tables:
        figs["spread"] = fig_spread(tables["spread"])
    for name, fig in figs.items():
        store.save_figure(fig, name)
        plt.close(fig)
