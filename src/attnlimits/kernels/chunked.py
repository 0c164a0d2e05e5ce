"""Any registry normaliser as attention, materialised one block of query rows at a time.

The normalisers of :mod:`attnlimits.normalizers` that are not exponential-family (sparsemax,
entmax, softpick, ReLU, sigmoid, stick-breaking, ...) need a whole row of scores at once: no
online (streaming) form exists for them. :func:`chunked_attention` computes
``normalizer(scale·q·kᵀ, mask) @ v`` for ``chunk_rows`` query rows at a time, so the peak extra
memory is about three ``[B, Hq, chunk_rows, Lk]`` tensors in the working dtype (float32 for half
inputs): at B = 1, Hq = 9, chunk_rows = 256, Lk = 8192 that is 3 × 75 MB, never the
``[Lq, Lk]`` map. :mod:`attnlimits.kernels.hf` registers it with transformers as
``attn_implementation="attnlimits_<name>"``.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlimits._checks import check_int_at_least
from attnlimits.kernels.spec import check_inputs
from attnlimits.normalizers import get

__all__ = ["chunked_attention"]


def chunked_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    normalizer: str,
    /,
    *,
    mask: Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
    chunk_rows: int = 256,
    **params: Any,
) -> Tensor:
    """``normalizer(scale·q·kᵀ, mask=…, **params) @ v`` over blocks of query rows.

    Shapes and masks as :func:`attnlimits.kernels.streaming_attention`: q ``[B, Hq, Lq, d]``,
    k/v ``[B, Hkv, Lk, d]`` (grouped-query: query head ``h`` reads ``h // (Hq // Hkv)``), a
    boolean keep-mask broadcastable to ``[B, Hq, Lq, Lk]``, ``causal`` bottom-right aligned
    (query ``i`` at key position ``Lk − Lq + i``). Returns ``[B, Hq, Lq, dv]`` in q's dtype;
    a row with no kept key gives zeros (the normalisers' all-masked rows are 0). q, k, v and
    ``normalizer`` are positional-only, so a normaliser parameter may be called ``k`` (top-k).
    """
    fn = get(normalizer)
    check_int_at_least(chunk_rows, "chunk_rows", 1)
    scale, mask = check_inputs(q, k, v, mask, scale, chunk_rows)
    B, Hq, Lq, _ = q.shape
    Hkv, Lk = k.shape[1], k.shape[2]
    G = Hq // Hkv
    work = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype
    # (B·Hkv, Lk, d): the query heads of one key/value head share it, no copy per query head
    kf = k.to(work).contiguous().flatten(0, 1)
    vf = v.to(work).contiguous().flatten(0, 1)
    out = torch.empty((B, Hq, Lq, v.shape[-1]), dtype=q.dtype, device=q.device)
    if normalizer == "topk":  # the sparse path: parameters checked once, as the normaliser does
        fn(torch.zeros(1, 1), **params)
        k_top = int(params.get("k", inspect.signature(fn).parameters["k"].default))
        v_rows = vf.flatten(0, 1)  # (B·Hkv·Lk, dv); query head h reads rows from first[h]
        first = (torch.arange(B * Hkv, device=q.device) * Lk).view(B, Hkv, 1)
        first = first.repeat_interleave(G, dim=1).view(B, Hq, 1, 1)
    for i0 in range(0, Lq, chunk_rows):
        i1 = min(i0 + chunk_rows, Lq)
        c = i1 - i0
        # causal: keys past the chunk's last row are masked for every row of it, and a masked
        # key is the same as a missing one (the normalisers' contract), so they are skipped
        lk = max(1, min(Lk, Lk - Lq + i1)) if causal else Lk
        qc = q[:, :, i0:i1].to(work).reshape(B * Hkv, G * c, -1)  # G query heads' rows each
        scores = torch.baddbmm(  # scale·q·kᵀ in one product (the scale is the GEMM's alpha)
            qc.new_empty(()), qc, kf[:, :lk].transpose(-1, -2), beta=0.0, alpha=scale
        ).view(B, Hq, c, lk)
        # top-k, causal, no mask: every row of the block sees the keys before its first row's
        # position, so the mask covers only the columns from t0 on
        t0 = max(0, lk - c) if normalizer == "topk" and causal and mask is None else 0
        keep = torch.ones((1, 1, c, lk - t0), dtype=torch.bool, device=q.device)
        if causal:
            pos = torch.arange(i0, i1, device=q.device) + (Lk - Lq)
            keep = keep & (torch.arange(t0, lk, device=q.device)[None, :] <= pos[:, None])
        if mask is not None:
            keep = keep & mask[:, :, i0:i1, :lk]
        if normalizer == "topk":
            o = _topk_rows(scores, keep, t0, k_top, v_rows, first)
            out[:, :, i0:i1] = o.to(q.dtype)
            continue
        weights = fn(scores, mask=keep, **params)
        o = torch.bmm(weights.reshape(B * Hkv, G * c, lk), vf[:, :lk])  # (B·Hkv, G·c, dv)
        out[:, :, i0:i1] = o.view(B, Hq, c, -1).to(q.dtype)
    return out


def _topk_rows(
    scores: Tensor, keep: Tensor, t0: int, k: int, v_rows: Tensor, first: Tensor
) -> Tensor:
    """Top-k attention without the dense map, ``[B, Hq, c, dv]``: softmax over each row's k
    largest kept scores (``scores`` ``[B, Hq, c, lk]``, consumed; ``keep`` masks the columns
    from ``t0`` on, those before are kept in every row), then the weighted sum of those k rows
    of ``v_rows`` (a head's keys start at row ``first`` ``[B, Hq, 1, 1]``) by
    ``embedding_bag``. The same selection (``torch.topk`` on the same masked scores, ties
    included) as :func:`~attnlimits.normalizers.topk_softmax`, which the tests compare it with.
    For SmolLM2's heads at L = 8192 the weighted sum took 13 ms a block of 512 rows, where
    the weights scattered into the block and one product with the values took 208 ms, and
    ``gather`` then ``mul`` and ``sum`` more (``benchmarks/bench_chunked.py`` times the kernel)."""
    scores[..., t0:].masked_fill_(~keep, -math.inf)
    top = scores.topk(min(k, scores.shape[-1]), dim=-1)
    w = torch.softmax(top.values, dim=-1).nan_to_num(0.0)  # an all-masked row: 0
    rows = (top.indices + first).flatten(0, 2)  # (B·Hq·c, k)
    summed = F.embedding_bag(rows, v_rows, per_sample_weights=w.flatten(0, 2), mode="sum")
    return summed.view(*scores.shape[:3], -1)
