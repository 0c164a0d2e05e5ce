"""Paper A's findings (i)–(v), each as its statements, measured on a run's tables and judged by
the rules of :mod:`.rules`.

Every ``claim_*`` function takes the tables of one x source (windows pooled, or one window) and
the reading it is judged under (the form of E, the KS level, the ε range, the statistic) and
returns rows ``claim, role, paper, reading, measured, rule, verdict``: the finding first, its
verdict from its headline statements alone (:func:`attnlimits.claims.verdicts.finding`),
then one row per statement (headline, supporting, check; :mod:`.statements` holds their roles
and the paper's words). "Not testable" is decided here, where a statement's precondition fails
in the data, with the reason. :mod:`.claims` judges them over windows and under each
alternative reading.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np
import pandas as pd

from attnlimits.claims import Graded, finite, verdicts
from attnlimits.claims.statistics import difference_interval, loglog_slope
from attnlimits.experiments.limitations import rules
from attnlimits.experiments.limitations.statements import S
from attnlimits.experiments.paper_a_readings import grid_floor, grid_limits

__all__ = [
    "E_COLS",
    "claim_i",
    "claim_ii",
    "claim_iii",
    "claim_iv",
    "claim_v",
    "claim_variants",
    "critical_from_tests",
    "e_cols",
    "judged_row",
    "plateau_change",
    "saturating_reading",
    "slope_bounds",
    "slopes_in_l",
]

Row = dict[str, str]


class Judged(Protocol):
    """A rule of the claims engine: judges values, prints itself."""

    def __call__(self, *values: Any) -> str: ...

    def text(self) -> str: ...


E_COLS = {  # grid column -> the report's name of that form of E
    "expectation_exact": "exact",
    "expectation": "derived",
    "expectation_main_text": "printed",
    "expectation_rms": "rms",
}


def _slope(x: pd.Series | np.ndarray, y: pd.Series | np.ndarray) -> float:
    """The log-log slope (:func:`attnlimits.claims.statistics.loglog_slope`) as a float: NaN
    with fewer than two positive points."""
    return float(loglog_slope(np.asarray(x, float), np.asarray(y, float)).estimate)


def _per_head(df: pd.DataFrame, by: str, cols: list[str]) -> pd.DataFrame:
    return df.groupby([by, "layer", "head"])[cols].mean().reset_index()


def e_cols(df: pd.DataFrame) -> list[str]:
    """The forms of E a table holds, in :data:`E_COLS` order (exact first)."""
    return [c for c in E_COLS if c in df and df[c].notna().any()]


def judged_row(
    key: str,
    measured: str,
    rule: Judged,
    *values: Any,
    untested: str = "",
    note: str = "",
    uses_e: bool = False,
) -> Row:
    """Statement ``key``'s row (:data:`.statements.S`) judged by ``rule`` on ``values``: the
    rule is given once, so its printed text and its verdict cannot come from different rules.
    ``untested``: the precondition that failed (the verdict is then not testable, the reason
    leads the measured text); ``note``: appended to the rule's text (where it was measured
    from); ``uses_e``: the verdict depends on the form of E. A one-number rule
    (:class:`~attnlimits.claims.Graded`) records its statistic, for the sensitivity lines."""
    verdict = verdicts.NOT_TESTABLE if untested else rule(*values)
    row = S[key].judged(measured, rule.text() + note, verdict, untested)
    if isinstance(rule, Graded) and len(values) == 1 and finite(values[0]) and not untested:
        row["statistic"] = f"{float(values[0]):.6g}"
    return row | ({"uses_e": "yes"} if uses_e else {})


def _finding(key: str, rows: list[Row]) -> list[Row]:
    out = verdicts.finding(S[key], rows)
    if any(r.get("uses_e") for r in rows if r["role"] == verdicts.HEADLINE):
        out[0]["uses_e"] = "yes"
    return out


# ---- (i) and (ii): distances against L and N --------------------------------------------------


def slopes_in_l(
    alg1: pd.DataFrame, forms: list[str] | None = None
) -> tuple[float, dict[str, float], pd.DataFrame]:
    """Log-log slopes of mean d̃ and of mean E (each form, or ``forms``) against L (per-head
    means first)."""
    forms = e_cols(alg1) if forms is None else forms
    cols = ["distance", "bound", *forms]
    ph = _per_head(alg1, "L", cols)
    mean = ph.groupby("L")[cols].mean()
    slope_d = _slope(mean.index, mean["distance"])
    return slope_d, {c: _slope(mean.index, mean[c]) for c in forms}, ph


def claim_i(alg1: pd.DataFrame, form: str) -> list[Row]:
    """(i) at N = 5, the distance d̃ grows roughly linearly in L (the headline: the finding's
    sentence is about the distance); E grows so too (supporting: Fig. 2a's caption, which
    Corollary 2(i)'s E ≈ Σ‖α_i x_i‖₂ ≤ max‖x_i‖₂ contradicts); the Thm 1.1 bound is safe (a
    check) but loose. ``form``: the grid column of E the E row uses."""
    slope_d, slopes_e, ph = slopes_in_l(alg1, [form])
    top = int(ph["L"].max())
    at_top = ph[ph["L"] == top][["distance", form]].mean()
    safe = float((ph["bound"] >= ph["distance"] * (1 - 1e-6)).mean())
    loose = float((ph["bound"] / ph["distance"]).median())
    e_over_d = at_top[form] / at_top["distance"]
    rows = [
        judged_row(
            "(i.a)",
            f"slope {slope_d:.2f}",
            rules.linear_growth,
            slope_d,
        ),
        judged_row(
            "(i.b)",
            f"E {E_COLS[form]}: slope {slopes_e[form]:.2f}; E / d̃ at L = {top}: {e_over_d:.3g}",
            rules.linear_growth,
            slopes_e[form],
            uses_e=True,
        ),
        judged_row(
            "(i.c)",
            f"bound ≥ d̃ in {safe:.1%} of (head, L)",
            rules.safe,
            safe,
        ),
        judged_row(
            "(i.d)",
            f"median bound / d̃ = {loose:.2f}",
            rules.bound_loose,
            loose,
        ),
    ]
    return _finding("(i)", rows)


def plateau_change(
    alg2: pd.DataFrame, forms: list[str] | None = None
) -> tuple[float, int, int, pd.DataFrame]:
    """Relative change of mean d̃ from N = 20 (else the middle N) to the largest N, the two N,
    and the per-N means of d̃, the bound and each form of E (or ``forms``; per-head means
    first)."""
    cols = ["distance", "bound", *(e_cols(alg2) if forms is None else forms)]
    mean = _per_head(alg2, "N", cols).groupby("N")[cols].mean()
    ns = mean.index.to_numpy()
    n_hi = int(ns.max())
    n_from = 20 if 20 in ns else int(ns[len(ns) // 2])
    change = float(mean.loc[n_hi, "distance"] / mean.loc[n_from, "distance"] - 1)
    return change, n_from, n_hi, mean


def converge_interval(alg2: pd.DataFrame, form: str, n: int) -> tuple[float, float, float]:
    """E / d̃ at ``n`` (mean over heads of each, per-head means over windows first) and its 95 %
    interval from E exact's standard error (Monte Carlo and row sampling; d̃ has none; a
    normal interval, :func:`attnlimits.claims.statistics.difference_interval`): the closed
    forms have no noise, their interval is the point."""
    at = alg2[alg2["N"] == n]
    d = float(_per_head(at, "N", ["distance"])["distance"].mean())
    e = float(_per_head(at, "N", [form])[form].mean())
    se_col = f"{form}_se"
    se = float(np.sqrt((at[se_col] ** 2).sum()) / len(at)) if se_col in at else 0.0
    r = difference_interval(e, se)
    return e / d, float(r.low) / d, float(r.high) / d


def _derived_beside(alg2: pd.DataFrame, form: str, n: int) -> str:
    """Beside exact E's (ii.c): E derived / d̃ at ``n`` (the round-8 referee's point 7). E
    derived ≤ E (Jensen: docs/errata.md, Theorem 1.2), so it is a lower bound on E / d̃ free of
    E exact's Monte Carlo sampling: lifting E exact's negative-ε cells to it cannot lift E / d̃
    above it (a bias of E exact where ε ≥ 0 it does not rule out)."""
    if form != "expectation_exact" or "expectation" not in alg2:
        return ""
    low = converge_interval(alg2, "expectation", n)[0]
    return (
        f"; E derived / d̃ at N = {n} (E derived ≤ E by Jensen, docs/errata.md: a lower bound "
        f"on E / d̃ free of E exact's sampling; shown, not judged): {low:.3f}"
    )


def claim_ii(alg2: pd.DataFrame, form: str) -> list[Row]:
    """(ii) at L_max, as N approaches 100 the true and expected distances converge (headline,
    at N = 100 or the largest N of the run's grid, with its interval); the bound tightens; d̃
    plateaus beyond N ≈ 20 (Fig. 2b)."""
    change, n_from, n_hi, mean = plateau_change(alg2, [form])
    n_lo = int(mean.index.min())
    n_at = 100 if 100 in mean.index else n_hi
    ratio = mean["bound"] / mean["distance"]
    r, r_lo, r_hi = converge_interval(alg2, form, n_at)
    e_over_d = (mean[form] / mean["distance"]).loc[:n_at]
    gaps = (e_over_d - 1).abs().to_numpy()
    towards = len(gaps) >= 2 and bool((np.diff(gaps) < 0).all())
    rows = [
        judged_row(
            "(ii.a)",
            f"d̃ changes {change:+.1%} from N = {n_from} to N = {n_hi}",
            rules.plateau,
            change,
        ),
        judged_row(
            "(ii.b)",
            f"bound / d̃ {ratio.loc[n_from]:.2f} (N = {n_from}) → "
            f"{ratio.loc[n_hi]:.2f} (N = {n_hi}); {ratio.loc[n_lo]:.2f} at N = {n_lo}",
            rules.tightens,
            float(ratio.loc[n_hi] / ratio.loc[n_from]),
            note=f" (measured from N = {n_from}, Fig. 2b's 'beyond 20')",
        ),
        judged_row(
            "(ii.c)",
            f"E {E_COLS[form]} / d̃ at N = {n_at}: {r:.3f} [{r_lo:.3f}, {r_hi:.3f}]"
            + ("" if n_at == 100 else " (the run has no N = 100: its largest N)")
            + "; over N: "
            + ", ".join(f"{int(n)}: {v:.3f}" for n, v in e_over_d.items())
            + (" (towards 1 at every step" if towards else " (not towards 1 at every step")
            + "; shown, not judged: E / d̃ → 1 as N → L on any head)"
            + _derived_beside(alg2, form, n_at),
            rules.converges,
            r_lo,
            r_hi,
            uses_e=True,
        ),
    ]
    return _finding("(ii)", rows)


# ---- (iii): critical N -------------------------------------------------------------------------


def critical_from_tests(tests: pd.DataFrame, form: str, alpha: float) -> pd.DataFrame:
    """Per L the critical N at level ``alpha`` with E ``form`` (a column label of ``e_form``):
    the first N whose KS p-value is ≥ ``alpha``, missing (``<NA>``) where none is; ``n_min`` and
    ``n_max`` the smallest and largest N tested; ``limit_lo`` and ``limit_hi``
    (:func:`~attnlimits.experiments.paper_a_readings.grid_limits`): the two limits of
    (iii.b) at the resolution of the N tested at that L; ``limit_floor``
    (:func:`~attnlimits.experiments.paper_a_readings.grid_floor`): the lower end of its band."""
    sub = tests[tests["e_form"] == form].sort_values(["L", "N"])
    passed = sub[sub["p_value"] >= alpha].groupby("L")["N"].min()
    out = sub.groupby("L")["N"].agg(n_min="min", n_max="max")
    out["critical_n"] = passed.reindex(out.index).astype("Int64")
    limits = {int(n): grid_limits(int(n), g) for n, g in sub.groupby("L")["N"]}
    out["limit_lo"] = [limits[int(n)][0] for n in out.index]
    out["limit_hi"] = [limits[int(n)][1] for n in out.index]
    floors = {int(n): grid_floor(int(n), g) for n, g in sub.groupby("L")["N"]}
    out["limit_floor"] = [floors[int(n)] for n in out.index]
    return out.reset_index()


def slope_bounds(lengths: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[float, float]:
    """The least-squares log-log slope of a quantity known to lie in [``low``, ``high``] at each
    of ``lengths`` (equal ends where it is known; a censored one: its bounds), as the smallest
    and largest slope those bounds allow. The slope is Σ w_i·log y_i with fixed weights w_i, so
    each bracketed y_i takes the end that lowers (raises) it."""
    x = np.log(np.asarray(lengths, dtype=float))
    if len(x) < 2:
        return math.nan, math.nan
    w = (x - x.mean()) / ((x - x.mean()) ** 2).sum()
    lo, hi = np.log(np.asarray(low, dtype=float)), np.log(np.asarray(high, dtype=float))
    return float(np.where(w > 0, lo, hi) @ w), float(np.where(w > 0, hi, lo) @ w)


def _crit_text(crit: pd.DataFrame) -> str:
    def one(r: pd.Series) -> str:
        if pd.isna(r["critical_n"]):
            return f"L={int(r['L'])}: > {int(r['n_max'])}"
        edge = ", the grid's last N" if r["critical_n"] == r["n_max"] else ""
        return f"L={int(r['L'])}: {int(r['critical_n'])} ({r['critical_n'] / r['L']:.3f}·L{edge})"

    return ", ".join(one(r) for _, r in crit.sort_values("L").iterrows())


def claim_iii(crit: pd.DataFrame, label: str) -> list[Row]:
    """(iii) the critical N is about 0.06·L (headline; Fig. 2c: "fewer than 6 %"); it grows
    sub-linearly (supporting: the two contradict, docs/errata.md). ``crit``: per L the critical
    N (missing: none up to ``n_max``, censored: counted as > ``n_max``, against the headline),
    from :func:`critical_from_tests` or one draw of heads; ``n_min`` the smallest N tested (1
    where absent). Where KS accepts already at ``n_min`` the two distances cannot be told
    apart at any N, so no critical N is measured: not testable at that L. ``limit_lo`` and
    ``limit_hi`` (where given): the limits at the grid's resolution per L."""
    crit = crit.sort_values("L")
    n_min = crit["n_min"] if "n_min" in crit else pd.Series(1, index=crit.index)
    found = crit["critical_n"].notna()
    blind = (found & (crit["critical_n"] == n_min)).to_numpy(dtype=bool)
    ok = crit[~blind]
    blind_txt = ", ".join(str(int(n)) for n in crit.loc[blind, "L"])
    why = f"KS accepts at the smallest N already at L = {blind_txt}, so no critical N is measured"
    fractions = [
        None if pd.isna(c) else c / n for c, n in zip(ok["critical_n"], ok["L"], strict=True)
    ]
    lo, hi = rules.PAPER_FRACTION.value, rules.PAPER_FRACTION * rules.ABOUT
    if "limit_lo" in ok:
        limits = list(zip(ok["limit_lo"].astype(float), ok["limit_hi"].astype(float), strict=True))
    else:
        limits = [(lo, hi)] * len(ok)
    if "limit_floor" in ok:
        floors = ok["limit_floor"].astype(float).tolist()
    else:
        floors = [rules.PAPER_FRACTION / rules.ABOUT] * len(ok)
    ends = list(zip(fractions, limits, floors, strict=True))
    below = sum(f is not None and low <= f <= a for f, (a, _), low in ends)
    near = sum(f is not None and low <= f <= b for f, (_, b), low in ends)
    under = sum(f is not None and f < low for f, _, low in ends)
    resolution = ", ".join(f"{a:.4g}" for a, _ in limits) if "limit_lo" in ok else ""
    floor_txt = ", ".join(f"{low:.4g}" for low in floors) if "limit_floor" in ok else ""
    low_txt = f"{rules.PAPER_FRACTION / rules.ABOUT:.2g}"
    censored = ok["critical_n"].isna().to_numpy()
    known = ok["critical_n"].astype(float).to_numpy()
    s_min, s_max = slope_bounds(
        ok["L"].to_numpy(),
        np.where(censored, ok["n_max"], known),
        np.where(censored, ok["L"], known),
    )
    n_cens = int(censored.sum())
    blind_note = f"; not testable at L = {blind_txt} (KS accepts at the smallest N)"
    if not len(ok):
        about = judged_row("(iii.b)", "", rules.about_most, untested=why, uses_e=True)
    else:
        about = judged_row(
            "(iii.b)",
            f"critical N / L in [{low_txt}, {lo:.2g}] at {below}, in [{low_txt}, {hi:.2g}] at "
            f"{near} of {len(ok)} L"
            + (f"; below {low_txt} at {under}" if under else "")
            + (f" (0.06 at the grid's resolution: {resolution})" if resolution else "")
            + (f" ({low_txt} at the grid's resolution: {floor_txt})" if floor_txt else "")
            + (f" ({n_cens} with none up to 0.9·L: > 0.9·L)" if n_cens else "")
            + (blind_note if blind.any() else ""),
            rules.about_most,
            fractions,
            limits,
            floors,
            uses_e=True,
        )
    if len(ok) < 2:
        sub = judged_row(
            "(iii.c)", "", rules.sub_linear, untested=why + " (fewer than 2 L left)", uses_e=True
        )
    else:
        slope = f"{s_min:.2f}" if s_min == s_max else f"in [{s_min:.2f}, {s_max:.2f}]"
        sub = judged_row(
            "(iii.c)",
            f"log-log slope {slope} over {len(ok)} L"
            + (f" ({n_cens} censored: critical N in (n_max, L])" if n_cens else ""),
            rules.sub_linear,
            s_min,
            s_max,
            uses_e=True,
        )
    # (iii.a): KS accepting only at the grid's last N (⌊0.9·L⌋), where the top-N and a random
    # N-set share 90 % of the keys and d̃ and E meet by construction, shows no critical N
    edge = (found & (crit["critical_n"] == crit["n_max"])).to_numpy(dtype=bool)
    n_edge = int(edge.sum())
    rows = [
        judged_row(
            "(iii.a)",
            f"{label}: {_crit_text(crit)}"
            + (f"; at {n_edge} of {len(crit)} L only at the grid's last N" if n_edge else ""),
            rules.exists,
            (found.to_numpy(dtype=bool) & ~edge).tolist(),
            uses_e=True,
        ),
        about,
        sub,
    ]
    return _finding("(iii)", rows)


# ---- (iv) and (v) ------------------------------------------------------------------------------


def claim_iv(alg4: pd.DataFrame) -> list[Row]:
    """(iv) N_s/N falls until N ≈ 16, then saturates in [0.70, 0.85] (the headline: the band);
    the upper bound tracks the maxima; the lower bound is loose; Theorem 2's bounds hold (a
    check). The bounds over heads where Assumption 2 holds (δ > 0): where none does, they are
    not testable."""
    ph = _per_head(alg4, "N", ["ratio", "lower", "upper"])
    if "assumption2" in alg4:
        ok = alg4.groupby(["N", "layer", "head"])["assumption2"].all().to_numpy()
        ph = ph.assign(assumption2=ok)
    else:
        ph = ph.assign(assumption2=True)
    med = ph.groupby("N")["ratio"].median()
    ns = [int(n) for n in med.index]
    above_one = [n for n in ns if n > 1]
    n16 = min(above_one, key=lambda n: (abs(n - 16), -n)) if above_one else None
    first = above_one[0] if above_one else None
    drop = med[first] - med[n16] if n16 is not None and n16 != first else math.nan
    change = med[ns[-1]] - med[n16] if n16 is not None and ns[-1] != n16 else math.nan
    tail = med[med.index >= (n16 or math.inf)]
    bounds = ph[ph["assumption2"] & (ph["N"] > 1)]
    top = bounds.groupby("N").agg(max_ratio=("ratio", "max"), upper=("upper", "max"))
    # (iv.e): where the lower bound is ≤ 0 any N_s/N lies above it (vacuous); "conservative" is
    # judged where it says something
    informative = bounds[bounds["lower"] > 0]
    gap = float((informative["ratio"] - informative["lower"]).median())
    vacuous = f"{len(bounds) - len(informative)} of {len(bounds)}"
    # (iv.f): Theorem 2 is stated for every N; at N = 1 its upper bound is below N_s/N = 1 by
    # arithmetic (docs/errata.md), at N ≥ 2 it is ≥ e^(−1/4) and the lower bound mostly ≤ 0:
    # both shares shown, not judged (the round-5 referee's point 6)
    every = ph[ph["assumption2"]]
    slack = 1e-6 * every["ratio"].abs()  # float rounding of the per-head means
    held = (every["lower"] <= every["ratio"] + slack) & (every["ratio"] <= every["upper"] + slack)
    valid = held.tolist()
    at_one = held[every["N"] == 1]
    above_one = held[every["N"] > 1]
    tail_txt = ", ".join(f"N={n}: {v:.2f}" for n, v in tail.items())
    track_txt = ", ".join(f"N={n}: {r.max_ratio:.2f}/{r.upper:.2f}" for n, r in top.iterrows())
    no_delta = "" if len(bounds) else "δ = 0 (Assumption 2 fails) in every head at every N ≥ 2"
    no_info = "the lower bound is ≤ 0 at every (head with δ > 0, N ≥ 2): any N_s/N lies above it"
    flat = float(top["upper"].max() - top["upper"].min()) if len(top) else math.nan
    peak = float(ph.loc[ph["N"] >= (n16 or math.inf), "ratio"].max()) if n16 else math.nan
    rows = [
        judged_row(
            "(iv.a)",
            f"median over heads N={first}: {med.get(first, math.nan):.2f} → N={n16}: "
            f"{med.get(n16, math.nan):.2f} (N = 1 left out: 1 by definition)",
            rules.falls,
            drop,
        ),
        judged_row(
            "(iv.b)",
            f"median changes {change:+.2f} from N = {n16} to N = {ns[-1]}"
            if not math.isnan(change)
            else f"the run's grid ends at N = {ns[-1]}",
            rules.saturates,
            change,
            note=" (n/a: no N beyond 16)",
        ),
        judged_row("(iv.c)", f"median {tail_txt}", rules.in_band, tail.tolist()),
        judged_row(
            "(iv.d)",
            f"max N_s/N / max upper bound over heads with δ > 0: {track_txt}; the "
            f"bound's range over N {flat:.3f}",
            rules.by_construction,
            untested=no_delta,
        ),
        judged_row(
            "(iv.e)",
            f"lower bound ≤ 0 (vacuous) in {vacuous} (head with δ > 0, N ≥ 2); where it is "
            f"> 0, median N_s/N − lower bound = {gap:.2f}",
            rules.lower_loose,
            gap,
            untested=no_delta or (no_info if informative.empty else ""),
        ),
        judged_row(
            "(iv.f)",
            f"lower ≤ N_s/N ≤ upper in {np.mean(valid) if valid else math.nan:.1%} "
            f"of (head with δ > 0, N); at N = 1: {at_one.mean() if len(at_one) else math.nan:.1%} "
            "(fails by arithmetic: there N_s/N = 1 and the upper bound is exp(−r²/16M²) < 1); "
            f"at N ≥ 2: {above_one.mean() if len(above_one) else math.nan:.1%} (nearly "
            f"vacuous: the upper bound is ≥ e^(−1/4) ≈ 0.78 whatever the tokens, the lower "
            f"bound ≤ 0 in {vacuous})",
            rules.by_construction,
            untested=no_delta,
        ),
        judged_row(
            "(iv.g)",
            f"max over heads of N_s/N at N ≥ {n16}: {peak:.2f}",
            rules.four_fifths,
            peak,
        ),
    ]
    return _finding("(iv)", rows)


def _slope_over(curve: pd.Series) -> float:
    return _slope(curve.index, curve) if len(curve) >= 2 else math.nan


def _drop(top: pd.DataFrame, t_from: float, t_to: float) -> float:
    """The smallest factor over ε of g(``t_from``, ε) / g(``t_to``, ε), over the ε below
    ``t_from`` only: at ε ≥ T the change saturates (g ≤ √2/ε, flat in T), so its fall says
    nothing of the curve's (NaN where no ε is below ``t_from``)."""
    below = [e for e in top.columns if e < t_from]
    if not below:
        return math.nan
    return float((top.loc[t_from, below] / top.loc[t_to, below]).min())


def saturating_reading() -> str:
    """The label of (v)'s alternative reading of its slopes (the round-5 referee's point 1), as
    the claims table's ``alternatives`` column and the README's summary line print it."""
    return f"a slope in ({rules.ONE_OVER_T_HI}, {rules.RISES}] saturates"


def claim_v(
    alg5: pd.DataFrame,
    eps: str = "all",
    statistic: str = "sensitivity",
    saturating: bool = False,
) -> list[Row]:
    """(v) for T < 0.1 the curves follow 1/T (the headline); smaller ε gives larger values; for
    T ≥ 1 they collapse and drop by about two orders of magnitude (each as written; "1/T" and
    "two orders" contradict, docs/errata.md); GPT-2 operates close to the limit at T < 0.1, the
    curve tracks 1/(4T) and saturates at low T, and lowering T increases Jacobian norms (the
    paper's discussion and conclusions). The curve per ε: the maximum over heads of
    ``statistic`` (the row mean, Alg. 5's; or ``sensitivity_row_max``, the max over rows);
    ``eps``: every ε of the run, or ``"smallest"`` (where δ approximates the derivative).
    "Drop by two orders" is judged from T = 0.01 to T = 1 (reading (b)); across T ≥ 1 (reading
    (c)) the max over heads of g falls as 1/T almost whatever the model, shown in the check
    (v.h) and not judged; each factor
    over the ε below the lower T only. ``saturating``: the alternative reading of a slope in
    (ONE_OVER_T_HI, RISES] as saturating, not as rising slower than 1/T, in both (v.a) and
    (v.f) (:data:`.rules.one_over_t_saturating`, :data:`.rules.tracks_law_saturating`)."""
    follows = rules.one_over_t_saturating if saturating else rules.one_over_t
    tracks = rules.tracks_law_saturating if saturating else rules.tracks_law
    how = "max" if statistic == "sensitivity_row_max" else "mean"
    ph = alg5.groupby(["eps", "T", "layer", "head"])[statistic].agg(how)
    top = ph.groupby(["eps", "T"]).max().unstack("eps")  # rows T, columns ε ascending
    if eps == "smallest":
        top = top[[min(top.columns)]]
    low = top[top.index < 0.1]
    # Corollary 3's 1/T is the derivative's; g(T, ε) = ‖Δα‖₂/ε approximates it only while the
    # step is small against T (ε < T). At ε ≥ T the change saturates (‖Δα‖₂ ≤ √2: g ≤ √2/ε,
    # flat in T), so an ε is judged over the T < 0.1 above it, and is not testable with fewer
    # than MIN_T of them (a slope through two or three points)
    deriv = [low[low.index > e][e] for e in top.columns]
    few = [len(d) < rules.MIN_T.value for d in deriv]
    slopes = [math.nan if f else _slope_over(d) for d, f in zip(deriv, few, strict=True)]
    # (v.b) compares the ε below T only: at ε ≥ T the cap g ≤ √2/ε orders the curves by ε by
    # arithmetic, as it flattens them in T for (v.a)
    below = [[e for e in top.columns if e < t] for t in low.index]
    order = [
        bool((np.diff(r) <= np.abs(r[:-1]) * 1e-9).all())
        for r in (row[b].to_numpy() for (_, row), b in zip(low.iterrows(), below, strict=True))
        if len(r) >= 2
    ]
    no_pair = f"at no T < 0.1 are two ε below T (the grid's ε: {', '.join(f'{e:g}' for e in top)})"
    t_lo, t_hi = top.index[top.index <= 0.1], top.index[top.index >= 1]
    factor = factor_a = factor_c = math.nan  # reading (b), from T = 0.01; (a), from T = 0.1
    t_from = min(t_lo, key=lambda t: abs(math.log10(t) + 2)) if len(t_lo) else math.nan
    if len(t_lo) and len(t_hi):
        factor = _drop(top, t_from, t_hi.min())
        factor_a = _drop(top, t_lo.max(), t_hi.min())
    if len(t_hi) > 1:  # reading (c): across T ≥ 1
        factor_c = _drop(top, t_hi.min(), t_hi.max())
    high = top.loc[t_hi]
    spread = (high.max(axis=1) / high.min(axis=1)).tolist() if top.shape[1] > 1 else []
    # (v.d): where every ε < T the finite differences all approximate the derivative, so the
    # curves meet by construction; the collapse is judged at the T ≥ 1 where some ε ≥ T only
    open_t = [t for t in t_hi if top.columns.max() >= t]
    judged = [v for t, v in zip(t_hi, spread, strict=False) if t in open_t]
    by_def = "every ε < T at each T ≥ 1: the curves meet by construction (shown, not judged)"
    slopes_txt = ", ".join(
        f"ε={e:g}: " + (f"not testable ({len(d)} such T)" if f else f"{s:.2f} ({len(d)} T)")
        for e, s, f, d in zip(top.columns, slopes, few, deriv, strict=True)
    )
    # the round-7 referee's point 8: near T = ε the finite difference is far from the derivative
    # (a curve can rise, then fall at the lowest T), so the slope over T ≥ 10ε is shown beside
    far = [(e, d[d.index >= 10 * e]) for e, d in zip(top.columns, deriv, strict=True)]
    far_txt = ", ".join(
        f"{_slope_over(d):.2f} at ε = {e:g} ({len(d)} T)" for e, d in far if len(d) >= 2
    )
    if far_txt:
        slopes_txt += f"; over T ≥ 10ε only (shown, not judged): {far_txt}"
    few_note = (
        f"no ε has {rules.MIN_T:g} T in (ε, 0.1) (the finite difference is not the derivative)"
    )
    spread_txt = ", ".join(f"T={t:g}: {v:.2f}" for t, v in zip(t_hi, spread, strict=False))
    t_max = f"{t_hi.max() if len(t_hi) else math.nan:g}"
    # the factor from every T < 0.1 of the grid (the round-5 referee's point 16): how much the
    # verdict owes to the start T that reading (b) fixes at T = 0.01
    starts = [(t, _drop(top, t, t_hi.min()) if len(t_hi) else math.nan) for t in t_lo if t < 0.1]
    starts_txt = ", ".join(
        f"T={t:.3g}: {f:.3g}×" if finite(f) else f"T={t:.3g}: no ε < T" for t, f in starts
    )
    drop_txt = (
        f"smallest factor over ε < T, from T = {t_from:g} to "
        f"T = {t_hi.min() if len(t_hi) else math.nan:g}: {factor:.3g}× (reading (b)); from "
        f"T = {t_lo.max() if len(t_lo) else math.nan:g}: {factor_a:.3g}× (reading (a)); from "
        f"each T < 0.1 of the grid: {starts_txt or '—'}; across T ≥ 1: the check (v.h)"
    )
    slope_1 = _slope_over(top[top.index >= 1].max(axis=1))
    # per head, the same factor (the round-5 referee's point 17): what makes reading (c) near
    # certain is the max over heads, not softmax as such
    per_head = ""
    e_c = [e for e in top.columns if len(t_hi) > 1 and e < t_hi.min()]
    if e_c:
        heads = ph.loc[min(e_c)].unstack(["layer", "head"])
        each = (heads.loc[t_hi.min()] / heads.loc[t_hi.max()]).dropna()
        per_head = (
            f"; per head (ε = {min(e_c):g}), the same factor: median {each.median():.3g}×, "
            f"under 100× for {int((each < 100).sum())} of {len(each)} heads, under "
            f"{rules.DROP_ABOUT}× for {int((each < rules.DROP_ABOUT.value).sum())}"
        )
    by_txt = (
        f"smallest factor over ε < T, across T ≥ 1, T = 1 to {t_max}: {factor_c:.3g}×; slope of "
        f"max g over T ≥ 1: {slope_1:.2f} (1/T: −1){per_head}"
    )
    # the Fig. 4 curve: max over ε (and heads) of g, against the printed bound min{1/(4T), √2}
    envelope = top.max(axis=1)
    limit = np.minimum(1 / (4 * envelope.index.to_numpy()), math.sqrt(2))
    near = (envelope / limit)[envelope.index < 0.1]
    exact = alg5.groupby(["T", "layer", "head"])["jacobian_norm"].mean().groupby("T").max()
    t01 = min(exact.index, key=lambda t: abs(math.log10(t) + 1)) if len(exact) else math.nan
    rise = (
        float(exact.iloc[0] / exact.loc[t01]) if len(exact) and exact.index[0] < t01 else math.nan
    )
    exact_near = (exact / np.minimum(1 / (4 * exact.index.to_numpy()), math.sqrt(2)))[
        exact.index < 0.1
    ]
    lowest = envelope[envelope.index <= 10 * envelope.index.min()] if len(envelope) else envelope
    # (v.f): over T ≥ 1, the max over heads of g falls as 1/T (the check (v.h)); "tracks" is judged
    # over 0.1 ≤ T ≤ 1, where it can fail
    tracking = envelope[(envelope.index >= 0.1) & (envelope.index <= 1)]
    slope_hi, slope_lo = _slope_over(tracking), _slope_over(lowest)
    rows = [
        judged_row(
            "(v.a)",
            f"log-log slopes over T in (ε, 0.1): {slopes_txt}",
            follows,
            slopes,
            untested=few_note if all(few) else "",
        ),
        judged_row(
            "(v.b)",
            f"values fall with ε (the ε < T) at {sum(order)} of {len(order)} T < 0.1 with two "
            "ε below T",
            rules.ordered,
            order if top.shape[1] > 1 else [],
            untested=no_pair if top.shape[1] > 1 and not order else "",
        ),
        judged_row("(v.c)", drop_txt, rules.drops, factor),
        judged_row(
            "(v.d)",
            f"max / min over ε: {spread_txt or '—'}; judged at T ≤ the largest ε "
            f"({', '.join(f'{t:g}' for t in open_t) or 'none'}): there some ε ≥ T",
            rules.collapses,
            judged,
            untested=by_def if spread and not open_t else "",
        ),
        judged_row(
            "(v.e)",
            "max g / min{1/(4T), √2} at T < 0.1: "
            + ", ".join(f"T={t:g}: {v:.3g}" for t, v in near.items())
            + "; the exact ‖J‖₂ (max over heads of the row mean) / bound: "
            + ", ".join(f"{v:.3g}" for v in exact_near),
            rules.near_limit,
            float(near.max()) if len(near) else math.nan,
        ),
        judged_row(
            "(v.f)",
            f"slope of max g over 0.1 ≤ T ≤ 1: {slope_hi:.2f} ({len(tracking)} T; over T ≥ 1 "
            f"the max over heads falls as 1/T: (v.h)); over T ≤ "
            f"{10 * envelope.index.min() if len(envelope) else math.nan:g}: {slope_lo:.2f}",
            tracks,
            slope_hi,
            slope_lo,
        ),
        judged_row(
            "(v.g)",
            f"exact ‖J‖₂, max over heads of the row mean: T = {exact.index[0]:g}: "
            f"{exact.iloc[0]:.3g}, T = {t01:g}: {exact.get(t01, math.nan):.3g} "
            "(separability is measured at the model's own temperature only)",
            rules.increases,
            rise,
        ),
        judged_row("(v.h)", by_txt, rules.by_construction),
    ]
    return _finding("(v)", rows)


def claim_variants() -> list[Row]:
    """The paper's footnote on larger GPT-2 variants: no run of ours has one (n/a)."""
    return [
        judged_row(
            "Larger",
            "n/a: no larger variant of either model is run (SmolLM2-135M and MiniLM-L6 are the "
            "pretrained models shipped on PyPI; the hub is out of reach)",
            rules.not_run,
        )
    ]
