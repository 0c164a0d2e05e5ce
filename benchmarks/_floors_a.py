"""Paper A's per-layer stages (``reproduce limitations``) against their arithmetic floors.

Each stage is timed as ``benchmarks/profile_limitations.py`` times it (its ``stage_parts`` and
``sensitivity_part``: the run's grids, one captured layer). Its floor is its operation count
divided by this machine's rates measured in the same run (:func:`throughputs`): float32
matrix-product flops, element-wise passes (elements), sorting (elements). The counts keep each
stage's dominant terms only, each counted once, so the floor is below any implementation's
time; K keys, causal rows (row i sees i + 1 keys), H query heads, x of width d:

- capture (whole forward with hooks, per layer): 2·L·(layer's weights) + 2·H·d_h·L² flops
  (q·kᵀ and the weighted sum over causal rows), 3·H·L²/2 elements (the map's softmax);
- distance grid: the Gram matrix of x (2·K²·d flops per x head), then per row one pass over
  its keys per N of the grid that row serves, and one ordering of its keys;
- E exact: per sampled row (``mc_rows`` per band) and draw (``mc_samples``) one pass per N;
- δ: the Gram matrix and one pass over it;
- Alg. 4: one pass per N and one ordering of each row's keys;
- Alg. 5: per sampled row, 2 softmaxes (3 passes each) per (T, ε) and one softmax plus about
  10 passes of Newton per T for ‖J‖₂.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from _floors_common import best, row, throughputs, tiny_causal_lm

WORKLOAD = "paper A per layer"


def _row_passes(plan: dict[int, set[int]], K: int) -> float:
    """Σ over causal rows of (row's keys) × (grid N values the row serves): a row i belongs to
    every length n > i and serves each N < i + 1 of those lengths' grids."""
    keys = np.arange(1, K + 1)  # row i sees i + 1 keys
    served = np.zeros(K)
    for n in sorted(plan):
        ns = np.array(sorted(plan[n]))
        rows = keys[:n]
        served[:n] = np.maximum(served[:n], (ns[None, :] < rows[:, None]).sum(1))
    return float((keys * served).sum())


def _counts(cap: Any, cfg: Any, source: str, x: Any) -> dict[str, tuple[float, float, float]]:
    """(matmul flops, element passes, sorted elements) per stage for one x source."""
    H, _, K = cap.weights[0].shape
    xh, d = x.shape[0] if source == "hidden" else int(cap.v.shape[1]), x.shape[-1]
    lengths = [n for n in cfg.lengths if n <= K]
    plan = {n: {cfg.n_alg1, *(m for m in cfg.ns_alg3 if m < n)} for n in lengths}
    plan[K] |= {n for n in cfg.ns_alg2 if n < K}
    gram = 2.0 * K * K * d * xh
    tri = K * (K + 1) / 2
    mc = sum(cfg.mc_rows * cfg.mc_samples * n * len(plan[n]) for n in lengths)
    ns4 = [n for n in cfg.ns_alg4 if n < K]
    return {
        # sorted elements: the grid's sort of every row, and top_mass's top-k of every row
        "distance grid": (gram, H * _row_passes(plan, K), 2 * H * tri),
        "E exact": (0.0, H * mc, 0.0),
        "δ": (gram, float(K * K * xh), 0.0),
        "Alg. 4": (0.0, H * tri * len(ns4), H * tri),
    }


def _alg5_counts(cap: Any, cfg: Any) -> tuple[float, float, float]:
    H, _, K = cap.weights[0].shape
    rows = min(cfg.alg5_rows, K - 1)
    nT, ne = len(cfg.temperatures), len(cfg.epsilons)
    return 0.0, H * rows * (K / 2) * (6 * nT * ne + 13 * nT), 0.0


def _capture_counts(model: Any, L: int) -> tuple[float, float, float]:
    c = model.config
    layer = sum(p.numel() for p in model.model.layers[0].parameters())
    H, dh = c.num_attention_heads, c.hidden_size // c.num_attention_heads
    return 2.0 * L * layer + 2.0 * H * dh * L * L, 1.5 * H * L * L, 0.0


def _setup(quick: bool) -> tuple[Any, Any, list[int], int]:
    """(transformers model, ids [1, L], layers to time, L)."""
    if quick:
        model, ids = tiny_causal_lm(128, "eager")
        return model, ids, [0, 1], 128
    from attnlimits.capture import load_model
    from attnlimits.corpus import load_text, token_windows

    loaded = load_model("smollm2-135m")
    return loaded.model, token_windows(loaded.tokenizer, load_text(), 1024, 1), [5, 15], 1024


def rows(quick: bool) -> list[dict[str, Any]]:
    from attnlimits.capture import capture
    from attnlimits.experiments import _allocator
    from attnlimits.experiments.limitations import Config
    from attnlimits.experiments.limitations.compute import per_key_vectors
    from profile_limitations import sensitivity_part, stage_parts

    _allocator.tune()  # as a run does
    repeats = 2 if quick else 3
    model, ids, layers, L = _setup(quick)
    rate = throughputs()
    cfg = Config.preset(quick=quick)

    def floor(c: tuple[float, float, float]) -> float:
        return c[0] / rate["matmul"] + c[1] / rate["elementwise"] + c[2] / rate["sort"]

    n_layers = len(model.model.layers)
    t_cap = best(lambda: capture(model, ids, on_layer=lambda c: None), repeats) / n_layers
    where = f"L = {L}"
    f_cap = floor(_capture_counts(model, L))
    what = "op count / measured rates"
    out = [row(WORKLOAD, "capture (forward with hooks)", t_cap, f_cap, what,
               f"{where}, mean over all {n_layers} layers")]  # fmt: skip
    caps: dict[int, Any] = {}
    capture(model, ids, on_layer=lambda c: caps.__setitem__(c.layer, c), layers=layers)
    times: dict[str, list[float]] = {}
    floors: dict[str, list[float]] = {}
    for layer in layers:
        cap = caps[layer]
        for source in cfg.x_sources:
            counts = _counts(cap, cfg, source, per_key_vectors(cap, source))
            parts = stage_parts(cap, cfg, source, L)
            for (stage, c), fn in zip(counts.items(), parts.values(), strict=True):
                name = f"{stage} (x = {source})"
                times.setdefault(name, []).append(best(fn, repeats))
                floors.setdefault(name, []).append(floor(c))
        times.setdefault("Alg. 5", []).append(best(sensitivity_part(cap, cfg), repeats))
        floors.setdefault("Alg. 5", []).append(floor(_alg5_counts(cap, cfg)))
    for stage in times:
        t, f = float(np.mean(times[stage])), float(np.mean(floors[stage]))
        out.append(row(WORKLOAD, stage, t, f, what,
                       f"{where}, mean over layers {', '.join(map(str, layers))}"))  # fmt: skip
    total_t = sum(r["time_s"] for r in out)
    total_f = sum(r["floor_s"] for r in out)
    rates = ", ".join(f"{k} {v / 1e6:,.0f} M/s" for k, v in rate.items())
    out.append(row(WORKLOAD, "per layer (sum)", total_t, total_f, "sum of the floors",
                   f"{where}; this run's rates: {rates}"))  # fmt: skip
    return out
