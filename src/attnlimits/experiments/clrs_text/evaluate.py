"""Exact-match accuracy per algorithm and length, its intervals, and the paired comparison.

**Seeds are the unit.** A seed is one trained model; the test questions are nested within it
(every seed answers the same questions). Inference is over seeds: an arm's accuracy interval is
the interval of :func:`paired_interval` against a baseline of 0 (``ci_seeds_*``: the seeds'
spread and the questions' sampling, so three equal seeds do not give a point). The paired
comparison of two arms is the mean over seeds of the per-seed accuracy difference (arm −
baseline, same seed index, same questions), with the one interval of the seeds × shared
questions design (:mod:`attnlimits.claims.statistics`, its docstring gives the formula, the
reason and the measured coverage): it counts the spread of the n seeds and the sampling of the
Q test questions, which every seed shares (so more seeds do not shrink it).
Fewer than :data:`MIN_SEEDS` seeds decide nothing. Wilson's 95 % score interval of the pooled
answers (``ci_samples_*``, :func:`attnlimits.claims.statistics.proportion_interval`) and the
per-question counts (``wins``: questions only the arm answers, ``losses``: only the baseline)
treat every (seed, question) pair as independent: they are description only and decide
nothing.

**Trivial baselines** (:func:`baseline_table`, per algorithm and length): ``chance``, always
giving the most common answer of the test split itself (the best constant answer in hindsight,
so biased upwards: a conservative bar; out of distribution no training questions exist at that
length to take it from), and ``uniform``, a guess drawn uniformly over the answer's
format (our reading: every integer among the length's n indices, every float among the 10³
values of three decimals in [0, 1)); both for the whole answer and for the result only
(``*_result``). ``baseline`` is the larger of the two.

**Testable.** A length is ``testable = False``, with every reason that applies in ``why``,
when it has fewer than :data:`MIN_SEEDS` seeds, or when neither arm's interval over seeds has
its lower end above ``baseline`` (nothing could be told apart from a trivial answer); it is
left out of its regime's pooled comparison (in distribution:
training lengths; interpolation: unseen lengths inside their range; extrapolation: outside).
An algorithm on which either arm is below :data:`CEILING` in distribution is not testable in any
regime: below the ceiling a gap measures how fast an arm learns at this budget (in
distribution) or how far it learned (out of distribution), not its profile. With the
convergence stop on (``patience``; issue 57's gate), a pair of arms one of whose compared
models stopped at the step cap, neither at the target nor converged, is not testable anywhere.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnlimits.claims.statistics import proportion_interval, seeds_questions
from attnlimits.experiments.clrs_text.data import result_of

# the testable gate's thresholds, with their provenance, are the rules' (written once there)
from attnlimits.experiments.clrs_text.rules import CEILING, MIN_SEEDS

__all__ = [
    "CEILING",
    "MIN_SEEDS",
    "accuracy_table",
    "baseline_table",
    "choose_lr",
    "paired_interval",
    "paired_table",
]


_FLOAT = r"\d+\.\d+"
_INT = r"(?<![\d.])\d+(?![\d.])"


def _uniform(answers: pd.Series, lengths: pd.Series) -> pd.Series:
    """Each answer's probability under a uniform guess over its format (module docstring)."""
    floats = answers.str.count(_FLOAT).to_numpy(float)
    ints = answers.str.count(_INT).to_numpy(float)
    logp = floats * np.log(1e3) + ints * np.log(lengths.to_numpy(float))
    return pd.Series(np.exp(-logp), index=answers.index)


def baseline_table(test: pd.DataFrame) -> pd.DataFrame:
    """Per (algorithm, length): the trivial baselines of the module docstring."""
    t = test.assign(result=result_of(test["answer"]))
    t["uniform"] = _uniform(t["answer"], t["length"])
    t["uniform_result"] = _uniform(t["result"], t["length"])
    g = t.groupby(["algorithm", "length"])
    out = pd.DataFrame(
        {
            "chance": g["answer"].agg(lambda s: s.value_counts().iloc[0] / len(s)),
            "chance_result": g["result"].agg(lambda s: s.value_counts().iloc[0] / len(s)),
            "uniform": g["uniform"].mean(),
            "uniform_result": g["uniform_result"].mean(),
        }
    )
    out["baseline"] = out[["chance", "uniform"]].max(axis=1)
    out["baseline_result"] = out[["chance_result", "uniform_result"]].max(axis=1)
    return out.reset_index()


