"""Flattened rows for the fused kernels, the numba import and the switch (``enabled``)."""

from __future__ import annotations

import functools
import importlib
import os
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple, ParamSpec, TypeVar

import numpy as np
import torch
from torch import Tensor

from attnlimits._checks import row_counts

numba: Any
try:  # numba is a dependency; without it (a platform with no wheel) the torch path runs
    numba = importlib.import_module("numba")
except ImportError:  # pragma: no cover - exercised only where numba has no wheel
    numba = None


def _plain(*args: Any, **kwargs: Any) -> Any:  # without numba the kernels stay plain Python,
    return lambda f: f  # never called (enabled() is False)


P = ParamSpec("P")
R = TypeVar("R")
njit: Any = _plain if numba is None else numba.njit
prange: Any = range if numba is None else numba.prange


__all__ = [
    "FlatRows",
    "enabled",
    "flat_rows",
    "gram_tables",
    "njit",
    "prange",
    "threads",
    "top_order",
]

#: Largest Gram tables (all heads together) the kernels build, in bytes; beyond, torch runs.
GRAM_BUDGET = 2**29
#: Rows a thread takes at a time (dynamic scheduling: causal rows grow in cost along Q).
_CHUNK = 16


def enabled(*tensors: Tensor) -> bool:
    """Whether the fused kernels serve these tensors: numba importable, not switched off,
    every tensor on the CPU in float32/float64 (or bool/int) and none needing gradients."""
    if numba is None or os.environ.get("ATTNLIMITS_FUSED", "1") == "0":
        return False
    for t in tensors:
        if t.device.type != "cpu" or t.requires_grad:
            return False
        if t.is_floating_point() and t.dtype not in (torch.float32, torch.float64):
            return False
    return True


