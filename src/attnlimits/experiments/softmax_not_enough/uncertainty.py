"""Uncertainty of a mean accuracy over seeds *and* test sets: the crossed bootstrap.

Every seed of a max-retrieval run is evaluated on the same test sets (one generator per size),
so the data of one normaliser at one size form a seeds × sets table of hits, a *crossed*
design: a seed effect, a set effect (some sets are hard for every seed) and their
interaction. The spread of the seeds' accuracies (the ± SE over seeds, the paper's paired
t-test) leaves out the set effect, which at the largest sizes, with 32 sets, is several
points. The *pigeonhole* bootstrap (Owen 2007, "The pigeonhole bootstrap", Ann. Appl. Stat.)
resamples seeds and sets independently, each with replacement, and recomputes the mean; its
variance is, to first order, σ²_seed/S + σ²_set/m + 3σ²_int/(S·m), the true variance with the
interaction counted three times instead of once (McCullagh 2000 shows no resampling scheme is
exactly unbiased for crossed designs). With few seeds the percentile interval still
*under*-covers: the seed term is estimated from S seeds (a bootstrap variance with factor
(S − 1)/S, and a normal quantile where S − 1 degrees of freedom call for Student's t); a
simulation at 3 seeds found about 72 % coverage for a nominal 95 %. Below
:data:`SMALL_SEEDS` seeds every interval is therefore widened about its point estimate by
:func:`seed_factor` = t_{S−1}/z · √(S/(S − 1)) (2.69 at 3 seeds), the seed-level t correction;
docs/max_retrieval.md states the measured coverage. With identical seeds it is the
bootstrap of the set mean (binomial error √(p(1−p)/m)); with infinitely many sets it is the
bootstrap of the seed mean (the seed SE). A paired comparison (adaptive − softmax) resamples
the *same* seeds and sets for both, so the difference's interval includes both sources too.

Hits are stored packed, one hex string of bits per (normaliser, seed, size) cell
(:func:`pack_hits`), in set order, so the bootstrap can be redone from a results folder.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.stats import norm, t

__all__ = [
    "SMALL_SEEDS",
    "Crossed",
    "StepsRule",
    "crossed_bootstrap",
    "pack_hits",
    "seed_factor",
    "steps_rule",
    "unpack_hits",
]

#: Below this many seeds the intervals get the seed-level t correction (:func:`seed_factor`).
SMALL_SEEDS = 10


def seed_factor(seeds: int, level: float = 0.95) -> float:
    """How much a percentile interval over ``seeds`` seeds is widened about its estimate:
    t_{S−1}/z · √(S/(S − 1)) below :data:`SMALL_SEEDS` seeds (Student's quantile where the
    seed variance is estimated, and the bootstrap's (S − 1)/S variance bias undone), else 1."""
    if seeds >= SMALL_SEEDS or seeds < 2:
        return 1.0
    q = (1 + level) / 2
    return float(t.ppf(q, seeds - 1) / norm.ppf(q) * np.sqrt(seeds / (seeds - 1)))


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


class Crossed(NamedTuple):
    """Per cell: the mean over seeds and sets, its bootstrap SD, the percentile interval; and
    against the baseline cell the paired difference, its interval and two-sided p-value (NaN
    for the baseline and where no baseline is given)."""

    mean: np.ndarray
    se: np.ndarray
    low: np.ndarray
    high: np.ndarray
    diff: np.ndarray
    diff_low: np.ndarray
    diff_high: np.ndarray
    p_value: np.ndarray


def _set_weights(rng: np.random.Generator, b: int, inverse: np.ndarray, k: int) -> np.ndarray:
    """``b`` resamples of the ``L = len(inverse)`` sets with replacement, as the count of each
    of the ``k`` distinct hit patterns drawn, divided by L: ``[b, k]``, rows sum to 1."""
    L = len(inverse)
    drawn = inverse[rng.integers(0, L, size=(b, L))] + k * np.arange(b)[:, None]  # (b, L)
    return np.bincount(drawn.ravel(), minlength=b * k).reshape(b, k) / L


def crossed_bootstrap(
    hits: np.ndarray,
    n_sets: np.ndarray | None = None,
    baseline: int | None = None,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    chunk: int = 500,
    correct: bool = True,
) -> Crossed:
    """Pigeonhole bootstrap of the mean of ``hits`` over seeds and sets, per cell.

    Parameters
    ----------
    hits : array ``[cells, S, m]``
        0/1 (or any numbers) per cell (e.g. normaliser), seed and test set; every cell's seeds
        in the same order and its sets the same sets in the same order.
    n_sets : int array ``[cells]``, optional
        Sets cell c used: its first ``n_sets[c]`` (default ``m``). A pair of cells is compared
        on the sets both have (the shorter prefix).
    baseline : int, optional
        The cell every other cell is compared with (paired: same resampled seeds and sets).
    n_boot, level, seed : int, float, int
        Resamples B, interval level (percentile interval), generator seed.
    chunk : int
        Resamples per batch (bounds memory at ``chunk × m`` indices).
    correct : bool
        Widen every interval by :func:`seed_factor` (below :data:`SMALL_SEEDS` seeds); the
        p-value is the raw bootstrap's.

    Returns
    -------
    Crossed
        Arrays of shape ``[cells]``. ``p_value`` = min(1, 2·min(1 + #{d* ≤ 0}, 1 + #{d* ≥ 0})
        / (B + 1)) over the B resampled differences d*, so it is at least 2/(B + 1).

    Sets whose hits agree in every cell and seed are interchangeable, so each resample counts
    the distinct hit patterns drawn (one ``bincount``) and the resampled means are one matrix
    product per chunk: no loop over resamples, seeds or sets.
    """
    x = np.asarray(hits, np.float64)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"hits must be [cells, seeds, sets] with each >= 1, got {x.shape}")
    C, S, m = x.shape
    lens = np.full(C, m) if n_sets is None else np.asarray(n_sets, int)
    if lens.shape != (C,) or lens.min() < 1 or lens.max() > m:
        raise ValueError(f"n_sets must be {C} ints in [1, {m}], got {lens.tolist()}")
    if baseline is not None and not 0 <= baseline < C:
        raise ValueError(f"baseline must be a cell index in [0, {C}), got {baseline}")
    if n_boot < 1 or not 0 < level < 1:
        raise ValueError(f"need n_boot >= 1 and 0 < level < 1, got {n_boot}, {level}")
    others = np.array([c for c in range(C) if baseline is not None and c != baseline], int)
    pair_len = np.minimum(lens[others], lens[baseline]) if others.size else others
    rng = np.random.default_rng(seed)
    stats = np.full((C, n_boot), np.nan)
    diffs = np.full((C, n_boot), np.nan)
    for L in np.unique(np.concatenate([lens, pair_len])):
        use = lens >= L  # the cells with data on the first L sets
        patterns, inverse = np.unique(
            x[use, :, :L].reshape(-1, L).T, axis=0, return_inverse=True
        )  # (k, cells·S): the distinct hit patterns of the sets; inverse (L,)
        per = patterns.T.reshape(int(use.sum()), S, -1)  # (c, S, k)
        full = np.full((C, S, per.shape[-1]), np.nan)
        full[use] = per
        for lo in range(0, n_boot, chunk):
            b = min(chunk, n_boot - lo)
            u = _set_weights(rng, b, np.arange(S), S)  # (b, S): seed weights, rows sum to 1
            w = _set_weights(rng, b, inverse.ravel(), len(patterns))  # (b, k)
            acc = np.einsum("csk,bk,bs->cb", full, w, u, optimize=True)  # (C, b)
            stats[lens == L, lo : lo + b] = acc[lens == L]
            if others.size:
                mine = others[pair_len == L]
                diffs[mine, lo : lo + b] = acc[mine] - acc[baseline]  # same seeds and sets
    q = [(1 - level) / 2, (1 + level) / 2]
    first = np.arange(m) < lens[:, None]  # (C, m): the sets each cell used
    mean = (x * first[:, None]).sum((1, 2)) / (S * lens)
    low, high = np.quantile(stats, q, axis=1)
    diff, dlow, dhigh, p = (np.full(C, np.nan) for _ in range(4))
    if others.size:
        common = np.arange(m) < pair_len[:, None]  # (c, m)
        d = (x[others] - x[baseline]) * common[:, None]
        diff[others] = d.sum((1, 2)) / (S * pair_len)
        dlow[others], dhigh[others] = np.quantile(diffs[others], q, axis=1)
        below = 1 + (diffs[others] <= 0).sum(1)
        above = 1 + (diffs[others] >= 0).sum(1)
        p[others] = np.minimum(1.0, 2 * np.minimum(below, above) / (n_boot + 1))
    if correct:
        f = seed_factor(S, level)
        low, high = mean - f * (mean - low), mean + f * (high - mean)
        dlow, dhigh = diff - f * (diff - dlow), diff + f * (dhigh - diff)
    se = stats.std(1, ddof=1) if n_boot > 1 else np.zeros(C)
    return Crossed(mean, se, low, high, diff, dlow, dhigh, p)


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
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> StepsRule:
    """The rule written before the steps ablation, as code: "if the headline numbers move by
    more than their intervals … follow the converged length".

    ``short`` and ``long`` are the headline's paired gains (adaptive − softmax hit) per seed and
    test set ``[S, m]`` at the two step counts ``steps = (shorter, longer)``, the same seeds and
    sets in the same order. The change long − short is bootstrapped over seeds and sets
    together (:func:`crossed_bootstrap`, paired, corrected for few seeds); it *moved* when its
    interval excludes 0, and then the rule follows the longer length."""
    a, b = np.asarray(short, np.float64), np.asarray(long, np.float64)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(
            f"gains must be two [seeds, sets] arrays of one shape: {a.shape}, {b.shape}"
        )
    r = crossed_bootstrap(np.stack([a, b]), baseline=0, n_boot=n_boot, level=level, seed=seed)
    low, high = float(r.diff_low[1]), float(r.diff_high[1])
    moved = bool(low > 0 or high < 0)
    return StepsRule(float(r.diff[1]), low, high, moved, int(steps[1] if moved else steps[0]))
