"""Checks and helpers shared by the theory modules (private to :mod:`attnlimits.theory`)."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlimits._checks import check_positive

__all__ = ["Number", "check_length", "check_nonnegative", "exp"]

Number = float | Tensor


def exp(x: Number) -> Number:
    """e^x for a float or a tensor."""
    return torch.exp(x) if isinstance(x, Tensor) else math.exp(x)


def check_nonnegative(value: Number, name: str) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is finite and ≥ 0."""
    if isinstance(value, Tensor):
        ok = bool(torch.isfinite(value).all() and (value >= 0).all())
    else:
        ok = math.isfinite(value) and value >= 0
    if not ok:
        raise ValueError(f"{name} must be non-negative and finite, got {value}")


def check_length(length: Number) -> None:
    """Raise ``ValueError`` unless the number of kept keys is ≥ 1."""
    check_positive(length, "length")
    if isinstance(length, Tensor):
        bad = bool((length < 1).any())
    else:
        bad = length < 1
    if bad:
        raise ValueError(f"length (number of kept keys) must be >= 1, got {length}")
