"""The expectation E = E_{I_N}[d̃] of paper A's Eq. 8, measured: by exhaustive enumeration of the
C(L, N) selections (small L, the reference), by Monte Carlo over random selections with its
standard error, and by Monte Carlo over a grid of N at once (:func:`expected_distance_curve_mc`,
what the reproduction calls E *exact*). Theorem 1.2's closed forms of E live in
:mod:`attnlimits.theory.distance`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch
from torch import Tensor

from attnlimits._checks import ArgumentTypeError, check_int_at_least
from attnlimits._grad import sqrt0
from attnlimits.metrics import _fused
from attnlimits.metrics._topn import (
    TopNRows,
    check_rows,
    distance_from_products,
    n_grid,
    nested_products,
    prepare_rows,
    rank_of,
    selection_distance,
    shared_gram,
    top_n,
)

__all__ = [
    "expected_distance_curve_mc",
    "expected_distance_exact",
    "expected_distance_monte_carlo",
]


def expected_distance_exact(
    attn: Tensor, x: Tensor, n: int, *, mask: Tensor | None = None, max_subsets: int = 200_000
) -> Tensor:
    """Exact E = E_{I_N}[d̃] over I_N uniform among the C(L, N) subsets of kept keys (Eq. 8).

    Brute force reference: enumerates every N-subset of the K keys (a row averages those that
    lie within its kept keys), so it is for small K only; raises ``ValueError`` when
    C(K, N) > ``max_subsets``. Shapes as :func:`distance_metrics`; returns ``[..., Q]``,
    NaN for rows with fewer than N + 1 kept keys.
    """
    r = prepare_rows(attn, x, n, mask)
    check_int_at_least(max_subsets, "max_subsets", 1)
    k = attn.shape[-1]
    if math.comb(k, n) > max_subsets:
        raise ValueError(
            f"C({k}, {n}) = {math.comb(k, n)} subsets exceed max_subsets={max_subsets}"
        )
    subsets = torch.tensor(list(itertools.combinations(range(k), n)), device=attn.device)
    all_sel = torch.zeros(subsets.shape[0], k, dtype=torch.bool, device=attn.device)
    all_sel.scatter_(1, subsets, True)  # (S, K)
    rows = _rows(r)
    extra = (1,) * len(rows)
    total = torch.zeros(rows, dtype=torch.float64, device=attn.device)
    count = torch.zeros_like(total)
    chunk = max(1, 2**21 // max(1, r.attn.numel()))
    for start in range(0, all_sel.shape[0], chunk):
        sel = all_sel[start : start + chunk].reshape(-1, *extra, k)  # (S, 1.., K)
        inside = ~(sel & ~r.keep).any(-1)  # subset within the row's kept keys
        d = selection_distance(r, sel & r.keep)
        total += torch.where(inside, d, torch.zeros_like(d)).sum(0).double()
        count += inside.sum(0).double()
    mean = (total / count.clamp_min(1)).to(r.attn.dtype)  # no 0/0 in invalid rows' gradients
    return torch.where(r.valid, mean, torch.full_like(mean, math.nan))


def _check_generator(generator: object, like: Tensor, name: str = "generator") -> None:
    """``generator`` must be None or a ``torch.Generator`` on ``like``'s device type."""
    if generator is None:
        return
    if not isinstance(generator, torch.Generator):
        raise ArgumentTypeError(
            f"{name} must be a torch.Generator or None, got {type(generator).__name__}"
        )
    if generator.device.type != like.device.type:
        raise ValueError(f"{name} is on {generator.device}, the tensors on {like.device}")


def _rows(r: TopNRows) -> tuple[int, ...]:
    """The rows of the results: attn's, broadcast against x's batch axes (``[..., Q]``)."""
    return (*torch.broadcast_shapes(r.attn.shape[:-2], r.x.shape[:-2]), r.attn.shape[-2])


