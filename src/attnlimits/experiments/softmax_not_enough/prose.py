"""The numbers ``docs/max_retrieval.md``'s prose quotes, generated from the doc's saved tables.

Referee point 12 (docs/referee_round3.md): sentences typed by hand kept the 5,000-step run's
numbers after the tables became the 20,000-step run's. Every sentence of the doc that quotes a
number of a saved table (``docs/data/softmax_not_enough/*.csv``, read back as text by
:func:`.doc.load`) is one of these blocks instead, so it follows the tables when
:mod:`.doc` re-derives them. Each function takes those text tables and returns Markdown;
:func:`prose_blocks` names them as the doc's ``<!-- generated: NAME -->`` blocks. A table the
saved data lack leaves its blocks out (the doc keeps what it had, and the doc test says so).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import pandas as pd

__all__ = [
    "agreement_line",
    "appf_gap",
    "bins_reading",
    "dispersion_notes",
    "held_out_reading",
    "per_size_notes",
    "per_size_reading",
    "pooled_paragraph",
    "prose_blocks",
    "theta_floor",
]

_CELL = re.compile(r"(-?[\d.]+) \[(-?[\d.]+), (-?[\d.]+)\]")
#: The level the per-size outcomes use (the sizes table's ``p`` columns).
_LEVEL = 0.05


def _cell(text: str) -> tuple[float, float, float]:
    """A "mean [low, high]" cell as numbers."""
    found = _CELL.search(str(text))
    if found is None:
        raise ValueError(f"not a 'mean [low, high]' cell: {text!r}")
    m, lo, hi = (float(v) for v in found.groups())
    return m, lo, hi


def _sizes(sizes: pd.DataFrame) -> pd.DataFrame:
    """The per-size table with numbers: the first row is the largest training size (the
    table starts there), the rest are above the training range."""
    out = pd.DataFrame({"size": sizes["size"].astype(int), "sets": sizes["sets"].astype(int)})
    for column, name in (("softmax (%)", "soft"), ("adaptive (%)", "adap")):
        out[name] = [_cell(c)[0] for c in sizes[column]]
    gain = [_cell(c) for c in sizes["difference (pts)"]]
    out["gain"], out["gain_lo"], out["gain_hi"] = zip(*gain, strict=True)
    out["p"] = sizes["p"].astype(float)
    out["p_t"] = sizes["p (t-test, seeds only)"].astype(float)
    return out


def _n(values: list[int]) -> str:
    """Sizes as "32 and 16,384" or "64, 128 and 256"."""
    said = [f"{v:,}" for v in values]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]


def _better(s: pd.DataFrame, column: str) -> pd.Series:
    return (s[column] < _LEVEL) & (s["gain"] > 0)


def _claim(claims: pd.DataFrame, start: str) -> pd.Series:
    rows = claims[claims["claim"].str.startswith(start)]
    if rows.empty:
        raise ValueError(f"claims.csv has no row {start!r}")
    return rows.iloc[0]


def agreement_line(sizes: pd.DataFrame, steps: pd.DataFrame, run: pd.DataFrame) -> str:
    """How far the default run's accuracies lie from the same length's rows of the
    training-length ablation (another run of the same models' settings)."""
    length = int(str(run["steps"].iloc[0]).replace(",", ""))
    same = steps[steps["steps"].astype(int) == length]
    s = _sizes(sizes).set_index("size")
    worst, where = 0.0, 0
    for quantity, name in (("softmax", "soft"), ("adaptive", "adap")):
        row = same[same["quantity"] == quantity]
        if row.empty:
            return f"(the training-length ablation has no {length:,}-step rows to compare)"
        for size in s.index:
            if str(size) in row.columns:
                d = abs(_cell(row[str(size)].iloc[0])[0] - s.loc[size, name])
                worst, where = (d, size) if d > worst else (worst, where)
    return (
        f"Its accuracies agree with the {length:,}-step rows of the training-length ablation "
        f"to within {worst:.1f} points (largest at n = {where:,}, where each seed sees "
        f"{s.loc[where, 'sets']:,} test sets); that ablation predates Adam's fused kernel, "
        "which changes the update only by float rounding."
    )


def pooled_paragraph(claims: pd.DataFrame, sizes: pd.DataFrame) -> str:
    """§4.1's sentence judged once on the pooled gain, and the sizes that agree with it."""
    row = _claim(claims, "(2.a)")
    found = re.search(
        r"mean gain over n = ([\d,]+)…([\d,]+) \((\d+) sizes\): (.+?) points", row["measured"]
    )
    if found is None:
        raise ValueError("claims.csv's (2.a) row does not state its pooled gain")
    first, last, count, gain = found.groups()
    s = _sizes(sizes).iloc[1:]
    off = s.loc[~_better(s, "p"), "size"].tolist()
    agree = f"{len(s) - len(off)} of the {len(s)} sizes agree with the pooled verdict alone"
    if off:
        agree += f" ({_n(off)} do not: their intervals include 0)"
    return (
        "**The §4.1 claim, pooled**: the paper's text says \"applying adaptive temperature "
        "leads to a more performant retrieval head on larger inputs, with statistical "
        "significance ascertained via a paired\" (the test's letter is lost in our copy); the "
        f"claims table judges that sentence once, on the gain pooled over the sizes above the "
        f"training range ({first} to {last}, each size once, {count} sizes): **{gain} points**, "
        f"so {row['verdict']}. The paper's Table 1 gives a p-value per out-of-distribution "
        "size, but its numbers are lost in our copy, so the per-size rows below are our detail "
        f"with nothing of the paper's to compare against; {agree}."
    )


def per_size_reading(sizes: pd.DataFrame) -> str:
    """The (2.a) bullet: how many sizes each per-size reading counts, and which fall out."""
    s = _sizes(sizes).iloc[1:]
    ours, paper = _better(s, "p"), _better(s, "p_t")
    off = s[~ours]
    why = ""
    if len(off):
        why = (
            f": at {_n(off['size'].tolist())} the {_n(off['sets'].tolist())} shared test sets "
            "leave intervals that include 0"
        )
    return (
        "- **(2.a) depends on the per-size reading, and says so beside the verdict**: the "
        "verdict is the pooled gain's; its `measured` counts the sizes significant by the "
        f"paper's paired t-test over seeds ({int(paper.sum())} of {len(s)}) and by our paired "
        f"interval over seeds and test sets ({int(ours.sum())} of {len(s)}{why}), each with the "
        "verdict that reading alone would give."
    )


def _range(values: list[int]) -> str:
    return f"{values[0]:,}" if len(values) == 1 else f"{values[0]:,} to {values[-1]:,}"


def per_size_notes(
    sizes: pd.DataFrame, claims: pd.DataFrame, beta: pd.DataFrame, norms: pd.DataFrame
) -> str:
    """The bullets under the accuracy tables: the largest gain, the sizes where it is not
    significant, the training size, and adaptive with our refits."""
    s = _sizes(sizes)
    ood, at = s.iloc[1:], s.iloc[0]
    top = ood.loc[ood["gain"].idxmax()]
    second = ood.drop(index=top.name).loc[lambda d: d["gain"].idxmax()]
    better = ood[_better(ood, "p")]
    sizes_all = ood["size"].tolist()
    run_of = better["size"].tolist()
    contiguous = (
        run_of == sizes_all[sizes_all.index(run_of[0]) :][: len(run_of)] if run_of else False
    )
    where = f"at every size from {_range(run_of)}" if contiguous else f"at n = {_n(run_of)}"
    lines = [
        "- **Per size (ours; Table 1's per-size p-values are lost in our copy)**: adaptive "
        f"temperature, applied at inference only, is better than softmax by "
        f"{top['gain']:+.1f} points at n = {int(top['size']):,} ({top['soft']:.1f} → "
        f"{top['adap']:.1f} %, interval of the gain [{top['gain_lo']:.1f}, "
        f"{top['gain_hi']:.1f}]) and {second['gain']:+.1f} at n = {int(second['size']):,}, with "
        f"p ≤ {better['p'].max():.2g} {where} (the interval over seeds and test sets)."
    ]
    off = ood[~_better(ood, "p")]
    if len(off):
        lines[0] += (
            f" At {_n(off['size'].tolist())} the gains ("
            + ", ".join(f"{g:+.1f}" for g in off["gain"])
            + " points) have intervals that include zero (p = "
            + ", ".join(f"{p:.2g}" for p in off["p"])
            + "); the t-test over seeds, which leaves the test-set error every seed shares out, "
            "gives p = "
            + ", ".join(f"{p:.2g}" for p in off["p_t"])
            + " there — the difference this page's intervals make."
        )
    last = s.iloc[-1]
    lines[0] += (
        f" Both fall towards chance (10 %) by n = {int(last['size']):,} ({last['soft']:.1f} and "
        f"{last['adap']:.1f} %): adaptive temperature delays dispersion, it does not remove it."
    )
    sharp = re.search(rf"n={int(at['size'])}: ([\d.]+)", _claim(claims, "(1.a)")["measured"])
    lines.append(
        f"- **In distribution** (n = {int(at['size']):,}) adaptive is higher by {at['gain']:.1f} "
        f"points ({at['soft']:.1f} → {at['adap']:.1f} %); the t-test over seeds gives "
        f"p = {at['p_t']:.2g} (the ten seeds agree closely), the interval over seeds and sets "
        f"p = {at['p']:.2g}. The rule acts only on rows with H > 0.5 nats, and most rows are "
        "sharp in distribution" + (f" (mean top attention {sharp.group(1)})." if sharp else ".")
    )
    lines.append(_refits_note(beta, norms))
    return "\n".join(lines)


def _betas(beta: pd.DataFrame, fit: str) -> str:
    row = beta[beta["fit"] == fit]
    row = row.loc[[pd.to_numeric(row["theta_min"], errors="coerce").fillna(0).idxmin()]]
    return " / ".join(f"{float(row[c].iloc[0]):.3g}" for c in beta.columns if c.startswith("β("))


def _refits_note(beta: pd.DataFrame, norms: pd.DataFrame) -> str:
    """Adaptive with our two refits beside the published polynomial, at the two sizes where
    the refits gain most."""
    table = norms.set_index("norm")
    names = ["adaptive", "adaptive (refit)", "adaptive (refit_median)"]
    if not set(names) <= set(table.index):
        return "- **With our App. F refits**: not in this run's evaluation."
    means = table.loc[names].map(lambda c: _cell(c)[0])
    lift = (means.loc[names[1:]].min() - means.loc["adaptive"]).sort_values(ascending=False)
    shown = sorted(lift.index[:2], key=int)
    overlap = all(
        _cell(table.loc[names[1], c])[1] <= _cell(table.loc[names[2], c])[2]
        and _cell(table.loc[names[2], c])[1] <= _cell(table.loc[names[1], c])[2]
        for c in table.columns
    )
    said = " and ".join(
        f"{means.loc[names[1], c]:.1f} / {means.loc[names[2], c]:.1f} % at n = {int(c):,} "
        f"(published: {means.loc['adaptive', c]:.1f} %)"
        for c in shown
    )
    hs = " / ".join(c[4:-1] for c in beta.columns if c.startswith("β("))
    return (
        f"- **With our App. F refits** (β at H = {hs} of {_betas(beta, 'refit')} by least "
        f"squares, {_betas(beta, 'refit_median')} by the median fit, against the published "
        f"{_betas(beta, 'paper')}) adaptive temperature reaches {said} (least squares / median "
        "fit); the two refits' intervals "
        + ("overlap at every size" if overlap else "do not overlap at every size")
        + ". On this task, sharper is better wherever the max item already has the top logit."
    )


def dispersion_notes(claims: pd.DataFrame, loss: pd.DataFrame | None = None) -> str:
    """The Prop. 3.1 and Thm 2.2 bullets: the spread over training, the bound's margin and the
    max item's attention from the smallest profile size to the largest."""
    bound = re.search(
        r"min ([\d.]+), median ([\d.]+)", _claim(claims, "the logit spread")["measured"]
    )
    profile = re.findall(r"n=(\d+): ([\d.]+)", _claim(claims, "(1.a)")["measured"])
    grows = re.search(
        r"step ([\d,]+) → ([\d,]+): ([\d.]+) → ([\d.]+)", _claim(claims, "(3.a)")["measured"]
    )
    lines = []
    said = "- **Prop. 3.1**: the largest scaled-logit spread on the probe batch grows with training"
    if grows:
        first, last, v0, v1 = grows.groups()
        said += f" (median over seeds {v0} at step {first}, {v1} at {last}"
        if loss is not None and len(loss):
            ends = ", ".join(
                f"{float(sp):.0f} at {int(st):,}"
                for st, sp in zip(loss["steps"], loss["final spread"], strict=True)
            )
            said += f"; at the end of each length of the training-length ablation: {ends}"
        said += ")"
    if bound:
        said += (
            f"; the bound stays at least {bound.group(1)}× above it (median {bound.group(2)}) at "
            "every logged step of every seed"
        )
    lines.append(
        said + ". Sharp retrieval is bought with large weights, and the spread stays bounded, "
        "so dispersion at large n is unavoidable (Lemma 2.1)."
    )
    if len(profile) >= 2:
        (n0, a0), (n1, a1) = profile[0], profile[-1]
        lines.append(
            f"- **Thm 2.2**: the mean attention on the top-priority item falls from {a0} "
            f"(n = {int(n0):,}) to {a1} (n = {int(n1):,})."
        )
    return "\n".join(lines)


def bins_reading(bins: pd.DataFrame) -> str:
    """How each polynomial follows the entropy bins' medians and quartiles."""
    b = bins.apply(pd.to_numeric)
    many = b[b["n"] > 1]
    ratio = b["refit"] / b["beta_median"]
    above = ratio > 1
    inside = lambda col: (many[col] >= many["beta_q25"]) & (many[col] <= many["beta_q75"])  # noqa: E731
    mid = b[(b["entropy_median"] >= 1) & (b["entropy_median"] <= 4)]
    off_median = (mid["refit_median"] / mid["beta_median"] - 1).abs().max()
    below_q25 = int((b["paper"] < b["beta_q25"]).sum())
    top = b.loc[(b["refit"] - b["beta_q75"]).idxmax()]
    return (
        f"The least-squares refit runs above the bin's median β* in {int(above.sum())} of "
        f"{len(b)} bins (by {100 * (ratio[above].min() - 1):.0f}–"
        f"{100 * (ratio[above].max() - 1):.0f} % there) and above the upper quartile in "
        f"{int((b['refit'] > b['beta_q75']).sum())} (most at H ≈ {top['entropy_median']:.1f}: "
        f"{top['refit']:.3g} against a median of {top['beta_median']:.3g} and an upper quartile "
        f"of {top['beta_q75']:.3g}): the points near β* = 1/θ_min pull it up. The median fit "
        f"(`refit_median`) stays within the quartiles in {int(inside('refit_median').sum())} of "
        f"the {len(many)} bins with more than one point and within {100 * off_median:.0f} % of "
        f"the medians from 1 to 4 nats; the θ-fit (`refit_inverse`) within the quartiles in "
        f"{int(inside('refit_inverse').sum())} of them. The published polynomial is below the "
        f"lower quartile in {below_q25} of the {len(b)} bins."
    )


def theta_floor(beta: pd.DataFrame, fits: pd.DataFrame) -> str:
    """What raising θ* to the check's floor does to each fit (the grid's lost lower bound)."""
    hs = [c for c in beta.columns if c.startswith("β(")]
    b = beta[beta["fit"] != "paper"].assign(t=lambda d: d["theta_min"].astype(float))
    f = fits[fits["fit"] != "paper"].assign(t=lambda d: d["theta_min"].astype(float))
    lo, hi = sorted(b["t"].unique())[:2]

    def at(fit: str, t: float, col: str) -> float:
        return float(b[(b["fit"] == fit) & (b["t"] == t)][col].iloc[0])

    def rmse(fit: str, t: float) -> float:
        return float(f[(f["fit"] == fit) & (f["t"] == t)]["rmse_beta"].iloc[0])

    med = [(at("refit_median", lo, c), at("refit_median", hi, c)) for c in hs]
    moved = max(abs(a - z) / a for a, z in med)
    median = (
        "stays " + " / ".join(f"{a:.3g}" for a, _ in med) + " at both"
        if moved < 0.005
        else "moves by at most " + f"{100 * moved:.0f} %"
    )
    return (
        f"**The lower bound of the θ grid** (lost in our copy, a setting) moves the "
        f"least-squares fit and not the median fit: raising θ* to at least {hi:g} takes the "
        f"least-squares β at H = {hs[-1][4:-1]} from {at('refit', lo, hs[-1]):.3g} to "
        f"{at('refit', hi, hs[-1]):.3g} and its RMSE from {rmse('refit', lo):.3g} to "
        f"{rmse('refit', hi):.3g}, while the median fit's β at "
        f"H = {' / '.join(h[4:-1] for h in hs)} {median}. This is why the median fit is the one to "
        "read."
    )


def appf_gap(beta: pd.DataFrame, seed_fits: pd.DataFrame) -> str:
    """How far the median fit lies from the published polynomial, and whether every seed's
    does."""
    hs = [c for c in beta.columns if c.startswith("β(")]
    paper = beta[beta["fit"] == "paper"].iloc[0]
    med = beta[beta["fit"] == "refit_median"]
    med = med.loc[med["theta_min"].astype(float).idxmin()]
    ratio = [float(med[c]) / float(paper[c]) for c in hs]
    seeds = seed_fits[seed_fits["fit"] == "refit_median"]
    h2 = seeds["beta_H2"].astype(float)
    above = int((h2 > float(paper["β(H=2)"])).sum())
    return (
        "The published polynomial is not what this procedure gives on our models: by the "
        f"median fit our β is {ratio[0]:.1f}× the published at H = 1 and "
        f"{min(ratio[1:]):.1f}–{max(ratio[1:]):.1f}× at H = 2 … 4, and {above} of the "
        f"{len(h2)} seeds' own median fits lie above the published at H = 2 (β(H = 2) between "
        f"{h2.min():.2f} and {h2.max():.2f})."
    )


def held_out_reading(held: pd.DataFrame) -> str:
    """The held-out refits' deciding rows in one sentence."""
    names = {"refit": "least squares", "refit_median": "median fit"}
    deciding = held[held["evaluated on seeds"].str.startswith("all")]
    said = "; ".join(
        f"{r['gain over published (pts)']} points, {r['outcome']} ({names.get(r['fit'], r['fit'])})"
        for _, r in deciding.iterrows()
    )
    folds = held[~held["evaluated on seeds"].str.startswith("all")]
    each = set(folds["outcome"])
    return (
        f"On held-out seeds, the gain over the published polynomial: {said}; each fold alone: "
        + ", ".join(sorted(each))
        + "."
    )


def prose_blocks(data: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    """The generated prose blocks, by name: each one whose tables the saved data hold and
    state what it quotes (a run without them, such as a test's tiny one, leaves it out; the
    doc test requires every block the doc marks, so the committed doc cannot lose one)."""
    makers: dict[str, tuple[tuple[str, ...], Callable[..., str]]] = {
        "prose_agree": (("sizes", "steps", "run"), agreement_line),
        "prose_per_size_reading": (("sizes",), per_size_reading),
        "prose_pooled": (("claims", "sizes"), pooled_paragraph),
        "prose_per_size": (("sizes", "claims", "fit_beta", "norms"), per_size_notes),
        "prose_dispersion": (("claims", "steps_loss"), dispersion_notes),
        "prose_bins": (("fit_bins",), bins_reading),
        "prose_theta_floor": (("fit_beta", "fit_fits"), theta_floor),
        "prose_appf_gap": (("fit_beta", "fit_seed_fits"), appf_gap),
        "prose_held_out": (("held_out",), held_out_reading),
    }
    out = {}
    for name, (tables, make) in makers.items():
        if not all(t in data and len(data[t]) for t in tables):
            continue
        try:
            out[name] = make(*(data[t] for t in tables))
        except (KeyError, ValueError, IndexError):  # the tables do not state what it quotes
            continue
    return out
