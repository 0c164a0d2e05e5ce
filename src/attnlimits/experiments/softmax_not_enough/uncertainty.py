"""Uncertainty of a mean accuracy over seeds *and* test sets, and the steps rule.

Every seed of a max-retrieval run is evaluated on the same test sets (one generator per size),
so the data of one normaliser at one size form a seeds × sets table of hits: the design of
seeds × shared questions. The spread of the seeds' accuracies alone (the ± SE over seeds, the
paper's paired t-test) leaves out the sets' sampling, which every seed shares and which at the
largest sizes, with 32 sets, is several points. Every interval here is the one interval of
that design, :func:`attnlimits.claims.statistics.paired_seeds_questions` (its docstring gives
the formula, why it was chosen over the crossed bootstrap this module used before, and its
measured coverage at 10 seeds × 32 to 1,024 sets); a paired comparison (adaptive − softmax)
takes the difference on the *same* seeds and sets, so its interval counts both sources too.

Hits are stored packed, one hex string of bits per (normaliser, seed, size) cell
(:func:`pack_hits`), in set order, so the intervals can be redone from a results folder.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from attnlimits.claims.statistics import LEVEL, paired_seeds_questions

__all__ = [
    "SeedsSets",
    "StepsRule",
    "pack_hits",
    "seeds_by_sets",
    "steps_rule",
    "unpack_hits",
]


def pack_hits(hits: np.ndarray) -> list[str]:
    """Rows of booleans ``[rows, m]`` → one hex string per row (bit j = set j, big-endian)."""
    hits = np.atleast_2d(np.asarray(hits, bool))
    return [row.tobytes().hex() for row in np.packbits(hits, axis=-1)]


def unpack_hits(packed: list[str] | np.ndarray, m: int) -> np.ndarray:
    """Inverse of :func:`pack_hits`: ``[rows, m]`` booleans from hex strings of ``m`` sets."""
    rows = [np.frombuffer(bytes.fromhex(str(h)), np.uint8) for h in packed]
    if not rows:
        return np.zeros((0, m), bool)
    return np.unpackbits(np.stack(rows), axis=-1, count=m).astype(bool)


class SeedsSets(NamedTuple):
    """Per cell: the mean over seeds and sets, its standard error and interval; and against the
    baseline cell the paired difference, its interval and two-sided p-value (NaN for the
    baseline and where no baseline is given)."""

    mean: np.ndarray
    se: np.ndarray
    low: np.ndarray
    high: np.ndarray
    diff: np.ndarray
    diff_low: np.ndarray
    diff_high: np.ndarray
    p_value: np.ndarray


def seeds_by_sets(
    hits: np.ndarray,
    n_sets: np.ndarray | None = None,
    baseline: int | None = None,
    *,
    level: float = LEVEL,
) -> SeedsSets:
    """The mean of ``hits`` over seeds and sets per cell, and each cell's paired difference
    from ``baseline``, with the seeds × shared questions interval
    (:func:`attnlimits.claims.statistics.paired_seeds_questions`).

    Parameters
    ----------
    hits : array ``[cells, S, m]``
        0/1 (or any numbers) per cell (e.g. normaliser), seed and test set; every cell's seeds
        in the same order and its sets the same sets in the same order.
    n_sets : int array ``[cells]``, optional
        Sets cell c used: its first ``n_sets[c]`` (default ``m``). A pair of cells is compared
        on the sets both have (the shorter prefix).
    baseline : int, optional
        The cell every other cell is compared with (paired: same seeds and sets).
    level : float
        The intervals' level.

    Returns
    -------
    SeedsSets
        Arrays of shape ``[cells]``.
    """
    x = np.asarray(hits, np.float64)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"hits must be [cells, seeds, sets] with each >= 1, got {x.shape}")
    C, _, m = x.shape  # (cells, S, m)
    lens = np.full(C, m) if n_sets is None else np.asarray(n_sets, int)
    if lens.shape != (C,) or lens.min() < 1 or lens.max() > m:
        raise ValueError(f"n_sets must be {C} ints in [1, {m}], got {lens.tolist()}")
    if baseline is not None and not 0 <= baseline < C:
        raise ValueError(f"baseline must be a cell index in [0, {C}), got {baseline}")
    used = np.arange(m) < lens[:, None, None]  # (C, 1, m): the sets each cell drew
    own = paired_seeds_questions(np.where(used, x, np.nan), level=level)
    diff = [np.full(C, np.nan) for _ in range(4)]
    if baseline is not None:
        both = used & used[baseline]  # (C, 1, m): the sets a pair shares
        d = paired_seeds_questions(
            np.where(both, x, np.nan), np.where(both, x[baseline], 0.0), level
        )
        others = np.arange(C) != baseline
        for out, col in zip(diff, (d.estimate, d.low, d.high, d.p_value), strict=True):
            out[others] = col[others]
    return SeedsSets(own.estimate, own.se, own.low, own.high, *diff)


class StepsRule(NamedTuple):
    """The steps rule's answer: the change in the headline gain from the shorter to the longer
    training (points as fractions), its interval, and whether it moved (the interval excludes
    0), so the default should follow ``follow`` steps."""

    change: float
    low: float
    high: float
    moved: bool
    follow: int


def steps_rule(
    short: np.ndarray,
    long: np.ndarray,
    steps: tuple[int, int],
    *,
    level: float = LEVEL,
) -> StepsRule:
    """The rule written before the steps ablation, as code: "if the headline numbers move by
    more than their intervals … follow the converged length".

    ``short`` and ``long`` are the headline's paired gains (adaptive − softmax hit) per seed and
    test set ``[S, m]`` at the two step counts ``steps = (shorter, longer)``, the same seeds and
    sets in the same order. The change long − short has the interval over seeds and sets
    together (:func:`seeds_by_sets`, paired); it *moved* when its interval excludes 0, and
    then the rule follows the longer length."""
    a, b = np.asarray(short, np.float64), np.asarray(long, np.float64)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(
            f"gains must be two [seeds, sets] arrays of one shape: {a.shape}, {b.shape}"
        )
    r = seeds_by_sets(np.stack([a, b]), baseline=0, level=level)
    low, high = float(r.diff_low[1]), float(r.diff_high[1])
    moved = bool(low > 0 or high < 0)
    return StepsRule(float(r.diff[1]), low, high, moved, int(steps[1] if moved else steps[0]))