def choose_lr(validation: pd.DataFrame) -> pd.DataFrame:
    """Per (arm, lr): the best validation ``score`` of its seed-0 model and the first step that
    reached it; per arm the chosen rate: the best score, then the fewest steps, then the
    smaller rate."""
    v = validation[validation["seed"] == 0].drop_duplicates(["arm", "lr", "step"])
    best = v.groupby(["arm", "lr"])["score"].transform("max")
    top = v[v["score"] == best].groupby(["arm", "lr"], sort=True)
    table = top.agg(score=("score", "max"), step=("step", "min")).reset_index()
    order = table.sort_values(["arm", "score", "step", "lr"], ascending=[True, False, True, True])
    table["chosen"] = table.index.isin(order.groupby("arm").head(1).index)
    return table


def accuracy_table(answers: pd.DataFrame, baselines: pd.DataFrame) -> pd.DataFrame:
    """Per (arm, algorithm, length): exact match of the whole answer with its intervals over
    samples and seeds, the result-only match beside it, and the cell's baselines.

    ``answers`` has a row per (arm, seed, question) with ``correct``, ``result_correct``,
    ``regime`` and ``in_distribution``.
    """
    keys = ["arm", "algorithm", "length", "regime", "in_distribution"]
    per_seed = (
        answers.groupby([*keys, "seed"])
        .agg(k=("correct", "sum"), n=("correct", "count"), result=("result_correct", "mean"))
        .reset_index()
    )
    per_seed["acc"] = per_seed["k"] / per_seed["n"]
    g = per_seed.groupby(keys, sort=True)
    t = g.agg(
        seeds=("acc", "count"),
        questions=("n", "first"),
        k=("k", "sum"),
        n=("n", "sum"),
        seed_sd=("acc", "std"),
        result_accuracy=("result", "mean"),
    ).reset_index()
    t["accuracy"] = t["k"] / t["n"]
    t["ci_samples_low"], t["ci_samples_high"] = proportion_interval(t["k"], t["n"])
    # the interval counts the seeds' spread and the questions' sampling, as the paired one does
    ci = paired_interval(answers.assign(base=0.0), keys).set_index(keys)
    t = t.join(ci[["ci_low", "ci_high"]], on=keys)
    t["ci_seeds_low"] = t["ci_low"].clip(lower=0.0)
    t["ci_seeds_high"] = t["ci_high"].clip(upper=1.0)
    cols = [
        *keys,
        "seeds",
        "questions",
        "accuracy",
        "ci_samples_low",
        "ci_samples_high",
        "seed_sd",
        "ci_seeds_low",
        "ci_seeds_high",
        "result_accuracy",
    ]
    table = t[cols].merge(baselines, on=["algorithm", "length"], how="left")
    return table.sort_values(keys, ignore_index=True)


def paired_interval(frame: pd.DataFrame, group: list[str]) -> pd.DataFrame:
    """Per ``group`` of ``frame`` (a row per (seed, length, question) with ``correct`` and
    ``base`` in {0, 1}): the mean over seeds of the per-seed accuracy difference, its 95 %
    interval of the seeds × shared questions design
    (:func:`attnlimits.claims.statistics.seeds_questions`: the seeds' spread and the
    questions' sampling), its two-sided ``p_t``, ``seeds`` (n) and ``questions`` (Q; a
    question is a (length, question) pair where the group pools lengths).

    One seed: interval and p are nan. No spread at all: the interval is the mean itself and p
    is 0 (1 where the mean is 0)."""
    d = frame.assign(d=frame["correct"].astype(float) - frame["base"].astype(float))
    per_seed = d.groupby([*group, "seed"], sort=True)["d"].mean().rename("difference")
    g = per_seed.reset_index().groupby(group, sort=True)["difference"].agg(["mean", "var", "count"])
    inner = [c for c in ("length", "question") if c not in group]
    q = d.groupby([*group, *inner], sort=True)["d"].mean().reset_index()
    qv = q.groupby(group, sort=True)["d"].agg(["var", "count"])
    r = seeds_questions(g["mean"], g["var"], g["count"], qv["var"], qv["count"])
    return g.reset_index()[group].assign(
        seeds=g["count"].to_numpy(int),
        questions=qv["count"].to_numpy(int),
        difference=r.estimate,
        ci_low=r.low,
        ci_high=r.high,
        p_t=r.p_value,
    )


