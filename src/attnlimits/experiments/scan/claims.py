"""The scan's report: the papers' claims checked head by head, the kinds, the flagged heads.

The claims are the papers' statements (``statements.py``: the paper's words, our reading)
judged by the rules of ``rules.py``, in the shared vocabulary
(:mod:`attnlimits.claims.verdicts`).
Reads the ``heads`` and ``head_summary`` tables and ``run.json`` only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from attnlimits.claims.verdicts import NA, NOT_TESTABLE
from attnlimits.experiments.report import markdown_table
from attnlimits.experiments.scan.rules import (
    ABOUT,
    PAPER_FRACTION,
    about_fraction,
    disperses,
    distinct,
    in_band,
)
from attnlimits.experiments.scan.statements import (
    ASSUMPTION2,
    CRITICAL_N,
    DISPERSION,
    SEPARABILITY,
)
from attnlimits.experiments.scan.taxonomy import (
    DISPERSING_SLOPE,
    FLAGS,
    KINDS,
    VANISHING_JACOBIAN,
)

#: The claims table's columns, as the reproductions' (:meth:`Statement.judged`).
COLUMNS = ["claim", "role", "paper", "reading", "measured", "rule", "verdict"]
#: Paper A (iv): N_s/N saturates from N ≈ 16; at a smaller N its curve still declines.
SATURATED_FROM = 16

__all__ = ["COLUMNS", "EVIDENCE", "claims", "head_list", "sections"]

#: What decides each claim (report.html links the verdict to them): (pattern in the claim's
#: text, figure names, table names); "heatmaps" is the page's layer × head heatmap.
EVIDENCE = (
    (r"critical N|N_s/N|Assumption 2", ("heatmaps",), ("head_summary", "heads")),
    (r"disperses", ("heatmaps", "dispersion"), ("head_summary", "heads")),
)

#: Differences from the papers' own set-ups (the report's last section; docs/scan.md too).
DIFFERENCES = (
    "Critical N (paper A, Alg. 3): the KS test across heads as in the paper, for the whole "
    "model and for each layer's heads; d̄ and Ē are means over sampled rows (paper: all rows), "
    "E in the derived form. No per-head critical N: with rows as samples d̃ < E on every row up "
    "to N ≈ L/2 (KS statistic 1), so it says nothing; the per-head guideline flag is the "
    "active set exp(H)/L instead (ours).",
    "Lengths (ours): under a causal mask, length L stands for the rows that see between L/2 + 1 "
    "and L keys of a window (one forward at the longest L serves every length).",
    "x_i are the value vectors of each head's key/value head (paper A's Algorithms use the "
    "attention's own vectors); on the unit sphere for N_s/N (Assumption 1).",
    "‖J‖₂ is the exact spectral norm of the softmax Jacobian at the head's own logits "
    "(T = 1), on sampled rows; paper A's Alg. 5 sweeps T with finite differences.",
    "Thresholds of the kinds and flags are ours (docs/scan.md); each head's scores are in "
    "tables/heads.parquet for other thresholds.",
)


def _at_longest(heads: pd.DataFrame, column: str = "entropy") -> pd.DataFrame:
    """The rows of the longest length at which ``column`` was measured (Alg. 3-5 stop at
    ``analysis_max_length``; the streamed values reach the longest scanned length)."""
    measured = heads.dropna(subset=[column])
    return measured[measured["length"] == measured["length"].max()]


def _last_measured(heads: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Per (layer, head): each column at the longest length where it was measured."""
    ordered = heads.sort_values("length")
    return ordered.groupby(["layer", "head"])[columns].last()


def head_list(df: pd.DataFrame, column: str | None = None, limit: int = 40) -> str:
    """Heads as ``layer.head`` (with ``column``'s value), at most ``limit``, then a count."""
    items = [
        f"{int(r.layer)}.{int(r.head)}" + (f" ({getattr(r, column):.3g})" if column else "")
        for r in df.itertuples()
    ]
    more = f", … ({len(items) - limit} more)" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more if items else "none"


def _crit(c: float) -> str:
    return "none in the grid" if c < 0 else f"N = {int(c)}"


