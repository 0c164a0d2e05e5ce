"""Uncertainty of a mean accuracy over seeds *and* test sets: the crossed bootstrap.

Every seed of a max-retrieval run is evaluated on the same test sets (one generator per size),
so the data of one normaliser at one size form a seeds × sets table of hits, a *crossed*
design: a seed effect, a set effect (some sets are hard for every seed) and their
interaction. The spread of the seeds' accuracies (the ± SE over seeds, the paper's paired
t-test) leaves out the set effect, which at the largest sizes, with 32 sets, is several
points. The *pigeonhole* bootstrap (Owen 2007, "The pigeonhole bootstrap", Ann. Appl. Stat.)
resamples seeds and sets independently, each with replacement, and recomputes the mean; its
variance is, to first order, σ²_seed/S + σ²_set/m + 3σ²_int/(S·m), the true variance with the
interaction counted three times instead of once: mildly conservative (McCullagh 2000 shows no
resampling scheme is exactly unbiased for crossed designs). With identical seeds it is the
bootstrap of the set mean (binomial error √(p(1−p)/m)); with infinitely many sets it is the
bootstrap of the seed mean (the seed SE). A paired comparison (adaptive − softmax) resamples
the *same* seeds and sets for both, so the difference's interval includes both sources too.

Hits are stored packed, one hex string of bits per (normaliser, seed, size) cell
(:func:`pack_hits`), in set order, so the bootstrap can be redone from a results folder.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Crossed", "crossed_bootstrap", "pack_hits", "unpack_hits"]


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
    se = stats.std(1, ddof=1) if n_boot > 1 else np.zeros(C)
    return Crossed(mean, se, low, high, diff, dlow, dhigh, p)
