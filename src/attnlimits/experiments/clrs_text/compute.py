"""CLRS-Text end to end (paper B §4.2): data, every (arm, seed) trained and evaluated, tables.

Each (arm, seed) is one unit of work, saved as a part when done (its answers and its training
log), so a killed run resumes at the next unit. The tiny model trains on one thread, so on the
CPU the units run side by side, one process per thread torch would use (``torch.set_num_threads``
or ``OMP_NUM_THREADS`` sets how many); each unit seeds itself, so the tables are the same as
one after another. Every arm trains with its normaliser in every
head and is evaluated with the same one (paper B: adaptive temperature in fine-tuning *and* at
inference). Seeds differ in the model's initialisation and the order of training batches; the
data are the same for every arm and seed, so the comparison is paired question by question.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import torch

from attnlimits.experiments.clrs_text.config import Config, attn_implementation
from attnlimits.experiments.clrs_text.data import cached_dataset, check_dataset
from attnlimits.experiments.clrs_text.evaluate import accuracy_table, chance_table, paired_table
from attnlimits.experiments.clrs_text.model import (
    ModelSize,
    build_model,
    greedy_answers,
    train_model,
)
from attnlimits.experiments.store import ResultStore, file_sha256

__all__ = ["compute", "load_dataset", "run_arm_seed", "workers"]


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
            train_lengths, test_lengths, train_samples=cfg.train_samples,
            test_samples=cfg.test_samples,
        )  # fmt: skip
    keep = pd.Series(False, index=df.index)
    for algo in cfg.algorithms:
        is_algo = df["algorithm"] == algo
        train = (df["split"] == "train") & df["length"].isin(train_lengths[algo])
        test = (df["split"] == "test") & df["length"].isin(test_lengths[algo])
        keep |= is_algo & (train | test)
    df = df[keep].reset_index(drop=True)
    missing = sorted(set(cfg.algorithms) - set(df.loc[df["split"] == "train", "algorithm"]))
    if missing:
        raise ValueError(f"dataset {path} has no training questions for {', '.join(missing)}")
    df["in_distribution"] = [
        n in train_lengths[a] for a, n in zip(df["algorithm"], df["length"], strict=True)
    ]
    record = {"file": str(path), "sha256": file_sha256(path), "rows": len(df)}
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


def run_arm_seed(
    cfg: Config, data: pd.DataFrame, arm: str, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train one model with ``arm`` in every head and answer every test question greedily.

    The tiny model runs on one CPU thread: its width-64 matrices are too small for a second
    thread to help, and where the cores are shared two threads spin (measured at load 15:
    1,315 ms of CPU per step with two threads against 105 ms with one).

    Returns (answers: a row per test question, training log: loss per logged step)."""
    with _threads(1 if _one_thread(cfg) else None):
        return _run_arm_seed(cfg, data, arm, seed)


