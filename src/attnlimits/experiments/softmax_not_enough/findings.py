"""Paper B's findings judged on a run's tables, through the rules of :mod:`.rules`.

Each function reads the tables a statement needs, computes its statistic, and states the row
(:meth:`attnlimits.claims.Statement.judged`) with the rule's own text; a table the run lacks
gives ``n/a`` with the reason. :func:`claims` is the experiment's claims table: each finding's
row (its verdict from its headline statements), its statements, then the theorems' checks (their
own table in the report and the docs, never evidence).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from attnlimits.claims import (
    CHECK,
    FINDING,
    HEADLINE,
    NA,
    NOT,
    PARTLY,
    REPRODUCED,
    SUPPORTING,
    Statement,
    agreement,
    finding,
    finite,
)
from attnlimits.claims.statistics import difference_interval
from attnlimits.experiments.softmax_not_enough import rules, second_lambda
from attnlimits.experiments.softmax_not_enough.appf_match import appf_rows
from attnlimits.experiments.softmax_not_enough.argmax_arm import OUTCOME, TABLE, argmax_table
from attnlimits.experiments.softmax_not_enough.claims import (
    Q_ADAPTIVE,
    Q_DISPERSE,
    Q_ENTROPY,
    Q_FIG7,
    Q_GEMMA,
    Q_LEMMA,
    Q_NORMS,
    Q_SHARP,
    Q_SPREAD,
    Q_UNIFORM,
    Q_ZERO,
    Q_ZERO_OPTIMAL,
    interval,
)
from attnlimits.experiments.softmax_not_enough.entropy_steps import entropy_steps
from attnlimits.experiments.softmax_not_enough.evaluate import pooled_gain
from attnlimits.experiments.softmax_not_enough.unjudged import (
    corollary_b1,
    escapes,
    flip_text,
    gemma_spreads,
    stable_baseline,
    unjudged_rows,
)
from attnlimits.experiments.softmax_not_enough.unstated import dispersion_rows, retrieval_rows

__all__ = ["adaptive", "checks", "claims", "degrade", "disperse", "weights"]

Row = dict[str, str]


def _top(tables: Mapping[str, pd.DataFrame]) -> pd.Series:
    """The softmax arm's mean attention on the max item per profile size (sorted by size)."""
    prof = tables["attention_profile"]
    top = prof[(prof["norm"] == "softmax") & (prof["rank"] == 0)].set_index("size")["attention"]
    return top.sort_index()


def _profile_text(top: pd.Series) -> str:
    return (
        "max item's mean attention α_max: "
        + ", ".join(f"n={s}: {v:.3f}" for s, v in top.items())
        + "; n·α_max: "
        + ", ".join(f"{s * v:.3g}" for s, v in top.items())
    )


def _slope(top: pd.Series, id_size: int) -> tuple[float, str]:
    """(1.b)'s statistic: the log-log slope of α_max against n over the two largest profile
    sizes above the training range (NaN with fewer than two, or a non-positive attention)."""
    beyond = top[top.index > id_size]
    if len(beyond) < 2 or (beyond.iloc[-2:] <= 0).any():
        return math.nan, ""
    (n0, a0), (n1, a1) = beyond.iloc[-2:].items()
    slope = math.log(a1 / a0) / math.log(n1 / n0)
    return slope, f"; slope over n = {n0:,} → {n1:,}: {slope:.2f}"


