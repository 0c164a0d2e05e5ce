"""Input checks shared by every module: one clear ``ValueError`` instead of a silent wrong number.

Conventions (see ``docs/conventions.md``):

- masks are boolean, ``True`` = keep (attend), broadcastable to the scores;
- maps are ``[..., query, key]``; per-key vectors are ``[..., key, d]``;
- the normalised axis is ``dim`` (default ``-1``), as in ``torch.softmax``.
"""

from __future__ import annotations

import math
import numbers
import stat
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

__all__ = [
    "check_distinct",
    "check_finite",
    "check_in_range",
    "check_int_at_least",
    "check_map_and_vectors",
    "check_mask",
    "check_nonempty",
    "check_positive",
    "check_same_rows",
    "check_top_n",
    "keep_mask",
    "key_counts",
    "normalize_dim",
    "path_kind",
    "positive_ints",
]


def normalize_dim(dim: int, ndim: int) -> int:
    """Return ``dim`` as a non-negative axis index for a tensor of ``ndim`` dimensions."""
    if ndim == 0:
        raise ValueError("expected a tensor with at least one dimension, got a scalar")
    if not -ndim <= dim < ndim:
        raise ValueError(f"dim={dim} is out of range for a tensor with {ndim} dimensions")
    return dim % ndim


def check_finite(x: Tensor, name: str = "scores", *, allow_neg_inf: bool = True) -> Tensor:
    """Raise ``ValueError`` if ``x`` holds NaN (or +inf, or -inf when not allowed).

    ``-inf`` is allowed by default because it is the usual way to pad logits.
    """
    if not torch.is_floating_point(x):
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if x.numel() and bool(torch.isfinite(x.sum())):  # no NaN, no ±inf: one reduction, no copy
        return x
    if torch.isnan(x).any():
        raise ValueError(f"{name} contains NaN")
    if torch.isposinf(x).any():
        raise ValueError(f"{name} contains +inf")
    if not allow_neg_inf and torch.isneginf(x).any():
        raise ValueError(f"{name} contains -inf")
    return x


def check_int_at_least(value: int, name: str, low: int) -> None:
    """Raise ``ValueError`` unless ``value`` is an int (not a bool) and ``>= low``; one message
    for every integer argument: ``"{name} must be an int >= {low}, got {value!r}"``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


def check_distinct(values: Any, name: str) -> None:
    """Raise ``ValueError`` when ``values`` holds an item twice (``1`` and ``1.0`` count as one):
    every list setting takes each value once, ``"{name} repeats 1.0; give each value once"``."""
    seen: set[Any] = set()
    repeats: list[str] = []
    for value in values:
        key = value if isinstance(value, (str, numbers.Number)) else repr(value)
        if key in seen and str(value) not in repeats:
            repeats.append(str(value))
        seen.add(key)
    if repeats:
        raise ValueError(f"{name} repeats {', '.join(repeats)}; give each value once")


def path_kind(path: Path) -> str:
    """What ``path`` is, for a message: ``"a file"``, ``"a folder"``, ``"a FIFO (named pipe)"``,
    ``"a device"``, ``"a socket"``, or ``"missing"`` (a broken link too)."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as err:  # e.g. a parent folder without search permission
        return f"out of reach ({err.strerror})"
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket" if stat.S_ISSOCK(mode) else "neither a file nor a folder"


def positive_ints(name: str, values: Any) -> tuple[int, ...]:
    """``values`` as a non-empty tuple of ints >= 1 (numpy integers too; no floats, no bools),
    or a ``ValueError`` naming ``name``."""
    try:
        items = () if isinstance(values, (str, bytes)) else tuple(values)
    except TypeError:
        items = ()
    if not items or any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in items):
        raise ValueError(f"{name} must be positive integers, got {values!r}")
    if min(items) < 1:
        raise ValueError(f"{name} must be positive integers, got {values!r}")
    return tuple(int(v) for v in items)


def check_nonempty(x: Tensor, dim: int, name: str = "scores") -> None:
    """Raise ``ValueError`` when axis ``dim`` of ``x`` (the key axis) has no entries."""
    if x.shape[dim] == 0:
        raise ValueError(f"{name} has an empty key axis (dim={dim}, shape {tuple(x.shape)})")


