"""Top-N selection shared by :mod:`~attnlimits.metrics.distance` and
:mod:`~attnlimits.metrics.separability` (paper A, Eq. 6: I_N = the N largest kept weights of a
row, s = Σ_{i∈I_N} α_i x_i).

- :func:`check_rows`: every argument check, once, before any work; :func:`prepare_rows`: the
  per-block row data; :func:`query_blocks`: rows in cache-sized blocks;
- :func:`top_n` (one N, ``topk``) and :func:`key_ranks` (one stable rank for every N);
- :func:`nested_products`: ⟨x_i, s_N⟩ and ||s_N||² for a grid of N, by row gathers of x (nested
  top-N sets) or, when one x serves every head, by sparse rows of the Gram matrix.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from attnlimits._checks import (
    ArgumentTypeError,
    check_magnitudes,
    check_map_and_vectors,
    check_mask,
    check_top_n,
    finite_top,
    row_counts,
)
from attnlimits._grad import records, sqrt0

#: d·n_N must exceed this times N_max for the Gram route (:func:`gram_pays`).
_GRAM_FACTOR = 32
#: Elements per block of query rows ([..., rows, K]): keeps elementwise temporaries in cache.
_QUERY_BLOCK = 2**20


class TopNRows(NamedTuple):
    attn: Tensor  # masked entries set to 0
    x: Tensor
    sq: Tensor  # ||x_i||², (..., 1, K)
    keep: Tensor  # (..., Q, K)
    n_keys: Tensor  # (..., Q), float
    valid: Tensor  # (..., Q)


def n_grid(ns: Sequence[int], name: str = "ns", *, allow_empty: bool = False) -> tuple[int, ...]:
    """``ns`` (a sequence of ints N) as a sorted tuple of distinct ints, or a ``TypeError`` /
    ``ValueError`` naming ``name``; the range of each N is :func:`check_rows`' job."""
    if isinstance(ns, (str, bytes)) or not isinstance(ns, Iterable):
        raise ArgumentTypeError(f"{name} must be a sequence of ints N, got {type(ns).__name__}")
    values = list(ns)
    if not values and not allow_empty:
        raise ValueError(f"{name} must hold at least one N")
    out = set()
    for v in values:
        if isinstance(v, bool) or not hasattr(v, "__index__"):
            raise ArgumentTypeError(f"{name} must hold ints N, got {v!r:.40} in {values!r:.60}")
        out.add(operator.index(v))
    return tuple(sorted(out))


def check_rows(attn: Tensor, x: Tensor, mask: Tensor | None, ns: Sequence[int]) -> None:
    """Every check of a top-N metric, before any work and on the whole inputs: ``attn``
    ``[..., Q, K]`` and ``x`` ``[..., K, d]`` finite float tensors agreeing on K (batch axes
    broadcasting), ``mask`` boolean and broadcastable to ``attn``, each N in ``ns`` with
    1 ≤ N < K."""
    tops = (finite_top(attn, "attn"), finite_top(x, "x"))  # one pass each: finite and max|·|
    if attn.ndim < 2:
        raise ValueError(f"attn must be [..., Q, K], got shape {tuple(attn.shape)}")
    check_map_and_vectors(attn, x)
    check_magnitudes(attn, x, tops=tops)
    check_mask(mask, attn, of="attn")
    for n in ns:
        check_top_n(n, attn.shape[-1])


def prepare_rows(
    attn: Tensor, x: Tensor, n: int, mask: Tensor | None, *, check: bool = True
) -> TopNRows:
    """Bring ``attn``/``x`` to one float dtype and zero masked weights; validate them first
    (:func:`check_rows`) unless the caller did (``check=False``, e.g. per block of rows)."""
    if check:
        check_rows(attn, x, mask, (n,))
    dtype = torch.promote_types(attn.dtype, x.dtype)
    if dtype in (torch.float16, torch.bfloat16):
        dtype = torch.float32
    attn, x = attn.to(dtype), x.to(dtype)
    keep = check_mask(mask, attn, of="attn")
    keep = torch.ones_like(attn, dtype=torch.bool) if keep is None else keep
    attn = torch.where(keep, attn, torch.zeros_like(attn))
    n_keys = row_counts(keep).to(dtype)
    sq = (x * x).sum(-1).unsqueeze(-2)
    return TopNRows(attn, x, sq, keep, n_keys, n_keys >= n + 1)


def top_n(attn: Tensor, keep: Tensor, n: int) -> tuple[Tensor, Tensor]:
    """Indices [..., Q, N] of the N largest kept weights and the selection mask [..., Q, K]."""
    idx = attn.masked_fill(~keep, -math.inf).topk(n, dim=-1).indices
    sel = (
        torch.zeros(attn.shape, dtype=torch.bool, device=attn.device).scatter_(-1, idx, True) & keep
    )
    return idx, sel