def disperse(tables: Mapping[str, pd.DataFrame], id_size: int) -> list[Row]:
    """Finding (1), §2's two observations on the attention profile: (1.a) sharp at the training
    sizes, (1.b) then falling towards uniform (its own statistic: the slope of α_max against n,
    n·α_max levelling off)."""
    top = _top(tables)
    shown = _profile_text(top)
    inside = top[top.index <= id_size]
    at = float(inside.iloc[-1]) if len(inside) else math.nan
    sharp = Statement(
        "(1.a) sharp on the training sizes",
        HEADLINE,
        Q_SHARP,
        f"ours: the max item's mean attention at the largest training size (n ≤ {id_size})",
    ).judged(shown + flip_text(rules.sharp, at), rules.sharp.text(), rules.sharp(at))
    slope, said = _slope(top, id_size)
    reading = (
        f"reading (not deciding): α_max's log-log {said.removeprefix('; ')}, "
        f"{rules.towards_uniform(slope)} by its rule"
    )
    uniform = Statement(
        "(1.b) then disperses towards uniform as the sets grow",
        HEADLINE,
        Q_UNIFORM,
        "ours: the softmax attention's normalised entropy H/log n (1 = uniform), mean over "
        "seeds and the profile's sets, rising at each larger size from the training size on",
    )
    sets = tables.get("set_attention")
    if sets is None or "entropy" not in sets:
        uniform_row = uniform.judged(
            "the run's set_attention table has no entropy (a run before it was added): "
            "python -m attnlimits.experiments.softmax_not_enough.add_tables RUN adds it; "
            + reading,
            rules.entropy_rises.text(),
            NA,
        )
    else:
        shown_h, lows = entropy_steps(sets, id_size)
        uniform_row = uniform.judged(
            f"{shown_h}; {reading}", rules.entropy_rises.text(), rules.entropy_rises(lows)
        )
    gemma = Statement(
        "(1.c) §2, Fig. 3: Gemma 2B's heads lose sharpness on a maximisation task",
        SUPPORTING,
        Q_GEMMA,
        "the paper's illustration of (1) on a pretrained model",
    ).judged(
        "not run: Fig. 3 measures Gemma 2B's heads, and this experiment trains App. A's "
        "single head only (no Gemma 2B here); (1.a) and (1.b) judge §2's observations on that "
        "head",
        "—",
        NA,
    )
    head = Statement("(1) softmax is sharp in distribution, then disperses", FINDING, Q_SHARP)
    rows = [sharp, uniform_row, gemma, stable_baseline(tables, id_size)]
    return finding(head, [*rows, *dispersion_rows(tables)])


def _per_size(summary: pd.DataFrame, id_size: int, p: str) -> tuple[list[str], str]:
    """Each size above ``id_size`` judged alone with the p-value column ``p`` (letters) and the
    rule's verdict over the sizes."""
    a = summary[(summary["norm"] == "adaptive") & (summary["size"] > id_size)].sort_values("size")
    soft = summary[summary["norm"] == "softmax"].set_index("size")["mean"]
    diffs = (a["mean"] - a["size"].map(soft)).to_numpy(float)  # the paired mean difference
    ps = a[p].to_numpy(float)
    each = []
    for d, q in zip(diffs, ps, strict=True):
        significant = finite(q) and q < rules.ALPHA.value
        each.append(NOT if significant and d < 0 else REPRODUCED if significant else PARTLY)
    return each, rules.significant_sizes(list(diffs), list(ps))


def adaptive(tables: Mapping[str, pd.DataFrame], id_size: int) -> list[Row]:
    """Finding (2): §4.1's sentence judged once, on the gain pooled over the sizes above the
    training range, with both per-size readings beside it (the paper's t-test over seeds, our
    interval over seeds and test sets, :mod:`attnlimits.claims.statistics`); Fig. 7's "even
    where it did not receive the largest logit" as a supporting statement."""
    head = Statement(
        "(2.a) larger inputs: adaptive temperature (inference only) beats softmax above the "
        "training sizes (§4.1)",
        HEADLINE,
        Q_ADAPTIVE,
        "ours: 'larger inputs' = every size above the training range, pooled (each size "
        "once); significance = the paired 95 % interval over seeds and test sets "
        "above 0 (the paper's t-test's letter is lost in our copy)",
    )
    summary = tables["summary"]
    sizes = sorted(int(n) for n in summary["size"].unique() if n > id_size)
    acc = tables.get("accuracy")
    if not sizes or acc is None or "hits" not in acc:
        rows = [head.judged("the run has no per-set hits above the training sizes", "", NA)]
    else:
        gain, low, high = pooled_gain(acc, sizes)
        verdict = rules.pooled_gain(low, high)
        boot, boot_all = _per_size(summary, id_size, "p_value")
        ttest, ttest_all = _per_size(summary, id_size, "p_ttest")
        measured = (
            f"mean gain over n = {sizes[0]:,}…{sizes[-1]:,} ({len(sizes)} sizes): "
            f"{interval(gain, low, high)} points. Per size (ours, not deciding; adaptive higher "
            f"with p < {rules.ALPHA}): by our paired interval over seeds and test sets "
            f"{boot.count(REPRODUCED)} of {len(boot)} ({agreement(verdict, boot, 'size')}; "
            f"that reading: {boot_all}); by the paper's paired t-test over seeds "
            f"{ttest.count(REPRODUCED)} of {len(ttest)} ({agreement(verdict, ttest, 'size')}; "
            f"that reading: {ttest_all})"
        )
        rows = [head.judged(measured, rules.pooled_gain.text(), verdict)]
    rows.append(_fig7(tables, id_size))
    rows += [*unjudged_rows(tables, id_size), escapes(tables, id_size)]
    rows += retrieval_rows(tables, id_size)  # round 6, points 2 and 9: n/a, readings beside
    return finding(
        Statement("(2) adaptive temperature helps on larger inputs", FINDING, Q_ADAPTIVE), rows
    )


