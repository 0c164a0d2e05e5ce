"""CLRS-Text end to end (paper B §4.2): data, every (arm, seed) trained and evaluated, tables.

Each (arm, learning rate, seed) is one unit of work: one model trained on every algorithm of
the run together (by our reading, the paper fine-tunes one model on the thirty), stopped by its
validation exact match or the step cap, saved as a part when done (its test answers, training
log and validation checks), so a killed run resumes at the next unit. First every arm's seed 0
trains at each learning rate of the grid; the rate with the best validation score is the
arm's, and seeds 1 to ``seeds`` train at it, starting as soon as that arm's grid is done, and
are compared (seed 0's model won the grid, on validation, and would carry that selection into
its test score; with one rate, seeds 0 to ``seeds`` − 1). The tiny model trains on one thread,
so on the CPU the units run side by side, one process per thread torch would use
(``torch.set_num_threads`` or ``OMP_NUM_THREADS`` sets how many), a fresh one for each unit;
each unit seeds itself, so the tables are the same as one after another. Every arm
trains with its normaliser in every head and is evaluated with the same one (paper B: adaptive
temperature in fine-tuning *and* at inference). Seeds differ in the model's initialisation and
the order of training batches; the data are the same for every arm and seed, so the comparison
is paired question by question.
"""

from __future__ import annotations

import math
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pandas as pd
import torch

from attnlimits.corpus import text_sha256
from attnlimits.experiments.clrs_text.config import Config, attn_implementation, regime
from attnlimits.experiments.clrs_text.data import cached_dataset, check_dataset, result_of
from attnlimits.experiments.clrs_text.evaluate import (
    accuracy_table,
    baseline_table,
    choose_lr,
    paired_table,
)
from attnlimits.experiments.clrs_text.model import (
    ByteTokenizer,
    HFTokenizer,
    ModelSize,
    build_model,
    greedy_answers,
    train_model,
)
from attnlimits.experiments.store import ResultStore

__all__ = [
    "compared_seeds",
    "compute",
    "load_dataset",
    "run_arm_seed",
    "trivial_validation_score",
    "workers",
]


def load_dataset(cfg: Config) -> tuple[pd.DataFrame, dict[str, object]]:
    """The run's questions (cfg.dataset's file, else generated or cached) restricted to its
    algorithms and lengths, and what ``run.json`` records of them."""
    train_lengths, test_lengths = cfg.split_lengths()
    if cfg.dataset is not None:
        path = Path(cfg.dataset)
        if not path.is_file():
            raise ValueError(f"dataset {path} is not a file")
        try:
            df = pd.read_parquet(path)
        except Exception as err:  # pyarrow raises its own kinds for a file that is not Parquet
            raise ValueError(
                f"dataset {path} is not a Parquet file ({type(err).__name__})"
            ) from err
        check_dataset(df, str(path))
    else:
        df, path = cached_dataset(
            train_lengths,
            test_lengths,
            train_samples=cfg.train_samples,
            test_samples=cfg.test_samples,
            validation_samples=cfg.validation_samples,
            fmt=cfg.format,
            test_seeds=cfg.test_seeds(),
        )
    keep = pd.Series(False, index=df.index)
    for algo in cfg.algorithms:
        is_algo = df["algorithm"] == algo
        train = df["split"].isin(["train", "validation"]) & df["length"].isin(train_lengths[algo])
        test = (df["split"] == "test") & df["length"].isin(test_lengths[algo])
        keep |= is_algo & (train | test)
    df = df[keep].reset_index(drop=True)
    for split in ("train", "validation"):
        missing = sorted(set(cfg.algorithms) - set(df.loc[df["split"] == split, "algorithm"]))
        if missing:
            raise ValueError(f"dataset {path} has no {split} questions for {', '.join(missing)}")
    traced = df["question"].str.contains("initial_trace:", regex=False)
    if traced.any() != (cfg.format == "trace") or traced.any() != traced.all():
        got = "mixed" if traced.any() != traced.all() else "trace" if traced.any() else "answer"
        raise ValueError(f"dataset {path} is in the {got} format, not {cfg.format}")
    df["regime"] = [
        regime(n, train_lengths[a]) for a, n in zip(df["algorithm"], df["length"], strict=True)
    ]
    df["in_distribution"] = df["regime"] == "in distribution"
    record = {"file": str(path), "sha256": text_sha256(path), "rows": len(df)}
    return df, record


