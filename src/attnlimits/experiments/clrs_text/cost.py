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

import numpy as np

from attnlimits.experiments import budget
from attnlimits.experiments.clrs_text.compute import workers
from attnlimits.experiments.clrs_text.config import Config
from attnlimits.experiments.clrs_text.data import ALGORITHMS
from attnlimits.experiments.clrs_text.model import MICRO_BATCHES

__all__ = ["estimate", "scaling", "thirty"]

#: s per token (as :func:`_text_bytes` counts them) and layer at width 64, one thread: the
#: median 103 ms (softmax) and 123 ms (adaptive) per step of batch 32 in the default run
#: (3 algorithms at lengths 4 and 5, 3,000 steps, two units side by side; 2026-11-26, AVX2);
#: counted per token of the padded batch, they predict 516 ms a step of the trace-format
#: default, whose first units measured 488 and 491 ms (2026-11-27, AVX2)
_TOKEN_LAYER = {"softmax": 2.0e-5, "other": 2.4e-5}
#: s per decoded answer byte and question (batched, cached), per layer: the default's test
#: decoding, each answer made for its own length + 1 tokens, took 714 s of one thread over its
#: 14 units (2026-11-27, AVX2), 0.40 of what 1.5e-3 (measured when every answer ran to the
#: set's longest) predicted
_DECODE = 6.0e-4
#: a pretrained model (SmolLM2-135M in float32, one thread), measured in issue 57's probe 8
#: (2026-11-28, AVX2 kind, beside other jobs at load 6 to 8): s per padded token of a training
#: step (5.65 s and 5.82 s of CPU a step of 4 minimum texts of about 103 padded tokens), and s
#: per answer made or checked (the rest of a unit's CPU, about 250 s, over its 160 decoded and
#: 300 teacher-forced answers, counted as decoded). The tiny model's coefficients scaled by
#: width and layers said 1.0 and 1.2 s a step: 5 to 6 times too few.
_PRETRAINED_TOKEN = {"softmax": 1.37e-2, "other": 1.41e-2}
_PRETRAINED_ANSWER = 1.5
#: parameters of a pretrained ``--model`` (SmolLM2-135M: 134.5 M, tied embeddings)
_PRETRAINED_PARAMS = {"smollm2-135m": 1.345e8}
_GENERATE = 2.0e-3  # s per generated question
_START = 20.0  # imports, dataset checks, figures and report
#: bytes of a question and its trace-format answer ≈ a + b·n + c·n² + d·n³, coefficients ≥ 0 so
#: that it grows past 16 (non-negative least squares; dm-clrs 2.0.3, training seed 0, 10
#: questions per length 4–16, within 8 % of the largest measured mean;
#: benchmarks/clrs_text_trace_lengths.py --fit, docs/data/clrs_text/trace_lengths.csv)
_TRACE_BYTES: dict[str, tuple[float, float, float, float]] = {
    "activity_selector": (67.0, 16.76, 2.003, 0.0000),
    "articulation_points": (69.6, 3.50, 9.374, 0.0000),
    "bellman_ford": (13.6, 18.30, 4.559, 0.0000),
    "bfs": (14.2, 15.21, 2.061, 0.0000),
    "binary_search": (92.4, 7.49, 0.000, 0.0000),
    "bridges": (33.6, 0.00, 2.069, 10.5319),
    "bubble_sort": (70.8, 0.00, 0.000, 2.8910),
    "dag_shortest_paths": (73.5, 6.14, 7.408, 0.0000),
    "dfs": (30.5, 22.75, 5.075, 0.2051),
    "dijkstra": (66.1, 0.00, 6.205, 0.0738),
    "find_maximum_subarray_kadane": (83.7, 14.27, 0.022, 0.0000),
    "floyd_warshall": (171.2, 0.00, 0.000, 2.7228),
    "graham_scan": (59.2, 14.98, 3.504, 0.0000),
    "heapsort": (1.7, 0.00, 25.358, 0.4637),
    "insertion_sort": (54.6, 8.42, 5.918, 0.0000),
    "jarvis_march": (0.0, 61.99, 3.518, 0.6773),
    "kmp_matcher": (60.3, 4.79, 0.075, 0.0000),
    "lcs_length": (25.3, 0.00, 0.000, 1.6973),
    "matrix_chain_order": (12.7, 0.00, 0.000, 1.9254),
    "minimum": (45.5, 8.71, 0.013, 0.0000),
    "mst_kruskal": (20.7, 0.00, 0.298, 1.9279),
    "mst_prim": (66.0, 0.44, 6.112, 0.0782),
    "naive_string_matcher": (72.3, 4.12, 0.073, 0.0000),
    "optimal_bst": (11.1, 70.57, 0.000, 2.5170),
    "quickselect": (64.1, 7.41, 0.388, 0.0051),
    "quicksort": (0.0, 10.80, 11.205, 0.7775),
    "segments_intersect": (92.0, 0.00, 0.000, 0.0000),
    "strongly_connected_components": (70.6, 35.68, 11.223, 0.2926),
    "task_scheduling": (66.9, 12.12, 2.068, 0.0000),
    "topological_sort": (130.1, 0.00, 8.004, 0.0170),
}
_MATRIX_ALGOS = frozenset(
    {
        "articulation_points",
        "bellman_ford",
        "bfs",
        "bridges",
        "dag_shortest_paths",
        "dfs",
        "dijkstra",
        "floyd_warshall",
        "mst_kruskal",
        "mst_prim",
        "strongly_connected_components",
        "topological_sort",
    }
)


