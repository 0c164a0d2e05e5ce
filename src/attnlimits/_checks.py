"""Input checks shared by every module: one clear ``ValueError`` instead of a silent wrong number.

Conventions (see ``docs/conventions.md``):

- masks are boolean, ``True`` = keep (attend), broadcastable to the scores;
- maps are ``[..., query, key]``; per-key vectors are ``[..., key, d]``;
- the normalised axis is ``dim`` (default ``-1``), as in ``torch.softmax``;
- tensor arguments must be ``torch.Tensor`` (a list or a numpy array is refused with a
  ``TypeError``, as ``torch.softmax`` refuses it); numbers must be real numbers, not bools or
  strings; meta tensors (shapes without values) pass only where a function computes shapes
  (the normalisers), every value-reading function refuses them by name.

Every check is O(1) in the tensor's size except :func:`check_finite`, :func:`finite_top` and
:func:`check_magnitudes` (one reduction per tensor).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import Tensor

__all__ = [
    "ArgumentTypeError",
    "check_choice",
    "check_choices",
    "check_distinct",
    "check_dtype_float",
    "check_finite",
    "check_in_range",
    "check_int_at_least",
    "check_magnitudes",
    "check_map_and_vectors",
    "check_mask",
    "check_nonempty",
    "check_number",
    "check_positive",
    "check_same_rows",
    "check_tensor",
    "check_top_n",
    "finite_top",
    "first_line",
    "is_finite_number",
    "keep_mask",
    "key_counts",
    "normalize_dim",
    "positive_ints",
]


_INT64_MAX = 2**63 - 1


class ArgumentTypeError(TypeError, ValueError):
    """A wrong kind of argument (a list for a tensor, a string for a number): a ``TypeError``,
    and a ``ValueError`` too, so that callers that catch ``ValueError`` for bad input (the
    command line) catch it as well."""


def is_finite_number(value: Any) -> bool:
    """True for a real number (not a bool) that is finite as a float (a huge int is not)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def check_tensor(x: Any, name: str, *, allow_meta: bool = False) -> Tensor:
    """``x`` itself if it is a ``torch.Tensor``; else a ``TypeError`` naming ``name``.

    A meta tensor (shape and dtype, no values) raises ``ValueError`` unless ``allow_meta``:
    only functions that compute shapes alone (the normalisers) accept one.
    """
    if not isinstance(x, Tensor):
        raise ArgumentTypeError(
            f"{name} must be a torch.Tensor, got {type(x).__name__} "
            "(convert it with torch.as_tensor)"
        )
    if x.is_meta and not allow_meta:
        raise ValueError(
            f"{name} is a meta tensor (a shape without values); this function reads values"
        )
    return x


def check_dtype_float(x: Tensor, name: str) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``x`` has a floating-point dtype."""
    if not torch.is_floating_point(x):
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")


def check_number(value: Any, name: str, *, tensor_ok: bool = False) -> None:
    """``TypeError`` naming ``name`` unless ``value`` is a real number (not a bool, not a
    string), or, with ``tensor_ok``, a tensor with values (bool dtype refused)."""
    if isinstance(value, Tensor) and tensor_ok:
        check_tensor(value, name)
        if value.dtype == torch.bool or value.is_complex():
            raise ArgumentTypeError(f"{name} must hold real numbers, got dtype {value.dtype}")
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        kinds = "a real number or a tensor" if tensor_ok else "a real number"
        raise ArgumentTypeError(f"{name} must be {kinds}, got {type(value).__name__} {value!r:.40}")
    try:
        float(value)
    except OverflowError:  # an int beyond float range: math.isfinite would raise the same
        raise ValueError(f"{name} is too large: {value!r:.40}") from None


def normalize_dim(dim: int, ndim: int, of: str = "the tensor") -> int:
    """Return ``dim`` as a non-negative axis index for ``of``, a tensor of ``ndim`` dimensions
    (``TypeError`` for a non-int ``dim``, ``ValueError`` naming both when out of range)."""
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise ArgumentTypeError(f"dim must be an int, got {type(dim).__name__} {dim!r:.40}")
    dim = int(dim)
    if ndim == 0:
        raise ValueError(f"{of} must have at least one dimension (dim={dim}), got a scalar")
    if not -ndim <= dim < ndim:
        raise ValueError(f"dim={dim} is out of range for {of}, which has {ndim} dimensions")
    return dim % ndim


def check_finite(
    x: Tensor, name: str = "scores", *, allow_neg_inf: bool = True, allow_meta: bool = False
) -> Tensor:
    """Raise ``ValueError`` if ``x`` holds NaN (or +inf, or -inf when not allowed).

    ``-inf`` is allowed by default because it is the usual way to pad logits. ``x`` must be a
    floating-point tensor (:func:`check_tensor`); a meta tensor passes only with
    ``allow_meta`` (it has no values to check).
    """
    check_tensor(x, name, allow_meta=allow_meta)
    check_dtype_float(x, name)
    if x.is_meta:
        return x
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
    """Raise ``ValueError`` unless ``value`` is an int (not a bool; numpy integers count) and
    ``>= low``; one message for every integer argument:
    ``"{name} must be an int >= {low}, got {value!r}"``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r:.40}")
    if value > _INT64_MAX:  # torch cannot take it (and no loop or size that large can run)
        raise ValueError(f"{name} must be an int below 2**63, got {value!r:.40}")


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
    dim = normalize_dim(dim, x.ndim, name)
    if x.shape[dim] == 0:
        raise ValueError(f"{name} has an empty key axis (dim={dim}, shape {tuple(x.shape)})")


