"""Paper A's Alg. 5 per row: finite-difference sensitivity and the exact softmax Jacobian norm."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor

from attnlimits.metrics._fused.rows import njit, prange, threads

__all__ = ["jacobian_rows", "perturbation_rows"]

#: exp of anything below is 0 in float64 (the smallest subnormal is e^−744.4): not computed.
_UNDERFLOW = -746.0


@njit(parallel=True, cache=True)
def _perturbation_kernel(  # pragma: no cover - compiled by numba
    logits: Any, v: Any, keep: Any, kend: Any, temps: Any, eps: Any, out: Any
) -> None:
    """Paper A, Alg. 5 in float64: ||softmax((l + εv)/T) − softmax(l/T)||₂ / ε per row, T
    and ε, each softmax over the row's kept keys with its maximum subtracted."""
    rows = logits.shape[0]
    for r in prange(rows):
        k = kend[r]
        l = logits[r]
        d = v[r]
        base = np.empty(k)
        moved = np.empty(k)
        for ti in range(temps.shape[0]):
            inv = 1.0 / temps[ti]
            top = -np.inf
            for i in range(k):
                if keep[r, i]:
                    top = max(top, l[i] * inv)
            if top == -np.inf:  # no kept key: δ = 0 (the caller sets NaN)
                for ei in range(eps.shape[0]):
                    out[r, ti, ei] = 0.0
                continue
            z = 0.0
            for i in range(k):
                arg = l[i] * inv - top
                e = math.exp(arg) if keep[r, i] and arg > _UNDERFLOW else 0.0
                base[i] = e
                z += e
            for i in range(k):
                base[i] /= z
            for ei in range(eps.shape[0]):
                step = eps[ei]
                top2 = -np.inf
                for i in range(k):
                    if keep[r, i]:
                        top2 = max(top2, (l[i] + step * d[i]) * inv)
                z2 = 0.0
                for i in range(k):
                    arg = (l[i] + step * d[i]) * inv - top2
                    e = math.exp(arg) if keep[r, i] and arg > _UNDERFLOW else 0.0
                    moved[i] = e
                    z2 += e
                total = 0.0
                for i in range(k):
                    diff = moved[i] / z2 - base[i]
                    total += diff * diff
                out[r, ti, ei] = math.sqrt(total) / step


@njit(parallel=True, cache=True)
def _jacobian_kernel(  # pragma: no cover - compiled by numba
    logits: Any, temps: Any, steps: int, rtol: float, g_rtol: float, tiny: float, out: Any
) -> None:
    """||J||₂ of softmax(l/T) per row and T from the secular equation, as
    :func:`attnlimits.metrics.jacobian._secular_root` (same start, Newton steps and stopping
    rule, per row). ``logits`` [R, K] are sorted in descending order, dropped keys −inf."""
    rows, k = logits.shape
    for r in prange(rows):
        l = logits[r]
        a = np.zeros(k)
        for ti in range(temps.shape[0]):
            t = temps[ti]
            if l[0] == -np.inf:
                out[r, ti] = np.nan
                continue
            z = 0.0
            for i in range(k):
                arg = (l[i] - l[0]) / t
                a[i] = math.exp(arg) if arg > _UNDERFLOW else 0.0
                z += a[i]
            width = 0
            for i in range(k):
                a[i] /= z
                if a[i] > 0.0:
                    width = i + 1
            if k == 1:
                out[r, ti] = 0.0
                continue
            width = max(width, 2)
            a1, a2 = a[0], a[1]
            gap = a1 - a2
            special = a2 < tiny or gap == 0.0
            b = gap - a1 * a1 - a2 * a2
            disc = math.sqrt(b * b + 4.0 * a2 * a2 * gap)
            start = 0.5 * (b + disc) if b >= 0.0 else 2.0 * a2 * a2 * gap / (disc - b)
            if special:
                gap, start, a1_sq = 1.0, 0.5, 1.0
            else:
                start, a1_sq = min(start, gap), a1 * a1
            mu = start
            for _ in range(steps):
                psi = 0.0
                dpsi = 0.0
                for i in range(1, width):
                    inv = 1.0 / (a2 - a[i] + mu)
                    term = a[i] * a[i] * inv
                    psi += term
                    dpsi += term * inv
                h = 1.0 / (1.0 + psi)
                line = (gap - mu) / a1_sq
                new = mu - (h - line) / (dpsi * h * h + 1.0 / a1_sq)
                new = min(max(new, start), gap)
                moved = abs(new - mu) > rtol * new and abs(h - line) > g_rtol * (h + line)
                mu = new
                if not moved:
                    break
            lam = a1 if a1 == a2 else a2 + mu
            if a2 < tiny:
                lam = max(a1 * (1.0 - a1), a2)
            out[r, ti] = lam / t


@threads
def perturbation_rows(
    logits: Tensor, v: Tensor, keep: Tensor, temps: Tensor, eps: Tensor
) -> Tensor:
    """:func:`_perturbation_kernel` on rows ``[..., L]`` (float64): ``[..., n_T, n_ε]``."""
    k = logits.shape[-1]
    flat = [t.reshape(-1, k).contiguous() for t in (logits.double(), v.double(), keep)]
    n_keys = flat[2].sum(-1)
    last = k - flat[2].flip(-1).to(torch.uint8).argmax(-1)
    kend = torch.where(n_keys > 0, last, torch.zeros_like(last))
    out = np.empty((flat[0].shape[0], temps.numel(), eps.numel()))
    _perturbation_kernel(
        flat[0].numpy(),
        flat[1].numpy(),
        flat[2].numpy(),
        kend.numpy(),
        temps.double().contiguous().numpy(),
        eps.double().contiguous().numpy(),
        out,
    )
    return torch.from_numpy(out).view(*logits.shape[:-1], temps.numel(), eps.numel())


@threads
def jacobian_rows(
    logits: Tensor, temps: Tensor, steps: int, rtol: float, g_rtol: float, tiny: float
) -> Tensor:
    """:func:`_jacobian_kernel` on rows ``[..., K]`` sorted descending (float64): ``[..., n_T]``."""
    k = logits.shape[-1]
    flat = logits.double().reshape(-1, k).contiguous()
    out = np.empty((flat.shape[0], temps.numel()))
    t = temps.double().contiguous().numpy()
    _jacobian_kernel(flat.numpy(), t, steps, rtol, g_rtol, tiny, out)
    return torch.from_numpy(out).view(*logits.shape[:-1], temps.numel())
