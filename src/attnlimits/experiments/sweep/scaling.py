"""How a sweep would scale: its cells' measured times scheduled over more workers.

The estimate is the makespan of the longest-processing-time-first schedule (Graham 1969: each
cell, longest first, goes to the worker that frees up first), which is within 4/3 of the best
schedule and is close to what Ray's queue does with cells of known length. It counts only the
cells' own times: start-up, model loading on a fresh worker (when a worker runs its first cell)
and reading the text are inside those times; waiting on shared storage is not.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import pandas as pd

__all__ = ["lpt_makespan", "scaling_table"]

SLOTS = (1, 2, 4, 8, 16, 32, 64, 128)


def lpt_makespan(seconds: Sequence[float], slots: int) -> float:
    """Wall time of ``seconds`` (one per cell) on ``slots`` workers, longest cell first."""
    if slots < 1:
        raise ValueError(f"slots must be >= 1, got {slots}")
    if any(s < 0 for s in seconds):
        raise ValueError(f"cell times must be >= 0, got {sorted(seconds)[:3]}")
    free = [0.0] * min(slots, max(len(seconds), 1))  # when each worker is next free
    for s in sorted(seconds, reverse=True):
        heapq.heapreplace(free, free[0] + s)  # a loop over cells (not tokens): dozens to thousands
    return max(free)


def scaling_table(seconds: Sequence[float], slots: Sequence[int] = SLOTS) -> pd.DataFrame:
    """One row per worker count: estimated wall time, speed-up over one worker, efficiency."""
    one = float(sum(seconds))
    rows = []
    for k in slots:
        wall = lpt_makespan(seconds, k)
        speedup = one / wall if wall else 1.0
        rows.append(
            {
                "workers": k,
                "wall_s": round(wall, 1),
                "speedup": round(speedup, 2),
                "efficiency": round(speedup / k, 2),
            }
        )
    return pd.DataFrame(rows)
