"""Claims of a *Softmax is not Enough* run, judged on its tables.

Significance throughout is the paired bootstrap over seeds *and* test sets
(:mod:`.uncertainty`; ``p_value`` in the summary), at level :data:`ALPHA`. The paper's paired
t-test over seeds (``p_ttest``) is shown beside it: it leaves out the test-set error that every
seed shares.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from attnlimits.claims.verdicts import (
    CHECK,
    HEADLINE,
    NA,
    NOT,
    PARTLY,
    REPRODUCED,
    Statement,
    agreement,
    finding,
)
from attnlimits.experiments.softmax_not_enough.appf_match import appf_rows
from attnlimits.experiments.softmax_not_enough.evaluate import pooled_gain
from attnlimits.experiments.softmax_not_enough.temperature_fit import fold_label

__all__ = [
    "ALPHA",
    "CHANCE",
    "EVIDENCE",
    "QUOTES",
    "claims",
    "held_out_refits",
    "interval",
    "size_table",
]

#: What decides each claim (report.html links the verdict to them): (pattern in the claim's
#: text, figure names, table names).
EVIDENCE = (
    (r"dispers|sharp on", ("attention_profile",), ("attention_profile",)),
    (r"larger inputs", ("accuracy",), ("summary",)),
    (r"entropy falls", ("entropy_vs_temperature",), ("entropy_vs_temperature",)),
    (r"logit spread", ("logit_spread",), ("training_log",)),
)

#: Chance accuracy (10 classes) and the level of every test.
CHANCE = 0.1
ALPHA = 0.05
#: Paper B's own words (found word for word in our copy; a test checks each).
Q_DISPERSE = "any learned circuitry must disperse as the number of items grows at test time"
Q_ADAPTIVE = (
    "As is evident, applying adaptive temperature leads to a more performant retrieval head on "
    "larger inputs, with statistical significance ascertained via a paired"
)
Q_SHARP = (
    "While the model indeed attributes focus sharply and cleanly on the maximum item, this only "
    "holds true on the problem sizes that the model was trained on."
)
Q_UNIFORM = "the attentional coefficients eventually disperse towards the uniform distribution"
Q_ENTROPY = "decreasing the temperature must monotonically decrease the entropy"
Q_SPREAD = "Proposition 3.1 (Sharpness in Transformers necessitates large weights)."
QUOTES = (Q_DISPERSE, Q_SHARP, Q_UNIFORM, Q_ADAPTIVE, Q_ENTROPY, Q_SPREAD)
#: (1.a) "sharply and cleanly": the max item's mean attention at the largest training size at
#: least SHARP (reproduced) or MOST (partly: it holds most of the mass). Written 2026-11-27,
#: after the 2026-11-25 run (0.92 at n = 16) was public: 0.9 is "cleanly" (one item holds
#: nine tenths), 0.5 "most of the mass"; neither was tuned to that number.
SHARP, MOST = 0.9, 0.5


def interval(mean: float, low: float, high: float, scale: float = 100.0) -> str:
    """ "m [lo, hi]" in percent (or points): a point estimate and its interval."""
    if not np.isfinite(low):
        return f"{scale * mean:.1f}"
    return f"{scale * mean:.1f} [{scale * low:.1f}, {scale * high:.1f}]"


def _found(diff: float, p: float) -> str:
    if not p < ALPHA:
        return "no significant difference"
    return "adaptive significantly better" if diff > 0 else "softmax significantly better"


def size_table(summary: pd.DataFrame, id_size: int) -> pd.DataFrame:
    """Per set size: the test sets drawn, softmax and adaptive (mean over seeds and sets, 95 %
    interval over both), the paired difference with its interval, the paired bootstrap's p
    and the paper's t-test's p, our per-size finding and, out of distribution where it is not
    "adaptive significantly better", a likely reason. This is *our* detail: the paper's Table 1
    gives a p-value per size, but its numbers are lost in our copy, so there is nothing per
    size to compare with; its §4.1 sentence is judged once, pooled, by :func:`claims`."""
    s = summary[summary["norm"].isin(["softmax", "adaptive"])]
    soft = s[s["norm"] == "softmax"].set_index("size")
    adap = s[s["norm"] == "adaptive"].set_index("size")
    rows = []
    for size in sorted(soft.index.intersection(adap.index)):  # eleven sizes at most
        b, a = soft.loc[size], adap.loc[size]
        p = float(a["p_value"])
        found = _found(float(a["diff"]), p)
        ood = size > id_size
        why = ""
        if ood and found != "adaptive significantly better":
            if max(a["mean"], b["mean"]) < 1.5 * CHANCE:
                why = "both near chance (10 %): dispersion has won at this size (Lemma 2.1)"
            else:
                why = "the interval over seeds and test sets is too wide here (few sets), or "
                why += "the logits are already sharp (H ≤ 0.5 nats, where the rule does not act)"
        rows.append(
            {
                "size": int(size),
                "sets": int(a["n_sets"]),
                "softmax (%)": interval(b["mean"], b["ci_low"], b["ci_high"]),
                "adaptive (%)": interval(a["mean"], a["ci_low"], a["ci_high"]),
                "difference (pts)": interval(a["diff"], a["diff_low"], a["diff_high"]),
                "p": f"{p:.1e}",
                "p (t-test, seeds only)": f"{float(a['p_ttest']):.1e}",
                "ours (per size)": found,
                "likely reason": why,
            }
        )
    return pd.DataFrame(rows)


def held_out_refits(
    acc: pd.DataFrame, folds: pd.DataFrame, id_size: int, *, n_boot: int = 2000
) -> pd.DataFrame:
    """Is a refit a better rule than the published polynomial, on seeds it was not fitted on?

    ``folds`` is :func:`.fits.fold_fits`'s table; ``acc`` the evaluation with the published
    ``adaptive`` and each ``adaptive (fit, fold k)`` (:func:`.temperature_fit.fold_label`) on
    every seed. Per fit: the gain over ``adaptive``, pooled over the sizes above ``id_size``
    (each size once) with its paired interval over seeds and test sets, on fold 0's held-out
    seeds, on fold 1's, and on both together (every seed judged by the rule not fitted on
    it), which decides: interval above 0 "better", below 0 "worse", else "no difference"."""
    sizes = sorted(int(n) for n in acc["size"].unique() if n > id_size)
    base = acc[acc["norm"] == "adaptive"]
    rows = []
    for fit, per in folds.groupby("fit", sort=False):  # two fits
        held = []
        for f in per.itertuples():  # two folds
            mine = acc[(acc["norm"] == fold_label(fit, int(f.fold))) & acc["seed"].isin(f.held_out)]
            held.append(mine.assign(norm="held out"))
            part = pd.concat([mine, base[base["seed"].isin(f.held_out)]])
            g = pooled_gain(
                part, sizes, other=fold_label(fit, int(f.fold)), n_boot=n_boot, baseline="adaptive"
            )
            # plain ints: numpy's own would print as np.int64(0) before a redraw and 0 after
            fitted, held_out = ([int(s) for s in seeds] for seeds in (f.fit_seeds, f.held_out))
            rows.append(
                {
                    "fit": fit,
                    "fitted on seeds": str(fitted),
                    "evaluated on seeds": str(held_out),
                    "gain": g,
                }
            )
        both = pd.concat([*held, base])
        g = pooled_gain(both, sizes, other="held out", baseline="adaptive", n_boot=n_boot)
        rows.append(
            {
                "fit": fit,
                "fitted on seeds": "the other fold",
                "evaluated on seeds": "all (each on its held-out fold)",
                "gain": g,
            }
        )
    out = pd.DataFrame(rows)
    gains = out.pop("gain")
    out["gain over published (pts)"] = [interval(*g) for g in gains]
    out["held-out verdict"] = [
        "better" if lo > 0 else "worse" if hi < 0 else "no difference" for _, lo, hi in gains
    ]
    return out


def _disperse(tables: Mapping[str, pd.DataFrame], id_size: int) -> list[dict[str, str]]:
    """§2's two observations (headline) on the attention profile: the max item's mean
    attention is sharp at the training sizes, then falls towards uniform as the sets grow; and
    Lemma 2.1 / Thm 2.2's "must disperse" as a check (a theorem, never evidence)."""
    prof = tables["attention_profile"]
    top = prof[(prof["norm"] == "softmax") & (prof["rank"] == 0)].set_index("size")["attention"]
    top = top.sort_index()
    shown = "max item's mean attention: " + ", ".join(f"n={s}: {v:.3f}" for s, v in top.items())
    inside, beyond = top[top.index <= id_size], top[top.index >= id_size]
    sharp = Statement(
        "(1.a) sharp on the training sizes",
        HEADLINE,
        Q_SHARP,
        f"ours: the max item's mean attention at the largest training size (n ≤ {id_size})",
    )
    if len(inside):
        at = float(inside.iloc[-1])
        v = REPRODUCED if at >= SHARP else PARTLY if at >= MOST else NOT
        sharp_row = sharp.judged(
            shown, f"≥ {SHARP}: reproduced; ≥ {MOST}: partly; below: not reproduced", v
        )
    else:
        sharp_row = sharp.judged(shown, "", NA)
    falls = bool((np.diff(beyond.to_numpy()) < 0).all())
    lower = len(beyond) > 1 and float(beyond.iloc[-1]) < float(beyond.iloc[0])
    spread = Statement(
        "(1.b) then disperses towards uniform as the sets grow",
        HEADLINE,
        Q_UNIFORM,
        "ours: the max item's mean attention falls from the largest training size at every "
        "larger size of the profile",
    )
    rule = "falls at every larger size: reproduced; lower at the largest only: partly; else not"
    spread_row = spread.judged(
        shown, rule, NA if len(beyond) < 2 else REPRODUCED if falls else PARTLY if lower else NOT
    )
    check = Statement(
        "dispersion is inevitable with bounded logits (Lemma 2.1, Thm 2.2)",
        CHECK,
        Q_DISPERSE,
        "a theorem: with logits bounded, every coefficient is O(1/n)",
    ).judged(
        shown,
        "the max item's mean attention falls at every larger size",
        REPRODUCED if bool((np.diff(top.to_numpy()) < 0).all()) else NOT,
    )
    head = Statement("(1) softmax is sharp in distribution, then disperses", "finding", Q_SHARP)
    return [*finding(head, [sharp_row, spread_row]), check]


