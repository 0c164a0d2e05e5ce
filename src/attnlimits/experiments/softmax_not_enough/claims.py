"""Claims of a *Softmax is not Enough* run, judged on its tables, and the report's sections."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from attnlimits.experiments.report import markdown_table, verdict
from attnlimits.experiments.softmax_not_enough.setup import setup_table

__all__ = ["ablation_table", "claims", "sections", "size_table"]

#: The paper's statement per size (§4.1): equal in distribution, adaptive better out of it.
_CHANCE = 0.1


def size_table(summary: pd.DataFrame, id_size: int) -> pd.DataFrame:
    """Per set size: softmax and adaptive mean ± SE over seeds (percent), the paired t-test,
    the verdict against the paper's statement and, where they differ, a likely reason."""
    s = summary[summary["norm"].isin(["softmax", "adaptive"])]
    soft = s[s["norm"] == "softmax"].set_index("size")
    adap = s[s["norm"] == "adaptive"].set_index("size")
    rows = []
    for size in sorted(soft.index.intersection(adap.index)):
        b, a = soft.loc[size], adap.loc[size]
        diff, p = 100 * (a["mean"] - b["mean"]), float(a["p_value"])
        significant = bool(p < 0.05)
        if significant and diff > 0:
            found = "adaptive significantly better"
        elif significant:
            found = "softmax significantly better"
        else:
            found = "no significant difference"
        ood = size > id_size
        expected = "adaptive significantly better" if ood else "no significant difference"
        why = ""
        if found != expected:
            if ood and max(a["mean"], b["mean"]) < 1.5 * _CHANCE:
                why = "both near chance (10 %): dispersion has won at this size (Lemma 2.1)"
            elif ood:
                why = "too few seeds or sets for the test here, or the trained models' logits "
                why += "are already sharp (H ≤ 0.5 nats, where the rule does not act)"
            else:
                why = "in distribution the rule rarely acts (H ≤ 0.5 nats); a small gain "
                why += "is consistent with the paper's table"
        rows.append(
            {
                "size": int(size),
                "softmax (%)": f"{100 * b['mean']:.1f} ± {100 * b['se']:.1f}",
                "adaptive (%)": f"{100 * a['mean']:.1f} ± {100 * a['se']:.1f}",
                "difference": diff,
                "t": float(a["t"]),
                "p_value": p,
                "paper": expected,
                "verdict": found,
                "agrees": found == expected,
                "likely reason": why,
            }
        )
    return pd.DataFrame(rows)


