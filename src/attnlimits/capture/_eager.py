"""Eager attention's maps as transformers' ``eager_attention_forward`` computes them (same ops
in the same order), in the precision of the tensors handed in: what the capture's attention
function runs for the model, and again in float32 for a model in half precision."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from attnlimits.hf_bridge import keep_mask, repeat_kv

__all__ = ["eager_maps", "keep_and_additive", "scaling_of"]


def keep_and_additive(attention_mask: Tensor | None, like: Tensor) -> tuple[Tensor, Tensor | None]:
    """Boolean keep-mask ``[b, 1|h, q, k]`` and the additive mask eager attention would add."""
    b, _, n_q, n_k = like.shape
    keep = keep_mask(attention_mask)
    if attention_mask is None or keep is None:
        return torch.ones(b, 1, n_q, n_k, dtype=torch.bool, device=like.device), None
    if attention_mask.dtype == torch.bool:
        minus = torch.finfo(like.dtype).min
        zero = torch.zeros((), dtype=like.dtype, device=like.device)
        return keep, torch.where(keep, zero, minus)
    return keep, attention_mask  # a float mask handed in ready-made: eager adds it as it is


def scaling_of(query: Tensor, scaling: float | None, kwargs: dict[str, Any]) -> float:
    """The factor on ``q·kᵀ`` (``1/√d`` unless the model gives one); attention with a softcap
    or sinks is refused (the capture does not model it)."""
    for unsupported in ("softcap", "s_aux", "sinks"):
        if kwargs.get(unsupported) is not None:
            raise NotImplementedError(f"capture does not model attention with {unsupported}")
    return float(query.size(-1) ** -0.5 if scaling is None else scaling)


def eager_maps(
    query: Tensor, key: Tensor, attention_mask: Tensor | None, scaling: float
) -> tuple[Tensor, Tensor, Tensor]:
    """Eager attention's scaled scores, keep-mask and weights, in ``query``'s
    precision (the softmax itself in float32, as transformers' eager attention)."""
    n_rep = query.shape[1] // key.shape[1]
    scores = torch.matmul(query, repeat_kv(key, n_rep).transpose(2, 3)) * scaling  # [b, h, q, k]
    keep, additive = keep_and_additive(attention_mask, scores)
    masked = scores + additive if additive is not None else scores
    weights = nn.functional.softmax(masked, dim=-1, dtype=torch.float32).to(query.dtype)
    return scores, keep, weights
