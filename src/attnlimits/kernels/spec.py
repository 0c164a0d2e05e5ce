"""The calling contract every attention kernel shares: normaliser names and their parameters,
input checks, and the statistics a kernel returns.

:mod:`.streaming` (PyTorch), :mod:`.triton_attention` (fused GPU kernel), :mod:`.reference`
(materialised, O(L²)) and :mod:`.hf` (transformers' attention interface) all import from here,
so none of them imports another for its checks.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch import Tensor

from attnlimits._checks import check_finite, check_int_at_least, check_mask, check_positive
from attnlimits.normalizers.adaptive import (
    ENTROPY_THRESHOLD,
    POLY_COEFFS,
    check_adaptive_params,
)
from attnlimits.normalizers.base import softmax
from attnlimits.normalizers.length_scaling import (
    LENGTH_SCALES,
    check_length_scale,
    llama4_temperature,
    logn_softmax,
    softcap,
    ssmax_trained,
    yarn_softmax,
)
from attnlimits.normalizers.scalable import ssmax
from attnlimits.normalizers.sinks import sink_softmax

__all__ = [
    "NORMALIZERS",
    "UNIT_TEMPERATURE",
    "AttentionStats",
    "check_inputs",
    "inverse_temperature",
    "logit_cap",
    "resolve_params",
    "sink_logits",
    "visible_keys",
]


def _default(fn: Callable[..., Any], name: str) -> Any:
    return inspect.signature(fn).parameters[name].default


#: Normaliser names and the keyword parameters each accepts, with the defaults of the
#: materialised normalisers in :mod:`attnlimits.normalizers` (kept in one place: there).
NORMALIZERS: dict[str, dict[str, Any]] = {
    "softmax": {"temperature": _default(softmax, "temperature")},
    "ssmax": {"s": _default(ssmax, "s")},
    "adaptive": {"coeffs": POLY_COEFFS, "threshold": ENTROPY_THRESHOLD},
    "logn": {"train_length": _default(logn_softmax, "train_length")},
    "yarn": {"factor": _default(yarn_softmax, "factor")},
    "llama4_temperature": {
        "attn_scale": _default(llama4_temperature, "attn_scale"),
        "floor_scale": _default(llama4_temperature, "floor_scale"),
    },
    "softcap": {"cap": _default(softcap, "cap")},
    "softmax1": {},
    "sink_softmax": {"sink": _default(sink_softmax, "sink")},
    "ssmax_trained": {"train_length": _default(ssmax_trained, "train_length")},
}
#: Normalisers whose inverse temperature is 1: a logit transform (softcap) or an extra
#: denominator term (softmax1, sink_softmax) instead.
UNIT_TEMPERATURE = ("softcap", "softmax1", "sink_softmax")


class AttentionStats(NamedTuple):
    """:func:`streaming_attention`'s result with ``return_stats=True``; rows are ``[B, Hq, Lq]``."""

    output: Tensor  #: [B, Hq, Lq, dv] in the input dtype
    entropy: Tensor  #: H of softmax(l), l = scale·q·k (nats; 0 on all-masked rows)
    beta: Tensor  #: inverse temperature c applied to l: 1/T, s·log n, or β(H)
    out_entropy: Tensor  #: H of the weights actually applied, softmax(c·l)
    n_keys: Tensor  #: kept keys per row (int64)