@contextmanager
def _threads(n: int | None) -> Iterator[None]:
    """torch's intra-op threads set to ``n`` (None: left alone) for the block, then restored."""
    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _one_thread(cfg: Config) -> bool:
    """Whether a unit trains on one CPU thread (the tiny model on the CPU; see run_arm_seed)."""
    return cfg.model == "tiny" and cfg.device == "cpu"


Unit = tuple[str, float, int]  # (arm, learning rate, seed)
Tables = tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]  # answers, training log, validation


def run_arm_seed(cfg: Config, data: pd.DataFrame, arm: str, lr: float, seed: int) -> Tables:
    """Train one model with ``arm`` in every head on every algorithm together, stopped by its
    validation exact match (or the step cap), and answer every test question greedily.

    The tiny model runs on one CPU thread: its width-64 matrices are too small for a second
    thread to help, and where the cores are shared two threads spin (measured at load 15:
    1,315 ms of CPU per step with two threads against 105 ms with one).

    Returns (answers: a row per test question, training log: loss per logged step, validation:
    exact match per check and algorithm)."""
    with _threads(1 if _one_thread(cfg) else None):
        return _run_arm_seed(cfg, data, arm, lr, seed)


def _answer(
    cfg: Config, model: torch.nn.Module, tok: ByteTokenizer | HFTokenizer, rows: pd.DataFrame
) -> pd.DataFrame:
    """``rows`` with the greedy answer, whole-answer and result-only exact match.

    Each question's answer is made for at most as many tokens as its right answer takes, and
    :data:`SLACK` + 1 more (ours): enough to match it exactly, and to read the result after a
    trace a little too long (at unseen lengths the model writes one, e.g. a step too many), so
    that the result-only match stays comparable with the answer format's."""
    budget = [len(t) + SLACK + 1 for t in tok.encode(rows["answer"].tolist())]
    got = greedy_answers(model, tok, rows["question"].tolist(), budget, device=cfg.device)
    out = rows.assign(predicted=got)
    out["correct"] = out["predicted"] == out["answer"]
    out["result_correct"] = result_of(out["predicted"]) == result_of(out["answer"])
    return out


def _run_arm_seed(cfg: Config, data: pd.DataFrame, arm: str, lr: float, seed: int) -> Tables:
    train = data[data["split"] == "train"]
    val = data[data["split"] == "validation"]
    test = data[data["split"] == "test"]
    seen: list[pd.DataFrame] = []

    def check(model: torch.nn.Module) -> tuple[float, float]:
        got = _answer(cfg, model, tok, val)
        per = got.groupby("algorithm")["correct"].mean()
        seen.append(per.rename("accuracy").reset_index())
        return float(per.mean()), float(per.min())

    longest = int((data["question"].str.len() + data["answer"].str.len()).max())
    context = max(512, longest + 8)  # RoPE positions: as many as the longest text needs
    size = ModelSize(cfg.layers, cfg.width, cfg.heads, 4 * cfg.width, context, cfg.positions)
    model, tok = build_model(size, attn_implementation(arm), seed, cfg.model, cfg.dtype)
    model = model.to(cfg.device)
    result = train_model(
        model,
        tok.encode(train["question"].tolist()),
        tok.encode(train["answer"].tolist()),
        train["algorithm"].to_numpy(),
        steps=cfg.steps,
        batch=cfg.batch,
        lr=lr,
        seed=seed,
        device=cfg.device,
        check=check,
        check_every=cfg.eval_every,
        stop_at=cfg.stop_at,
        patience=cfg.patience,
        floor=trivial_validation_score(val) if cfg.patience else -math.inf,
    )
    start = time.perf_counter()
    cols = ["algorithm", "length", "regime", "in_distribution", "question", "answer"]
    answers = _answer(cfg, result.model, tok, test[cols]).assign(arm=arm, lr=lr, seed=seed)
    steps, losses = zip(*result.losses, strict=True)
    validation = pd.concat(
        [v.assign(step=c[0], score=c[1]) for v, c in zip(seen, result.checks, strict=True)],
        ignore_index=True,
    ).assign(arm=arm, lr=lr, seed=seed)
    log = pd.DataFrame(
        {
            "arm": arm,
            "lr": lr,
            "seed": seed,
            "steps_taken": result.steps,
            "stopped": result.stopped,
            "step": steps,
            "loss": losses,
            "seconds_per_step": result.seconds_per_step,
            "cpu_seconds_per_step": result.cpu_seconds_per_step,
            "eval_seconds": time.perf_counter() - start,
        }
    )
    return answers.reset_index(drop=True), log, validation