def _ceiling(accuracy: pd.DataFrame, arms: list[str], level: float) -> pd.Series:
    """Per algorithm: why its comparison of ``arms`` is not testable in any regime
    (an arm below ``level`` in distribution), or "" where both reach it."""
    a = accuracy[accuracy["in_distribution"] & accuracy["arm"].isin(arms)]
    mean = a.assign(k=a["accuracy"] * a["questions"]).groupby(["algorithm", "arm"])
    acc = (mean["k"].sum() / mean["questions"].sum()).unstack("arm")
    why = pd.Series("", index=acc.index, dtype=object)
    for arm in arms:  # a loop over the two arms, not over data
        low = acc[arm] < level
        why[low] += [
            f"{arm} at {v:.2f} in distribution, below the {level:.0%} ceiling; "
            for v in acc.loc[low, arm]
        ]
    return why.str.rstrip("; ")


def _unconverged(training: pd.DataFrame | None, arms: list[str]) -> str:
    """Why no comparison of ``arms`` is testable because a compared model did not converge
    (it stopped at the step cap, not at the target nor by the convergence stop), or ""."""
    if training is None:
        return ""
    t = training[training["arm"].isin(arms)].drop_duplicates(["arm", "seed"])
    capped = t[t["stopped"] == "cap"]
    return "; ".join(
        f"{arm} seed{'s' if len(g) > 1 else ''} {', '.join(map(str, sorted(g['seed'])))} "
        "stopped at the step cap, not converged"
        for arm, g in capped.groupby("arm", sort=False)
    )