def _fig7(tables: Mapping[str, pd.DataFrame], id_size: int) -> Row:
    """(2.b) Fig. 7: on the sets where the max item lacks the top logit, adaptive's mean
    attention on it over softmax's, per profile size above the training range."""
    statement = Statement(
        "(2.b) Fig. 7: more attention on the desired item, even where it lacks the largest logit",
        SUPPORTING,
        Q_FIG7,
        "ours: per size above the training range, over every seed's profile sets where the max "
        "item does not hold the largest logit, adaptive's mean attention on it over softmax's",
    )
    sets = tables.get("set_attention")
    if sets is None:
        return statement.judged(
            "the run has no set_attention table (a run before it was added): rerun the same "
            "command with the same --out, which resumes from the checkpoints and adds it",
            rules.higher_with_interval.text(),
            NA,
        )
    lost = _lost_top(sets, id_size)
    drawn = sets[sets["norm"] == "softmax"].groupby("size").size()
    ratios, lows, highs, said = [], [], [], []
    for n, g in lost.groupby("size"):
        if not {"softmax", "adaptive"} <= set(g["norm"]):
            continue
        r, lo, hi, rows = _ratio_interval(g)
        ratios.append(r)
        lows.append(lo)
        highs.append(hi)
        said.append(f"n={n}: {r:.2f} [{lo:.2f}, {hi:.2f}] ({rows} of {int(drawn[n])} sets)")
    measured = (
        "adaptive / softmax mean attention on the max item where it lacks the top logit, with "
        "its 95 % interval: "
        + ("; ".join(said) or "no such set above the training sizes")
        + rules.higher_flip(ratios, lows, highs)
        + f"; reading (not deciding): the ratio alone ≥ {rules.HIGHER}: "
        + rules.higher_on_target(ratios)
    )
    return statement.judged(
        measured,
        rules.higher_with_interval.text(),
        rules.higher_with_interval(ratios, lows, highs),
    )


def _lost_top(sets: pd.DataFrame, id_size: int) -> pd.DataFrame:
    """The profile's sets above the training range where the max item lacks the top logit."""
    return sets[(~sets["top"].astype(bool)) & (sets["size"] > id_size)]


def fig7_sets(sets: pd.DataFrame, id_size: int) -> pd.DataFrame:
    """(2.b)'s paired rows (round 8, point 12: committed so its ratios can be recomputed): per
    size, seed and set where the max item lacks the top logit, each arm's attention on it."""
    wide = _lost_top(sets, id_size).pivot_table(
        index=["size", "seed", "set"], columns="norm", values="target"
    )
    return wide.reset_index().rename_axis(columns=None)


def _ratio_interval(g: pd.DataFrame) -> tuple[float, float, float, int]:
    """(2.b)'s ratio of means, adaptive over softmax, on the paired (seed, set) rows of one
    size, with its 95 % interval by the delta method (the SE of mean(a − r·s) / mean(s), t on
    rows − 1 df, :func:`attnlimits.claims.statistics.difference_interval`); the rows."""
    wide = g.pivot_table(index=["seed", "set"], columns="norm", values="target")
    a, s = wide["adaptive"].to_numpy(float), wide["softmax"].to_numpy(float)
    if len(a) < 2 or s.mean() <= 0:
        return math.nan, math.nan, math.nan, len(a)
    r = a.mean() / s.mean()
    se = (a - r * s).std(ddof=1) / (math.sqrt(len(a)) * s.mean())
    ci = difference_interval(r, se, len(a) - 1)
    return float(r), float(ci.low), float(ci.high), len(a)


#: (4)'s reading in its name (round 8, point 7: the plain reading of §3's sentence, labelled;
#: the conditional one, the project's, is in (4.a)'s reading and (2.i)'s row).
PLAIN_READING = "§3's sentence read as aggregate accuracy (the plain reading)"