def trivial_validation_score(validation: pd.DataFrame) -> float:
    """The validation score (exact match pooled over lengths, mean over algorithms, as a check
    scores) of answering each question with its (algorithm, length) cell's most common answer:
    the best answer that reads nothing of the question but its length. The convergence stop
    waits while a model's score is at or below it (issue 57, probe 3: probe 2's softmax models
    stopped on the all-zeros answer of minimum, right when the minimum comes first)."""
    top = validation.groupby(["algorithm", "length"])["answer"].agg(
        lambda a: int(a.value_counts().iloc[0])
    )
    right = top.groupby(level="algorithm").sum()
    count = validation.groupby("algorithm").size()
    return float((right / count).mean())


def compared_seeds(cfg: Config) -> range:
    """The seeds whose test answers are compared: 0 to seeds − 1 with one learning rate; with a
    grid, 1 to seeds, since seed 0's model won the grid on validation and would carry that
    selection into its test score."""
    return range(cfg.seeds) if len(cfg.lrs) == 1 else range(1, cfg.seeds + 1)


def workers(cfg: Config, units: int) -> int:
    """Processes that train units side by side: for the tiny model on the CPU (one thread
    each), as many as torch's thread count, at most one per unit; otherwise 1."""
    if not _one_thread(cfg):
        return 1
    return max(1, min(torch.get_num_threads(), units))


_PARTS = ("answers", "log", "validation")
#: ours: the tokens a test answer may run past its right answer's length (and one more). On the
#: 2026-11-27 default's answers (made to the set's longest answer), reading each result from
#: the first 1×, 2× or 1× + 8, 16, 32 of its right answer's tokens gave a result-only match out
#: of distribution of 0.012, 0.0208, 0.0207, 0.0208, 0.0208 (0.0208 in full) for 98k, 147k,
#: 101k, 103k, 108k decoding steps (209k in full): 32 keeps every result at 10 % more steps.
SLACK = 32


class _Inline:
    """Runs a submitted unit at once in this process (one worker: no process to spawn)."""

    def submit(self, fn: Callable[..., Tables], *args: object) -> Future[Tables]:
        future: Future[Tables] = Future()
        try:
            future.set_result(fn(*args))
        except BaseException as err:  # the error surfaces where the result is read
            future.set_exception(err)
        return future


def _priority(unit: Unit, grid: set[Unit]) -> tuple[bool, bool, int]:
    """The order pending units start in: the learning-rate grid first (every compared seed of
    an arm waits for its grid), then the other arms before softmax (SDPA, the fastest to train:
    the longest units first leave the least idle time at the end), then by seed."""
    return unit not in grid, unit[0] == "softmax", unit[2]


def _run_units(
    cfg: Config, store: ResultStore, data: pd.DataFrame, processes: int, progress: bool
) -> tuple[dict[Unit, Tables], pd.DataFrame, list[Unit], list[Unit]]:
    """Every unit's tables (read from its saved parts, or trained now, side by side), the grid
    table of :func:`choose_lr`, the grid's units and the compared ones.

    An arm's compared seeds are queued as soon as its own grid is done, so no worker waits for
    another arm's grid; the workers take the pending units in :func:`_priority`'s order."""
    params = {k: v for k, v in vars(cfg).items() if k != "preset"}
    grid = [(arm, lr, 0) for arm in cfg.arms for lr in cfg.lrs]
    in_grid = set(grid)
    seeds = compared_seeds(cfg)
    got: dict[Unit, Tables] = {}
    chosen: dict[str, float] = {}
    pending: list[Unit] = list(grid)

    def key(u: Unit) -> str:
        return f"{u[0]}-lr{u[1]:g}-seed{u[2]}"

    def finished(unit: Unit, tables: Tables) -> None:
        got[unit] = tables
        arm = unit[0]
        mine = [u for u in grid if u[0] == arm]
        if unit in grid and arm not in chosen and all(u in got for u in mine):
            lrs = choose_lr(pd.concat([got[u][2] for u in mine], ignore_index=True))
            chosen[arm] = float(lrs.loc[lrs["chosen"], "lr"].iloc[0])
            pending.extend((arm, chosen[arm], seed) for seed in seeds if seed > 0)

    with ExitStack() as stack:
        pool: _Inline | ProcessPoolExecutor = _Inline()
        running: dict[Future[Tables], Unit] = {}
        try:
            while pending or running:
                pending.sort(key=lambda u: _priority(u, in_grid))
                while pending and len(running) < processes:
                    unit = pending.pop(0)
                    if all(store.has_part(p, params, key(unit)) for p in _PARTS):
                        loaded = [store.load_part(p, params, key(unit)) for p in _PARTS]
                        finished(unit, (loaded[0], loaded[1], loaded[2]))
                        continue
                    if processes > 1 and isinstance(pool, _Inline):
                        pool = stack.enter_context(_pool(processes))
                    running[pool.submit(run_arm_seed, cfg, data, *unit)] = unit
                if not running:
                    continue
                for future in wait(running, return_when=FIRST_COMPLETED).done:
                    unit = running.pop(future)
                    tables = future.result()
                    for name, table in zip(_PARTS, tables, strict=True):
                        store.save_part(name, params, key(unit), table)
                    finished(unit, tables)
                    if progress:
                        _report(key(unit), tables)
        finally:  # an error or an interrupt: units not yet started are not started
            for future in running:
                future.cancel()
    lrs = choose_lr(pd.concat([got[u][2] for u in grid], ignore_index=True))
    compared = [(arm, chosen[arm], seed) for arm in cfg.arms for seed in seeds]
    return got, lrs, grid, compared