def _adaptive(
    tables: Mapping[str, pd.DataFrame], id_size: int, n_boot: int
) -> list[dict[str, str]]:
    """§4.1 judged once: the gain pooled over the sizes above the training range (each size
    once) with its interval over seeds and test sets; the per-size findings beside it."""
    head = Statement(
        "(2.a) larger inputs: adaptive temperature (inference only) beats softmax above the "
        "training sizes (§4.1)",
        HEADLINE,
        Q_ADAPTIVE,
        "ours: 'larger inputs' = every size above the training range, pooled (each size "
        "once); significance = the paired bootstrap's 95 % interval over seeds and test sets "
        "above 0 (the paper's t-test's letter is lost in our copy)",
    )
    rule = "pooled gain's 95 % interval above 0 → reproduced; below 0 → not reproduced; else partly"
    summary = tables["summary"]
    sizes = sorted(int(n) for n in summary["size"].unique() if n > id_size)
    acc = tables.get("accuracy")
    if not sizes or acc is None or "hits" not in acc:
        return finding(
            Statement("(2) adaptive temperature helps on larger inputs", "finding", Q_ADAPTIVE),
            [head.judged("the run has no per-set hits above the training sizes", rule, NA)],
        )
    gain, low, high = pooled_gain(acc, sizes, n_boot=n_boot)
    verdict = REPRODUCED if low > 0 else NOT if high < 0 else PARTLY
    per = size_table(summary, id_size)
    per = per[per["size"] > id_size]
    parts = [
        REPRODUCED
        if f == "adaptive significantly better"
        else NOT
        if f.startswith("softmax")
        else PARTLY
        for f in per["ours (per size)"]
    ]
    measured = (
        f"mean gain over n = {sizes[0]:,}…{sizes[-1]:,} ({len(sizes)} sizes): "
        f"{interval(gain, low, high)} points; per size (ours, not the paper's): "
        + agreement(verdict, parts, "size")
    )
    rows = [head.judged(measured, rule, verdict)]
    return finding(
        Statement("(2) adaptive temperature helps on larger inputs", "finding", Q_ADAPTIVE), rows
    )


