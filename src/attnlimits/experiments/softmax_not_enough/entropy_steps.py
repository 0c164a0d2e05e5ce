"""The normalised entropy H/log n of one arm's attention per profile size, from the largest
training size on, and each step to the next larger size with its interval: the statistic of
(1.b) (softmax disperses towards uniform) and, since the round-5 referee's point 8, of (2.h)
(adaptive temperature does not escape the theory: its attention disperses too)."""

from __future__ import annotations

import math

import pandas as pd

from attnlimits.claims.statistics import difference_interval, paired_seeds_questions

__all__ = ["entropy_steps"]


def _three(mean: float, low: float, high: float) -> str:
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def entropy_steps(
    sets: pd.DataFrame, id_size: int, norm: str = "softmax"
) -> tuple[str, list[float]]:
    """``norm``'s normalised entropy per profile size from the largest training size on (mean
    over seeds and sets, its seeds × sets interval,
    :func:`attnlimits.claims.statistics.paired_seeds_questions`), and each step to the next
    size with its interval (the two standard errors in quadrature, normal quantile): the text
    and the steps' low ends."""
    arm = sets[sets["norm"] == norm]
    sizes = sorted(int(n) for n in arm["size"].unique())
    inside = [n for n in sizes if n <= id_size]
    sizes = inside[-1:] + [n for n in sizes if n > id_size]
    means, ses, cells = [], [], []
    for n in sizes:
        grid = arm[arm["size"] == n].pivot(index="seed", columns="set", values="entropy")
        r = paired_seeds_questions(grid.to_numpy(float))
        means.append(float(r.estimate))
        ses.append(float(r.se))
        cells.append(f"n={n:,}: {_three(float(r.estimate), float(r.low), float(r.high))}")
    lows, steps = [], []
    for k in range(len(sizes) - 1):
        d = difference_interval(means[k + 1] - means[k], math.hypot(ses[k], ses[k + 1]))
        lows.append(float(d.low))
        said = _three(float(d.estimate), float(d.low), float(d.high))
        steps.append(f"{sizes[k]:,} → {sizes[k + 1]:,}: {said}")
    text = (
        f"{norm}'s normalised entropy H/log n (mean [95 %] over seeds and sets): "
        + ", ".join(cells)
        + "; steps: "
        + ", ".join(steps)
    )
    return text, lows