def _pool(processes: int) -> ProcessPoolExecutor:
    """Spawned worker processes (no fork of a process holding torch threads), each running one
    unit and then replaced (Python ≥ 3.11): a process kept for seven units peaked at 3 to 11 GB
    in the default run (2026-11-27); with one unit a process, 3.4 to 4.0 GB."""
    spawn = multiprocessing.get_context("spawn")
    if sys.version_info >= (3, 11):
        return ProcessPoolExecutor(max_workers=processes, mp_context=spawn, max_tasks_per_child=1)
    return ProcessPoolExecutor(max_workers=processes, mp_context=spawn)


def _report(name: str, tables: Tables) -> None:
    """One progress line for a finished unit."""
    a, log, _ = tables
    acc = a.groupby("regime")["correct"].mean().round(3).to_dict()
    cps = float(log["cpu_seconds_per_step"].iloc[0])
    print(
        f"clrs-text: {name}: {int(log['steps_taken'].iloc[0])} steps, "
        f"{cps * 1e3:.0f} ms CPU/step, exact match by regime {acc}",
        flush=True,
    )


def compute(cfg: Config, store: ResultStore, *, progress: bool = True) -> dict[str, pd.DataFrame]:
    """Tables: ``answers`` (every arm, seed and test question, at the arm's learning rate),
    ``accuracy``, ``baselines``, ``paired``, ``validation`` (every check of every unit, the
    grid's included), ``learning_rate`` (the grid per arm, the chosen one marked),
    ``training`` (loss curves, seconds per step), ``dataset`` (questions per split and cell)."""
    with store.timed("data"):
        data, record = load_dataset(cfg)
    processes = workers(cfg, len(cfg.arms) * max(len(cfg.lrs), cfg.seeds))
    store.update_meta(
        dataset=record,
        torch_threads=1 if _one_thread(cfg) else torch.get_num_threads(),
        processes=processes,
    )
    with store.timed("train"):
        done, lrs, grid, units = _run_units(cfg, store, data, processes, progress)
    answers = pd.concat([done[u][0] for u in units], ignore_index=True)
    test = data[data["split"] == "test"]
    counts = data.groupby(["split", "algorithm", "length"]).size().rename("questions")
    baselines = baseline_table(test)
    accuracy = accuracy_table(answers, baselines)
    training = pd.concat([done[u][1] for u in units], ignore_index=True)
    # the gate's convergence (issue 57) only where the convergence stop could end a model
    gate = training if cfg.patience and "stopped" in training else None
    return {
        "answers": answers,
        "accuracy": accuracy,
        "baselines": baselines,
        "paired": paired_table(answers, accuracy, cfg.arms[0], gate),
        # in the units' own order, not the order the parallel workers finished them
        "validation": pd.concat(
            [done[u][2] for u in [*grid, *(u for u in units if u not in grid)]], ignore_index=True
        ),
        "learning_rate": lrs,
        "training": training,
        "dataset": counts.reset_index(),
    }