def _checks(tables: Mapping[str, pd.DataFrame]) -> list[dict[str, str]]:
    ent = tables["entropy_vs_temperature"]
    mono = all(
        (np.diff(g.sort_values("T")["entropy"].to_numpy()) >= -1e-9).all()
        for _, g in ent.groupby("spread")
    )
    rows = [
        Statement(
            "entropy falls monotonically as temperature falls (Prop. 3.2)",
            CHECK,
            Q_ENTROPY,
            "a theorem: dH/dβ = −β Var_p(e) ≤ 0",
        ).judged(
            "H(θ) non-decreasing on a 41-point θ grid for spreads "
            + ", ".join(f"{v:g}" for v in sorted(ent["spread"].unique()))
            + f": {mono}",
            "no decrease of H as θ grows, for every spread",
            REPRODUCED if mono else NOT,
        )
    ]
    log = tables["training_log"]
    ratio = log["bound"] / log["spread"]
    ok = bool((log["spread"] <= log["bound"] * (1 + 1e-6)).all())
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
            "spread ≤ bound at every logged step",
            REPRODUCED if ok else NOT,
        )
    )
    return rows


def claims(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> pd.DataFrame:
    """Paper B's findings on the shared vocabulary (:mod:`attnlimits.claims.verdicts`):
    each finding's row (its verdict from its headline statements), its statements, then the
    theorems' checks (their own table in the report, never evidence)."""
    id_size = int(meta["benchmark"]["train"]["max_size"])
    n_boot = int(meta["benchmark"].get("eval", {}).get("n_boot", 2000))
    *disperse, check = _disperse(tables, id_size)
    rows = [*disperse, *_adaptive(tables, id_size, n_boot), *appf_rows(tables), check]
    rows += _checks(tables)
    return pd.DataFrame(rows)