def claims(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> pd.DataFrame:
    """Paper B's four claims, judged on the measured tables."""
    id_size = int(meta["benchmark"]["train"]["max_size"])
    rows = []
    prof = tables["attention_profile"]
    top = prof[(prof["norm"] == "softmax") & (prof["rank"] == 0)].set_index("size")["attention"]
    rows.append(
        {
            "claim": "softmax coefficients disperse as the set grows (Thm 2.2)",
            "paper": "every coefficient → 0 as n → ∞",
            "measured": "mean top coefficient: "
            + ", ".join(f"n={s}: {v:.3f}" for s, v in top.items()),
            "rule": "the top coefficient falls at every larger size",
            "verdict": verdict([bool((np.diff(top.to_numpy()) < 0).all())]),
        }
    )
    per_size = size_table(tables["summary"], id_size)
    ood = per_size[per_size["size"] > id_size]
    better = ood["verdict"] == "adaptive significantly better"
    rows.append(
        {
            "claim": "adaptive temperature (inference only) improves OOD accuracy significantly",
            "paper": "better on larger inputs, paired t-test over ten seeds (§4.1)",
            "measured": f"better with p < 0.05 at {int(better.sum())} of {len(ood)} OOD sizes; "
            + ", ".join(
                f"n={r.size}: {r.difference:+.1f} pts (p={r.p_value:.1e})" for r in ood.itertuples()
            ),
            "rule": "adaptive mean > softmax mean with p < 0.05 at every OOD size",
            "verdict": verdict([bool(better.all()), bool(better.any())])
            if len(ood)
            else "not reproduced",
        }
    )
    ent = tables["entropy_vs_temperature"]
    mono = all(
        (np.diff(g.sort_values("T")["entropy"].to_numpy()) >= -1e-9).all()
        for _, g in ent.groupby("spread")
    )
    rows.append(
        {
            "claim": "entropy falls monotonically as temperature falls (Prop. 3.2)",
            "paper": "dH/dβ = −β Var_p(e) ≤ 0",
            "measured": "H(θ) non-decreasing on a 41-point θ grid for spreads "
            + ", ".join(f"{v:g}" for v in sorted(ent["spread"].unique()))
            + f": {mono}",
            "rule": "no decrease of H as θ grows, for every spread",
            "verdict": "reproduced" if mono else "not reproduced",
        }
    )
    log = tables["training_log"]
    ratio = log["bound"] / log["spread"]
    rows.append(
        {
            "claim": "the logit spread stays under the Prop. 3.1 bound during training",
            "paper": "spread ≤ 2·‖q‖·max‖k‖ (Prop. 3.1)",
            "measured": f"bound / spread over {len(log)} logged steps: min {ratio.min():.2f}, "
            f"median {ratio.median():.2f}",
            "rule": "spread ≤ bound at every logged step",
            "verdict": "reproduced"
            if bool((log["spread"] <= log["bound"] * (1 + 1e-6)).all())
            else "not reproduced",
        }
    )
    return pd.DataFrame(rows)


def ablation_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per (schedule, regulariser, variant, normaliser), one column per size:
    "mean ± SE" in percent."""
    keys = ["schedule", "regularizer", "variant", "norm"]
    cell = summary.assign(
        cell=[f"{100 * m:.1f} ± {100 * e:.1f}" for m, e in zip(summary["mean"], summary["se"],
                                                              strict=True)]
    )  # fmt: skip
    table = cell.pivot_table(index=keys, columns="size", values="cell", aggfunc="first")
    table.columns = [str(c) for c in table.columns]
    return table.reset_index()


def sections(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> list[str]:
    """The set-up, the paper-layout accuracy table, the App. F refit and the cross table."""
    bench = meta["benchmark"]
    id_size = int(bench["train"]["max_size"])
    lines = [
        "## Set-up",
        "",
        "Every setting, labelled *paper*, *paper, value lost in our copy* (our choice, why) "
        "or *ours* (why):",
        "",
        markdown_table(setup_table(bench, meta.get("temperature_fit"))),
        "",
        "## Max retrieval: softmax vs adaptive temperature, per set size",
        "",
        "Accuracy in percent, mean ± SE over seeds; paired t-test over seeds; the verdict "
        "against the paper's statement (equal in distribution, adaptive better beyond it).",
        "",
        markdown_table(size_table(tables["summary"], id_size)),
        "",
        "The paper's layout (mean ± std over seeds):",
        "",
        markdown_table(tables["paired"]),
        "",
    ]
    if "temperature_fit_coeffs" in tables:
        fits = tables["temperature_fit_coeffs"]
        fits = fits.assign(coeffs=fits["coeffs"].map(lambda c: ", ".join(f"{v:.4g}" for v in c)))
        beta = tables["temperature_fit_beta"].pivot_table(
            index="fit", columns="entropy", values="beta_rule", sort=False
        )
        beta.columns = [f"β(H={h:g})" for h in beta.columns]
        lines += [
            "## Adaptive temperature refit (App. F, as the paper does it)",
            "",
            "Inputs where the max item lacks the top attention logit; per input the θ on a "
            "linear grid that maximises the max item's attention weight; np.polyfit of "
            "degree 4. Kept inputs and optima on the grid's edges, per size (all seeds):",
            "",
            markdown_table(tables["temperature_fit_sizes"]),
            "",
            "Fits (RMSE in β over the points):",
            "",
            markdown_table(fits),
            "",
            "β under the rule at H = 1 … 4 nats, published polynomial beside ours:",
            "",
            markdown_table(beta.reset_index()),
            "",
            "Our refit per seed:",
            "",
            markdown_table(tables["temperature_fit_seed_fits"].drop(columns="coeffs")),
            "",
        ]
    if "ablation_summary" in tables:
        lines += [
            "## Ablation: learning-rate schedule × regulariser × model variant",
            "",
            "Accuracy in percent, mean ± SE over seeds; softmax-trained models, softmax and "
            "adaptive temperature (inference only) on the same sets.",
            "",
            markdown_table(ablation_table(tables["ablation_summary"])),
            "",
        ]
    if "cross_summary" in tables:
        lines += ["## Across normalisers", "", markdown_table(tables["cross_summary"]), ""]
    return lines
