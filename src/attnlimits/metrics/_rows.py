"""Row bookkeeping shared by the metrics: rows that cannot be scored are excluded *and counted*.

Every per-row metric returns its values with ``NaN`` in rows it cannot score (for example
fewer than ``N + 1`` kept keys for a top-N metric) together with a boolean ``valid`` tensor.
:func:`row_mean` then averages only valid rows and reports how many it left out, so an
excluded row is never silently averaged in as a zero.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from attnlimits._checks import check_same_rows, normalize_dim

__all__ = ["RowMean", "empty_rows", "row_mean"]


class RowMean(NamedTuple):
    """Mean over the valid rows along one axis, with the counts behind it."""

    mean: Tensor  # NaN where no row was valid
    n_rows: Tensor  # rows averaged
    n_excluded: Tensor  # rows left out


def row_mean(values: Tensor, valid: Tensor, dim: int = -1) -> RowMean:
    """Average ``values`` over ``dim`` using only entries where ``valid`` is True.

    ``values`` must not be NaN where ``valid`` is True (``ValueError``): a metric marks the
    rows it cannot score as invalid. ``mean`` is NaN where no row is valid.

    >>> v = torch.tensor([1.0, float("nan"), 3.0]); ok = torch.tensor([True, False, True])
    >>> row_mean(v, ok)
    RowMean(mean=tensor(2.), n_rows=tensor(2), n_excluded=tensor(1))
    """
    check_same_rows(values, valid)
    dim = normalize_dim(dim, values.ndim, "values")
    valid = valid.expand_as(values)
    if bool((torch.isnan(values) & valid).any()):
        raise ValueError("values is NaN in a row where valid is True")
    n = valid.sum(dim=dim)
    # Each value is divided by its count before the sum, in float64: the mean of finite values
    # lies within their range, while their sum can overflow (three half-precision values near
    # 6.5e4, or float64 values near 1.8e308). 0/0 -> NaN where no row was valid.
    kept = torch.where(valid, values.to(torch.float64), 0.0)
    mean = (kept / n.unsqueeze(dim).to(torch.float64)).sum(dim=dim).to(values.dtype)
    return RowMean(mean=mean, n_rows=n, n_excluded=valid.shape[dim] - n)


def empty_rows(
    attn: Tensor, x: Tensor, mask: Tensor | None, fields: int, grid: int | None = None
) -> list[Tensor] | None:
    """Where ``attn [..., Q, K]``, ``x [..., K, d]`` and ``mask`` broadcast to no row at all (a
    zero-sized batch or query axis), the ``fields`` empty results of a per-row metric: float
    tensors of the rows' shape (with a last ``grid`` axis if given) in the dtype the metrics
    compute in, the last one the boolean ``valid``; else None. Empty in, empty out."""
    shapes = [attn.shape[:-1], (*x.shape[:-2], 1)]
    if mask is not None:
        shapes.append(mask.shape[:-1])
    rows = (*torch.broadcast_shapes(*shapes), *(() if grid is None else (grid,)))
    if math.prod(rows) != 0:
        return None
    dtype = torch.promote_types(attn.dtype, x.dtype)
    if dtype in (torch.float16, torch.bfloat16) or not dtype.is_floating_point:
        dtype = torch.float32
    out = [attn.new_empty(rows, dtype=dtype) for _ in range(fields - 1)]
    return [*out, attn.new_empty(rows, dtype=torch.bool)]
