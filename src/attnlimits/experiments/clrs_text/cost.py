"""What a CLRS-Text run will cost (:mod:`attnlimits.experiments.budget`).

Training dominates: ``steps`` steps per (arm, seed), each a forward and backward pass over
``batch`` texts of about ``_text_bytes`` tokens through ``layers`` layers; the adaptive arm's
kernel (streamed entropy, then the sharpened softmax, with gradients through β) costs more per
token than sdpa. Evaluation: greedy decoding of every test question's answer, one token per
step with the key-value cache. Data: generating the questions once (then cached).

Coefficients: one-thread seconds per step measured on a 2-vCPU AMD EPYC (AVX2 kind), in
:mod:`.budget`'s units, with one other one-thread job on the second core, as when two units
run side by side. On the CPU the tiny model's units run in as many processes as torch has
threads (:func:`.compute.workers`): what :func:`.budget.estimate` assumes of two threads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from attnlimits.experiments import budget
from attnlimits.experiments.clrs_text.compute import workers
from attnlimits.experiments.clrs_text.config import Config
from attnlimits.experiments.clrs_text.data import ALGORITHMS

__all__ = ["estimate", "scaling", "thirty"]

#: s per token (as :func:`_text_bytes` counts them) and layer at width 64, one thread: the
#: median 103 ms (softmax) and 123 ms (adaptive) per step of batch 32 in the default run
#: (3 algorithms at lengths 4 and 5, 3,000 steps, two units side by side; 2026-11-26, AVX2)
_TOKEN_LAYER = {"softmax": 2.0e-5, "other": 2.4e-5}
_DECODE = 1.5e-3  # s per decoded answer byte and question (batched, cached), per layer
_GENERATE = 2.0e-3  # s per generated question
_START = 20.0  # imports, dataset checks, figures and report
_MATRIX_ALGOS = frozenset(
    {
        "articulation_points", "bellman_ford", "bfs", "bridges", "dag_shortest_paths", "dfs",
        "dijkstra", "floyd_warshall", "mst_kruskal", "mst_prim",
        "strongly_connected_components", "topological_sort",
    }
)  # fmt: skip


def _text_bytes(algorithm: str, n: int) -> float:
    """Rough bytes of one question and answer: about 8 per item of a list (minimum at n = 4:
    48 bytes, find_maximum_subarray_kadane 78), about 6 per entry of an n × n graph."""
    if algorithm in _MATRIX_ALGOS:
        return 40 + 6.0 * n * n
    return 45 + 8.0 * n


def _mean_bytes(algorithm: str, lengths: tuple[int, ...]) -> float:
    """Mean :func:`_text_bytes` of one algorithm's questions (its lengths equally likely)."""
    return sum(_text_bytes(algorithm, n) for n in lengths) / len(lengths)


def _mean_train_bytes(cfg: Config) -> float:
    """Mean :func:`_text_bytes` of a training question (algorithms equally likely)."""
    train, _ = cfg.split_lengths()
    return sum(_mean_bytes(a, ns) for a, ns in train.items()) / len(train)


def estimate(cfg: Config) -> budget.Estimate:
    """Peak memory and wall time of ``cfg``'s run."""
    train, test = cfg.split_lengths()
    scale = (cfg.width / 64) ** 2 * cfg.layers * (60.0 if cfg.model != "tiny" else 1.0)
    seconds, mean_bytes = 0.0, _mean_train_bytes(cfg)
    for arm in cfg.arms:
        per_token = _TOKEN_LAYER["softmax" if arm == "softmax" else "other"] * scale
        seconds += cfg.seeds * cfg.steps * cfg.batch * mean_bytes * per_token
        questions = sum(len(ns) for ns in test.values()) * cfg.test_samples
        seconds += cfg.seeds * questions * _DECODE * cfg.layers * 4
    # budget.estimate spreads one-thread seconds over the reference's two threads; units side
    # by side on ``processes`` cores do that, up to a last round with idle processes
    units = len(cfg.arms) * cfg.seeds
    processes = workers(cfg, units)
    seconds *= math.ceil(units / processes) * processes / units
    seconds += _START
    generated = sum(len(ns) for ns in train.values()) * cfg.train_samples
    generated += sum(len(ns) for ns in test.values()) * cfg.test_samples
    if cfg.dataset is None:
        seconds += generated * _GENERATE
    longest = max(_text_bytes(a, max(ns)) for a, ns in test.items())
    memory = {
        "Python and its libraries": budget.BASE_BYTES * processes,
        "one training batch's activations": float(
            cfg.batch * longest * cfg.width * cfg.layers * 4 * 40
        ),
        "the dataset": float(generated * 200),
    }
    what = (
        f"clrs-text ({len(cfg.algorithms)} algorithms × {len(cfg.arms)} arms × {cfg.seeds} seeds"
        f" × {cfg.steps:,} steps)"
    )
    return budget.estimate(what, seconds, memory, device=cfg.device)


def scaling(cfg: Config, seconds_per_step: Mapping[str, float]) -> dict[str, list[float]]:
    """One-thread training seconds of every (algorithm, arm) cell of the thirty algorithms, per
    seed, at this run's lengths (``"ours"``) and CLRS-Text's (``"paper"``): *estimated* from
    this run's measured ``seconds_per_step`` per arm, a step's time taken as proportional to
    the tokens of its questions (:func:`_text_bytes`; at long texts attention's quadratic cost
    makes this a lower bound), at this run's steps, batch and model."""
    mine = _mean_train_bytes(cfg)
    out = {}
    for lengths in ("ours", "paper"):
        train, _ = replace(cfg, algorithms=ALGORITHMS, lengths=lengths).split_lengths()
        out[lengths] = [
            cfg.steps * s * _mean_bytes(a, ns) / mine
            for a, ns in train.items()
            for s in seconds_per_step.values()
        ]
    return out


def thirty(cfg: Config, seconds_per_step: Mapping[str, float], processes: int) -> list[str]:
    """The report's lines on how training the thirty algorithms would scale (:func:`scaling`),
    labelled estimated. Cells as in ``examples/sweep-clrs-text.toml``: one model per
    (algorithm, arm, seed)."""
    lines = []
    cpu = cfg.device == "cpu"
    unit, worker = ("CPU-hours", "core") if cpu else (f"hours of {cfg.device}", "device")
    for lengths, cells in scaling(cfg, seconds_per_step).items():
        total = sum(cells) * cfg.seeds
        lines.append(
            f"- the thirty algorithms at {'CLRS-Text' if lengths == 'paper' else 'this run'}'s "
            f"lengths (`--algorithms all{' --lengths paper' if lengths == 'paper' else ''}`), "
            f"one model per algorithm, arm and seed ({len(cells) * cfg.seeds} cells): "
            f"**estimated** {total / 3600:,.1f} {unit} of training; "
            f"{total / processes / 3600:,.1f} h on {processes} {worker}"
            f"{'s' if processes > 1 else ''} like this run's; on a cluster with one {worker} per "
            f"cell, the longest cell: {max(cells) / 3600:,.1f} h"
        )
    lines.append(
        "- (estimated from this run's seconds per step, scaled by the tokens per question; "
        "attention's quadratic cost on long texts makes them lower bounds; on a GPU not "
        "measured: no GPU was at hand)"
    )
    return lines