def _run_arm_seed(
    cfg: Config, data: pd.DataFrame, arm: str, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    train = data[data["split"] == "train"]
    test = data[data["split"] == "test"]
    longest = int((data["question"].str.len() + data["answer"].str.len()).max())
    context = max(512, longest + 8)  # RoPE positions: as many as the longest text needs
    size = ModelSize(cfg.layers, cfg.width, cfg.heads, 4 * cfg.width, context)
    model, tok = build_model(size, attn_implementation(arm), seed, cfg.model)
    model = model.to(cfg.device)
    result = train_model(
        model, tok.encode(train["question"].tolist()), tok.encode(train["answer"].tolist()),
        train["algorithm"].to_numpy(), steps=cfg.steps, batch=cfg.batch, lr=cfg.lr, seed=seed,
        device=cfg.device,
    )  # fmt: skip
    start = time.perf_counter()
    longest = int(test["answer"].str.len().max()) + 1  # bytes: the most tokens an answer takes
    if cfg.model != "tiny":  # a subword token may hold several bytes; bytes bound the count
        longest = int(max(len(t) for t in tok.encode(test["answer"].tolist()))) + 1
    got = greedy_answers(result.model, tok, test["question"].tolist(), longest, device=cfg.device)
    answers = test[["algorithm", "length", "in_distribution", "question", "answer"]].assign(
        arm=arm, seed=seed, predicted=got
    )
    answers["correct"] = answers["predicted"] == answers["answer"]
    steps, losses = zip(*result.losses, strict=True)
    log = pd.DataFrame(
        {
            "arm": arm,
            "seed": seed,
            "step": steps,
            "loss": losses,
            "seconds_per_step": result.seconds_per_step,
            "cpu_seconds_per_step": result.cpu_seconds_per_step,
            "eval_seconds": time.perf_counter() - start,
        }
    )
    return answers.reset_index(drop=True), log


def workers(cfg: Config, units: int) -> int:
    """Processes that train (arm, seed) units side by side: for the tiny model on the CPU (one
    thread each), as many as torch's thread count, at most one per unit; otherwise 1."""
    if not _one_thread(cfg):
        return 1
    return max(1, min(torch.get_num_threads(), units))


def _units(
    cfg: Config, data: pd.DataFrame, todo: Sequence[tuple[str, int]], processes: int
) -> Iterator[tuple[str, int, pd.DataFrame, pd.DataFrame]]:
    """(arm, seed, answers, log) of each unit, in the order they finish."""
    if processes == 1:
        for arm, seed in todo:
            yield (arm, seed, *run_arm_seed(cfg, data, arm, seed))
        return
    spawn = multiprocessing.get_context("spawn")  # no fork of a process holding torch threads
    with ProcessPoolExecutor(max_workers=processes, mp_context=spawn) as pool:
        running = {
            pool.submit(run_arm_seed, cfg, data, arm, seed): (arm, seed) for arm, seed in todo
        }
        try:
            for done in as_completed(running):
                yield (*running[done], *done.result())
        finally:  # an error or an interrupt: units not yet started are not started
            for future in running:
                future.cancel()


def compute(cfg: Config, store: ResultStore, *, progress: bool = True) -> dict[str, pd.DataFrame]:
    """Tables: ``answers`` (every arm, seed and test question), ``accuracy``, ``paired``,
    ``training`` (loss curves, seconds per step), ``dataset`` (questions per split and cell)."""
    with store.timed("data"):
        data, record = load_dataset(cfg)
    params = {k: v for k, v in vars(cfg).items() if k != "preset"}
    units = [(arm, seed) for arm in cfg.arms for seed in range(cfg.seeds)]
    key = {unit: f"{unit[0]}-seed{unit[1]}" for unit in units}
    todo = [
        u
        for u in units
        if not (store.has_part("answers", params, key[u]) and store.has_part("log", params, key[u]))
    ]
    processes = workers(cfg, len(todo))
    store.update_meta(
        dataset=record,
        torch_threads=1 if _one_thread(cfg) else torch.get_num_threads(),
        processes=processes,
    )
    trained: dict[tuple[str, int], tuple[pd.DataFrame, pd.DataFrame]] = {}
    with store.timed("train"):
        for arm, seed, a, log in _units(cfg, data, todo, processes):
            store.save_part("answers", params, key[arm, seed], a)
            store.save_part("log", params, key[arm, seed], log)
            trained[arm, seed] = a, log
            if progress:
                acc = a.groupby("in_distribution")["correct"].mean().round(3).to_dict()
                sps = float(log["seconds_per_step"].iloc[0])
                cps = float(log["cpu_seconds_per_step"].iloc[0])
                print(
                    f"clrs-text: {key[arm, seed]}: {sps * 1e3:.0f} ms/step ({cps * 1e3:.0f} ms "
                    f"CPU), accuracy by in_distribution {acc}",
                    flush=True,
                )
    parts = [
        trained[u]
        if u in trained
        else (store.load_part("answers", params, key[u]), store.load_part("log", params, key[u]))
        for u in units
    ]  # every unit in (arm, seed) order: the ones trained now kept, the earlier ones read
    answers, logs = [a for a, _ in parts], [log for _, log in parts]
    all_answers = pd.concat(answers, ignore_index=True)
    test = data[data["split"] == "test"]
    counts = data.groupby(["split", "algorithm", "length"]).size().rename("questions")
    accuracy = accuracy_table(all_answers, chance_table(test))
    return {
        "answers": all_answers,
        "accuracy": accuracy,
        "paired": paired_table(all_answers, accuracy, cfg.arms[0]),
        "training": pd.concat(logs, ignore_index=True),
        "dataset": counts.reset_index(),
    }
