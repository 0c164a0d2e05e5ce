"""Pairing ``bench_limitations.py``'s library values with the naive per-row loops, and comparing."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import naive_limitations as naive
from attnlimits.experiments.limitations import Config as LimitationsConfig
from limitations_library import DEFAULT_FLOOR, FLOORS, TIE_RTOL, Layer, alg5_generator, alg5_rows


@dataclass
class Group:
    """One block of rows of an algorithm (one L): which rows the naive side ran, and how many
    rows the library computes there."""

    key: int  # L (0 for Alg. 5)
    positions: np.ndarray  # query positions the naive side scores, per head
    lib_index: np.ndarray  # their index along the library's row axis
    total_rows: int  # rows of this block over all heads (the extrapolation target)


def spaced(lo: int, hi: int, k: int) -> np.ndarray:
    """About ``k`` evenly spaced integers in [lo, hi] (all of them when there are fewer)."""
    return np.unique(np.linspace(lo, hi, min(k, hi - lo + 1)).round().astype(np.int64))


def groups(alg: str, cfg: LimitationsConfig, heads: int, q: int, k: int, k5: int) -> list[Group]:
    """The naive row subsets; rows with fewer than min N + 1 keys are skipped by both sides."""
    if alg == "alg5":
        rows = alg5_rows(q, cfg).numpy()
        idx = np.unique(np.linspace(0, len(rows) - 1, min(k5, len(rows))).round().astype(int))
        return [Group(0, rows[idx], idx, heads * len(rows))]
    lengths = {"alg1": cfg.lengths, "alg3": cfg.lengths}.get(alg, (cfg.max_length,))
    lo = {"alg1": cfg.n_alg1, "alg2": min(cfg.ns_alg2), "alg3": min(cfg.ns_alg3)}.get(
        alg, min(cfg.ns_alg4)
    )
    out = []
    for length in lengths:
        pos = spaced(lo, length - 1, k)
        out.append(Group(length, pos, pos, heads * (length - lo)))
    return out


def run_naive(alg: str, layer: Layer, cfg: LimitationsConfig, g: Group) -> tuple[dict, float]:
    """The naive algorithm on one group; returns (values, seconds of per-head setup)."""
    a, x, rows = layer.np_attn, layer.np_x, g.positions
    if alg == "alg1":
        return naive.distances(a, x, rows, [cfg.n_alg1], [cfg.n_alg1]), 0.0
    if alg == "alg2":
        ns = [n for n in cfg.ns_alg2 if n < g.key]
        return naive.distances(a, x, rows, ns, ns), 0.0
    if alg == "alg3":
        return naive.distances(a, x, rows, [n for n in cfg.ns_alg3 if n < g.key], []), 0.0
    if alg == "alg4":
        return naive.separability(a, x, rows, [n for n in cfg.ns_alg4 if n < a.shape[-1]])
    # Alg. 5: the same Gaussian draw as the library's (shape [head, rows, K], float64)
    q = layer.logits.shape[-2]
    draws = torch.randn(
        (a.shape[0], len(alg5_rows(q, cfg)), a.shape[-1]),
        generator=alg5_generator(layer, cfg),
        dtype=torch.float64,
    ).numpy()[:, g.lib_index]
    vals, t_jac = naive.sensitivity(layer.np_logits, draws, rows, cfg.temperatures, cfg.epsilons)
    vals[-1] = t_jac  # type: ignore[index]
    return vals, 0.0


def compare(lib: dict, got: dict, index: np.ndarray) -> tuple[dict[str, float], dict[str, int]]:
    """Max relative error per quantity between naive values and the library's at ``index``.

    N_s/N is a count: where the naive side finds a selected token within ``TIE_RTOL`` of the
    radius r (relative), float32 rounding in the library decides it, so such rows are left out
    of the error and counted as ties instead.
    """
    errs: dict[str, float] = {}
    ties: dict[str, int] = {}
    for key, value in got.items():
        if not isinstance(key, tuple) or key[0] == "margin":
            continue
        name = key[0]
        ref = lib[key][:, torch.as_tensor(index)].double().numpy()
        floor = FLOORS.get(name, DEFAULT_FLOOR)
        if name == "jacobian_norm":
            floor = floor / key[1]  # per 1/T
        elif name == "sensitivity":
            floor = floor / key[2]  # per 1/ε
        if (np.isnan(ref) != np.isnan(value)).any():
            errs[name] = math.inf
            continue
        err = np.abs(value - ref) / np.maximum(np.abs(ref), floor)
        err = np.where(np.isnan(ref), 0.0, err)
        if name == "ratio":
            tie = (np.nan_to_num(got["margin", key[1]], nan=np.inf) < TIE_RTOL) & (err > 0)
            ties[name] = ties.get(name, 0) + int(tie.sum())
            err = np.where(tie, 0.0, err)
        errs[name] = max(errs.get(name, 0.0), float(err.max()))
    return errs, ties
