"""What a limitations run will cost (:mod:`attnlimits.experiments.budget`), from its Config.

Per forward pass (one per window for a causal model, one per window and L for an encoder) and
layer, the terms of :func:`~attnlimits.experiments.limitations.compute.compute_layer`:

- the forward with its maps kept (eager attention), :meth:`ModelShape.forward_flops`;
- d̃, E and Alg. 4 per x source: heads × L² × (a pass over the map + N values below L);
- E exact (Monte Carlo), per x source: heads × Σ over bands of L (rows × draws × L × N values);
- Alg. 3's grid beyond ``ns_alg3`` (up to 0.9·L), per x source: on the same sampled rows, d̃
  and the closed forms (heads × rows × L × N values) and E exact with ``alg3_mc_samples`` draws;
- Alg. 5: heads × rows × L × temperatures × (ε + 1);
- saving the layer's three parts.

The coefficients are one-thread CPU seconds per unit (``time.process_time``, 2026-11-25, a
2-vCPU AVX2 EPYC): ``compute_layer`` on layer 15 of SmolLM2-135M over a War and Peace window
at L = 256 and 1024 with the default grids, each term switched off or doubled in turn, and
``distance_curve`` / ``separability_curve`` on random [9, 1024, 1024] maps with 5, 10 and 20
N values; ``_START`` is what the ``--quick`` run spends outside the layers.
"""

from __future__ import annotations

from attnlimits.experiments import budget
from attnlimits.experiments._model_shape import ModelShape, model_shape
from attnlimits.experiments._precision import weight_bytes
from attnlimits.experiments.limitations.config import Config

__all__ = ["estimate"]

_FLOP = 1 / 40e9  # seconds per flop of the capturing forward (maps kept)
_MAP = 7e-8  # per head × L² × x source: the passes of d̃, E and Alg. 4 over the map
_GRID = 1.5e-9  # per head × L² × N value × x source
_MC = 4e-9  # per head × row × draw × L × N value × x source
_ALG5 = 1.1e-8  # per head × row × L × T × (ε + 1)
_PART = 0.05  # saving one layer's parts
_START = 12.0  # imports, model, windows, critical N, figures and report
#: Bytes per element of the [head, L, L] maps and the grid's temporaries at the longest L.
_MAP_BYTES = 4 * 14
_MC_BYTES = 30  # per [head, row × draw, L] element of the Monte Carlo draws
_ROW_BYTES = 150  # per table row (columns, pandas' overhead, one concatenated copy)


def _ns_below(cfg: Config, length: int, top: int) -> int:
    """How many N the grid computes at length ``length`` of a pass of length ``top``."""
    ns = {cfg.n_alg1, *cfg.ns_alg3} | (set(cfg.ns_alg2) if length == top else set())
    return sum(1 for n in ns if n < length)


def _extended_below(cfg: Config, band: int, served: tuple[int, ...]) -> int:
    """How many N of Alg. 3's extended grid (of the served L ≥ ``band``) lie below ``band``."""
    return len({n for n_l in served if n_l >= band for n in cfg.alg3_grid(n_l)[1] if n < band})


def _layer_seconds(cfg: Config, shape: ModelShape, top: int, served: tuple[int, ...]) -> float:
    h, x = shape.heads, len(cfg.x_sources)
    grid = x * h * top**2 * (_MAP + _GRID * _ns_below(cfg, top, top))
    mc, lo = 0.0, 0
    for band in served:
        rows = x * h * min(cfg.mc_rows, band - lo)
        ext = _extended_below(cfg, band, served)
        grid += _GRID * rows * band * ext  # Alg. 3 beyond ns_alg3, on the sampled rows
        if "exact" in cfg.e_forms:
            mc += _MC * rows * cfg.mc_samples * band * _ns_below(cfg, band, top)
            mc += _MC * rows * cfg.alg3_mc_samples * band * ext
        lo = band
    rows5 = min(cfg.alg5_rows, top - 1)
    alg5 = _ALG5 * h * rows5 * top * len(cfg.temperatures) * (len(cfg.epsilons) + 1)
    forward = _FLOP * shape.forward_flops(top) / shape.layers
    return forward + grid + mc + alg5 + _PART


def estimate(cfg: Config) -> budget.Estimate:
    """Peak memory and wall time of ``cfg``'s run, before any model is loaded."""
    shape = model_shape(cfg.model)
    top, h, x = cfg.max_length, shape.heads, len(cfg.x_sources)
    passes = [(top, cfg.lengths)] if shape.causal else [(n, (n,)) for n in cfg.lengths]
    per_window = shape.layers * sum(_layer_seconds(cfg, shape, t, s) for t, s in passes)
    grid_ns = sum(_ns_below(cfg, n, top) + len(cfg.alg3_grid(n)[1]) for n in cfg.lengths)
    rows = x * h * grid_ns  # distance grid
    rows += h * (len(cfg.temperatures) * len(cfg.epsilons) + x * len(cfg.ns_alg4))  # Alg. 4, 5
    draws = min(cfg.mc_rows, top) * cfg.mc_samples if "exact" in cfg.e_forms else 0
    model = f"the weights of {cfg.model}"
    memory = {
        "Python and its libraries": budget.BASE_BYTES,
        model: weight_bytes(cfg, estimate) * shape.params,
        "the text": 3 * budget.text_bytes(cfg.text),
        f"one layer's maps at L = {top}": float(_MAP_BYTES * h * top**2),
        f"the Monte Carlo draws, mc_samples = {cfg.mc_samples:,}": float(
            _MC_BYTES * h * draws * top
        ),
        f"the token windows, windows = {cfg.windows:,}": float(cfg.windows * (8 * top + 300)),
        f"the tables of {cfg.windows:,} windows × {shape.layers} layers": float(
            _ROW_BYTES * rows * cfg.windows * shape.layers
        ),
    }
    return budget.estimate(
        f"limitations on {cfg.model} ({cfg.windows:,} window(s) × {shape.layers} layers, "
        f"L ≤ {top})",
        _START + cfg.windows * per_window,
        memory,
        device=cfg.device,
        on_device=[k for k in memory if k.startswith(("one layer", "the Monte Carlo"))],
        model=model,
    )
