"""Gradient-safe pieces of the formulas (layer 0): results whose forward is finite get finite
gradients (docs/conventions.md, "Gradients"; tests/test_grad_fuzz.py).

A ``torch.where(ok, f(t), fallback)`` keeps a NaN or inf of ``f`` out of the value, not out of
the gradient: the zero gradient of the unselected branch times ``f'``'s inf is NaN. The cure is
the double where, ``torch.where(ok, f(torch.where(ok, t, safe)), fallback)``: ``f`` never sees
the bad entries. √t at t = 0 (the norm of a zero vector) is the common case, hence
:func:`sqrt0`.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["records", "sqrt0"]


def records(t: Tensor) -> bool:
    """Whether autograd records operations on ``t``: no in-place op may touch what it saved."""
    return t.requires_grad and torch.is_grad_enabled()


def sqrt0(t: Tensor, *, inplace: bool = False) -> Tensor:
    """√max(t, 0) whose gradient is 0 (not inf, nor NaN after a mask) where t ≤ 0: the zero
    subgradient of a norm at the zero vector, where the squared norm rounds to t ≤ 0.

    ``inplace=True`` lets the plain path overwrite ``t`` (a temporary the caller owns) when
    autograd does not record it; with autograd the result is always a new tensor.
    """
    if not records(t):
        return t.clamp_min_(0).sqrt_() if inplace else t.clamp_min(0).sqrt()
    pos = t > 0
    return torch.where(pos, torch.where(pos, t, 1.0).sqrt(), 0.0)
