"""Exact-match accuracy per algorithm and length, its intervals, and the paired comparison.

**Seeds are the unit.** A seed is one trained model; the test questions are nested within it
(every seed answers the same questions). Inference is over seeds: an arm's accuracy interval is
mean ± t₀.₉₇₅,ₙ₋₁ · sd / √n over the n per-seed accuracies (``ci_seeds_*``), and the paired
comparison of two arms is the per-seed accuracy difference (arm − baseline, same seed index,
same questions), with the same t-interval over seeds and the two-sided one-sample t-test's p
(:func:`seed_t`, :mod:`scipy.stats`). Wilson's 95 % score interval of the pooled answers
(``ci_samples_*``) and the per-question counts (``wins``: questions only the arm answers,
``losses``: only the baseline) treat every (seed, question) pair as independent: they are
description only and decide nothing.

**Testable.** At a length where both arms' intervals over seeds reach the trivial baseline
(``chance``: always giving the most common answer), i.e. neither lower end is above it, nothing
could be told apart: that length is ``testable = False`` with the reason in ``why``, and is
left out of its distribution's pooled comparison (in: training lengths; out: longer).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

__all__ = [
    "accuracy_table",
    "chance_table",
    "paired_table",
    "seed_t",
    "wilson_interval",
]


def wilson_interval(correct: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson's score interval for ``correct`` successes of ``n`` (``(nan, nan)`` when n = 0)."""
    if n <= 0:
        return math.nan, math.nan
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def chance_table(test: pd.DataFrame) -> pd.DataFrame:
    """Per (algorithm, length): the accuracy of always giving the most common test answer."""
    g = test.groupby(["algorithm", "length"])["answer"]
    top = g.agg(lambda s: s.value_counts().iloc[0] / len(s))
    return top.rename("chance").reset_index()


def accuracy_table(answers: pd.DataFrame, chance: pd.DataFrame) -> pd.DataFrame:
    """Per (arm, algorithm, length): accuracy with its intervals over samples and seeds.

    ``answers`` has a row per (arm, seed, question) with ``correct`` and ``in_distribution``.
    """
    per_seed = (
        answers.groupby(["arm", "algorithm", "length", "in_distribution", "seed"])["correct"]
        .agg(["sum", "count"])
        .reset_index()
    )
    rows = []
    keys = ["arm", "algorithm", "length", "in_distribution"]
    for key, g in per_seed.groupby(keys, sort=False):
        acc = (g["sum"] / g["count"]).to_numpy(dtype=float)
        k, n = int(g["sum"].sum()), int(g["count"].sum())
        lo, hi = wilson_interval(k, n)
        sd = float(acc.std(ddof=1)) if len(acc) > 1 else math.nan
        t = float(stats.t.ppf(0.975, len(acc) - 1)) if len(acc) > 1 else math.nan
        half = t * sd / math.sqrt(len(acc)) if len(acc) > 1 else math.nan
        rows.append(
            dict(zip(keys, key, strict=True))
            | {
                "seeds": len(acc),
                "questions": int(g["count"].iloc[0]),
                "accuracy": k / n,
                "ci_samples_low": lo,
                "ci_samples_high": hi,
                "seed_sd": sd,
                "ci_seeds_low": max(0.0, k / n - half) if half == half else math.nan,
                "ci_seeds_high": min(1.0, k / n + half) if half == half else math.nan,
            }
        )
    table = pd.DataFrame(rows).merge(chance, on=["algorithm", "length"], how="left")
    return table.sort_values(keys, ignore_index=True)


def seed_t(per_seed: pd.DataFrame, keys: list[str], value: str = "difference") -> pd.DataFrame:
    """Per ``keys`` group of ``per_seed`` (one row per seed): the mean of ``value``, its
    t-interval over seeds (95 %) and the two-sided one-sample t-test's p against 0.

    With one seed the interval and p are nan; with no spread over seeds the interval is the
    mean itself and p is 0 (1 where the mean is 0)."""
    g = per_seed.groupby(keys, sort=True)[value].agg(["mean", "std", "count"]).reset_index()
    n = g["count"].to_numpy(float)
    mean, sd = g["mean"].to_numpy(float), g["std"].to_numpy(float)
    df = np.where(n > 1, n - 1, np.nan)
    se = sd / np.sqrt(n)
    half = stats.t.ppf(0.975, df) * se
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, mean / se, np.where(mean == 0, 0.0, np.inf))
    p = np.where(np.isnan(df), np.nan, 2 * stats.t.sf(np.abs(t), df))
    return g[keys].assign(
        seeds=n.astype(int), **{value: mean}, ci_low=mean - half, ci_high=mean + half, p_t=p
    )