def degrade(tables: Mapping[str, pd.DataFrame], id_size: int) -> list[Row]:
    """Finding (4), one of our own tests (the round-5 referee's point 2): §3's "Setting
    temperature to zero will then degrade accuracy" read plainly, as aggregate accuracy over
    every set. A second reading, the project's since round 5, makes the sentence conditional on
    the clause before it (the incorrect item getting the largest logit); round 8's point 7:
    both are readings, labelled as such, and App. F's θ = 0 (said of samples it discards from
    its fit) decides neither. The trained softmax models with a hard argmax at inference
    (:mod:`.argmax_arm`) against softmax on the same seeds and sets, pooled over the sizes
    above the training range, each size beside it (not deciding); adaptive's accuracy from the
    main evaluation shown for comparison."""
    head = Statement(
        f"(4.a) our test: temperature zero (a hard argmax, inference only) degrades accuracy, "
        f"{PLAIN_READING}",
        HEADLINE,
        Q_ZERO,
        "two readings of §3's sentence, each ours to label: the plain one, which this row tests, "
        "compares the model's accuracy at temperature zero with softmax's over every set; the "
        "conditional one (the project's reading since round 5) takes its 'then' to follow the "
        "clause on the incorrect item getting the largest logit, so that it speaks of those sets "
        "only, where argmax is wrong by construction ((2.i), n/a: not judged). App. F's "
        f"'{Q_ZERO_OPTIMAL}' is said of the samples App. F discards from its fit, where the max "
        "item already has the largest logit, so it decides neither reading (round 8, point 7). "
        "The test: the trained softmax models with all attention on the largest logit (top-1, "
        "ties broken by torch.topk), against softmax on the same seeds and test sets, every size "
        "above the training range pooled (each size once). The rule was written after a timing "
        "trial of the argmax arm had printed n = 16 and 1,024 (set after earlier runs were "
        "public)",
    )
    acc = tables.get(TABLE)
    sizes = [] if acc is None else sorted(int(n) for n in acc["size"].unique() if n > id_size)
    if acc is None or not sizes:
        rows = [
            head.judged(
                "the run has no argmax_accuracy table (a run before it was added): "
                "python -m attnlimits.experiments.softmax_not_enough.add_tables RUN adds it",
                rules.degrades.text(),
                NA,
            )
        ]
    else:
        diff, low, high = pooled_gain(acc, sizes, other="argmax", baseline="softmax")
        per = argmax_table(acc)
        per = per[per["size"] > id_size]
        adaptive = tables["summary"]
        adaptive = adaptive[adaptive["norm"] == "adaptive"].set_index("size")["mean"]
        measured = (
            f"argmax − softmax over n = {sizes[0]:,}…{sizes[-1]:,} ({len(sizes)} sizes): "
            f"{interval(diff, low, high)} points. Per size (not deciding), argmax / softmax "
            "(adaptive) %: "
            + "; ".join(
                f"n={r['size']}: {r['argmax (%)'].split(' ')[0]} / "
                f"{r['softmax (%)'].split(' ')[0]} ({100 * adaptive.get(r['size'], math.nan):.1f})"
                f", {r[OUTCOME]}"
                for _, r in per.iterrows()
            )
            + "; recomputed softmax hits equal to the run's stored ones: "
            f"{float(acc['agree'].min()):.2%} (the lowest size's share)"
        )
        rows = [head.judged(measured, rules.degrades.text(), rules.degrades(low, high))]
    found = Statement(
        f"(4) our test: temperature zero degrades accuracy, {PLAIN_READING}",
        FINDING,
        Q_ZERO,
    )
    return finding(found, rows)


