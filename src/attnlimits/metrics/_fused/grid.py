"""The whole of :func:`attnlimits.metrics.distance_curve` on the CPU: d̃ (Eq. 7) and the Theorem 1.1
bound from the nested sets, E (Theorem 1.2) and its Jensen-gap bounds from ⟨x_i, x̄⟩."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlimits.metrics._fused.expectation import expectation_rows
from attnlimits.metrics._fused.rows import enabled, flat_rows, gram_tables, top_order
from attnlimits.metrics._fused.selection import topn_rows
from attnlimits.metrics._topn import prepare_rows, query_blocks
from attnlimits.theory.distance import fixed_selection_bound_unchecked

__all__ = ["distance_grid", "xbar_products"]

Grid = tuple[Tensor, dict[str, Tensor], Tensor, Tensor, "dict[str, Tensor] | None"]


def xbar_products(attn: Tensor, x: Tensor, mask: Tensor | None, gram: Tensor | None) -> Tensor:
    """⟨x_i, x̄⟩ [..., Q, K] with x̄ = Σ_i α_i x_i (masked α = 0), by query blocks cut to
    their keys (zeros beyond a block's last key); through the Gram matrix ``gram`` [K, K]
    (x shared by every head) when that is cheaper than two products with x (2d > K)."""
    q, k = attn.shape[-2:]
    batch = torch.broadcast_shapes(attn.shape[:-2], x.shape[:-2])
    inner = torch.zeros((*batch, q, k), dtype=attn.dtype)
    start = 0
    for a, _, kb in query_blocks(attn, mask):
        rows = slice(start, start + a.shape[-2])
        if gram is not None and 2 * x.shape[-1] > kb:
            inner[..., rows, :kb] = a @ gram[:kb, :kb]
        else:
            xb = x[..., :kb, :]
            inner[..., rows, :kb] = (a @ xb) @ xb.mT
        start += a.shape[-2]
    return inner


def distance_grid(
    attn: Tensor,
    x: Tensor,
    mask: Tensor | None,
    n_values: tuple[int, ...],
    forms: tuple[str, ...],
    bound_ns: set[int],
    gap_forms: tuple[str, ...],
) -> Grid | None:
    """(d̃, E per form, bound, valid, gap bounds per form or None), each [*batch, Q, n_N], as
    :class:`~attnlimits.metrics.DistanceCurve` holds them; None where the kernels do not apply
    (GPU, autograd, the ``rms`` form, Gram tables over budget)."""
    r = prepare_rows(attn, x, n_values[0], mask, check=False)  # distance_curve checked them
    if "rms" in forms or not enabled(r.attn, r.x, r.keep):
        return None
    rows = flat_rows(r.attn, r.keep, r.x, source=(attn, mask))
    gram = gram_tables(rows)
    if gram is None:
        return None
    order = top_order(rows, n_values[-1])
    out = topn_rows(rows, order, gram, n_values, bound_ns=sorted(bound_ns))
    assert out.distance is not None
    shape = out.distance.shape
    n_keys = r.n_keys.expand(shape[:-1]).unsqueeze(-1)
    valid = n_keys >= torch.tensor(n_values, dtype=n_keys.dtype) + 1
    bound = torch.full(shape, math.nan, dtype=r.attn.dtype)
    if out.d1 is not None and out.max_norm is not None and out.mass is not None:
        for j, n in enumerate(n_values):
            if n in bound_ns:
                b = fixed_selection_bound_unchecked(
                    out.mass[..., j], out.d1[..., j], out.max_norm[..., j], n_keys[..., 0], n
                )
                bound[..., j] = torch.where(valid[..., j], b, math.nan)
    exp: dict[str, Tensor] = {}
    gaps: dict[str, Tensor] = {}
    if forms or gap_forms:
        shared = math.prod(r.x.shape[:-2]) == 1
        g = torch.from_numpy(gram[0]) if shared else None
        inner = xbar_products(r.attn, r.x, r.keep, g).expand(*shape[:-1], -1)
        gap_ns = sorted(bound_ns & set(n_values))
        exp_f, gaps = expectation_rows(rows, gram, inner, n_values, forms, gap_ns, gap_forms)
        exp = {f: exp_f[f] for f in forms}
    return out.distance, exp, bound, valid, gaps or None