def _frac(c: float, length: int) -> str:
    return "—" if c < 0 else f"{c / length:.3f} L"


def _frac_range(values: pd.Series) -> str:
    v = values.dropna()
    if not len(v):
        return "none in the grid"
    return f"{v.min():.3f} L" if v.min() == v.max() else f"{v.min():.3f}–{v.max():.3f} L"


def _critical_row(heads: pd.DataFrame) -> dict[str, str]:
    s = CRITICAL_N
    rule = about_fraction.text()
    analysed = heads.dropna(subset=["separability"])["length"].max()
    model_n = heads.groupby("length")["critical_n_model"].first().dropna()
    model_n = model_n[model_n.index <= analysed]
    if not len(model_n):
        return s.judged("no critical N: no length was analysed (Alg. 3)", rule, NA)
    tested = heads["n_max_tested"] if "n_max_tested" in heads else heads["length"] * 0.0
    grid = tested.groupby(heads["length"]).max()  # the N grid's end per L (older runs: unknown)
    layers = heads.groupby("length")["critical_n_over_L"]
    judged: list[float | None] = []
    left_out: list[int] = []
    for n, c in model_n.items():
        if c > 0:
            judged.append(c / n)
        elif grid.get(n, 0) >= PAPER_FRACTION * ABOUT * n:
            judged.append(None)  # no N passes up to past 0.12·L: above it
        else:
            left_out.append(int(n))
    measured = "; ".join(
        f"L={n}: model {_crit(c)} ({_frac(c, n)}), layers {_frac_range(layers.get_group(n))}"
        for n, c in model_n.items()
    )
    if left_out:
        measured += f"; left out (grid stops below 0.12·L, no N passes): L = {left_out}"
    if not judged:
        reason = "at every length the N grid stops below 0.12·L and no N passes"
        return s.judged(measured, rule, NOT_TESTABLE, reason)
    return s.judged(measured, rule, about_fraction(judged))