def weights(
    tables: Mapping[str, pd.DataFrame],
    regularizer: str,
    lam: float | None = None,
    train_s: float | None = None,
) -> list[Row]:
    """Finding (3), App. D / Fig. 9: the logit spread and the norms it is bounded by grow with
    training, though a weight-decay term is on. (3.c) (round 4, point 10; set after earlier
    runs were public, stricter): the growth at a second weight decay λ, not chosen for it, is
    a headline, judged on that λ's training log where the run's folder holds one
    (``benchmarks/second_lambda.py``); else n/a with the cost of the run it needs
    (``train_s``, the run's training stage), and the finding rule reads (3) at most partly."""
    log = tables["training_log"].sort_values("step")
    per_seed = log.groupby("seed")
    first, last = per_seed.first(), per_seed.last()
    steps = f"step {int(log['step'].min()):,} → {int(log['step'].max()):,}"
    rows = []
    for claim, column, reading, caveat in (
        (
            "(3.a) the logit spread grows with training",
            "spread",
            "ours: the largest logit spread on the probe batch, last logged step over first",
            # referee point 11: the choice of λ and this row are not independent
            "; not independent of our λ: λ = 1e-3 was chosen because with it the spread still "
            "grows (the set-up table), so this row cannot tell the paper's growth from our "
            "choice; (3.c) asks it of a second λ",
        ),
        (
            "(3.b) so do the norms of the relevant vectors and matrices, despite weight decay",
            "bound",
            "ours: Prop. 3.1's bound 2·σ_max(W_k)·‖q‖·max‖h_i‖/√W, the product of those norms "
            f"(the per-parameter norms are not logged), last logged step over first; weight "
            f"decay: the {regularizer} L2 term",
            "; the bound holds activations (the projected query's ‖q‖ and the items' max‖h_i‖) "
            "besides the parameter norm σ_max(W_k) the paper names, so its growth is not the "
            "parameters' alone (σ_max(W_q) and σ_max(W_k) are not logged apart); with λ chosen "
            "as in (3.a)",
        ),
    ):
        ratio = (last[column] / first[column]).median()
        # referee point 22: the endpoints' medians and the median of per-seed ratios differ
        measured = (
            f"median over {len(first)} seeds, {steps}: {first[column].median():.3g} → "
            f"{last[column].median():.3g}; the median of the per-seed ratios last / first: "
            f"× {ratio:.2f} (the verdict reads it)" + flip_text(rules.grows, float(ratio)) + caveat
        )
        rows.append(
            Statement(claim, HEADLINE, Q_NORMS, reading).judged(
                measured, rules.grows.text(), rules.grows(float(ratio))
            )
        )
    head = Statement(
        "(3) sharpness is learnt with growing weights (App. D, Fig. 9)", FINDING, Q_NORMS
    )
    second = tables.get("second_lambda_log")
    if second is not None and len(second):
        rows.append(second_lambda.run_row(second, lam))
    else:
        rows.append(second_lambda.not_run(lam, train_s))
    return finding(head, [*rows, gemma_spreads()])


#: An upper end of Lemma 2.1's bound this close to 1 allows every α_max (a bound that cannot
#: fail at these spreads: "vacuous" in the row, referee point 17); a reading, not a rule.
_VACUOUS = 1e-3
#: log of float32's smallest positive (subnormal) number, 1.4e-45: a lower end of Lemma 2.1's
#: bound under it no float32 α could reach (round 6, point 8; the run stores log α).
_LOG_TINY = float(np.log(np.finfo(np.float32).smallest_subnormal))


def _bound_share(sets: pd.DataFrame) -> tuple[float, str]:
    """The share of the softmax arm's sets where Lemma 2.1's two-sided bound holds."""
    soft = sets[sets["norm"] == "softmax"]
    n, spread = soft["size"].to_numpy(float), soft["spread"].to_numpy(float)
    log_lower = -np.logaddexp(0.0, np.log(n - 1) + spread)
    log_upper = -np.logaddexp(0.0, np.log(n - 1) - spread)
    tol = rules.ROUNDING.value
    ok = (soft["log_min"].to_numpy() >= log_lower - tol) & (
        soft["log_max"].to_numpy() <= log_upper + tol
    )
    upper = np.exp(log_upper)
    # referee point 17: where the upper end is ≥ 1 − VACUOUS it allows any α_max: it cannot fail
    loose = upper >= 1 - _VACUOUS
    where = [
        f"n = {int(n_):,}: {int(loose[n == n_].sum())} of {int((n == n_).sum())}"
        for n_ in sorted(set(n.tolist()))
    ]
    # round 6, point 8: how many lower ends a float32 α could even reach; the run stores
    # log α (log_softmax), so the check compares logs and a lower end under float32's
    # smallest number is still checked, not vacuous by underflow
    above = log_lower > _LOG_TINY
    lower = (
        f"the lower end's median {np.exp(np.median(log_lower)):.2g}, above float32's smallest "
        f"number ({np.exp(_LOG_TINY):.2g}) on {int(above.sum())} of {len(above)} sets; the "
        f"check compares log α (stored log α_min down to {soft['log_min'].min():.0f}), so the "
        "other lower ends are checked too; either end holds for any logits (the lemma is "
        "algebra), so the check tests our computation of α and Δ, not the model"
    )
    said = (
        f"{int(ok.sum())} of {len(ok)} sets (sizes "
        + ", ".join(f"{int(s):,}" for s in sorted(soft["size"].unique()))
        + f"); spread Δ median {np.median(spread):.3g}; the upper end's median "
        f"{np.median(upper):.3g}: vacuous (≥ {1 - _VACUOUS:g}, it allows any α_max, so it "
        f"cannot fail) on {int(loose.sum())} of {len(loose)} sets ({'; '.join(where)}); {lower}"
    )
    return float(ok.mean()) if len(ok) else math.nan, said