def check_map_and_vectors(attn: Tensor, x: Tensor, names: tuple[str, str] = ("attn", "x")) -> None:
    """``attn [..., Q, K]`` (or ``[K]``) and ``x [..., K, d]``: K agrees, the batch axes broadcast.

    The broadcasting rule is ``attn @ x``'s; the message names both arguments and their shapes.
    """
    a, v = names
    shapes = f"{a} {tuple(attn.shape)} and {v} {tuple(x.shape)}"
    if attn.ndim < 1 or x.ndim < 2 or x.shape[-2] != attn.shape[-1]:
        raise ValueError(f"{a} [..., Q, K] and {v} [..., K, d] disagree on K: {shapes}")
    if attn.shape[-1] == 0:
        raise ValueError(f"{a} has an empty key axis: {shapes}")
    try:
        torch.broadcast_shapes(attn.shape[:-2], x.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"{shapes}: their batch/head axes do not broadcast (e.g. heads 2 vs 3)"
        ) from None


def check_same_rows(values: Tensor, valid: Tensor) -> None:
    """``valid`` must broadcast to ``values``' shape (one flag per row)."""
    try:
        if torch.broadcast_shapes(values.shape, valid.shape) != values.shape:
            raise RuntimeError
    except RuntimeError:
        raise ValueError(
            f"valid of shape {tuple(valid.shape)} does not broadcast to values "
            f"{tuple(values.shape)}"
        ) from None


def check_mask(mask: Tensor | None, like: Tensor, name: str = "mask") -> Tensor | None:
    """Validate a boolean keep-mask and broadcast it to ``like``'s shape.

    Returns ``None`` when ``mask`` is ``None``. A non-boolean mask is rejected rather than
    guessed at: additive float masks and "True = masked out" conventions both exist, and
    confusing them gives plausible but wrong numbers.
    """
    if mask is None:
        return None
    if mask.dtype != torch.bool:
        raise ValueError(f"{name} must be a boolean tensor (True = keep), got dtype {mask.dtype}")
    try:
        return mask.expand_as(like) if mask.shape != like.shape else mask
    except RuntimeError as err:
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not broadcast to {tuple(like.shape)}"
        ) from err


def check_positive(value: float | Tensor, name: str) -> None:
    """Raise ``ValueError`` unless ``value`` (number or tensor) is finite and > 0 throughout."""
    if isinstance(value, Tensor):
        ok = bool(torch.isfinite(value).all() and (value > 0).all())
    else:
        ok = math.isfinite(value) and value > 0
    if not ok:
        raise ValueError(f"{name} must be positive and finite, got {value}")


def check_in_range(
    value: float, name: str, low: float, high: float, *, closed: tuple[bool, bool] = (True, True)
) -> None:
    """Raise ``ValueError`` unless ``low <= value <= high`` (ends open where ``closed`` says)."""
    lo_ok = value >= low if closed[0] else value > low
    hi_ok = value <= high if closed[1] else value < high
    if not (math.isfinite(value) and lo_ok and hi_ok):
        lb = "[" if closed[0] else "("
        rb = "]" if closed[1] else ")"
        raise ValueError(f"{name} must lie in {lb}{low}, {high}{rb}, got {value}")


def check_top_n(n: int, n_keys: int, name: str = "N") -> None:
    """Raise ``ValueError`` unless ``1 <= n < n_keys`` (top-N needs a key left outside)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError(f"{name} must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"{name} must be >= 1, got {n}")
    if n >= n_keys:
        raise ValueError(f"{name}={n} must be smaller than the number of keys ({n_keys})")


def row_counts(keep: Tensor) -> Tensor:
    """``keep.sum(-1)`` for a boolean mask, summed once over axes it is broadcast along (stride
    0, e.g. one causal mask expanded over heads) and expanded back."""
    compact = keep[
        tuple(
            slice(0, 1) if st == 0 and n > 1 else slice(None)
            for st, n in zip(keep.stride()[:-1], keep.shape[:-1], strict=True)
        )
    ]
    return compact.sum(-1).expand(keep.shape[:-1])


def key_counts(mask: Tensor | None, like: Tensor, dim: int = -1) -> Tensor:
    """Number of kept keys along ``dim`` (kept dimension), as ``like``'s dtype.

    Without a mask every row has ``like.shape[dim]`` keys.
    """
    dim = normalize_dim(dim, like.ndim)
    if mask is None:
        shape = list(like.shape)
        shape[dim] = 1
        return torch.full(shape, like.shape[dim], dtype=like.dtype, device=like.device)
    return check_mask(mask, like).sum(dim=dim, keepdim=True).to(like.dtype)  # type: ignore[union-attr]


def keep_mask(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Entries that count: ``mask`` (validated, True = keep) and not ``-inf`` in ``scores``.

    ``-inf`` is the usual padding of logits, so it is treated exactly like a masked entry.
    """
    keep = ~torch.isneginf(scores)
    checked = check_mask(mask, scores)
    return keep if checked is None else keep & checked