def threads(fn: Callable[P, R]) -> Callable[P, R]:
    """Run ``fn`` (which launches kernels) with as many numba threads as torch uses
    (``torch.set_num_threads``), rows handed out :data:`_CHUNK` at a time, and leave both
    libraries' settings as they were. numba's OpenMP layer shares torch's libgomp and sets its
    thread count when it first starts: without the restore, ``torch.set_num_threads(1)`` (the
    test workers', or a user's) would silently become the machine's core count."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        torch_threads = torch.get_num_threads()
        numba.set_num_threads(max(1, min(torch_threads, numba.config.NUMBA_NUM_THREADS)))
        chunk = numba.set_parallel_chunksize(_CHUNK)
        try:
            return fn(*args, **kwargs)
        finally:
            numba.set_parallel_chunksize(chunk)
            if torch.get_num_threads() != torch_threads:
                torch.set_num_threads(torch_threads)

    return run


class FlatRows(NamedTuple):
    """Rows of a map flattened for the kernels (``R`` = batch × Q rows)."""

    alpha: np.ndarray  # [R, K], 0 on dropped keys
    keep: np.ndarray  # [R, K] bool
    kend: np.ndarray  # [R] int64: last kept key + 1 (keys at or after it are never kept)
    n_keys: np.ndarray  # [R] int64
    table: np.ndarray  # [R] int64: which of ``x`` the row reads
    x: Tensor  # [U, K, d]: the distinct x tables (heads sharing a KV head share one)
    batch: tuple[int, ...]  # the broadcast batch shape; outputs are [*batch, Q, ·]
    q: int
    memo: dict[str, Any] | None = None  # what the caller's map shares across calls (orders)


def _distinct(x3: Tensor) -> tuple[Tensor, Tensor]:
    """The distinct tables of ``x3`` [T, K, d] and, per table, the index of its copy (query
    heads of one KV head carry the same values: their Gram matrix is built once)."""
    if x3.shape[0] > 64:
        return x3, torch.arange(x3.shape[0])
    kept: list[int] = []
    which = []
    for t in range(x3.shape[0]):
        same = next((u for u, s in enumerate(kept) if torch.equal(x3[s], x3[t])), None)
        if same is None:
            kept.append(t)
            same = len(kept) - 1
        which.append(same)
    return x3[kept], torch.tensor(which, dtype=torch.int64)


#: How many maps flattened with a ``source`` are kept (newest last): a limitations layer scores
#: its map against several x, and between those calls the extended Alg. 3 grid flattens slices
#: of it; with one entry those slices evicted the full map and its top order was sorted again.
_MEMO_SIZE = 4
#: Maps flattened with a ``source``: (identity of the caller's tensors, tag, arrays, memo).
#: An entry leaves when its map is garbage-collected (weak reference callback) or is oldest.
_MEMO: list[Any] = []


def _same_source(source: tuple[Tensor, Tensor | None], entry: Any, tag: tuple[Any, ...]) -> bool:
    if entry[2] != tag:
        return False
    (attn_ref, attn_version), mask_part = entry[0], entry[1]
    attn, mask = source
    if attn_ref() is not attn or attn._version != attn_version:
        return False
    if mask is None or mask_part is None:
        return mask is None and mask_part is None
    return bool(mask_part[0]() is mask and mask._version == mask_part[1])


def _remembered(source: tuple[Tensor, Tensor | None], tag: tuple[Any, ...]) -> Any:
    """The arrays kept for ``source`` (and made the newest entry), or None."""
    for i, entry in enumerate(_MEMO):
        if _same_source(source, entry, tag):
            _MEMO.append(_MEMO.pop(i))
            return entry[3]
    return None


def _remember(source: tuple[Tensor, Tensor | None], tag: tuple[Any, ...], arrays: Any) -> None:
    src_attn, src_mask = source
    entry: list[Any] = []

    def forget(_: Any) -> None:  # the map (or its mask) is gone: so is what was kept for it
        _MEMO[:] = [e for e in _MEMO if e is not entry]  # by identity: entries hold arrays

    mask_part = None if src_mask is None else (weakref.ref(src_mask, forget), src_mask._version)
    entry += [(weakref.ref(src_attn, forget), src_attn._version), mask_part, tag, arrays]
    _MEMO.append(entry)
    del _MEMO[:-_MEMO_SIZE]


@threads
def flat_rows(
    attn: Tensor, keep: Tensor, x: Tensor, source: tuple[Tensor, Tensor | None] | None = None
) -> FlatRows:
    """Flatten ``attn``/``keep`` [..., Q, K] against ``x`` [..., K, d] (batch dims broadcast).

    ``source``: the caller's own (map, mask) from which ``attn``/``keep`` were prepared. The
    flattened map and its selection orders are then kept for later calls on the same,
    unmodified tensors (a limitations layer scores one map against several x: values, hidden
    states, on the sphere), identified by object and in-place version, held by weak reference;
    the last :data:`_MEMO_SIZE` maps are kept.
    """
    q, k = attn.shape[-2:]
    batch = tuple(torch.broadcast_shapes(attn.shape[:-2], keep.shape[:-2], x.shape[:-2]))
    tag = (batch, tuple(attn.shape), attn.dtype)
    kept = None if source is None else _remembered(source, tag)
    if kept is not None:
        a_np, kp_np, kend_np, n_keys_np, memo = kept
    else:
        a = attn.expand(*batch, q, k).reshape(-1, k).contiguous()
        kp = keep.expand(*batch, q, k).reshape(-1, k).contiguous()
        n_keys = row_counts(keep.expand(*batch, q, k)).reshape(-1).contiguous()
        kend = torch.empty_like(n_keys)
        _key_end(kp.numpy(), kend.numpy())
        a_np, kp_np, kend_np, n_keys_np = a.numpy(), kp.numpy(), kend.numpy(), n_keys.numpy()
        memo = {} if source is not None else None
        if source is not None:
            _remember(source, tag, (a_np, kp_np, kend_np, n_keys_np, memo))
    lead = x.shape[:-2]
    x_u, which = _distinct(x.reshape(-1, k, x.shape[-1]))
    table = (
        which.view(lead).reshape(*lead, 1).expand(*batch, q) if lead else which.expand(*batch, q)
    )
    return FlatRows(
        a_np,
        kp_np,
        kend_np,
        n_keys_np,
        table.reshape(-1).contiguous().numpy(),
        x_u,
        batch,
        q,
        memo,
    )


def gram_tables(rows: FlatRows, dtype: torch.dtype | None = None) -> np.ndarray | None:
    """x xᵀ per distinct table, [U, K, K] (None beyond :data:`GRAM_BUDGET`)."""
    u, k = rows.x.shape[:2]
    x3 = rows.x if dtype is None else rows.x.to(dtype)
    if u * k * k * torch.finfo(x3.dtype).bits // 8 > GRAM_BUDGET:
        return None
    return (x3 @ x3.mT).contiguous().numpy()


@njit(parallel=True, cache=True)
def _key_end(keep: Any, out: Any) -> None:  # pragma: no cover - numba
    """Per row, the last kept key + 1 (0 for a row that keeps none)."""
    for r in prange(keep.shape[0]):
        end = 0
        for i in range(keep.shape[1] - 1, -1, -1):
            if keep[r, i]:
                end = i + 1
                break
        out[r] = end


@njit(cache=True)
def _before(a: Any, i: int, j: int) -> bool:  # pragma: no cover - numba
    """Key i ranks before key j: a larger weight, or an equal one and a smaller index."""
    return a[i] > a[j] or (a[i] == a[j] and i < j)


@njit(cache=True)
def _sift(a: Any, heap: Any, size: int, p: int) -> None:  # pragma: no cover - numba
    """Restore the heap (root = the key ranked last) below position p."""
    while True:
        low, left, right = p, 2 * p + 1, 2 * p + 2
        if left < size and _before(a, heap[low], heap[left]):
            low = left
        if right < size and _before(a, heap[low], heap[right]):
            low = right
        if low == p:
            return
        heap[p], heap[low] = heap[low], heap[p]
        p = low


@njit(parallel=True, cache=True)
def _top_kernel(alpha: Any, keep: Any, kend: Any, low: Any, out: Any) -> None:  # pragma: no cover
    """The first m kept keys of each row by descending weight, ties by key index: a heap of the
    m best so far (its root the one ranked last; a key enters only if it beats the root, so a
    row costs O(K) comparisons when few keys do), then popped into order. Only keys at or above
    ``low[r]`` enter when at least m kept keys are (then every one of the first m is): for
    uniform weights most keys would otherwise enter the heap early and be pushed out again.
    Plain loops: numba compiles them in about a second (its ``np.partition``/``argsort`` take
    ten)."""
    rows = alpha.shape[0]
    m = out.shape[1]
    for r in prange(rows):
        a = alpha[r]
        lo = low[r]
        if lo > -np.inf:
            above = 0
            for i in range(kend[r]):
                above += 1 if keep[r, i] and a[i] >= lo else 0
            if above < m:  # too few: every kept key is a candidate
                lo = -np.inf
        heap = np.empty(m, dtype=np.int64)
        size = 0
        for i in range(kend[r]):
            if not keep[r, i] or a[i] < lo:
                continue
            if size < m:  # push: sift up
                p = size
                heap[p] = i
                size += 1
                while p > 0 and _before(a, heap[(p - 1) // 2], heap[p]):
                    q = (p - 1) // 2
                    heap[p], heap[q] = heap[q], heap[p]
                    p = q
            elif _before(a, i, heap[0]):
                heap[0] = i
                _sift(a, heap, size, 0)
        for p in range(size - 1, -1, -1):  # pop the last-ranked key into the last slot
            out[r, p] = heap[0]
            heap[0] = heap[p]
            _sift(a, heap, p, 0)


@threads
def top_order(
    rows: FlatRows, m: int, values: np.ndarray | None = None, *, uniform: bool = False
) -> np.ndarray:
    """The first ``m`` kept keys of each row by descending weight (or by ``values`` [R, K], e.g.
    uniforms for random subsets), ties broken by key index (the order of a stable descending
    ``argsort``), int64 [R, m]; slots past a row's kept keys hold 0 (no valid N reads them).
    ``uniform``: ``values`` are i.i.d. uniforms on [0, 1), so a row's m-th largest of n lies
    near 1 − m/n, and only keys above 1 − (m + 4√m + 8)/n enter the heap (the same order: a
    row with fewer than m kept keys above that takes every key)."""
    shared = rows.memo if values is None else None
    if shared is not None and "order" in shared and shared["order"].shape[1] >= m:
        return np.ascontiguousarray(shared["order"][:, :m])  # the top m of a longer order
    out = np.zeros((rows.alpha.shape[0], m), dtype=np.int64)
    if uniform and values is not None:
        n = np.maximum(rows.n_keys, 1).astype(np.float64)
        low = 1.0 - np.minimum(1.0, (m + 4.0 * np.sqrt(m) + 8.0) / n)
    else:
        low = np.full(rows.alpha.shape[0], -np.inf)
    _top_kernel(rows.alpha if values is None else values, rows.keep, rows.kend, low, out)
    if shared is not None:
        shared["order"] = out
    return out