def context_vectors(attn: Tensor, x: Tensor, sel: Tensor) -> tuple[Tensor, Tensor]:
    """⟨x_i, s⟩ [..., Q, K] and ||s||² [..., Q, 1] for s = Σ_{i∈sel} α_i x_i (Eq. 6)."""
    s = torch.where(sel, attn, torch.zeros_like(attn)) @ x  # (..., Q, d)
    return s @ x.mT, (s * s).sum(-1, keepdim=True)


def table_index(tables: Tensor, extra: int) -> Tensor:
    """Flat index of each [K, ·] table of ``tables`` (its leading dims), with ``extra`` trailing
    singleton dims: lets a gather read per-head tables (or one shared table) broadcast against
    other batch dims without expanding the tables themselves."""
    lead = tables.shape[:-2]
    index = torch.arange(math.prod(lead), device=tables.device).view(lead)
    return index.reshape(*lead, *(1,) * extra)


def key_ranks(r: TopNRows) -> Tensor:
    """Keys by descending kept weight, [..., Q, K] (stable: ties keep key order; dropped last)."""
    return r.attn.masked_fill(~r.keep, -math.inf).argsort(dim=-1, descending=True, stable=True)


def rank_of(order: Tensor) -> Tensor:
    """The inverse permutation of ``order`` [..., K]: rank_i = position of key i in ``order``
    (so I_N = {i : rank_i < N} for the first N keys of the order)."""
    positions = torch.arange(order.shape[-1], device=order.device).expand_as(order)
    return torch.empty_like(order).scatter_(-1, order, positions)


def gram_pays(x: Tensor, ns: Sequence[int]) -> bool:
    """Whether one x serves every head and the Gram route of :func:`nested_products` is cheaper.

    ⟨x_i, s_N⟩ for every key costs 2·d·K per row and N by a dense product, against 2·N_max·K
    for the whole grid by sparse rows of the Gram matrix; the sparse product runs about 30x
    fewer flops per second on CPU (measured), hence :data:`_GRAM_FACTOR`.
    """
    return math.prod(x.shape[:-2]) == 1 and x.shape[-1] * len(ns) > _GRAM_FACTOR * max(ns)


def shared_gram(x: Tensor, ns: Sequence[int]) -> Tensor | None:
    """x xᵀ [K, K] when :func:`gram_pays`, else None."""
    if not gram_pays(x, ns):
        return None
    x2 = x.reshape(x.shape[-2:])
    return x2 @ x2.mT