def paired_table(
    answers: pd.DataFrame, accuracy: pd.DataFrame, baseline: str = "softmax"
) -> pd.DataFrame:
    """Every other arm against ``baseline``, over seeds: a row per (algorithm, length)
    (``scope`` "length") and per (algorithm, distribution) pooled over its testable lengths
    (``scope`` "pooled"; ``lengths`` lists them). Columns: accuracies, the mean per-seed
    ``difference`` with its t-interval over seeds (``ci_low``, ``ci_high``) and ``p_t``,
    ``testable`` and ``why``; ``pairs``, ``wins`` and ``losses`` count (seed, question) pairs
    (description only). ``accuracy`` is :func:`accuracy_table`'s (its ``ci_seeds_low`` and
    ``chance`` decide what is testable)."""
    keys = ["seed", "algorithm", "length", "question"]
    base = answers[answers["arm"] == baseline].set_index(keys)["correct"].rename("base")
    other = answers[answers["arm"] != baseline].set_index(keys)[["arm", "correct",
                                                                  "in_distribution"]]  # fmt: skip
    joined = other.join(base, how="inner").reset_index()
    joined["correct"] = joined["correct"].astype(float)
    joined["base"] = joined["base"].astype(float)
    acc = accuracy.set_index(["arm", "algorithm", "length"])
    above = (acc["ci_seeds_low"] > acc["chance"]).rename("above")
    cell = ["arm", "algorithm", "length"]
    tested = joined[cell].drop_duplicates()
    arm_above = tested.join(above, on=cell)["above"].fillna(False).to_numpy(bool)
    base_above = (
        tested.assign(arm=baseline).join(above, on=cell)["above"].fillna(False).to_numpy(bool)
    )
    tested = tested.assign(testable=arm_above | base_above)
    joined = joined.merge(tested, on=cell)

    def table(frame: pd.DataFrame, group: list[str], scope: str) -> pd.DataFrame:
        seeds = frame.groupby([*group, "seed"])[["correct", "base"]].mean().reset_index()
        seeds["difference"] = seeds["correct"] - seeds["base"]
        out = seed_t(seeds, group)
        counts = (
            frame.assign(
                pairs=1.0,
                wins=frame["correct"] * (1 - frame["base"]),
                losses=(1 - frame["correct"]) * frame["base"],
            )
            .groupby(group)[["correct", "base", "pairs", "wins", "losses"]]
            .agg(
                {"correct": "mean", "base": "mean", "pairs": "sum", "wins": "sum", "losses": "sum"}
            )
        )
        lengths = frame.groupby(group)["length"].agg(
            lambda s: ",".join(str(v) for v in sorted(set(s)))
        )
        out = out.join(counts, on=group).join(lengths.rename("lengths"), on=group)
        return out.assign(scope=scope)

    per_length = table(joined, ["arm", "algorithm", "in_distribution", "length"], "length")
    per_length = per_length.merge(tested, on=cell)
    per_length["why"] = np.where(
        per_length["testable"],
        "",
        "both arms' 95 % intervals over seeds reach chance (neither lower end above it)",
    )
    pooled = table(joined[joined["testable"]], ["arm", "algorithm", "in_distribution"], "pooled")
    pooled = pooled.assign(testable=True, why="")
    every = joined[["arm", "algorithm", "in_distribution"]].drop_duplicates()
    none = every.merge(pooled[["arm", "algorithm", "in_distribution"]], how="left",
                       indicator=True)  # fmt: skip
    none = none[none["_merge"] == "left_only"].drop(columns="_merge")
    none = none.assign(
        scope="pooled", lengths="", testable=False,
        why="at every length both arms' 95 % intervals over seeds reach chance",
    )  # fmt: skip
    rows = pd.concat([per_length.drop(columns="length"), pooled, none], ignore_index=True)
    rows = rows.rename(columns={"correct": "accuracy", "base": "baseline_accuracy"})
    rows["baseline"] = baseline
    for c in ("seeds", "pairs", "wins", "losses"):
        rows[c] = rows[c].fillna(0).astype(int)
    rows["in_distribution"] = rows["in_distribution"].astype(bool)
    rows["testable"] = rows["testable"].astype(bool)
    columns = ["arm", "baseline", "algorithm", "in_distribution", "scope", "lengths", "seeds",
               "accuracy", "baseline_accuracy", "difference", "ci_low", "ci_high", "p_t",
               "testable", "why", "pairs", "wins", "losses"]  # fmt: skip
    order = ["arm", "algorithm", "in_distribution", "scope", "lengths"]
    return rows[columns].sort_values(order, ascending=[True, True, False, True, True],
                                     ignore_index=True)  # fmt: skip
