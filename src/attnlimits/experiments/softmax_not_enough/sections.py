"""The report's sections of a *Softmax is not Enough* run, from its tables and ``run.json``:
the set-up with every label, accuracy per size with intervals over seeds and test sets, the
App. F refit beside its data, the ablation (training length included) and the cross table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from attnlimits.claims import BETTER, INCONCLUSIVE, WORSE
from attnlimits.experiments.report import markdown_table
from attnlimits.experiments.softmax_not_enough.claims import (
    ALPHA,
    PER_SIZE,
    held_out_refits,
    interval,
    size_table,
)
from attnlimits.experiments.softmax_not_enough.evaluate import gain_matrix
from attnlimits.experiments.softmax_not_enough.provenance import provenance_table
from attnlimits.experiments.softmax_not_enough.uncertainty import steps_rule

__all__ = [
    "ablation_table",
    "fit_tables",
    "length_tables",
    "loss_table",
    "norm_table",
    "sections",
    "steps_decision",
    "steps_table",
]

#: The share of a run's last logged steps whose mean loss is its final training loss.
FINAL_SHARE = 0.1


def _cells(summary: pd.DataFrame) -> pd.Series:
    return pd.Series(
        [
            interval(m, lo, hi)
            for m, lo, hi in zip(
                summary["mean"], summary["ci_low"], summary["ci_high"], strict=True
            )
        ],
        index=summary.index,
    )


def norm_table(summary: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per ``keys`` (e.g. norm), one column per size: "mean [95 % interval]" in
    percent, the interval over seeds and test sets."""
    table = summary.assign(cell=_cells(summary)).pivot_table(
        index=keys, columns="size", values="cell", aggfunc="first", sort=False
    )
    table.columns = [str(c) for c in table.columns]
    return table.reset_index()


