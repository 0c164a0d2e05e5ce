"""Checks and helpers shared by the theory modules (private to :mod:`attnlimits.theory`)."""

from __future__ import annotations

import math
from typing import TypeVar

import torch
from torch import Tensor

from attnlimits._checks import check_int_at_least, check_number, check_positive, check_tensor

__all__ = [
    "Number",
    "broadcast_together",
    "check_interval",
    "check_keys",
    "check_length",
    "check_nonnegative",
    "exp",
    "finite_result",
]

Number = float | Tensor
T = TypeVar("T")


def exp(x: Number) -> Number:
    """e^x for a float or a tensor; a float beyond the float range is inf (not OverflowError)."""
    if isinstance(x, Tensor):
        return torch.exp(x)
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def check_nonnegative(value: Number, name: str) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is finite and ≥ 0 (``TypeError``
    unless it is a real number or a tensor of them)."""
    check_number(value, name, tensor_ok=True)
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


def finite_result(value: T, **arguments: object) -> T:
    """``value`` (a number, a tensor or a tuple of them) if it is finite throughout, else a
    ``ValueError`` naming the arguments: a closed form of finite arguments that overflows the
    float range (e.g. 1/(2T) at T = 1e-320) is refused rather than returned as inf."""
    parts = value if isinstance(value, tuple) else (value,)
    if all(
        bool(torch.isfinite(p).all()) if isinstance(p, Tensor) else math.isfinite(p)  # type: ignore[arg-type]
        for p in parts
    ):
        return value
    given = ", ".join(f"{k}={v!r:.40}" for k, v in arguments.items())
    raise ValueError(f"the result overflows the float range at {given}")


def check_interval(value: Number, name: str, low: float, high: float) -> None:
    """``value`` (a number or a tensor) finite and within [low, high] throughout."""
    check_number(value, name, tensor_ok=True)
    v = torch.as_tensor(value, dtype=torch.float64)
    if not bool((torch.isfinite(v) & (v >= low) & (v <= high)).all()):
        raise ValueError(f"{name} must be finite and lie in [{low}, {high}], got {value!r:.60}")


def check_keys(n_keys: Tensor | int, n: int) -> None:
    """``n_keys`` (L: an int, or a tensor of counts) must be at least ``n`` (N) everywhere:
    with L < N there is no set of N keys."""
    if isinstance(n_keys, Tensor):
        check_tensor(n_keys, "n_keys")
        if n_keys.dtype == torch.bool or not bool(torch.isfinite(n_keys.double()).all()):
            raise ValueError(f"n_keys must hold finite counts, got {n_keys!r:.60}")
        if bool((n_keys < n).any()):
            raise ValueError(
                f"n_keys (L) must be >= n = {n} (no set of N keys), got {n_keys!r:.60}"
            )
        return
    check_int_at_least(n_keys, "n_keys", 1)
    if n_keys < n:
        raise ValueError(f"n_keys (L) = {n_keys} must be >= n = {n} (no set of N keys)")


def broadcast_together(**values: object) -> None:
    """The tensors among ``values`` must broadcast together (``ValueError`` naming them)."""
    shapes = {k: torch.as_tensor(v).shape for k, v in values.items()}
    try:
        torch.broadcast_shapes(*shapes.values())
    except RuntimeError:
        got = ", ".join(f"{k} {tuple(v)}" for k, v in shapes.items())
        raise ValueError(f"{', '.join(shapes)} must broadcast together, got {got}") from None