def check_map_and_vectors(attn: Tensor, x: Tensor, names: tuple[str, str] = ("attn", "x")) -> None:
    """``attn [..., Q, K]`` (or ``[K]``) and ``x [..., K, d]``: K agrees, the batch axes broadcast.

    The broadcasting rule is ``attn @ x``'s; the message names both arguments and their shapes.
    """
    a, v = names
    check_tensor(attn, a)
    check_tensor(x, v)
    shapes = f"{a} {tuple(attn.shape)} and {v} {tuple(x.shape)}"
    if attn.ndim < 1 or x.ndim < 2 or x.shape[-2] != attn.shape[-1]:
        raise ValueError(f"{a} [..., Q, K] and {v} [..., K, d] disagree on K: {shapes}")
    if attn.shape[-1] == 0:
        raise ValueError(f"{a} has an empty key axis: {shapes}")
    if x.shape[-1] == 0:
        raise ValueError(f"{v} has no features (d = 0): {shapes}")
    try:
        torch.broadcast_shapes(attn.shape[:-2], x.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"{shapes}: their batch/head axes do not broadcast (e.g. heads 2 vs 3)"
        ) from None


def finite_top(x: Tensor, name: str) -> float:
    """max|x| of a finite float tensor (0 when empty), or :func:`check_finite`'s error: one
    pass over ``x`` for both checks (the max is NaN or inf exactly when ``x`` holds one)."""
    check_tensor(x, name)
    check_dtype_float(x, name)
    lo, hi = torch.aminmax(x.detach()) if x.numel() else (torch.zeros(()), torch.zeros(()))
    top = max(-float(lo), float(hi))  # NaN if x holds one (aminmax is ~30x vector_norm(inf))
    if not math.isfinite(top):
        check_finite(x, name, allow_neg_inf=False)  # raises, naming NaN, +inf or -inf
    return top


def check_magnitudes(
    attn: Tensor,
    x: Tensor,
    names: tuple[str, str] = ("attn", "x"),
    tops: tuple[float, float] | None = None,
) -> None:
    """Refuse weights and vectors so large that the squared norms behind the distance metrics
    (||α_i x_i − s||², Gram entries, summed over K keys of d dimensions) would overflow the
    working dtype (float32 for half inputs): max(1, max|α|)·max|x| must stay below
    √(max / (16·d·K)), about 3e15 in float32 at d = 64, K = 1024. Distances scale with x, so
    scaling x down (or passing float64) answers the same question. ``tops``: max|α| and max|x|
    if the caller has them (:func:`finite_top`)."""
    work = torch.promote_types(attn.dtype, x.dtype)
    if work in (torch.float16, torch.bfloat16):
        work = torch.float32
    if attn.numel() == 0 or x.numel() == 0:
        return
    if tops is None:
        tops = (finite_top(attn, names[0]), finite_top(x, names[1]))
    top_a, top_x = tops
    limit = math.sqrt(torch.finfo(work).max / (16 * max(1, x.shape[-1]) * max(1, x.shape[-2])))
    if max(1.0, top_a) * top_x > limit:  # ||x_i||² itself is formed, whatever α is
        a, v = names
        raise ValueError(
            f"{a} (entries up to {top_a:.3g}) and {v} (up to {top_x:.3g}) are too large: their "
            f"squared norms would overflow {work}; scale {v} down (distances scale with it) "
            "or pass float64"
        )


def check_same_rows(values: Tensor, valid: Tensor) -> None:
    """``valid`` must be a boolean tensor that broadcasts to ``values``' shape (one flag per
    row); ``values`` a floating-point tensor."""
    check_tensor(values, "values")
    check_dtype_float(values, "values")
    check_tensor(valid, "valid")
    if valid.dtype != torch.bool:
        raise ValueError(f"valid must be a boolean tensor, got dtype {valid.dtype}")
    try:
        if torch.broadcast_shapes(values.shape, valid.shape) != values.shape:
            raise RuntimeError
    except RuntimeError:
        raise ValueError(
            f"valid of shape {tuple(valid.shape)} does not broadcast to values "
            f"{tuple(values.shape)}"
        ) from None