def expected_distance_monte_carlo(
    attn: Tensor,
    x: Tensor,
    n: int,
    *,
    mask: Tensor | None = None,
    samples: int = 1000,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """Monte Carlo estimate of E = E_{I_N}[d̃] (Eq. 8) and its standard error.

    Each sample draws, per row, I_N uniformly among the N-subsets of the row's kept keys (the
    N smallest of i.i.d. uniforms) and evaluates d̃; returns ``(mean, stderr)`` with
    stderr = sample std / √samples, each ``[..., Q]`` and NaN for invalid rows.
    Draws samples in chunks; pass a seeded ``generator`` for reproducible numbers.
    """
    r = prepare_rows(attn, x, n, mask)
    check_int_at_least(samples, "samples", 1)
    _check_generator(generator, attn)
    total = torch.zeros(_rows(r), dtype=torch.float64, device=attn.device)
    total_sq = torch.zeros_like(total)
    chunk = max(1, 2**20 // r.attn.numel())  # samples drawn at once
    for start in range(0, int(samples), chunk):
        c = min(chunk, int(samples) - start)
        u = torch.rand(
            (c, *r.attn.shape), generator=generator, dtype=r.attn.dtype, device=attn.device
        )
        _, sel = top_n(u, r.keep, n)  # (c, ..., Q, K)
        d = selection_distance(r, sel).double()
        total += d.sum(0)
        total_sq += (d * d).sum(0)
    mean = total / samples
    var = (total_sq / samples - mean * mean).clamp_min(0) * samples / max(samples - 1, 1)
    stderr = sqrt0(var / samples)
    nan = torch.tensor(math.nan, dtype=r.attn.dtype, device=attn.device)
    return (
        torch.where(r.valid, mean.to(r.attn.dtype), nan),
        torch.where(r.valid, stderr.to(r.attn.dtype), nan),
    )


def expected_distance_curve_mc(
    attn: Tensor,
    x: Tensor,
    ns: Sequence[int],
    *,
    mask: Tensor | None = None,
    samples: int = 8,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """Monte Carlo E = E_{I_N}[d̃] (Eq. 8) for every N in ``ns`` at once, per row.

    Each sample draws one uniformly random order of the row's kept keys (argsort of i.i.d.
    uniforms); its first N keys are a uniform N-subset I_N for every N, so one order serves the
    whole grid and the context vectors s_N grow by the same nested row gathers as the top-N
    curve (:func:`~attnlimits.metrics.distance_curve`). d̃ of each I_N is Eq. 7 exactly.

    Shapes as :func:`~attnlimits.metrics.distance_curve`; returns ``(mean, stderr)``, each
    ``[..., Q, n_N]`` (N ascending), stderr = sample std over the ``samples`` draws / √samples,
    NaN where a row has fewer than N + 1 kept keys. Cost: ``samples`` times one top-N curve
    without E, so callers pass a subset of rows (``compute`` takes a few per band of L).
    """
    n_values = n_grid(ns)
    check_rows(attn, x, mask, n_values)
    check_int_at_least(samples, "samples", 1)
    if samples < 2:
        raise ValueError(f"samples must be >= 2 for a standard error, got {samples}")
    _check_generator(generator, attn)
    r0 = prepare_rows(attn, x, n_values[0], mask, check=False)
    s_count = int(samples)
    q = r0.attn.shape[-2]
    # the rows repeated once per sample along the row axis: [..., S·Q, K]
    rep = r0._replace(
        attn=r0.attn.repeat_interleave(s_count, dim=-2),
        keep=r0.keep.expand(*r0.attn.shape).repeat_interleave(s_count, dim=-2),
        n_keys=r0.n_keys.expand(r0.attn.shape[:-1]).repeat_interleave(s_count, dim=-1),
    )
    u = torch.rand(rep.attn.shape, generator=generator, dtype=rep.attn.dtype, device=attn.device)
    d = _fused_draws(rep, u, n_values)
    if d is None:
        order = u.masked_fill(~rep.keep, -1.0).argsort(dim=-1, descending=True)
        rank = rank_of(order)
        gram = shared_gram(rep.x, n_values)
        a2sq = rep.attn * rep.attn * rep.sq
        out = []
        for n, inner_s, s_sq in nested_products(rep, order, n_values, gram):
            sel = (rank < n) & rep.keep
            out.append(distance_from_products(rep, sel, inner_s, s_sq, a2sq))
        d = torch.stack(out, -1)
    d = d.double()  # (..., S·Q, n_N)
    d = d.unflatten(-2, (q, s_count))  # (..., Q, S, n_N)
    mean = d.mean(-2)
    stderr = sqrt0(d.var(-2)) / math.sqrt(s_count)  # std, with gradient 0 where it is 0
    counts = r0.n_keys.expand(r0.attn.shape[:-1]).unsqueeze(-1)
    ok = counts >= torch.tensor(n_values, device=attn.device, dtype=counts.dtype) + 1
    nan = torch.tensor(math.nan, dtype=r0.attn.dtype, device=attn.device)
    return (
        torch.where(ok, mean.to(r0.attn.dtype), nan),
        torch.where(ok, stderr.to(r0.attn.dtype), nan),
    )


def _fused_draws(rep: TopNRows, u: Tensor, n_values: tuple[int, ...]) -> Tensor | None:
    """d̃ of the random subsets (the first N keys by ``u``) through the fused CPU kernels
    (:mod:`attnlimits.metrics._fused`), [..., S·Q, n_N]; None where they do not apply."""
    if not _fused.enabled(rep.attn, rep.x, rep.keep):
        return None
    rows = _fused.flat_rows(rep.attn, rep.keep, rep.x)
    gram = _fused.gram_tables(rows)
    if gram is None:
        return None
    uniforms = u.expand(*rows.batch, *u.shape[-2:]).reshape(rows.alpha.shape).contiguous()
    order = _fused.top_order(rows, n_values[-1], uniforms.numpy(), uniform=True)
    out = _fused.topn_rows(rows, order, gram, n_values)
    assert out.distance is not None
    return out.distance