def _text_bytes(algorithm: str, n: int, fmt: str = "trace") -> float:
    """Bytes (our tokens) of one question and answer at length ``n``. The trace format: the
    cubic in n fitted to dm-clrs's texts at lengths 4–16 (:data:`_TRACE_BYTES`, from
    benchmarks/clrs_text_trace_lengths.py --fit). The answer only: about 8 per item of a list
    (minimum at n = 4: 48 bytes), about 6 per entry of an n × n graph."""
    if fmt == "trace":
        a, b, c, d = _TRACE_BYTES[algorithm]
        return max(a + b * n + c * n * n + d * n**3, 1.0)
    if algorithm in _MATRIX_ALGOS:
        return 40 + 6.0 * n * n
    return 45 + 8.0 * n


def _mean_bytes(algorithm: str, lengths: tuple[int, ...], fmt: str = "trace") -> float:
    """Mean :func:`_text_bytes` of one algorithm's questions (its lengths equally likely)."""
    return sum(_text_bytes(algorithm, n, fmt) for n in lengths) / len(lengths)


def _mean_train_bytes(cfg: Config) -> float:
    """Mean :func:`_text_bytes` of a training question (algorithms equally likely)."""
    train, _ = cfg.split_lengths()
    return sum(_mean_bytes(a, ns, cfg.format) for a, ns in train.items()) / len(train)


def estimate(cfg: Config) -> budget.Estimate:
    """Peak memory and wall time of ``cfg``'s run."""
    train, test = cfg.split_lengths()
    scale = (cfg.width / 64) ** 2 * cfg.layers
    pretrained = cfg.model != "tiny"
    # a step runs as micro-batches, each padded to its own longest text (model.step_gradients)
    seconds, mean_bytes = 0.0, _padded_train_bytes(cfg)
    for arm in cfg.arms:
        key = "softmax" if arm == "softmax" else "other"
        per_token = _PRETRAINED_TOKEN[key] if pretrained else _TOKEN_LAYER[key] * scale
        seconds += cfg.seeds * cfg.steps * cfg.batch * mean_bytes * per_token
        questions = sum(len(ns) for ns in test.values()) * cfg.test_samples
        checks = cfg.seeds * cfg.steps / cfg.eval_every  # validation checks, at most
        val = len(cfg.algorithms) * cfg.validation_samples * max(map(len, train.values()))
        if pretrained:
            seconds += cfg.seeds * questions * _PRETRAINED_ANSWER
            seconds += checks * val * _PRETRAINED_ANSWER
            continue
        seconds += (
            cfg.seeds * questions * _DECODE * cfg.layers * 4 * (_mean_test_bytes(cfg) / 60)
        )  # the coefficient was measured on answers of about 60 bytes
        seconds += checks * val * _DECODE * cfg.layers * 4 * (_mean_train_bytes(cfg) / 60)
    # the grid's seed-0 models, apart from the compared seeds when the grid has two rates or more
    seconds *= (cfg.seeds + (len(cfg.lrs) if len(cfg.lrs) > 1 else 0)) / cfg.seeds
    # budget.estimate spreads one-thread seconds over the reference's two threads; units side
    # by side on ``processes`` cores do that, up to a last round with idle processes
    units = len(cfg.arms) * (cfg.seeds + (len(cfg.lrs) if len(cfg.lrs) > 1 else 0))
    processes = workers(cfg, units)
    seconds *= math.ceil(units / processes) * processes / units
    seconds += _START
    generated = sum(len(ns) for ns in train.values()) * cfg.train_samples
    generated += sum(len(ns) for ns in test.values()) * cfg.test_samples
    if cfg.dataset is None:
        seconds += generated * _GENERATE
    longest = max(_text_bytes(a, max(ns), cfg.format) for a, ns in test.items())
    memory = {
        "Python and its libraries": budget.BASE_BYTES * processes,
        "a training batch's activations in each process": float(
            processes * cfg.batch * longest * cfg.width * cfg.layers * 4 * 40
        ),
        "the dataset": float(generated * 200),
    }
    on_device: tuple[str, ...] = ()
    if pretrained:  # float32 weights, gradients and AdamW's two moments, in each process
        weights = "the pretrained model, its gradients and AdamW state in each process"
        memory[weights] = processes * 16 * _PRETRAINED_PARAMS.get(cfg.model, 1.35e8)
        on_device = (weights, "a training batch's activations in each process")
    what = (
        f"clrs-text ({len(cfg.algorithms)} algorithms × {len(cfg.arms)} arms × {cfg.seeds} seeds"
        f" × {cfg.steps:,} steps)"
    )
    return budget.estimate(what, seconds, memory, device=cfg.device, on_device=on_device)


