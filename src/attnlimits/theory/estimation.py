"""Sampling error of measured accuracies (paper B, App. A: accuracy over random test sets).

An accuracy p measured on n independent test sets is a binomial proportion; its standard error
is √(p(1 − p)/n), and reaching a target standard error s needs n = ⌈p(1 − p)/s²⌉ sets.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from attnlimits._checks import ArgumentTypeError, check_in_range, check_tensor

__all__ = ["binomial_standard_error", "sets_for_standard_error"]


def _as_array(value: Any, name: str) -> np.ndarray:
    """A number, array or tensor as a float64 array, or a ``TypeError`` naming ``name``."""
    if isinstance(value, torch.Tensor):
        value = check_tensor(value, name).detach().cpu().double().numpy()
    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
        raise ArgumentTypeError(
            f"{name} must be a number or an array of numbers, got {value!r:.40}"
        )
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ArgumentTypeError(
            f"{name} must be a number or an array of numbers, got {value!r:.40}"
        ) from None
    if arr.dtype == object:
        raise ArgumentTypeError(f"{name} must hold numbers, got {value!r:.40}")
    return arr


def binomial_standard_error(accuracy: float | np.ndarray, n: int | np.ndarray) -> Any:
    """Standard error √(p(1 − p)/n) of a proportion p measured on n independent trials.

    ``accuracy`` must lie in [0, 1] and ``n`` be finite and ≥ 1 (``ValueError`` naming the
    argument otherwise: an accuracy of 2 is not a proportion, and clipping it would report a
    standard error of 0); arrays and tensors broadcast.
    """
    n_arr = _as_array(n, "n")
    if not np.all(np.isfinite(n_arr)) or np.any(n_arr < 1):
        raise ValueError(f"n (trials) must be finite and >= 1, got {n!r:.60}")
    p = _as_array(accuracy, "accuracy")
    if not np.all((p >= 0) & (p <= 1)):  # NaN fails both
        raise ValueError(f"accuracy must lie in [0, 1], got {accuracy!r:.60}")
    try:
        return np.sqrt(p * (1.0 - p) / n_arr)
    except ValueError:
        raise ValueError(
            f"accuracy {p.shape} and n {n_arr.shape} do not broadcast together"
        ) from None


def sets_for_standard_error(target_se: float, p: float = 0.5) -> int:
    """Trials n = ⌈p(1 − p)/s²⌉ for a standard error ≤ s at proportion p (worst case p = 0.5).

    At least 1; computed exactly (rational arithmetic on the floats given), so a tiny
    ``target_se`` gives a huge but exact count instead of an overflow.
    """
    check_in_range(target_se, "target_se", 0.0, math.inf, closed=(False, False))
    check_in_range(p, "p", 0.0, 1.0)
    need = Fraction(p) * (1 - Fraction(p)) / Fraction(target_se) ** 2
    n = math.ceil(need - Fraction(1, 10**9))  # a rounding-high target does not add a set
    return max(1, n)
