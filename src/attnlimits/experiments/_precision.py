"""Which precision a run loads its model in: a Config's ``dtype``, ``auto`` resolved.

Private to :mod:`attnlimits.experiments`. ``auto`` is float32 where float32 fits, the
checkpoint's own precision where it would not (or on a GPU): an 8B model stored in bfloat16
takes 16 GB as it is and 32 GB in float32. A GGUF (the named SmolLM2) is dequantised to
float32, so ``auto`` keeps float32 for it unless that does not fit, then takes bfloat16. Only
the weights (and so the activations) are in that precision; the capture hands every map and
tensor over upcast to float32 (:func:`attnlimits.capture.precision.upcast`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from attnlimits.capture.precision import WEIGHT_BYTES, torch_dtype
from attnlimits.experiments import budget
from attnlimits.experiments._model_shape import model_shape

__all__ = ["Precision", "load_dtype", "precision", "weight_bytes"]


@dataclass(frozen=True)
class Precision:
    """The precision chosen and why (for ``auto``'s line on stderr; empty when given)."""

    dtype: str
    why: str = ""


def _fits(est: budget.Estimate) -> bool:
    """Whether an estimate's memory fits what this machine (and its device) has free."""
    for need, device in ((est.peak_bytes, "cpu"), (est.device_bytes, est.device)):
        have = budget.available_memory(device) if need else None
        if have is not None and need > have:
            return False
    return True


def precision(cfg: Any, estimate: Callable[[Any], budget.Estimate]) -> Precision:
    """``cfg.dtype``, or for ``auto``: float32 on the CPU where the run's float32 estimate
    (``estimate`` of ``cfg`` in float32) fits the memory available, else the checkpoint's own
    precision (bfloat16 for a GGUF); on a GPU the checkpoint's own (float32 for a GGUF)."""
    if cfg.dtype != "auto":
        return Precision(cfg.dtype)
    own = model_shape(cfg.model).dtype
    if str(cfg.device).startswith("cuda") and own is not None:
        return Precision(own, "" if own == "float32" else f"its own precision, on {cfg.device}")
    if own == "float32":
        return Precision("float32")
    est = estimate(replace(cfg, dtype="float32"))
    if _fits(est):
        return Precision("float32")
    room = budget.available_memory("cpu")
    have = f"; this machine has {budget.format_bytes(room)} available" if room else ""
    whose = "its GGUF's dequantised weights, halved" if own is None else "its checkpoint's own"
    return Precision(
        own or "bfloat16",
        f"{whose}: in float32 the run would need about {budget.format_bytes(est.peak_bytes)}{have}",
    )


def weight_bytes(cfg: Any, estimate: Callable[[Any], budget.Estimate]) -> int:
    """Bytes per weight of the precision ``cfg``'s model loads in (for its estimate)."""
    return WEIGHT_BYTES[precision(cfg, estimate).dtype]


def load_dtype(cfg: Any, estimate: Callable[[Any], budget.Estimate]) -> torch.dtype:
    """The torch dtype to load ``cfg``'s model in; where ``auto`` picks other than float32,
    one line on stderr says which and why (``--dtype float32`` overrides it)."""
    chosen = precision(cfg, estimate)
    if chosen.why:
        print(
            f"loading {cfg.model} in {chosen.dtype} ({chosen.why}); its attention maps and "
            "statistics are computed in float32; --dtype float32 to override",
            file=sys.stderr,
            flush=True,
        )
    return torch_dtype(chosen.dtype)
