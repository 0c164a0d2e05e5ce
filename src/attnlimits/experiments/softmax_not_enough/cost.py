"""What a *Softmax is not Enough* run will cost (:mod:`attnlimits.experiments.budget`).

Training: ``steps`` batched steps of every seed at once, each a fixed part and a part per seed
(``batch`` sets of up to ``max_size`` items). Evaluation: the items of every size's sets, per
seed and normaliser evaluated (the argmax arm evaluates softmax again beside argmax). App. F:
the refit's sets per seed. The ablation trains eight
combinations (one reused) and the default combination at each other training length of
``ablation_steps``, the cross-normaliser table one model per normaliser besides softmax
and evaluates each, the swaps with softmax. Memory: the evaluation's chunks of
``chunk_items`` items × ``width`` per seed (docs/max_retrieval.md: 42 MB for ten seeds), the
training batch, the seeds' parameters with Adam's moments.

Coefficients: docs/max_retrieval.md's default and quick runs on the reference machine
(training 158 s = 5,000 steps × 31.1 ms for ten seeds, 5 ms for one; evaluation 33 s; App. F
11 s), doubled into the measured units of :mod:`.budget`.
"""

from __future__ import annotations

from attnlimits.experiments import budget
from attnlimits.experiments.softmax_not_enough.config import ABLATION, SWAPS, Config

__all__ = ["estimate"]

_STEP = 4.2e-3  # seconds per batched training step
_STEP_SEED = 5.8e-3  # more per seed per step (at batch 128, sets of up to 16 items)
_ITEM = 4.2e-7  # per evaluated item, seed and normaliser
_FIT_ITEM = 1.8e-6  # per App. F item and seed (400 temperatures)
_START = 30.0  # imports, attention profile, entropy curves, figures and report
_ACTIVATION = 4 * 5  # bytes per float of a chunk, times the temporaries alive at once
_PARAM_BYTES = 16 * 140e3  # per seed: parameters, gradients and Adam's two moments


def estimate(cfg: Config) -> budget.Estimate:
    """Peak memory and wall time of ``cfg``'s run."""
    bench = cfg.benchmark()
    seeds, train, ev, width = len(bench.seeds), bench.train, bench.eval, bench.model.width
    scale = train.batch / 128 * (train.min_size + train.max_size) / 17
    per_step = _STEP + _STEP_SEED * seeds * scale
    training = train.steps * per_step
    items = sum(n * ev.sets_at(n) for n in ev.sizes)
    evaluation = _ITEM * seeds * items  # per normaliser
    seconds = _START + training + (4 if cfg.temperature_fit else 2) * evaluation  # two refits
    seconds += 2 * evaluation  # the argmax arm: softmax again beside argmax (.argmax_arm)
    if cfg.temperature_fit:
        sets = 50 if cfg.preset == "quick" else 300
        seconds += _FIT_ITEM * seeds * sets * sum((16, 32, 64, 128, 256, 512, 1024, 2048))
    if cfg.ablation:
        combos = 1
        for axis in ABLATION.values():
            combos *= len(axis)
        seconds += (combos - 1) * training + combos * 2 * evaluation
        lengths = [n for n in dict.fromkeys(cfg.ablation_steps) if n != train.steps]
        seconds += sum(lengths) * per_step + len(lengths) * 2 * evaluation
    if cfg.normalizers:  # softmax's model is reused; its evaluation carries the swaps
        k = len(cfg.normalizers)
        seconds += (k - 1) * training + (k + len(SWAPS)) * evaluation
    chunk = max(ev.chunk_items, max(ev.sizes))  # at least one set per chunk
    memory = {
        "Python and its libraries": budget.BASE_BYTES,
        f"the evaluation's chunks, seeds = {seeds:,}": float(_ACTIVATION * seeds * chunk * width),
        f"the training batches, seeds = {seeds:,}": float(
            _ACTIVATION * seeds * train.batch * train.max_size * width
        ),
        f"the parameters and Adam's moments, seeds = {seeds:,}": _PARAM_BYTES * seeds,
    }
    what = f"softmax-not-enough ({seeds:,} seeds × {train.steps:,} steps"
    what += f", {len(cfg.normalizers)} normalisers)" if cfg.normalizers else ")"
    return budget.estimate(
        what, seconds, memory, device=cfg.device, on_device=[k for k in memory if "Python" not in k]
    )