def check_inputs(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float | None, block_size: int
) -> tuple[float, Tensor | None]:
    """Check q/k/v shapes, dtypes and values, ``block_size`` and ``scale``; return the scale
    (default 1/√d) and the mask checked and broadcast to ``[B, Hq, Lq, Lk]``."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        if x.ndim != 4:
            raise ValueError(f"{name} must be [batch, head, pos, d], got shape {tuple(x.shape)}")
        check_finite(x, name, allow_neg_inf=False)
    if not q.dtype == k.dtype == v.dtype:
        raise ValueError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    (B, Hq, Lq, d), (Bk, Hkv, Lk, dk) = q.shape, k.shape
    if Bk != B or dk != d or v.shape[:3] != k.shape[:3]:
        raise ValueError(
            "shape mismatch: need q [B, Hq, Lq, d], k [B, Hkv, Lk, d], v [B, Hkv, Lk, dv]; "
            f"got q={tuple(q.shape)}, k={tuple(k.shape)}, v={tuple(v.shape)}"
        )
    if Hkv == 0 or Hq % Hkv != 0:
        raise ValueError(f"query heads ({Hq}) must be a multiple of key/value heads ({Hkv})")
    check_int_at_least(block_size, "block_size", 1)
    scale = d**-0.5 if scale is None else float(scale)
    check_positive(scale, "scale")
    like = torch.empty((), device=q.device).expand(B, Hq, Lq, Lk)  # shape only, no storage
    return scale, check_mask(mask, like)


def resolve_params(normalizer: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` completed with ``normalizer``'s defaults and checked (unknown names refused)."""
    if normalizer not in NORMALIZERS:
        raise ValueError(f"unknown normalizer {normalizer!r}; choose one of {sorted(NORMALIZERS)}")
    allowed = NORMALIZERS[normalizer]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(
            f"{normalizer!r} takes parameters {sorted(allowed)}, got unknown {unknown}"
        )
    out = {**allowed, **params}
    if normalizer == "softmax":
        check_positive(out["temperature"], "temperature")
    elif normalizer == "ssmax":
        check_positive(out["s"], "s")
    elif normalizer in LENGTH_SCALES:
        check_length_scale(normalizer, out)
    elif normalizer == "softcap":
        check_positive(out["cap"], "cap")
    elif normalizer == "sink_softmax":
        out["sink"] = _sink_tensor(out["sink"])
    elif normalizer == "adaptive":
        check_adaptive_params(out["coeffs"], out["threshold"])
    return out


def _sink_tensor(sink: Any) -> Tensor:
    """The sink logit(s) as a float64 tensor of shape [] or [Hq]; finite, else ValueError."""
    try:
        t = torch.as_tensor(sink, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"sink must be one number or one per query head, got {sink!r}") from err
    if t.ndim > 1 or not bool(torch.isfinite(t).all()):
        raise ValueError(f"sink must be finite: one number or one per query head, got {sink!r}")
    return t


def logit_cap(normalizer: str, opts: dict[str, Any]) -> float | None:
    """softcap's cap (logits become cap·tanh(l/cap) before normalising); None for the others."""
    return float(opts["cap"]) if normalizer == "softcap" else None


def sink_logits(normalizer: str, opts: dict[str, Any], heads: int) -> Tensor | None:
    """The sink logit of each of ``heads`` query heads, float64 ``[heads]`` (softmax1: zeros;
    sink_softmax: its ``sink``); None for normalisers without a sink."""
    if normalizer == "softmax1":
        return torch.zeros(heads, dtype=torch.float64)
    if normalizer != "sink_softmax":
        return None
    sink = opts["sink"]
    if sink.ndim == 1 and sink.numel() != heads:
        raise ValueError(f"sink has {sink.numel()} values for {heads} query heads")
    return sink.expand(heads)


def visible_keys(pos: Tensor, Lk: int, causal: bool) -> Tensor:
    """Kept keys of query rows at key positions ``pos`` without a mask: ``Lk``, or under causal
    the position + 1, clipped to ``[0, Lk]`` (the streaming path and the Triton kernel's host
    side both count ``n`` this way)."""
    return (pos + 1).clamp(0, Lk) if causal else torch.full_like(pos, Lk)


def inverse_temperature(normalizer: str, opts: dict[str, Any], n: Tensor) -> Tensor:
    """The per-row c of a normaliser whose c depends on the kept keys ``n`` only: ssmax and the
    length scalings (softmax's c is a constant, adaptive's depends on H: ``ValueError``)."""
    if normalizer == "ssmax":
        return float(opts["s"]) * torch.log(n.clamp_min(1))
    if normalizer in LENGTH_SCALES:
        return LENGTH_SCALES[normalizer](n, **opts)
    raise ValueError(f"{normalizer!r}'s inverse temperature does not follow from n alone")
