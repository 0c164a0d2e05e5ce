"""The precision a model's weights load in, by name, and the float32 that measurements use.

A model may load in its checkpoint's own precision (an 8B model in bfloat16 takes 16 GB, in
float32 32 GB), but every map and statistic is computed from tensors upcast to float32 (or
kept in float64 where a statistic is computed so): :func:`upcast` is what the capture hands
over, so half-precision weights move the numbers by the rounding of the activations only.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["DTYPES", "WEIGHT_BYTES", "check_dtype", "dtype_name", "torch_dtype", "upcast"]

#: The names ``--dtype`` takes; ``auto`` is resolved by the experiments (their memory estimate).
DTYPES = ("auto", "float32", "bfloat16", "float16")
#: Bytes per weight of each precision.
WEIGHT_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
_TORCH = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
_HALF = (torch.bfloat16, torch.float16)


def check_dtype(name: object) -> str:
    """``name`` if it is one of :data:`DTYPES`, else a one-line ``ValueError``."""
    if not isinstance(name, str) or name not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {name!r}")
    return name


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype of a precision's name (not ``auto``: resolve it first)."""
    if name not in _TORCH:
        raise ValueError(f"no torch dtype for {name!r}; one of {', '.join(_TORCH)}")
    return _TORCH[name]


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` -> ``"bfloat16"`` (as ``run.json`` and the cache keys write it)."""
    return str(dtype).removeprefix("torch.")


def upcast(t: Tensor) -> Tensor:
    """``t`` in float32 where it is in half precision (bfloat16, float16); as it is otherwise
    (float32 and float64 stay, integer and boolean tensors too)."""
    return t.float() if t.dtype in _HALF else t
