"""The report's sections beyond the claims table: the set-up, its differences from paper A,
E in its three forms (one head as the audit measured it) and how much the choice of x_i
matters. Each reads only the tables and ``run.json``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from attnlimits.experiments.limitations.claims import (
    E_COLS,
    X_FREE,
    claims,
    e_cols,
    plateau_change,
    slopes_in_l,
)
from attnlimits.experiments.limitations.provenance import provenance_table
from attnlimits.experiments.report import markdown_table

__all__ = ["e_forms_table", "fmt", "one_head", "sections", "x_source_comparison"]


def fmt(df: pd.DataFrame) -> pd.DataFrame:
    """Numbers to 3 significant digits (integers as integers) for the Markdown tables."""

    def one(v: object) -> object:
        if isinstance(v, float):
            return "—" if math.isnan(v) else f"{v:.3g}"
        return v

    return df.map(one)


def x_source_comparison(results: Mapping[str, pd.DataFrame], sources: list[str]) -> pd.DataFrame:
    """Headline numbers per x source, and how alike the per-head values are across sources.

    One row per quantity; a column per x source, then ``spearman``: the rank correlation over
    heads between the first two sources (the same (layer, head) in each), where it applies.
    """
    from scipy.stats import spearmanr

    alg1, alg2, alg3, alg4 = (results[k] for k in ("alg1", "alg2", "alg3", "alg4"))
    top = int(alg2["L"].max())
    n4 = sorted(alg4["N"].unique())
    n_mid = 16 if 16 in n4 else n4[len(n4) // 2]

    def heads(df: pd.DataFrame, source: str, col: str, **where: int) -> pd.Series:
        sub = df[df["x_source"] == source]
        for k, v in where.items():
            sub = sub[sub[k] == v]
        return sub.groupby(["layer", "head"])[col].mean()

    if "window" in alg3:
        alg3 = alg3[alg3["window"] < 0]

    def crit(source: str, form: str) -> float | str:
        sub = alg3[(alg3["x_source"] == source) & (alg3["e_form"] == form) & (alg3["L"] == top)]
        if not len(sub):
            return math.nan
        value = sub["critical_n"].iloc[0]
        if pd.isna(value) or value < 1:  # none found (runs before the extended grid: −1)
            return f"> {int(sub['n_max'].iloc[0])}" if "n_max" in sub else "none"
        return float(value)

    def slope(source: str) -> float:
        return slopes_in_l(alg1[alg1["x_source"] == source])[0]

    def plateau(source: str) -> float:
        return 100 * plateau_change(alg2[alg2["x_source"] == source])[0]

    _, n_from, n_hi, _ = plateau_change(alg2[alg2["x_source"] == sources[0]])

    alg1 = alg1.assign(ratio_bound=alg1["bound"] / alg1["distance"])
    per_head = {
        f"d̃ per head (L = {top}, N = 5)": (alg1, "distance", {"L": top}),
        f"bound / d̃ per head (L = {top}, N = 5)": (alg1, "ratio_bound", {"L": top}),
        f"N_s/N per head (N = {n_mid})": (alg4, "ratio", {"N": n_mid}),
        f"N_s/N per head (N = {n4[-1]})": (alg4, "ratio", {"N": int(n4[-1])}),
    }
    rows: list[dict[str, object]] = []
    scalars = {
        "log-log slope of d̃ vs L (N = 5)": slope,
        f"change of d̃ from N = {n_from} to N = {n_hi} at L = {top} (%)": plateau,
        f"critical N at L = {top}, exact E": lambda s: crit(s, "exact"),
        f"critical N at L = {top}, derived E": lambda s: crit(s, "derived"),
        f"critical N at L = {top}, printed E": lambda s: crit(s, "main_text"),
    }
    for name, fn in scalars.items():
        rows.append({"quantity": name, **{s: fn(s) for s in sources}, "spearman": math.nan})
    for name, (df, col, where) in per_head.items():
        vals = {s: heads(df, s, col, **where) for s in sources}
        a, b = vals[sources[0]], vals[sources[1]]
        joined = pd.concat([a, b], axis=1, join="inner").dropna()
        rho = float(spearmanr(joined.iloc[:, 0], joined.iloc[:, 1]).statistic)
        medians = {s: float(v.median()) for s, v in vals.items()}
        rows.append({"quantity": name + ", median", **medians, "spearman": rho})
    return pd.DataFrame(rows)


def e_forms_table(alg1: pd.DataFrame) -> pd.DataFrame:
    """d̃ and E in each form against L (N of Alg. 1): mean over heads and windows, the exact
    form with its standard error (Monte Carlo and row sampling, over heads and windows)."""
    cols = ["distance", *e_cols(alg1)]
    mean = alg1.groupby("L")[cols].mean()
    if "expectation_exact_se" in alg1:
        n = alg1.groupby("L")["expectation_exact_se"].count()
        se = alg1.groupby("L")["expectation_exact_se"].apply(lambda v: float((v**2).sum()) ** 0.5)
        mean["exact SE"] = se / n
    return mean.rename(columns={c: f"E {E_COLS[c]}" for c in E_COLS} | {"distance": "d̃"})


def one_head(alg1: pd.DataFrame, layer: int = 5, head: int = 0, length: int = 256) -> str:
    """The audit's hand-measured head (layer 5, head 0, N = 5, L = 256) in all forms."""
    sub = alg1[(alg1["layer"] == layer) & (alg1["head"] == head) & (alg1["L"] == length)]
    if sub.empty:
        return ""
    m = sub.mean(numeric_only=True)
    parts = [f"d̃ = {m['distance']:.3g}"]
    parts += [f"E {E_COLS[c]} = {m[c]:.3g}" for c in e_cols(sub)]
    if "expectation_exact_se" in sub:
        se = float((sub["expectation_exact_se"] ** 2).sum()) ** 0.5 / len(sub)
        parts[1] += f" ± {se:.2g}"
    return (
        f"Layer {layer}, head {head}, N = {int(sub['N'].iloc[0])}, L = {length} (mean over "
        f"{sub['window'].nunique() if 'window' in sub else 1} windows): " + ", ".join(parts) + "."
    )


