"""The library side of ``bench_limitations.py``: the calls ``compute_layer`` makes per algorithm."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parent))

import attnlimits.metrics._topn as topn_module
from attnlimits.capture import LayerCapture
from attnlimits.experiments.limitations import E_FORMS
from attnlimits.experiments.limitations import Config as LimitationsConfig
from attnlimits.experiments.limitations.compute import per_key_vectors
from attnlimits.metrics import (
    critical_n,
    distance_curve,
    finite_difference_sensitivity,
    min_pairwise_distance,
    normalize_to_sphere,
    row_mean,
    separability_curve,
    softmax_jacobian_norms,
)

ALGORITHMS = ("alg1", "alg2", "alg3", "alg4", "alg5")
#: Alg. 5's two parts, reported on rows of their own: the paper's finite differences and the
#: exact Jacobian norm (which the library adds; the naive side eigendecomposes L×L per row).
ALG5_PARTS = {"alg5 finite diff.": "sensitivity", "alg5 Jacobian": "jacobian_norm"}
#: Absolute floor of the relative error |naive − lib| / max(|lib|, floor), per quantity, so that
#: rounding noise in values that are zero at their natural scale does not count as disagreement:
#: ``lower`` (Eq. 11) is 1 − Σξ/(rN), a difference of O(1) terms that the library computes in
#: float32 (as it does every float32 input), so its scale is 1; ||J||₂ and g(T, ε) of nearly
#: one-hot rows are rounding noise of size ~1e-16/T and ~1e-15/ε (their scales are 1/(2T) and
#: √2/ε), so below 1e-10/T and 1e-10/ε a row counts as zero. Distances are O(0.1–100).
FLOORS = {"lower": 1.0, "jacobian_norm": 1e-10, "sensitivity": 1e-10}
DEFAULT_FLOOR = 1e-12
#: N_s/N rows with a selected token this close to the radius (relative) are float32 ties.
TIE_RTOL = 1e-5


@dataclass
class Layer:
    """One captured layer, in the form the algorithms read (float32 tensors and NumPy views)."""

    index: int
    cap: LayerCapture
    attn: Tensor  # (head, Q, K)
    mask: Tensor  # (head, Q, K)
    x: Tensor  # (head, K, d): values through GQA
    logits: Tensor  # (head, Q, K): raw q·k (Alg. 5)
    np_attn: np.ndarray = field(init=False)
    np_x: np.ndarray = field(init=False)
    np_logits: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.np_attn, self.np_x = self.attn.numpy(), self.x.numpy()
        self.np_logits = self.logits.numpy()


def make_layer(cap: LayerCapture, cfg: LimitationsConfig) -> Layer:
    attn = cap.weights[0].float()
    scores = cap.scores[0].float()
    logits = scores / cap.scaling if cfg.logits == "raw" else scores
    x = per_key_vectors(cap, cfg.x_sources[0]).contiguous()
    return Layer(cap.layer, cap, attn, cap.mask[0].expand_as(attn), x, logits.contiguous())


def _means(values: Tensor, valid: Tensor) -> Tensor:
    return row_mean(values, valid).mean


def lib_curve(
    layer: Layer, cfg: LimitationsConfig, length: int, ns: list[int], bound_ns: list[int]
) -> dict[tuple[str, int], Tensor]:
    """``distance_curve`` on the L×L prefix block and its row means (as ``_distance_rows``)."""
    a, m = layer.attn[:, :length, :length], layer.mask[:, :length, :length]
    curve = distance_curve(a, layer.x[:, :length], ns, mask=m, forms=cfg.e_forms, bound_ns=bound_ns)
    cols = {"distance": curve.distance, "bound": curve.bound}
    cols |= {c: curve.expected[f] for c, f in E_FORMS.items() if f in cfg.e_forms}
    out: dict[tuple[str, int], Tensor] = {}
    for j, n in enumerate(curve.n_values):
        for key, v in cols.items():
            _means(v[..., j], curve.valid[..., j])
            if key != "bound" or n in bound_ns:
                out[key, n] = v[..., j]
    return out


def lib_alg1(layer: Layer, cfg: LimitationsConfig) -> dict[int, dict]:
    n = cfg.n_alg1
    return {length: lib_curve(layer, cfg, length, [n], [n]) for length in cfg.lengths}


def lib_alg2(layer: Layer, cfg: LimitationsConfig) -> dict[int, dict]:
    top = cfg.max_length
    ns = [n for n in cfg.ns_alg2 if n < top]
    return {top: lib_curve(layer, cfg, top, ns, ns)}


def lib_alg3(layer: Layer, cfg: LimitationsConfig) -> dict[int, dict]:
    return {
        length: lib_curve(layer, cfg, length, [n for n in cfg.ns_alg3 if n < length], [])
        for length in cfg.lengths
    }


def lib_alg3_ks(per_layer: list[dict[int, dict]], cfg: LimitationsConfig) -> dict[int, int]:
    """The KS step of Alg. 3 over every captured head: critical N per L (d̄ vs derived Ē)."""
    out = {}
    for length in cfg.lengths:
        ns = [n for n in cfg.ns_alg3 if n < length]
        d, e = [], []
        for n in ns:
            d.append(torch.cat([_nanmean(v[length]["distance", n]) for v in per_layer]))
            e.append(torch.cat([_nanmean(v[length]["expectation", n]) for v in per_layer]))
        res = critical_n(ns, torch.stack(d), torch.stack(e), alpha=cfg.ks_alpha)
        out[length] = res.critical_n
    return out


def _nanmean(v: Tensor) -> Tensor:
    return row_mean(v, ~torch.isnan(v)).mean.double()


def lib_alg4(layer: Layer, cfg: LimitationsConfig) -> dict[int, dict]:
    top = layer.attn.shape[-1]
    x_sphere = normalize_to_sphere(layer.x, 1.0)
    delta = min_pairwise_distance(x_sphere)
    out: dict[tuple[str, int], Tensor] = {}
    ns = sorted({n for n in cfg.ns_alg4 if n < top})
    sc = separability_curve(layer.attn, x_sphere, ns, mask=layer.mask, radius=1.0, delta=delta)
    for j, n in enumerate(ns):
        for key in ("ratio", "lower", "upper"):
            _means(getattr(sc, key)[..., j], sc.valid[..., j])
            out[key, n] = getattr(sc, key)[..., j]
    return {top: out}


def alg5_rows(q: int, cfg: LimitationsConfig) -> Tensor:
    """The query positions Alg. 5 scores (as ``_sensitivity_rows``)."""
    return torch.linspace(1, q - 1, min(cfg.alg5_rows, q - 1)).round().long().unique()


def alg5_generator(layer: Layer, cfg: LimitationsConfig) -> torch.Generator:
    return torch.Generator().manual_seed(cfg.seed + 7919 * layer.index)


def lib_alg5(layer: Layer, cfg: LimitationsConfig) -> dict[int, dict]:
    rows = alg5_rows(layer.logits.shape[-2], cfg)
    logits, mask = layer.logits[:, rows], layer.mask[:, rows]
    t0 = time.perf_counter()
    fd = finite_difference_sensitivity(
        logits, cfg.temperatures, cfg.epsilons, mask=mask, generator=alg5_generator(layer, cfg)
    )
    out: dict[tuple[str, float, float], Tensor] = {}
    t1 = time.perf_counter()
    jac = softmax_jacobian_norms(logits, cfg.temperatures, mask=mask)
    for ti in range(len(cfg.temperatures)):
        _means(jac.values[..., ti], jac.valid)
    t_jac = time.perf_counter() - t1
    for ti, t in enumerate(cfg.temperatures):
        out["jacobian_norm", t, 0.0] = jac.values[..., ti]
        for ei, eps in enumerate(cfg.epsilons):
            _means(fd.values[..., ti, ei], fd.valid)
            out["sensitivity", t, eps] = fd.values[..., ti, ei]
    parts = {"alg5 finite diff.": time.perf_counter() - t0 - t_jac, "alg5 Jacobian": t_jac}
    return {0: out, -1: parts}  # type: ignore[dict-item]


LIBRARY: dict[str, Callable[[Layer, LimitationsConfig], dict[int, dict]]] = {
    "alg1": lib_alg1,
    "alg2": lib_alg2,
    "alg3": lib_alg3,
    "alg4": lib_alg4,
    "alg5": lib_alg5,
}


def timed(fn: Callable[[], Any], repeats: int = 1) -> tuple[Any, float]:
    """(result of the fastest run, its wall-clock seconds) over ``repeats`` runs."""
    best, out = math.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - t0
        if elapsed < best:
            best, out = elapsed, result
    return out, best


def query_block_check(layer: Layer, cfg: LimitationsConfig) -> dict[str, float]:
    """Alg. 3's ``distance_curve`` at L_max with the default query blocks and with none."""
    ns = [n for n in cfg.ns_alg3 if n < cfg.max_length]

    def curve() -> object:
        return distance_curve(layer.attn, layer.x, ns, mask=layer.mask, forms=cfg.e_forms)

    _, blocked = timed(curve)
    saved = topn_module._QUERY_BLOCK
    topn_module._QUERY_BLOCK = 1 << 62
    try:
        _, whole = timed(curve)
    finally:
        topn_module._QUERY_BLOCK = saved
    return {"blocked_s": blocked, "unblocked_s": whole, "ratio": whole / blocked}
