"""Inputs and parameters for the streaming kernels' tests (tests/test_kernels*.py)."""

from __future__ import annotations

import torch

#: Parameters chosen so that each normaliser departs from plain softmax on these inputs.
PARAMS = {
    "softmax": {"temperature": 0.7},
    "ssmax": {"s": 0.8},
    "adaptive": {},
    "logn": {"train_length": 8},
    "yarn": {"factor": 8.0},
    "llama4_temperature": {"attn_scale": 0.3, "floor_scale": 4},
    "softcap": {"cap": 2.0},
    "softmax1": {},
    "sink_softmax": {"sink": 0.7},
    "ssmax_trained": {"train_length": 8},
}


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    """||a − b|| / ||b|| in float64 (0 when both vanish)."""
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def inputs(gen, B=2, Hq=4, Hkv=2, Lq=19, Lk=29, d=8, dv=6, spread=3.0):
    q = torch.randn(B, Hq, Lq, d, generator=gen) * spread  # spread: a mix of flat and peaked rows
    k = torch.randn(B, Hkv, Lk, d, generator=gen)
    v = torch.randn(B, Hkv, Lk, dv, generator=gen)
    return q, k, v