def sections(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> list[str]:
    """What was run, how it differs from the paper, E in every form, and how much the choice
    of x_i matters (Markdown lines)."""
    params, info = meta["params"], meta.get("model", {})
    sources = list(params["x_sources"])
    windows = meta.get("windows", {})
    lines = [
        "## Set-up",
        "",
        f"Model **{params['model']}** ({info.get('n_layers')} layers × {info.get('n_heads')} "
        f"heads, {'causal' if info.get('causal') else 'bidirectional'}), text sha256 "
        f"`{meta.get('text', {}).get('sha256', '?')[:16]}…`, {params['windows']} window(s) of "
        f"{max(params['lengths'])} tokens. Figures use x_i = **{sources[0]}**; the claims are "
        f"judged for each x source ({', '.join(sources)}), on the windows pooled and in each "
        "window alone.",
        "",
    ]
    if windows.get("char_starts"):
        starts = windows["char_starts"]
        chars = meta.get("text", {}).get("chars") or 1
        lines += [
            "Windows (spread over the book; character offset, share of the text, first line):",
            "",
            *(
                f"{i}. offset {c} ({c / chars:.0%}): “{line}”"
                for i, (c, line) in enumerate(
                    zip(starts, windows.get("first_lines", [""] * len(starts)), strict=False)
                )
            ),
            "",
        ]
    lines += [
        "## Set-up: every setting beside the paper's",
        "",
        "Every setting: *paper* (as the paper does it), *lost in our copy* (a value our copy "
        "of the paper lost: our choice), *ours* (a departure, or a setting the paper does not "
        "state: our choice, and why).",
        "",
        markdown_table(provenance_table(params, info)),
        "",
        "## E in its three forms",
        "",
        "Theorem 1.2 approximates E = E_{I_N}[d̃] over uniformly random I_N (Eq. 8). *printed* "
        "is the main text's formula, *derived* the appendix's (docs/errata.md), *exact* a Monte "
        f"Carlo estimate of Eq. 8 itself. Alg. 1 (N = {params['n_alg1']}), x_i = {sources[0]}, "
        "mean over heads and windows:",
        "",
    ]
    alg1 = tables["alg1"]
    alg1 = alg1[alg1["x_source"] == sources[0]]
    lines += [markdown_table(fmt(e_forms_table(alg1).reset_index())), ""]
    head = one_head(alg1)
    if head:
        lines += [head, ""]
    if len(sources) < 2:
        return lines
    table = claims(tables, meta)
    free = table["x_source"] == X_FREE
    pivot = table[~free].pivot(index="claim", columns="x_source", values="verdict")
    same = int((pivot.nunique(axis=1) == 1).sum())
    return [
        *lines,
        "## How much the choice of x_i matters",
        "",
        f"{same} of {len(pivot)} verdicts agree across x sources "
        f"({', '.join(sources)}). (v) and Corollary 3 read Alg. 5's logits only, Lemma 1 the "
        "weights' statistics, and three sentences have no numbers; no x_i enters them: judged "
        f"once ({int(free.sum())} rows, x_source {X_FREE}), not compared.",
        "",
        markdown_table(pivot.reset_index()),
        "",
        "The numbers behind the verdicts, per x source; `spearman` is the rank correlation "
        f"over heads between {sources[0]} and {sources[1]} (1: the same heads "
        "stand out whichever vectors play x_i).",
        "",
        markdown_table(fmt(x_source_comparison(tables, sources))),
        "",
    ]