def checks(tables: Mapping[str, pd.DataFrame]) -> list[Row]:
    """The theorems' checks: Lemma 2.1 / Thm 2.2 "must disperse", Lemma 2.1's two-sided bound,
    Prop. 3.2's monotone entropy, Prop. 3.1's bound on the spread."""
    top = _top(tables)
    falls = np.diff(top.to_numpy()) < 0
    rows = [
        Statement(
            "dispersion is inevitable with bounded logits (Lemma 2.1, Thm 2.2)",
            CHECK,
            Q_DISPERSE,
            "a theorem: with logits bounded, every coefficient is O(1/n)",
        ).judged(
            _profile_text(top),
            rules.falls_everywhere.text(),
            rules.falls_everywhere(float(falls.mean()) if len(falls) else math.nan),
        )
    ]
    lemma = Statement(
        "Lemma 2.1's two-sided bound holds on every test set",
        CHECK,
        Q_LEMMA,
        "a theorem; its formula is lost in our copy, ours from the proof's Eqs. 6–7 at θ = 1: "
        "1/(1 + (n−1)e^Δ) ≤ α_k ≤ 1/(1 + (n−1)e^−Δ), Δ the set's logit spread",
    )
    sets = tables.get("set_attention")
    if sets is None:
        rows.append(lemma.judged("the run has no set_attention table", rules.bounded.text(), NA))
    else:
        share, said = _bound_share(sets)
        rows.append(lemma.judged(said, rules.bounded.text(), rules.bounded([share])))
    ent = tables["entropy_vs_temperature"]
    mono = [
        bool((np.diff(g.sort_values("T")["entropy"].to_numpy()) >= -1e-9).all())
        for _, g in ent.groupby("spread")
    ]
    rows.append(
        Statement(
            "entropy falls monotonically as temperature falls (Prop. 3.2)",
            CHECK,
            Q_ENTROPY,
            "a theorem: dH/dβ = −β Var_p(e) ≤ 0",
        ).judged(
            "H(θ) non-decreasing on a 41-point θ grid for spreads "
            + ", ".join(f"{v:g}" for v in sorted(ent["spread"].unique()))
            + f": {all(mono)}",
            rules.monotone.text(),
            rules.monotone(float(np.mean(mono))),
        )
    )
    log = tables["training_log"]
    ratio = log["bound"] / log["spread"]
    ok = (log["spread"] <= log["bound"] * (1 + 1e-6)).to_numpy()
    rows.append(
        Statement(
            "the logit spread stays under the Prop. 3.1 bound during training",
            CHECK,
            Q_SPREAD,
            "a theorem; its formula is lost in our copy, so the bound is our "
            "reconstruction: spread ≤ 2·σ_max(W_k)·‖q‖·max‖h_i‖/√W, q the projected "
            "query (docs/max_retrieval.md)",
        ).judged(
            f"bound / spread over {len(log)} logged steps: min {ratio.min():.2f}, "
            f"median {ratio.median():.2f}",
            rules.spread_bound.text(),
            rules.spread_bound(float(ok.mean())),
        )
    )
    return rows


def claims(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> pd.DataFrame:
    """Paper B's findings on the shared vocabulary (:mod:`attnlimits.claims.verdicts`):
    each finding's row (its verdict from its headline statements), its statements, then the
    theorems' checks (their own table in the report, never evidence)."""
    train = meta["benchmark"]["train"]
    id_size = int(train["max_size"])
    rows = [
        *disperse(tables, id_size),
        *adaptive(tables, id_size),
        *weights(
            tables,
            str(train.get("regularizer", "coupled")),
            train.get("weight_decay"),
            meta.get("wall_time_total_s", {}).get("max_retrieval.train"),
        ),
        *degrade(tables, id_size),
        *appf_rows(tables),
        *checks(tables),
        corollary_b1(tables, id_size),
    ]
    return pd.DataFrame(rows)
