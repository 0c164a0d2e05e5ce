"""Exact-match accuracy per algorithm and length, its intervals, and the paired comparison.

Intervals: over test samples, Wilson's 95 % score interval of the pooled correct answers (every
seed's answers to the same questions); over seeds, mean ± t₀.₉₇₅ · sd / √seeds of the per-seed
accuracies. The paired comparison of two arms per algorithm and distribution (in: training
lengths; out: longer) counts the questions one arm answers and the other does not, seed by
seed, and tests them with the exact two-sided sign test (McNemar's test, exact form).
"""

from __future__ import annotations

import math

import pandas as pd

__all__ = [
    "T975",
    "accuracy_table",
    "chance_table",
    "paired_table",
    "sign_test_p",
    "wilson_interval",
]

#: Student's t, 97.5 % quantile, by degrees of freedom (1–30; beyond, the normal's 1.96).
T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def wilson_interval(correct: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson's score interval for ``correct`` successes of ``n`` (``(nan, nan)`` when n = 0)."""
    if n <= 0:
        return math.nan, math.nan
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def sign_test_p(wins: int, losses: int) -> float:
    """Exact two-sided sign test of ``wins`` against ``losses`` (ties dropped): 1 when both 0."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2 * tail)


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
        t = T975[min(len(acc) - 1, len(T975)) - 1] if len(acc) > 1 else math.nan
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


def paired_table(answers: pd.DataFrame, baseline: str = "softmax") -> pd.DataFrame:
    """Every other arm against ``baseline`` per (algorithm, distribution): accuracies, the
    questions only it answers (``wins``) or only the baseline answers (``losses``), the
    difference and the exact sign test's p."""
    keys = ["seed", "algorithm", "length", "question"]
    base = answers[answers["arm"] == baseline].set_index(keys)["correct"]
    rows = []
    for arm in [a for a in answers["arm"].unique() if a != baseline]:
        other = answers[answers["arm"] == arm].set_index(keys)
        joined = other[["correct", "in_distribution"]].join(base.rename("base"), how="inner")
        joined = joined.reset_index()
        for (algo, ind), g in joined.groupby(["algorithm", "in_distribution"]):
            a, b = g["correct"].to_numpy(bool), g["base"].to_numpy(bool)
            wins, losses = int((a & ~b).sum()), int((~a & b).sum())
            rows.append(
                {
                    "arm": arm,
                    "baseline": baseline,
                    "algorithm": algo,
                    "in_distribution": bool(ind),
                    "pairs": len(g),
                    "accuracy": float(a.mean()),
                    "baseline_accuracy": float(b.mean()),
                    "difference": float(a.mean() - b.mean()),
                    "wins": wins,
                    "losses": losses,
                    "p_sign": sign_test_p(wins, losses),
                }
            )
    return pd.DataFrame(rows)