def ablation_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per (schedule, regulariser, variant, steps, normaliser), one column per size."""
    return norm_table(summary, ["schedule", "regularizer", "variant", "steps", "norm"])


def steps_table(summary: pd.DataFrame, base_steps: int) -> pd.DataFrame:
    """The training length's effect on the headline numbers: per steps and quantity (softmax,
    adaptive, gain = adaptive − softmax, paired), per size "value [95 % interval]" and, for
    steps other than ``base_steps``, the move against it in points (``Δ``)."""
    s = summary[summary["norm"].isin(["softmax", "adaptive"])]
    gain = s[s["norm"] == "adaptive"].assign(
        norm="gain",
        mean=lambda d: d["diff"],
        ci_low=lambda d: d["diff_low"],
        ci_high=lambda d: d["diff_high"],
    )
    both = pd.concat([s, gain], ignore_index=True).rename(columns={"norm": "quantity"})
    at_base = both[both["steps"] == base_steps].set_index(["quantity", "size"])["mean"]
    ref = at_base.reindex(pd.MultiIndex.from_frame(both[["quantity", "size"]])).to_numpy()
    move = 100 * (both["mean"].to_numpy() - ref)  # points against base_steps
    both["cell"] = _cells(both) + [
        "" if st == base_steps else f" (Δ {d:+.1f})"
        for st, d in zip(both["steps"], move, strict=True)
    ]
    order = {"softmax": 0, "adaptive": 1, "gain": 2}
    table = both.pivot_table(
        index=["steps", "quantity"], columns="size", values="cell", aggfunc="first"
    )
    table = table.sort_index(key=lambda i: i.map(order) if i.name == "quantity" else i)
    table.columns = [str(c) for c in table.columns]
    return table.reset_index()


def steps_decision(acc: pd.DataFrame, id_size: int) -> list[str]:
    """The steps rule applied (:func:`.uncertainty.steps_rule`): the headline gain (pooled over
    the sizes above ``id_size``, :func:`.evaluate.gain_matrix`) at the shortest and the longest
    length of ``acc`` (one combination's ablation accuracy, with ``steps`` and ``hits``), on
    the seeds and set prefixes both have; the Markdown lines that say which length it picks."""
    lengths = sorted(int(v) for v in acc["steps"].unique())
    if len(lengths) < 2 or "hits" not in acc:
        return ["The steps rule needs two training lengths with per-set hits; this run has not."]
    pair = (lengths[0], lengths[-1])
    acc = acc[acc["steps"].isin(pair)]
    sizes = sorted(int(n) for n in acc["size"].unique() if n > id_size)
    common = acc.groupby("size")["n_sets"].min().astype(int).to_dict()
    seeds = set.intersection(*(set(g["seed"]) for _, g in acc.groupby("steps")))
    acc = acc[acc["seed"].isin(seeds)]
    gains = [gain_matrix(acc[acc["steps"] == st], sizes, n_sets=common) for st in pair]
    r = steps_rule(gains[0], gains[1], pair)
    mean = [100 * float(g.mean()) for g in gains]
    return [
        f"**The pooled reading of the steps rule** (a reading after a three-seed run, reported, "
        f"not followed; the default follows the rule as first written, on the per-size "
        f"numbers: docs/max_retrieval.md): the gain pooled over n = {sizes[0]:,}…{sizes[-1]:,} "
        f"is {mean[0]:.1f} points at {pair[0]:,} steps and {mean[1]:.1f} at {pair[1]:,}; the "
        f"change {interval(r.change, r.low, r.high)} points (paired, over {len(seeds)} seeds and "
        "the same test sets) "
        + (
            "excludes 0: pooled, the headline moved, so this reading picks "
            if r.moved
            else "includes 0: pooled, the headline did not move, so this reading picks "
        )
        + f"**{r.follow:,} steps**.",
        "",
    ]


def loss_table(log: pd.DataFrame) -> pd.DataFrame:
    """Per training length: the mean training loss and batch accuracy over the last
    :data:`FINAL_SHARE` of the logged steps (mean over seeds, ± SE over seeds), and the
    largest logit spread at the end."""
    last = log[log["step"] > (1 - FINAL_SHARE) * log.groupby("steps")["step"].transform("max")]
    per_seed = last.groupby(["steps", "seed"])[["loss", "acc"]].mean()
    g = per_seed.groupby("steps")
    n = g.size().to_numpy()
    end = log[log["step"] == log.groupby("steps")["step"].transform("max")]
    return pd.DataFrame(
        {
            "steps": g.size().index.to_numpy(),
            "final loss": g["loss"].mean().to_numpy(),
            "final loss SE": (g["loss"].std(ddof=1) / np.sqrt(n)).to_numpy(),
            "final batch accuracy": g["acc"].mean().to_numpy(),
            "final spread": end.groupby("steps")["spread"].mean().to_numpy(),
        }
    )


def fit_tables(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """App. F's tables as the report shows them: ``sizes`` (kept inputs and edge counts per
    size), ``bins`` (β* per entropy bin beside each polynomial), ``fits`` (coefficients and
    errors, ``theta_min`` as text), ``beta`` (β under the listing's rule at H = 1 … 4) and
    ``seed_fits`` (per seed, raw polynomial)."""
    fits = tables["temperature_fit_coeffs"]
    if "theta_min" not in fits:  # a table of releases before the θ_min check
        fits = fits.assign(theta_min=np.nan)
    shown = fits.assign(
        theta_min=[
            f"{t:g}" if f != "paper" else "—"
            for f, t in zip(fits["fit"], fits["theta_min"], strict=True)
        ],
        coeffs=fits["coeffs"].map(lambda c: ", ".join(f"{v:.4g}" for v in c)),
    )
    beta = tables["temperature_fit_beta"]
    beta = beta if "theta_min" in beta else beta.assign(theta_min=np.nan)
    beta = beta.assign(
        theta_min=lambda d: np.where(d["fit"] == "paper", "—", d["theta_min"].map("{:g}".format))
    )
    beta = beta.pivot_table(
        index=["fit", "theta_min"], columns="entropy", values="beta_rule", sort=False
    )
    beta.columns = [f"β(H={h:g})" for h in beta.columns]
    return {
        "sizes": tables["temperature_fit_sizes"],
        "bins": tables.get("temperature_fit_bins", pd.DataFrame()),
        "fits": shown,
        "beta": beta.reset_index(),
        "seed_fits": tables["temperature_fit_seed_fits"].drop(columns="coeffs"),
    }


def _fit_lines(tables: Mapping[str, pd.DataFrame], id_size: int) -> list[str]:
    shown = fit_tables(tables)
    lines = [
        "## Adaptive temperature refit (App. F)",
        "",
        "Inputs where the max item lacks the top attention logit; per input the θ on a linear "
        "grid that maximises the max item's attention weight; polynomials of degree 4 in H. "
        "Kept inputs and optima on the grid's edges, per size (all seeds):",
        "",
        markdown_table(shown["sizes"]),
        "",
        "β* = 1/θ* per entropy bin (quartiles of the points) beside each polynomial's raw β at "
        "the bin's median H; `refit` is App. F's least squares, `refit_median` the median fit:",
        "",
        markdown_table(shown["bins"]),
        "",
        "Fits; `theta_min` is the grid's lower bound the points had (the larger one raises "
        "every θ* below it, a setting: the paper's bounds are lost in our copy); errors in β "
        "between the rule and β* over the points:",
        "",
        markdown_table(shown["fits"]),
        "",
        "β under the listing's rule (max(poly(H), 1) above 0.5 nats) at H = 1 … 4:",
        "",
        markdown_table(shown["beta"]),
        "",
        "Per seed (raw polynomial, before the rule's floor of 1):",
        "",
        markdown_table(shown["seed_fits"]),
        "",
    ]
    if "temperature_fit_folds" in tables and "accuracy" in tables:
        lines += [
            "Is a refit a better rule than the published polynomial? Judged on seeds it was not "
            "fitted on: each refit fitted on one half of the seeds and evaluated on the other "
            "half, both ways; the gain over the published polynomial pooled over the sizes "
            "above the training range (each size once), in points [95 % interval over seeds "
            "and test sets]. The row on all seeds (each judged by the fold not fitted on it) "
            "decides:",
            "",
            markdown_table(
                held_out_refits(tables["accuracy"], tables["temperature_fit_folds"], id_size)
            ),
            "",
        ]
    return lines


def _own(acc: pd.DataFrame, train: Mapping[str, Any], bench: Mapping[str, Any]) -> pd.DataFrame:
    """The default combination's rows of an ablation table (every length)."""
    acc = acc if "steps" in acc else acc.assign(steps=int(train["steps"]))
    keep = (
        (acc["schedule"] == train["schedule"])
        & (acc["regularizer"] == train["regularizer"])
        & (acc["variant"] == bench["model"]["variant"])
    )
    return acc[keep]


def length_tables(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> dict[str, Any]:
    """The "Ablation: training length" section of a run with ``--ablation``: ``steps``
    (:func:`steps_table` of the default combination), ``decision`` (:func:`steps_decision`'s
    lines; none without ``ablation_accuracy``) and ``loss`` (:func:`loss_table`)."""
    bench = meta["benchmark"]
    t, base = bench["train"], int(bench["train"]["steps"])
    acc = tables.get("ablation_accuracy")
    return {
        "steps": steps_table(_own(tables["ablation_summary"], t, bench), base),
        "decision": [] if acc is None else steps_decision(_own(acc, t, bench), int(t["max_size"])),
        "loss": loss_table(tables["ablation_training_log"]),
    }


def sections(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> list[str]:
    """The set-up, accuracy per size, the App. F refit, the ablation and the cross table."""
    bench = meta["benchmark"]
    id_size = int(bench["train"]["max_size"])
    summary = tables["summary"]
    lines = [
        "## Set-up",
        "",
        "Every setting, labelled *paper* (paper B's text or listing states it), *lost in our "
        "copy* (the paper had a value our copy lost: our choice, and why) or *ours* (not in "
        "the paper):",
        "",
        markdown_table(provenance_table(bench, meta.get("temperature_fit"), meta.get("params"))),
        "",
        "## Max retrieval: softmax vs adaptive temperature, per set size",
        "",
        "Accuracy in percent: the mean over seeds and test sets with its 95 % interval "
        "[low, high] over seeds and test sets (every seed is evaluated on the same sets, so "
        "both sources of error count; `attnlimits.claims.statistics`). `p`: the paired "
        "comparison of adaptive − softmax on it; `p (t-test, seeds only)`: the paper's paired "
        "t-test, which leaves out the test-set error. `sets`: test sets drawn at that size. "
        f"`{PER_SIZE}`: {BETTER} or {WORSE} where the paired interval's p is below "
        f"{ALPHA:g} (by the difference's sign), else {INCONCLUSIVE}; it is our detail, not a "
        "statement of the paper: its §4.1 sentence is judged once in the claims, on the gain "
        "pooled over the sizes above the training range.",
        "",
        markdown_table(size_table(summary, id_size)),
        "",
        "The paper's layout (mean ± std over seeds):",
        "",
        markdown_table(tables["paired"]),
        "",
    ]
    if summary["norm"].nunique() > 2:
        lines += [
            "Every normaliser of the evaluation pass (mean [95 % interval], percent):",
            "",
            markdown_table(norm_table(summary, ["norm"])),
            "",
        ]
    if "temperature_fit_coeffs" in tables:
        lines += _fit_lines(tables, id_size)
    if "ablation_summary" in tables:
        abl = tables["ablation_summary"]
        base = int(bench["train"]["steps"])
        abl = abl if "steps" in abl else abl.assign(steps=base)  # earlier releases
        lines += [
            "## Ablation: learning-rate schedule × regulariser × model variant",
            "",
            f"At {base:,} steps; accuracy in percent, mean [95 % interval over seeds and test "
            "sets]; softmax-trained models, softmax and adaptive temperature (inference only) "
            "on the same sets.",
            "",
            markdown_table(ablation_table(abl[abl["steps"] == base])),
            "",
        ]
    if "ablation_training_log" in tables:
        length = length_tables(tables, meta)
        lines += [
            "## Ablation: training length",
            "",
            f"The default combination at each length. `gain` is adaptive − softmax, paired; "
            f"(Δ …) the move in points against {base:,} steps.",
            "",
            markdown_table(length["steps"]),
            "",
            *length["decision"],
            f"Training loss and batch accuracy over the last {FINAL_SHARE:.0%} of the logged "
            "steps (mean over seeds), and the logit spread at the end:",
            "",
            markdown_table(length["loss"]),
            "",
        ]
    if "cross_summary" in tables:
        cross = tables["cross_summary"]
        lines += [
            "## Across normalisers",
            "",
            "Mean [95 % interval over seeds and test sets], percent:",
            "",
            markdown_table(norm_table(cross, ["norm", "mode"])),
            "",
            "Paired against softmax (trained): difference, its interval and p (over seeds and "
            "test sets), and "
            "the t-test over seeds:",
            "",
            markdown_table(
                cross[
                    ["norm", "mode", "size", "diff", "diff_low", "diff_high", "p_value", "p_ttest"]
                ].dropna(subset=["diff"])
            ),
            "",
        ]
    return lines
