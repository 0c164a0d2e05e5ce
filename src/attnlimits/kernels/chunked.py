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
    kf, vf = k.to(work)[:, :, None], v.to(work)[:, :, None]  # (B, Hkv, 1, Lk, d)
    out = torch.empty((B, Hq, Lq, v.shape[-1]), dtype=q.dtype, device=q.device)
    if normalizer == "topk":  # the sparse path: parameters checked once, as the normaliser does
        fn(torch.zeros(1, 1), **params)
        k_top = int(params.get("k", inspect.signature(fn).parameters["k"].default))
        v_heads = vf[:, :, 0].repeat_interleave(G, dim=1)  # (B, Hq, Lk, dv)
    for i0 in range(0, Lq, chunk_rows):
        i1 = min(i0 + chunk_rows, Lq)
        # causal: keys past the chunk's last row are masked for every row of it, and a masked
        # key is the same as a missing one (the normalisers' contract), so they are skipped
        lk = max(1, min(Lk, Lk - Lq + i1)) if causal else Lk
        qc = q[:, :, i0:i1].to(work).unflatten(1, (Hkv, G))  # (B, Hkv, G, c, d)
        scores = (qc @ kf[..., :lk, :].transpose(-1, -2) * scale).flatten(1, 2)  # (B, Hq, c, lk)
        keep = torch.ones((1, 1, i1 - i0, lk), dtype=torch.bool, device=q.device)
        if causal:
            pos = torch.arange(i0, i1, device=q.device) + (Lk - Lq)
            keep = keep & (torch.arange(lk, device=q.device)[None, :] <= pos[:, None])
        if mask is not None:
            keep = keep & mask[:, :, i0:i1, :lk]
        if normalizer == "topk":
            out[:, :, i0:i1] = _topk_rows(scores, keep, v_heads[:, :, :lk], k_top).to(q.dtype)
            continue
        weights = fn(scores, mask=keep, **params).unflatten(1, (Hkv, G))  # (B, Hkv, G, c, lk)
        out[:, :, i0:i1] = (weights @ vf[..., :lk, :]).flatten(1, 2).to(q.dtype)
    return out


def _topk_rows(scores: Tensor, keep: Tensor, v: Tensor, k: int) -> Tensor:
    """Top-k attention without the dense map: softmax over each row's k largest kept scores,
    then those k value rows of ``v`` ``[B, Hq, lk, dv]`` gathered, ``[B, Hq, c, dv]``. The same
    selection (``torch.topk`` on the same masked scores, ties included) as
    :func:`~attnlimits.normalizers.topk_softmax`, which the tests compare it with
    (``benchmarks/bench_chunked.py`` times it)."""
    B, Hq, c, lk = scores.shape
    top = scores.masked_fill(~keep, -math.inf).topk(min(k, lk), dim=-1)  # (B, Hq, c, k)
    w = torch.softmax(top.values, dim=-1).nan_to_num(0.0)  # an all-masked row: 0
    picked = torch.gather(  # (B, Hq, c·k, dv): the chosen value rows
        v, 2, top.indices.reshape(B, Hq, -1, 1).expand(-1, -1, -1, v.shape[-1])
    )
    return (w.unsqueeze(-1) * picked.view(B, Hq, c, -1, v.shape[-1])).sum(-2)