def _padded_train_bytes(cfg: Config, draws: int = 512) -> float:
    """Mean tokens per text of a training step once padded: the step's ``batch`` texts
    (algorithms, then their lengths, equally likely; :func:`_text_bytes`) sorted and split into
    :data:`.model.MICRO_BATCHES` micro-batches, each padded to its longest, over ``draws``
    simulated steps (a fixed seed, so the estimate is one number)."""
    train, _ = cfg.split_lengths()
    counts = np.array([len(ns) for ns in train.values()])
    cells = np.zeros((len(train), int(counts.max())))  # a row per algorithm, its lengths' sizes
    for i, (a, ns) in enumerate(train.items()):
        cells[i, : len(ns)] = [_text_bytes(a, n, cfg.format) for n in ns]
    rng = np.random.default_rng(0)
    algo = rng.integers(len(cells), size=(draws, cfg.batch))
    pick = rng.random((draws, cfg.batch))
    size = np.sort(cells[algo, (pick * counts[algo]).astype(int)], 1)
    parts = np.array_split(size, min(MICRO_BATCHES, cfg.batch), axis=1)
    padded = sum(part.max(1) * part.shape[1] for part in parts)
    return float(padded.mean() / cfg.batch)


def _mean_test_bytes(cfg: Config) -> float:
    _, test = cfg.split_lengths()
    return sum(_mean_bytes(a, ns, cfg.format) for a, ns in test.items()) / len(test)


def scaling(cfg: Config, seconds_per_step: Mapping[str, float]) -> dict[str, list[float]]:
    """One-thread training seconds of one model per arm (and seed) trained on all thirty
    algorithms together in the trace format, as the paper fine-tunes one model on the thirty,
    at this run's lengths (``"ours"``) and CLRS-Text's (``"paper"``): *estimated* from this
    run's measured ``seconds_per_step`` per arm, a step's time taken as proportional to the
    mean tokens of its questions (the thirty equally likely; :func:`_text_bytes`; at long
    texts attention's quadratic cost makes this a lower bound), at this run's step cap, batch
    and model."""
    mine = _mean_train_bytes(cfg)
    out = {}
    for lengths in ("ours", "paper"):
        all30 = replace(cfg, algorithms=ALGORITHMS, lengths=lengths, format="trace")
        out[lengths] = [
            cfg.steps * s * _mean_train_bytes(all30) / mine for s in seconds_per_step.values()
        ]
    return out


def thirty(cfg: Config, seconds_per_step: Mapping[str, float], processes: int) -> list[str]:
    """The report's lines on how training the thirty algorithms would scale (:func:`scaling`),
    labelled estimated: one model per (arm, seed) over the thirty, in the trace format, as in
    ``examples/sweep-clrs-text.toml``."""
    lines = []
    cpu = cfg.device == "cpu"
    unit, worker = ("CPU-hours", "core") if cpu else (f"hours of {cfg.device}", "device")
    for lengths, cells in scaling(cfg, seconds_per_step).items():
        total = sum(cells) * cfg.seeds
        lines.append(
            f"- the thirty algorithms at {'CLRS-Text' if lengths == 'paper' else 'this run'}'s "
            f"lengths (`--algorithms all{' --lengths paper' if lengths == 'paper' else ''}`), "
            f"trace format, one model per arm and seed over all thirty "
            f"({len(cells) * cfg.seeds} models of {cfg.steps:,} steps): "
            f"**estimated** {total / 3600:,.1f} {unit} of training; "
            f"{total / processes / 3600:,.1f} h on {processes} {worker}"
            f"{'s' if processes > 1 else ''} like this run's; with one {worker} per model, "
            f"the longest: {max(cells) / 3600:,.1f} h"
        )
    lines.append(
        "- (estimated from this run's seconds per step, scaled by the tokens per question; "
        "attention's quadratic cost on long texts makes them lower bounds; on a GPU not "
        "measured: no GPU was at hand)"
    )
    return lines
