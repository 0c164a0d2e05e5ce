"""Sampling error of measured accuracies (paper B, App. A: accuracy over random test sets).

An accuracy p measured on n independent test sets is a binomial proportion; its standard error
is √(p(1 − p)/n), and reaching a target standard error s needs n = ⌈p(1 − p)/s²⌉ sets.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["binomial_standard_error", "sets_for_standard_error"]


def binomial_standard_error(accuracy: float | np.ndarray, n: int | np.ndarray) -> Any:
    """Standard error √(p(1 − p)/n) of a proportion p measured on n independent trials.

    ``accuracy`` is clipped to [0, 1]; arrays broadcast. ``n`` must be ≥ 1.
    """
    n_arr = np.asarray(n, dtype=float)
    if np.any(n_arr < 1):
        raise ValueError(f"n (trials) must be >= 1, got {n}")
    p = np.clip(np.asarray(accuracy, dtype=float), 0.0, 1.0)
    return np.sqrt(p * (1.0 - p) / n_arr)


def sets_for_standard_error(target_se: float, p: float = 0.5) -> int:
    """Trials n = ⌈p(1 − p)/s²⌉ for a standard error ≤ s at proportion p (worst case p = 0.5)."""
    if not target_se > 0 or not math.isfinite(target_se):
        raise ValueError(f"target_se must be a positive finite number, got {target_se}")
    return math.ceil(p * (1.0 - p) / target_se**2 - 1e-9)
