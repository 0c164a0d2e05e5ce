"""The claims of a limitations run: paper A's findings as statements, each judged by a tested
rule on the windows pooled, and again under each alternative reading.

Each of paper A's reported findings (i–v, its Experiments section) becomes a finding row
followed by its statement rows (:mod:`.findings`; roles and the paper's words in
:mod:`.statements`), plus the checks Corollary 3, Assumption 2, Theorem 1.2's Jensen gap,
Lemma 1 / Corollary 1 and the discussion's H = 3 (:mod:`.text_checks`).
Columns: the statement, its role (finding, headline, supporting, check), the paper's words
(``paper``, word for word) and our reading of them, the numbers measured here, the rule
(:mod:`.rules`, thresholds printed), the verdict, how many windows alone agree with it, the form
of E it uses, the verdict under each alternative reading, and whether it is robust to them.

**Verdicts and findings** use one vocabulary and one rule, shared by every experiment
(:mod:`attnlimits.claims.verdicts`): a finding's verdict comes from its headline statements
alone; checks (properties a theorem guarantees) are never evidence for a finding.

**Windows.** A row's verdict is its verdict on the windows pooled; the verdict in each window
alone is shown beside it ("1 of 2 windows agree") and never changes it.

**The form of E.** Verdicts use E *exact*, the Monte Carlo of Eq. 8: the paper's claims are
about E = E_{I_N}[d̃] (random selection), and its closed forms only approximate it (the printed
one is 3.6–54× the exact on the round-3 run, docs/errata.md). The printed form is what the
paper's figures appear to plot (Fig. 2a's E grows linearly, as only the printed form does); its
verdict is an alternative.

**Alternatives** (each changes one choice from the headline): the other forms of E for (i),
(ii) and (iii); for (iii) the other KS level (the text's 0.01, the pseudocode's 0.05) and the
paper's number of heads (144, GPT-2) by seeded draws, windows pooled, counted per verdict; for
(v) the smallest ε alone, a slope in (ONE_OVER_T_HI, RISES] read as saturating rather than
as rising slower than 1/T (the round-5 referee's point 1), and the maximum over rows in place
of the row mean ("drop by two
orders" is judged from T = 0.01 to T = 1, reading (b); reading (c), across T ≥ 1, cannot fail
and is the check (v.h)). The
verdict under the paper's printed E is also its own column (``e_printed``), which the README
shows beside the headline's; ``statistic`` is the
number a one-number rule judged (the docs' sensitivity lines read it).

**Once per model.** Finding (v), its statements and Corollary 3 read Alg. 5 alone: gradient
sensitivity reads the logits, which no x_i enters, so a model's x = values and x = hidden give
the same numbers. Those rows are judged once per model, their ``x_source`` :data:`X_FREE` ("—",
as ``e_form`` is "—" for a row that uses no E), and stand where the first x source's rows have
them (the round-5 referee's point 10: one observation, not one per x source). So are Lemma 1's
row (the weights' statistics, the same in every x source) and the sentences no run has the
numbers for (the round-7 referee's points 10 and 12).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
import torch

from attnlimits import theory
from attnlimits.claims import verdicts
from attnlimits.experiments.limitations import rules
from attnlimits.experiments.limitations.config import E_COLUMNS
from attnlimits.experiments.limitations.corollary2 import claim_ii_d
from attnlimits.experiments.limitations.findings import (
    E_COLS,
    claim_i,
    claim_ii,
    claim_iii,
    claim_iv,
    claim_v,
    claim_variants,
    critical_from_tests,
    e_cols,
    judged_row,
    plateau_change,
    saturating_reading,
    slopes_in_l,
)
from attnlimits.experiments.limitations.residual import (
    cells_at_n,
    claim_small_residual,
    residual_alternatives,
)
from attnlimits.experiments.limitations.text_checks import (
    claim_heads,
    claim_lemma1,
    claim_unmeasured,
)

__all__ = [
    "EVIDENCE",
    "E_COLS",
    "LOGITS_ONLY",
    "SAME_OBSERVATION",
    "X_FREE",
    "claims",
    "claims_for",
    "e_cols",
    "headline_form",
    "jensen_check",
    "per_source",
    "placed",
    "plateau_change",
    "slopes_in_l",
]

#: What decides each claim (report.html links the verdict to them): (pattern in the claim's
#: text, figure names, table names).
EVIDENCE = (
    (r"^\(i[.)]", ("fig2a",), ("alg1",)),
    (r"^\(ii[.)]", ("fig2b",), ("alg2",)),
    (r"^\(iii[.)]", ("fig2c",), ("alg3", "critical_tests")),
    (r"^\(iv[.)]", ("fig3",), ("alg4",)),
    (r"^\(v[.)]|^Corollary 3", ("fig4",), ("alg5",)),
    (r"^Assumption 2", (), ("alg4",)),
    (r"^Theorem 1\.2", ("fig2a", "fig2b"), ("alg1", "alg2")),
    # the H = 3 check shows the H each column's own median N_s/N (Alg. 4) would need; Lemma 1 /
    # Corollary 1 has none: no run keeps the weights, queries or keys
    (r"^Heads \(the discussion\)", ("fig3",), ("alg4",)),
)

Row = dict[str, str]
Judge = Callable[[pd.DataFrame], list[Row]]
COLUMNS = [
    "claim",
    "role",
    "paper",
    "reading",
    "measured",
    "rule",
    "verdict",
    "windows",
    "e_form",
    "alternatives",
    "robust",
    "e_printed",
    "statistic",
]
#: The alternative whose verdict the README shows beside the headline's: the paper's printed E.
PRINTED = "E printed"
SHORT = verdicts.SHORT
#: The ``x_source`` of the rows judged once per model: no x_i enters them.
X_FREE = "—"
#: Those rows' claims: finding (v), its statements (v.a)…(v.h) and Corollary 3 (Alg. 5's
#: logits), Lemma 1 (the weights' statistics, the same in every x source) and the sentences no
#: run has the numbers for (:func:`.text_checks.claim_unmeasured`).
LOGITS_ONLY = re.compile(
    r"^\(v[.)]|^Corollary 3|^Lemma 1|^Normalisers:|^Selectivity:|^Noise:|^Dilution:|^Outside:"
    r"|^Capacity:"
)
#: A table's cell, per model, in each x source's column after the first for an :data:`X_FREE`
#: row: the arrow points at the one verdict, in the first column (not another observation).
SAME_OBSERVATION = "↤ same observation"


def placed(model: str, x_source: str, joiner: str = ", x = ") -> str:
    """Where a claims row stands, in words: ``model`` and its x source ("SmolLM2-135M, x =
    values"), or ``model`` alone for a row judged once per model (:data:`X_FREE`)."""
    return model if x_source == X_FREE else f"{model}{joiner}{x_source}"


def per_source(claims: pd.DataFrame) -> pd.DataFrame:
    """``claims`` (with ``model`` and ``x_source`` columns) as one row per (model, x source)
    for a table with a column per (model, x source): each :data:`X_FREE` row stands in its
    model's first x-source column as it is, and in the others as :data:`SAME_OBSERVATION`
    (its ``verdict``, and ``e_printed`` and ``robust`` where present), so that a reader counts
    one observation per model. A model with no x-source row keeps its rows as they are."""
    free = claims["x_source"] == X_FREE
    out = [claims[~free]]
    for model, rows in claims[free].groupby("model", sort=False):
        own = claims.loc[~free & (claims["model"] == model), "x_source"]
        sources = list(dict.fromkeys(own)) or [X_FREE]
        out.append(rows.assign(x_source=sources[0]))
        marker = {c: SAME_OBSERVATION for c in ("verdict", "e_printed") if c in rows}
        marker |= {"robust": "yes"} if "robust" in rows else {}
        out += [rows.assign(x_source=s, **marker) for s in sources[1:]]
    return pd.concat(out).sort_index(kind="stable").reset_index(drop=True)


def headline_form(df: pd.DataFrame) -> str:
    """The grid column of E verdicts use: exact where the run has it, else derived."""
    return next(c for c in ("expectation_exact", "expectation") if c in e_cols(df))


# ---- checks without sub-claims ----------------------------------------------------------------


def claim_corollary3(alg5: pd.DataFrame) -> list[Row]:
    by_t = alg5.groupby("T")["jacobian_norm_max"].max()
    t = by_t.index.to_numpy()
    printed = torch.as_tensor(theory.corollary3_bound_as_printed(torch.tensor(t))).numpy()
    held = float((by_t.to_numpy() <= printed).mean())
    worst = float((by_t * t).max())
    return [
        judged_row(
            "Corollary",
            f"max over heads and rows of T·‖J‖₂ = {worst:.3f} (paper's bound: 0.25, corrected: "
            f"0.5); the paper's bound holds at {held:.0%} of the T grid",
            rules.corollary3,
            held,
        )
    ]


def claim_assumption2(alg4: pd.DataFrame) -> list[Row]:
    """Theorem 2 assumes δ = min_{i≠j}||x_i − x_j|| > 0 (Assumption 2); repeated tokens break it
    where identical tokens give identical vectors (layer 0's values, hidden states)."""
    per_layer = alg4.groupby("layer")["assumption2"].all()
    failed = [int(v) for v in per_layer.index[~per_layer.to_numpy()]]
    delta = alg4.groupby("layer")["delta"].min()
    return [
        judged_row(
            "Assumption",
            f"δ = 0 (repeated vectors) in {len(failed)} of {len(per_layer)} layers"
            + (f": layers {failed}" if failed else "")
            + f"; δ over distinct vectors, smallest per layer: {float(delta.min()):.3g} to "
            f"{float(delta.max()):.3g}; Fig. 3 draws the bounds only where δ > 0",
            rules.delta_positive,
            per_layer.tolist(),
        )
    ]


def jensen_check(df: pd.DataFrame) -> pd.DataFrame:
    """Per (window, layer, head, L, N) where the run has E exact and the gap bounds: the Jensen
    gap ε = E exact − E derived with its SE, and whether it lies within each printed bound
    (and ≥ 0) to 3 SE of E exact. Empty when the run lacks either."""
    gap_cols = [c for c in df if c.startswith("gap_bound_")]
    need = {"expectation_exact", "expectation_exact_se", "expectation"}
    if not gap_cols or not need <= set(df):
        return pd.DataFrame()
    rows = df.dropna(subset=[gap_cols[0], "expectation_exact"]).copy()
    rows["eps"] = rows["expectation_exact"] - rows["expectation"]
    slack = 3 * rows["expectation_exact_se"]
    rows["eps_nonnegative"] = rows["eps"] >= -slack
    for c in gap_cols:
        rows["within_" + c.removeprefix("gap_bound_")] = rows["eps"] <= rows[c] + slack
    return rows


def _negative_cells(rows: pd.DataFrame) -> str:
    """Where ε < 0 beyond 3 SE (the round-7 referee's point 7): how many of those cells are at
    the largest L, by N there, and what they are (Jensen's inequality gives ε ≥ 0 exactly)."""
    neg = rows[~rows["eps_nonnegative"]]
    if neg.empty or not {"L", "N"} <= set(rows):
        return ""
    top = neg[neg["L"] == rows["L"].max()]
    by_n = ", ".join(f"N = {n}: {c}" for n, c in top["N"].value_counts().sort_index().items())
    return (
        f"; the {len(neg)} cells with ε < 0 beyond 3 SE: {len(top)} at L = {rows['L'].max()} "
        f"({by_n or 'none'}); Jensen's inequality gives ε ≥ 0 exactly (docs/errata.md), so "
        "these are estimation artefacts (our reading): E exact is a Monte Carlo mean over "
        "sampled rows, E derived a mean over every row, and each SE is estimated from the "
        "same samples (why E exact falls short there is untested: rare keys of very large "
        "norm that few sampled N-sets draw is one cause consistent with it, and the runs keep "
        "no keys to test it; E derived is a proven lower bound on E (Jensen), and raising "
        "these cells to it would leave (ii.c)'s E / d̃ far below its band: (ii.c) shows E "
        "derived / d̃ beside it)"
    )


def claim_jensen(df: pd.DataFrame) -> list[Row]:
    """Theorem 1.2's ε: 0 ≤ E_exact − E_derived ≤ the printed bounds (main text; Eq. 25)."""
    rows = jensen_check(df)
    if rows.empty:
        return [judged_row("Theorem", "not computed in this run", rules.not_run)]
    forms = [c.removeprefix("within_") for c in rows if c.startswith("within_")]
    names = {"main_text": "main text", "appendix": "Eq. 25", "sharp": "sharp"}
    held = {f: float(rows["within_" + f].mean()) for f in forms}
    pos = float(rows["eps_nonnegative"].mean())
    ratio = {f: float((rows["eps"] / rows[f"gap_bound_{f}"]).median()) for f in forms}
    within = "; ".join(
        f"ε ≤ {names.get(f, f)} bound in {held[f]:.1%} (median ε / bound {ratio[f]:.2g})"
        for f in forms
    )
    return [
        judged_row(
            "Theorem",
            f"over {len(rows)} (window, layer, head, L, N) at Alg. 1/2's N: ε ≥ 0 in {pos:.1%}; "
            f"{within} (all to 3 SE of E exact){_negative_cells(rows)}",
            rules.within_noise,
            [pos, *held.values()],
        )
    ]


# ---- windows and readings ----------------------------------------------------------------------


def _judged(fn: Judge, df: pd.DataFrame) -> list[Row]:
    """``fn`` on the windows pooled: its verdicts are the rows' verdicts. With two windows or
    more, ``fn`` on each window alone too, shown in the ``windows`` column ("R N: 1 of 2
    windows agree"): beside the pooled verdict, never changing it."""
    windows = df["window"] if "window" in df else None
    pooled = df if windows is None or not (windows < 0).any() else df[windows < 0]
    out = [dict(r) | {"windows": "—"} for r in fn(pooled)]
    if windows is None or windows[windows >= 0].nunique() < 2:
        return out
    per = [fn(df[windows == w]) for w in sorted(windows[windows >= 0].unique())]
    for i, row in enumerate(out):
        row["windows"] = verdicts.agreement(row["verdict"], [w[i]["verdict"] for w in per])
    return out


Draws = tuple[str, list[list[Row]]]


def _with_alternatives(
    headline: list[Row], alternatives: Mapping[str, list[Row]], draws: Draws | None
) -> list[Row]:
    """``alternatives`` (label -> the rows judged under that reading, row for row) and
    ``draws`` (a label, the rows judged on each seeded draw of heads): the alternatives column
    and whether each headline verdict survives every one of them."""
    out = []
    for i, row in enumerate(headline):
        parts, differ = [], []
        for label, rows in alternatives.items():  # n/a: the reading cannot judge this row
            parts.append(f"{label}: {SHORT[rows[i]['verdict']]}")
            if rows[i]["verdict"] not in (row["verdict"], rules.NA):
                differ.append(label)
        if draws:
            counts = pd.Series([d[i]["verdict"] for d in draws[1]]).value_counts()
            text = " ".join(f"{SHORT[v]} {n}" for v, n in counts.sort_index().items())
            parts.append(f"{draws[0]}: {text}")
            if set(counts.index) != {row["verdict"]}:
                differ.append("head count")
        robust = "yes" if not differ else "no: " + ", ".join(differ)
        printed = alternatives[PRINTED][i]["verdict"] if PRINTED in alternatives else "—"
        out.append(
            row | {"alternatives": " · ".join(parts) or "—", "robust": robust, "e_printed": printed}
        )
    return out


def _form_alternatives(df: pd.DataFrame, form: str) -> list[str]:
    return [c for c in e_cols(df) if c != form and c != "expectation_rms"]


def claims_for(
    results: Mapping[str, pd.DataFrame],
    x_source: str,
    params: Mapping[str, Any] | None = None,
    logits: bool = True,
) -> pd.DataFrame:
    """The claims table for one x source; ``params``: the run's parameters (``run.json``), for
    the head count of the draws. ``logits``: with the rows no x_i enters ((v) and Corollary 3,
    which read Alg. 5 alone, Lemma 1 and the sentences with no numbers), their ``x_source``
    :data:`X_FREE`, where the other rows have them; without them, every row is this x
    source's."""
    params = params or {}

    def pick(name: str) -> pd.DataFrame:
        df = results[name]
        return df[df["x_source"] == x_source] if "x_source" in df else df

    alg1, alg2, tests, alg5 = pick("alg1"), pick("alg2"), pick("alg3_tests"), results["alg5"]
    form = headline_form(alg1)
    alpha = float(pick("alg3")["alpha"].iloc[0])
    other_alpha = 0.05 if alpha != 0.05 else 0.01

    def iii(form: str, alpha: float) -> Judge:
        label = f"E {E_COLS[form]}, α = {alpha:g}"
        return lambda t: claim_iii(critical_from_tests(t, E_COLUMNS[form], alpha), label)

    def with_form(fn: Callable[[pd.DataFrame, str], list[Row]], form: str) -> Judge:
        return lambda d: fn(d, form)

    # each block: its rows, their alternatives and draws, the form of E, whether it reads
    # Alg. 5 alone
    blocks: list[tuple[list[Row], dict[str, list[Row]], Draws | None, str, bool]] = []
    for fn, df in ((claim_i, alg1), (claim_ii, alg2)):
        alts = {
            f"E {E_COLS[c]}": _judged(with_form(fn, c), df) for c in _form_alternatives(df, form)
        }
        blocks.append((_judged(with_form(fn, form), df), alts, None, E_COLS[form], False))
    if "distance_grid" in results:  # (ii.d): Corollary 2(ii) over the whole N grid at L_max
        grid = pick("distance_grid")
        alts = {
            f"E {E_COLS[c]}": _judged(with_form(claim_ii_d, c), grid)
            for c in _form_alternatives(grid, form)
        }
        blocks.append((_judged(with_form(claim_ii_d, form), grid), alts, None, E_COLS[form], False))
    headline = _judged(iii(form, alpha), tests)
    alts = {f"E {E_COLS[c]}": _judged(iii(c, alpha), tests) for c in _form_alternatives(alg1, form)}
    alts[f"α = {other_alpha:g}"] = _judged(iii(form, other_alpha), tests)
    draws = pick("alg3_heads") if "alg3_heads" in results else pd.DataFrame()
    draws = draws[draws["e_form"] == E_COLUMNS[form]] if len(draws) else draws
    per_draw = None
    if len(draws):
        label = f"{int(draws['heads'].iloc[0])} heads, {draws['draw'].nunique()} draws (pooled)"
        # the grid is the same per draw: its smallest N and (iii.b)'s limits at its resolution
        at_grid = critical_from_tests(tests, E_COLUMNS[form], alpha).set_index("L")
        grid = at_grid[["n_min", "limit_lo", "limit_hi", "limit_floor"]]
        per_draw = (label, [claim_iii(d.join(grid, on="L"), "") for _, d in draws.groupby("draw")])
    elif params.get("alg3_heads"):  # no more heads than the paper's GPT-2: nothing to draw
        label = f"{params['alg3_heads']} heads (model has {int(pick('alg3')['heads'].max())})"
        alts[label] = [{"verdict": rules.NA} for _ in headline]
    blocks.append((headline, alts, per_draw, E_COLS[form], False))
    blocks.append((_judged(claim_iv, pick("alg4")), {}, None, "—", False))
    if logits:
        v_alts = {
            "smallest ε only": _judged(lambda d: claim_v(d, eps="smallest"), alg5),
            saturating_reading(): _judged(lambda d: claim_v(d, saturating=True), alg5),
        }
        if "sensitivity_row_max" in alg5:
            v_alts["max over rows"] = _judged(
                lambda d: claim_v(d, statistic="sensitivity_row_max"), alg5
            )
        blocks.append((_judged(claim_v, alg5), v_alts, None, "—", True))
    blocks.append((claim_variants(), {}, None, "—", False))
    if logits:
        blocks.append((_judged(claim_corollary3, alg5), {}, None, "—", True))
    if "assumption2" in results["alg4"]:
        blocks.append((claim_assumption2(pick("alg4")), {}, None, "—", False))
    if logits:  # the weights' statistics, no x_i (the round-7 referee's point 12)
        blocks.append((claim_lemma1(alg1), {}, None, "—", True))
        blocks.append((claim_unmeasured(), {}, None, "—", True))
    blocks.append((_judged(claim_heads, pick("alg4")), {}, None, "—", False))
    at_n = cells_at_n(alg1, alg2)
    if any(c.startswith("gap_bound_") for c in at_n):
        jensen = [r | {"uses_e": "yes"} for r in claim_jensen(at_n)]
        blocks.append((jensen, {}, None, "exact − derived", False))
        small = [r | {"uses_e": "yes"} for r in claim_small_residual(at_n)]
        alts = {
            label: [r | {"uses_e": "yes"} for r in rows]
            for label, rows in residual_alternatives(at_n).items()
        }
        blocks.append((small, alts, None, "exact − derived", False))
    rows, where = [], []
    for headline, alts, draw_rows, e_form, free in blocks:
        for r in _with_alternatives(headline, alts, draw_rows):
            form_used = e_form if r.pop("uses_e", "") else "—"
            rows.append({"windows": "—", "statistic": ""} | r | {"e_form": form_used})
            where.append(X_FREE if free else x_source)
    return pd.DataFrame(rows)[COLUMNS].assign(x_source=where)


def claims(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> pd.DataFrame:
    """Every claim for every x source of the run (the first source first), the rows that read
    Alg. 5 alone once (:data:`X_FREE`, among the first source's)."""
    sources = meta["params"]["x_sources"]
    params = meta["params"]
    table = pd.concat(
        [claims_for(tables, s, params, logits=i == 0) for i, s in enumerate(sources)],
        ignore_index=True,
    )
    return table[["x_source", *COLUMNS]]