def paired_table(
    answers: pd.DataFrame,
    accuracy: pd.DataFrame,
    baseline: str = "softmax",
    training: pd.DataFrame | None = None,
    ceiling: float | None = None,
) -> pd.DataFrame:
    """Every other arm against ``baseline``, over seeds: a row per (algorithm, length)
    (``scope`` "length") and per (algorithm, regime) pooled over its testable lengths
    (``scope`` "pooled"; ``lengths`` lists them). Columns: accuracies, the mean per-seed
    ``difference`` with its t-interval over seeds (``ci_low``, ``ci_high``) and ``p_t``,
    ``testable`` and ``why``; ``pairs``, ``wins`` and ``losses`` count (seed, question) pairs
    (description only). ``accuracy`` is :func:`accuracy_table`'s (its ``ci_seeds_low``,
    ``baseline`` and in-distribution accuracy decide what is testable). With ``training`` (a
    row per compared (arm, seed) at least, with ``stopped`` as :class:`.model.TrainResult`
    says), a pair of arms one of whose models stopped at the cap is not testable anywhere: the
    gate of issue 57 compares converged models only. ``ceiling``: the in-distribution level
    both arms need (default :data:`CEILING`; a probe of issue 57 states its own)."""
    level = CEILING.value if ceiling is None else float(ceiling)
    keys = ["seed", "algorithm", "length", "question"]
    base = answers[answers["arm"] == baseline].set_index(keys)["correct"].rename("base")
    other = answers[answers["arm"] != baseline].set_index(keys)[["arm", "correct", "regime"]]
    joined = other.join(base, how="inner").reset_index()
    joined["correct"] = joined["correct"].astype(float)
    joined["base"] = joined["base"].astype(float)
    acc = accuracy.set_index(["arm", "algorithm", "length"])
    above = (acc["ci_seeds_low"] > acc["baseline"]).rename("above")
    cell = ["arm", "algorithm", "length"]
    tested = joined[[*cell, "regime"]].drop_duplicates()
    arm_above = tested.join(above, on=cell)["above"].fillna(False).to_numpy(bool)
    base_above = (
        tested.assign(arm=baseline).join(above, on=cell)["above"].fillna(False).to_numpy(bool)
    )
    short_of = pd.concat(
        [
            _ceiling(accuracy, [baseline, arm], level).rename("c").reset_index().assign(arm=arm)
            for arm in sorted(set(tested["arm"]))
        ],
        ignore_index=True,
    )
    capped = {arm: _unconverged(training, [baseline, arm]) for arm in set(tested["arm"])}
    short_of["c"] = [
        "; ".join(r for r in (c, capped[arm]) if r)
        for c, arm in zip(short_of["c"], short_of["arm"], strict=True)
    ]
    tested = tested.merge(short_of, on=["arm", "algorithm"], how="left")
    n_seeds = joined.groupby([*cell, "regime"])["seed"].nunique().rename("n").reset_index()
    tested = tested.merge(n_seeds, on=[*cell, "regime"], how="left")
    few = np.where(
        tested["n"] < MIN_SEEDS.value,
        [f"{n} seed{'s' if n != 1 else ''}, fewer than {MIN_SEEDS}" for n in tested["n"]],
        "",
    )
    trivial = np.where(
        arm_above | base_above,
        "",
        "neither arm's 95 % interval is above the trivial baseline",
    )
    short = tested["c"].fillna("").to_numpy(object)
    tested["why"] = [
        "; ".join(r for r in reasons if r) for reasons in zip(few, trivial, short, strict=True)
    ]
    tested["testable"] = tested["why"] == ""
    tested = tested.drop(columns=["c", "n"])
    joined = joined.merge(tested, on=[*cell, "regime"])

    def table(frame: pd.DataFrame, group: list[str], scope: str) -> pd.DataFrame:
        out = paired_interval(frame, group).drop(columns="questions")
        f = frame.assign(
            pairs=1.0,
            wins=frame["correct"] * (1 - frame["base"]),
            losses=(1 - frame["correct"]) * frame["base"],
        )
        counts = f.groupby(group).agg(
            correct=("correct", "mean"),
            base=("base", "mean"),
            pairs=("pairs", "sum"),
            wins=("wins", "sum"),
            losses=("losses", "sum"),
        )
        lengths = frame.groupby(group)["length"].agg(
            lambda s: ",".join(str(v) for v in sorted(set(s)))
        )
        out = out.join(counts, on=group).join(lengths.rename("lengths"), on=group)
        return out.assign(scope=scope)

    regime = ["arm", "algorithm", "regime"]
    per_length = table(joined, [*regime, "length"], "length").merge(tested, on=[*cell, "regime"])
    pooled = table(joined[joined["testable"]], regime, "pooled").assign(testable=True, why="")
    every = tested.groupby(regime)["why"].agg(lambda w: "; ".join(sorted(set(w)))).reset_index()
    none = every.merge(pooled[regime], how="left", indicator=True)
    none = none[none["_merge"] == "left_only"].drop(columns="_merge")
    seeds_of = joined.groupby(regime)["seed"].nunique().rename("seeds").reset_index()
    none = none.merge(seeds_of, on=regime, how="left")
    none = none.assign(scope="pooled", lengths="", testable=False)
    rows = pd.concat([per_length.drop(columns="length"), pooled, none], ignore_index=True)
    rows = rows.rename(columns={"correct": "accuracy", "base": "baseline_accuracy"})
    rows["baseline"] = baseline
    for c in ("seeds", "pairs", "wins", "losses"):
        rows[c] = rows[c].fillna(0).astype(int)
    rows["testable"] = rows["testable"].astype(bool)
    rows["in_distribution"] = rows["regime"] == "in distribution"
    columns = [
        "arm",
        "baseline",
        "algorithm",
        "regime",
        "in_distribution",
        "scope",
        "lengths",
        "seeds",
        "accuracy",
        "baseline_accuracy",
        "difference",
        "ci_low",
        "ci_high",
        "p_t",
        "testable",
        "why",
        "pairs",
        "wins",
        "losses",
    ]
    order = ["arm", "algorithm", "regime", "scope", "lengths"]
    return rows[columns].sort_values(order, ignore_index=True)