def check_mask(
    mask: Tensor | None, like: Tensor, name: str = "mask", of: str = "scores"
) -> Tensor | None:
    """Validate a boolean keep-mask and broadcast it to ``like``'s shape (``like`` is the
    argument called ``of``, named in the messages).

    Returns ``None`` when ``mask`` is ``None``. A non-boolean mask is rejected rather than
    guessed at: additive float masks and "True = masked out" conventions both exist, and
    confusing them gives plausible but wrong numbers.
    """
    if mask is None:
        return None
    check_tensor(mask, name, allow_meta=like.is_meta)
    if mask.is_meta != like.is_meta:
        raise ValueError(f"{name} is on {mask.device} but {of} is on {like.device}")
    if mask.dtype != torch.bool:
        raise ValueError(f"{name} must be a boolean tensor (True = keep), got dtype {mask.dtype}")
    if mask.shape == like.shape:
        return mask
    try:
        if torch.broadcast_shapes(mask.shape, like.shape) != like.shape:
            raise RuntimeError
    except RuntimeError:
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not broadcast to {of} of shape "
            f"{tuple(like.shape)}"
        ) from None
    return mask.expand_as(like)


def check_positive(value: float | Tensor, name: str, *, tensor_ok: bool = True) -> None:
    """Raise ``ValueError`` unless ``value`` (a number, or a tensor where ``tensor_ok``) is
    finite and > 0 throughout (``TypeError`` if it is neither)."""
    check_number(value, name, tensor_ok=tensor_ok)
    if isinstance(value, Tensor):
        ok = bool(torch.isfinite(value).all() and (value > 0).all())
    else:
        ok = math.isfinite(value) and value > 0
    if not ok:
        raise ValueError(f"{name} must be positive and finite, got {value}")


def check_in_range(
    value: float, name: str, low: float, high: float, *, closed: tuple[bool, bool] = (True, True)
) -> None:
    """Raise ``ValueError`` unless ``low <= value <= high`` (ends open where ``closed`` says);
    ``TypeError`` unless ``value`` is a real number."""
    check_number(value, name)
    lo_ok = value >= low if closed[0] else value > low
    hi_ok = value <= high if closed[1] else value < high
    if not (math.isfinite(value) and lo_ok and hi_ok):
        lb = "[" if closed[0] else "("
        rb = "]" if closed[1] else ")"
        raise ValueError(f"{name} must lie in {lb}{low}, {high}{rb}, got {value}")


def check_choice(value: Any, name: str, choices: Sequence[str]) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(
            f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r:.40}"
        )


def check_choices(values: Any, name: str, choices: Sequence[str]) -> tuple[str, ...]:
    """``values`` (a sequence of ``choices``, possibly empty; not a bare string) as a tuple."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ArgumentTypeError(
            f"{name} must be a sequence of {', '.join(map(repr, choices))}, got {values!r:.40}"
        )
    out = tuple(values)
    for v in out:
        check_choice(v, name, choices)
    return out


def check_top_n(n: int, n_keys: int, name: str = "N") -> None:
    """Raise ``ValueError`` unless ``1 <= n < n_keys`` (top-N needs a key left outside)."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
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


def key_counts(mask: Tensor | None, like: Tensor, dim: int = -1, of: str = "scores") -> Tensor:
    """Number of kept keys along ``dim`` (kept dimension), as ``like``'s dtype.

    Without a mask every row has ``like.shape[dim]`` keys.
    """
    dim = normalize_dim(dim, like.ndim, of)
    if mask is None:
        shape = list(like.shape)
        shape[dim] = 1
        return torch.full(shape, like.shape[dim], dtype=like.dtype, device=like.device)
    return check_mask(mask, like, of=of).sum(dim=dim, keepdim=True).to(like.dtype)  # type: ignore[union-attr]


def keep_mask(scores: Tensor, mask: Tensor | None, of: str = "scores") -> Tensor:
    """Entries that count: ``mask`` (validated, True = keep) and not ``-inf`` in ``scores``.

    ``-inf`` is the usual padding of logits, so it is treated exactly like a masked entry.
    """
    keep = ~torch.isneginf(scores)
    checked = check_mask(mask, scores, of=of)
    return keep if checked is None else keep & checked


def first_line(err: BaseException) -> str:
    """An exception's first line (a loader's message can run to a page)."""
    if isinstance(err, KeyError) and err.args:  # str() is only the key, quoted
        return f"no {err.args[0]!r} field where it was looked up"
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__
