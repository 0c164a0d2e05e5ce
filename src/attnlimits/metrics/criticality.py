"""Critical N of paper A, Alg. 3: where the true distance stops differing from random selection.

For every N in a list, each head contributes its row-mean true distance d̄ (Eq. 7) and its
row-mean expected distance under uniformly random selection Ē (Eq. 8). A two-sample
Kolmogorov–Smirnov test compares the two samples over heads; the critical N is the smallest N
at which the test no longer rejects equality at level α, and −1 if it rejects at every N.
Paper A uses α = 0.01 in the text and figures, 0.05 in the pseudocode; ``alpha`` is a parameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
from numpy.typing import NDArray
from scipy import stats
from torch import Tensor

from attnlimits._checks import ArgumentTypeError, check_in_range, check_tensor

__all__ = ["CriticalN", "critical_n"]

ArrayLike = Sequence[float] | Sequence[Sequence[float]] | NDArray[np.float64] | Tensor


class CriticalN(NamedTuple):
    """Result of :func:`critical_n`, with one entry per N (sorted ascending)."""

    critical_n: int  # smallest N with p ≥ alpha; -1 if none
    n_values: NDArray[np.int64]
    statistics: NDArray[np.float64]  # KS statistic D per N
    p_values: NDArray[np.float64]
    rejected: NDArray[np.bool_]  # p < alpha
    n_heads: NDArray[np.int64]  # heads used per N (finite in both samples)


def _as_array(x: ArrayLike, name: str) -> NDArray[np.float64]:
    """``x`` (array, tensor or nested sequence of numbers) as a 2-D float64 array."""
    if isinstance(x, Tensor):
        check_tensor(x, name)
        if x.dtype == torch.bool or x.is_complex():
            raise ValueError(f"{name} must hold real numbers, got dtype {x.dtype}")
        arr = x.detach().cpu().double().numpy()
    else:
        try:
            arr = np.asarray(x, dtype=float)
        except (TypeError, ValueError):
            raise ArgumentTypeError(f"{name} must be an array of numbers [num_N, heads]") from None
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D [num_N, heads], got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError(f"{name} contains inf")
    return arr


def _huge(values: object) -> bool:
    """Whether a sequence holds ints beyond int64 (numpy would raise OverflowError)."""
    try:
        return any(isinstance(v, int) and abs(v) > 2**62 for v in values)  # type: ignore[attr-defined]
    except TypeError:
        return False


def critical_n(
    n_values: Sequence[int] | NDArray[np.int64] | Tensor,
    distances: ArrayLike,
    expectations: ArrayLike,
    *,
    alpha: float = 0.01,
) -> CriticalN:
    """Paper A, Alg. 3: the smallest N whose two-sample KS test (d̄ vs Ē over heads) does not reject.

    For each N, ``scipy.stats.ks_2samp(d̄[N, :], Ē[N, :])`` gives the statistic
    D = sup_x |F_d̄(x) − F_Ē(x)| and its p-value; N is "critical" when p ≥ α. Heads whose value
    is NaN (rows excluded upstream) are dropped from that N's sample; an N with no head left in
    either sample raises ``ValueError``.

    Parameters
    ----------
    n_values : sequence of int
        The N values, distinct positive integers (any order; results are sorted by N).
    distances : array, shape [num_N, heads]
        Per-head row-mean true distance d̄ (paper A, Eq. 7) for each N.
    expectations : array, shape [num_N, heads]
        Per-head row-mean expectation Ē under random selection (paper A, Eq. 8).
    alpha : float
        Significance level in (0, 1); default 0.01 as in paper A's text.

    Returns
    -------
    CriticalN
        ``critical_n`` (−1 if every N rejects) and the per-N statistics and p-values.
    """
    check_in_range(alpha, "alpha", 0.0, 1.0, closed=(False, False))
    if isinstance(n_values, Tensor):
        ns = check_tensor(n_values, "n_values").detach().cpu().numpy()
    elif isinstance(n_values, (str, bytes)) or n_values is None:
        raise ArgumentTypeError(f"n_values must be a sequence of ints N, got {n_values!r:.40}")
    else:
        ns = np.asarray(n_values, dtype=object if _huge(n_values) else None)
    if ns.ndim != 1 or ns.size == 0:
        raise ValueError(f"n_values must be a non-empty 1-D sequence, got shape {ns.shape}")
    if not np.issubdtype(ns.dtype, np.integer) or (ns < 1).any() or np.unique(ns).size != ns.size:
        raise ValueError(f"n_values must be distinct positive integers, got {ns.tolist()}")
    d = _as_array(distances, "distances")
    e = _as_array(expectations, "expectations")
    if d.shape[0] != ns.size or e.shape[0] != ns.size:
        raise ValueError(
            f"shape mismatch: {ns.size} N values, distances {d.shape}, expectations {e.shape}"
        )
    order = np.argsort(ns)
    stat = np.empty(ns.size)
    pval = np.empty(ns.size)
    used = np.empty(ns.size, dtype=np.int64)
    for out, i in enumerate(order):  # one test per N: a handful, not a loop over tokens
        a, b = d[i][~np.isnan(d[i])], e[i][~np.isnan(e[i])]
        for name, got in (("distances", a), ("expectations", b)):
            if got.size == 0:
                raise ValueError(f"{name} has no finite head value at N={ns[i]}")
        res = stats.ks_2samp(a, b)
        stat[out], pval[out], used[out] = res.statistic, res.pvalue, min(a.size, b.size)
    rejected = pval < alpha
    accepted = np.flatnonzero(~rejected)
    sorted_ns = ns[order].astype(np.int64)
    crit = int(sorted_ns[accepted[0]]) if accepted.size else -1
    return CriticalN(crit, sorted_ns, stat, pval, rejected, used)
