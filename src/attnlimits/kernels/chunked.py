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
    for i0 in range(0, Lq, chunk_rows):
        i1 = min(i0 + chunk_rows, Lq)
        qc = q[:, :, i0:i1].to(work).unflatten(1, (Hkv, G))  # (B, Hkv, G, c, d)
        scores = (qc @ kf.transpose(-1, -2) * scale).flatten(1, 2)  # (B, Hq, c, Lk)
        keep = torch.ones((1, 1, i1 - i0, Lk), dtype=torch.bool, device=q.device)
        if causal:
            pos = torch.arange(i0, i1, device=q.device) + (Lk - Lq)
            keep = keep & (torch.arange(Lk, device=q.device)[None, :] <= pos[:, None])
        if mask is not None:
            keep = keep & mask[:, :, i0:i1]
        weights = fn(scores, mask=keep, **params).unflatten(1, (Hkv, G))  # (B, Hkv, G, c, Lk)
        out[:, :, i0:i1] = (weights @ vf).flatten(1, 2).to(q.dtype)
    return out