def nested_products(
    r: TopNRows, order: Tensor, ns: Sequence[int], gram: Tensor | None = None
) -> Iterator[tuple[int, Tensor, Tensor]]:
    """Yield (N, ⟨x_i, s_N⟩ [..., Q, K], ||s_N||² [..., Q, 1]) for ascending ``ns`` (Eq. 6).

    s_N = Σ_{rank < N} α_i x_i. The top-N sets are nested, so s_N adds only the keys ranked
    N' ≤ rank < N to s_{N'}: row gathers of x, O(Q·N·d) per head for the whole grid, then one
    [Q, d]×[d, K] product per N for the inner products. With ``gram`` (x shared by every
    head, :func:`shared_gram`) the inner products themselves are accumulated instead,
    ⟨x_i, s_N⟩ = ⟨x_i, s_{N'}⟩ + Σ_{new j} α_j G_ji, as a sparse-rows × Gram product, and
    ||s_N||² = Σ_{rank < N} α_j ⟨x_j, s_N⟩. Dropped keys have α = 0 and add nothing.
    """
    k, d = r.x.shape[-2:]
    batch = torch.broadcast_shapes(order.shape[:-2], r.x.shape[:-2])
    q = order.shape[-2]
    attn = r.attn.expand(*batch, q, k)
    if gram is not None:
        yield from _gram_products(attn, order.expand(*batch, q, k), ns, gram)
        return
    base = table_index(r.x, 2) * k  # (..., 1, 1): row offset of each x table
    x_flat = r.x.reshape(-1, d)
    s = torch.zeros((*batch, q, d), dtype=r.x.dtype, device=r.x.device)
    chunk = max(1, 4 * k // d)  # ranks per gather: temporaries of about 4 [Q, K] blocks
    prev = 0
    for n in ns:
        for lo in range(prev, n, chunk):
            idx = order[..., lo : min(n, lo + chunk)].expand(*batch, q, -1)  # (..., Q, c)
            rows = x_flat.index_select(0, (idx + base).reshape(-1)).view(*idx.shape, d)
            s = s + (attn.gather(-1, idx).unsqueeze(-2) @ rows).squeeze(-2)
        prev = n
        yield n, s @ r.x.mT, (s * s).sum(-1, keepdim=True)


def _gram_products(
    attn: Tensor, order: Tensor, ns: Sequence[int], gram: Tensor
) -> Iterator[tuple[int, Tensor, Tensor]]:
    """:func:`nested_products` through the Gram matrix ``gram`` [K, K] (x shared)."""
    k = attn.shape[-1]
    rows = attn.numel() // k
    flat_attn, flat_order = attn.reshape(rows, k), order.reshape(rows, k)
    inner = torch.zeros((rows, k), dtype=attn.dtype, device=attn.device)
    prev = 0
    for n in ns:
        if n > prev:
            inner = inner + selection_csr(flat_attn, flat_order[:, prev:n]) @ gram
        prev = n
        top = flat_order[:, :n]
        s_sq = (flat_attn.gather(-1, top) * inner.gather(-1, top)).sum(-1, keepdim=True)
        yield n, inner.view(attn.shape), s_sq.view(*attn.shape[:-1], 1)


def selection_csr(attn: Tensor, idx: Tensor) -> Tensor:
    """The rows of ``attn`` [R, K] kept at the keys ``idx`` [R, c] (distinct per row), as a CSR
    matrix [R, K] with each row's column indices sorted: the layout cuSPARSE documents and
    torch's ``check_invariants`` demands (``idx`` comes in weight order; the CPU kernel took it
    unsorted, CUDA's need not)."""
    rows, k = attn.shape
    cols = idx.sort(-1).values
    crow = torch.arange(0, rows * cols.shape[-1] + 1, cols.shape[-1], device=attn.device)
    # Two torch notices no user can act on (issue 54), each once per process: CSR support is
    # marked beta (this use is basic: build, then multiply by a dense matrix), and torch 2.11 on
    # CUDA reported "Sparse invariant checks are implicitly disabled" from this block (H100
    # smoke, docs/data/gpu/h100-2026-11-26), though the indices are valid by construction.
    # Filtered here only; torch.sparse.check_sparse_tensor_invariants(False) would also silence
    # it, but leaves the process-wide flag set for the user's own sparse tensors.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta")
        warnings.filterwarnings("ignore", "Sparse invariant checks are implicitly")
        return torch.sparse_csr_tensor(
            crow,
            cols.reshape(-1),
            attn.gather(-1, cols).reshape(-1),
            size=(rows, k),
            check_invariants=False,  # sorted and distinct by construction (tested)
        )


def query_blocks(
    attn: Tensor, mask: Tensor | None, min_keys: int = 1
) -> list[tuple[Tensor, Tensor | None, int]]:
    """Split rows (the query axis) into blocks of about ``_QUERY_BLOCK`` elements, each cut to
    the keys its rows keep: ``(attn block, mask block, k)`` with the block's keys ``0..k-1``.

    Each metric is a handful of elementwise passes over [..., Q, K] temporaries; at L = 1024
    those are tens of MB and every pass goes to main memory. Blocks of rows keep them in cache
    (measured 5x faster for :func:`distance_curve` at 9 heads x 1024², see docs/benchmarks.md).
    Keys after the last one any row of the block keeps carry nothing (their weights are zeroed
    and they are never selected), so they are cut: under a causal mask the block of rows
    [i, i + b) needs keys [0, i + b) only, about half the work over a whole map. ``k`` is at
    least ``min_keys`` (callers pass N_max + 1, so every N stays below the block's K); callers
    cut x and key-pair tables to ``[..., :k, :]``.
    """
    keep = check_mask(mask, attn, of="attn")
    per_row = max(1, attn[..., 0, :].numel())
    step = max(1, _QUERY_BLOCK // per_row)
    q, k_all = attn.shape[-2:]
    floor = min(k_all, max(1, min_keys))
    blocks: list[tuple[Tensor, Tensor | None, int]] = []
    for i in range(0, q, step):
        k = k_all
        if keep is not None:
            kept = keep[..., i : i + step, :].reshape(-1, k_all).any(0).nonzero()
            k = max(floor, int(kept.max()) + 1 if kept.numel() else floor)
        blocks.append(
            (
                attn[..., i : i + step, :k],
                None if keep is None else keep[..., i : i + step, :k],
                k,
            )
        )
    return blocks


def selection_distance(r: TopNRows, sel: Tensor) -> Tensor:
    """d̃ = Σ_{kept i ∉ sel} ||α_i x_i − s|| (Eq. 7); ``sel`` may carry extra leading dims."""
    return distance_from_products(r, sel, *context_vectors(r.attn, r.x, sel))


def distance_from_products(
    r: TopNRows, sel: Tensor, inner: Tensor, s_sq: Tensor, a2sq: Tensor | None = None
) -> Tensor:
    """d̃ of Eq. 7 from ⟨x_i, s⟩ [..., Q, K] and ||s||² [..., Q, 1] (``a2sq``: α_i²||x_i||²)."""
    a = r.attn
    a2sq = a * a * r.sq if a2sq is None else a2sq
    terms = sqrt0(torch.addcmul(a2sq, a, inner, value=-2.0).add_(s_sq), inplace=True)
    if records(terms):  # autograd saved the square roots: not in place
        return terms.masked_fill(~r.keep | sel, 0.0).sum(-1)
    return terms.masked_fill_(~r.keep | sel, 0.0).sum(-1)