def claims(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> pd.DataFrame:
    heads, summary = tables["heads"], tables["head_summary"]
    rows = [_critical_row(heads)]
    slopes = summary["dispersion_slope"].dropna()
    share = float((slopes <= DISPERSING_SLOPE).mean()) if len(slopes) else math.nan
    rows.append(
        DISPERSION.judged(
            f"median slope {slopes.median():.2f}; {share:.0%} of heads ≤ {DISPERSING_SLOPE}"
            if len(slopes)
            else "no slope: fewer than two lengths",
            disperses.text(),
            disperses(slopes.median(), share),
        )
    )
    rows.append(_separability_row(heads))
    dup = heads.groupby(["layer", "head"])["flag_assumption2"].any()
    rows.append(
        ASSUMPTION2.judged(
            f"fails for {int(dup.sum())} of {len(dup)} heads (layers "
            f"{sorted({int(l) for l, _ in dup[dup].index}) or '—'})",
            distinct.text(),
            distinct(int(dup.sum()), len(dup)),
        )
    )
    return pd.DataFrame(rows, columns=COLUMNS)


def _separability_row(heads: pd.DataFrame) -> dict[str, str]:
    s, rule = SEPARABILITY, in_band.text()
    if not heads["separability"].notna().any():
        return s.judged("N_s/N not measured (no length up to analysis_max_length)", rule, NA)
    at = _at_longest(heads, "separability")
    sep, n_sep = at["separability"], int(at["n_separability"].max())
    q25, q75 = float(sep.quantile(0.25)), float(sep.quantile(0.75))
    measured = (
        f"median {sep.median():.3f} (N = {n_sep}, L = {int(at['length'].max())}); "
        f"IQR {q25:.3f}–{q75:.3f}"
    )
    if n_sep < SATURATED_FROM:
        reason = f"N = {n_sep} < {SATURATED_FROM}, where the paper's curve still declines"
        return s.judged(measured, rule, NOT_TESTABLE, reason)
    return s.judged(measured, rule, in_band(float(sep.median()), q25, q75))


def sections(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> list[str]:
    heads, summary = tables["heads"], tables["head_summary"]
    params = meta.get("params", {})
    model = meta.get("model", {})
    lines = [
        "## What was scanned",
        "",
        f"{model.get('id', '?')}: {model.get('n_layers', '?')} layers × "
        f"{model.get('n_heads', '?')} heads ({model.get('n_kv_heads', '?')} key/value heads), "
        "lengths "
        f"{', '.join(map(str, params.get('lengths', [])))}, {params.get('windows', '?')} window(s) "
        f"of *{meta.get('text', {}).get('source', '?')}*, {params.get('rows', '?')} sampled rows "
        "per window and length for Alg. 3-5. Every value is a mean over the rows of a length's "
        "band, then over windows (standard deviations in `tables/heads.parquet`).",
        "",
        "## Head kinds",
        "",
        "Each head gets the first kind whose rule it meets (per length; over lengths, the kind "
        "it has at most lengths).",
        "",
        markdown_table(
            pd.DataFrame(
                [
                    {"kind": k, "rule": rule, "heads": int((summary["kind"] == k).sum())}
                    for k, _, _, rule in KINDS
                ]
            )
        ),
        "",
    ]
    evidence = dict((k, col) for k, col, _, _ in KINDS if col)
    longest = _at_longest(heads).set_index(["layer", "head"])
    for kind, _, _, _ in KINDS:
        sub = summary[summary["kind"] == kind]
        if len(sub):
            col = evidence.get(kind)
            extra = [c for c in [col] if c and c not in sub]
            vals = sub.join(longest[extra], on=["layer", "head"]) if extra else sub
            lines.append(f"- **{kind}** ({len(sub)}): {head_list(vals, col)}")
    lines += ["", "## Flagged heads (the papers' guidelines)", ""]
    values = {
        "layer_critical_n": "critical_n_over_L",
        "active_set": "support_fraction",
        "dispersing": "dispersion_slope",
        "vanishing_gradient": "jacobian_norm",
        "assumption2": "duplicate_keys",
    }
    shown = _last_measured(heads, [c for c in values.values() if c in heads and c not in summary])
    table = summary.join(shown, on=["layer", "head"])
    for flag, says in FLAGS.items():
        if f"flag_{flag}" not in table:  # a run from before the flag (or its name) existed
            continue
        hit = table[table[f"flag_{flag}"]]
        listed = head_list(hit, values[flag])
        if flag == "layer_critical_n":  # a property of the layer: its layers, with critical N / L
            layers = heads.dropna(subset=["critical_n"]).groupby("layer")["critical_n_over_L"]
            hit_layers = sorted({int(v) for v in hit["layer"]})
            listed = "layers " + (
                ", ".join(f"{i} ({_frac_range(layers.get_group(i))})" for i in hit_layers)
                if hit_layers
                else "none"
            )
        lines.append(f"- **{flag}** ({len(hit)} of {len(table)} heads; {says}): {listed}")
    lines += [
        "",
        f"Rules: the layer's critical N / L > {ABOUT:g} × {params.get('critical_fraction', 0.06)}"
        f" (or none found), or the head's exp(H)/L > {params.get('critical_fraction', 0.06)}, "
        "at some length; slope "
        f"of log max weight vs log L ≤ {DISPERSING_SLOPE}; mean ‖J‖₂ < {VANISHING_JACOBIAN} at "
        "some length; two equal value vectors in some window. Values shown: at the longest "
        "length where measured (critical N / L, exp(H)/L, ‖J‖₂, duplicate keys) or over "
        "lengths (slope).",
        "",
        "## Differences from the papers",
        "",
        *[f"- {d}" for d in DIFFERENCES],
    ]
    slopes = summary.dropna(subset=["dispersion_slope"]).sort_values("dispersion_slope")
    if len(slopes):
        lines += [
            "",
            "## Dispersion",
            "",
            f"Most dispersing heads (slope): {head_list(slopes.head(10), 'dispersion_slope')}.",
            f"Least dispersing: {head_list(slopes.tail(10).iloc[::-1], 'dispersion_slope')}.",
            "Median slope by kind: "
            + ", ".join(
                f"{k} {v:.2f}"
                for k, v in slopes.groupby("kind")["dispersion_slope"].median().items()
            )
            + ".",
        ]
    return lines
