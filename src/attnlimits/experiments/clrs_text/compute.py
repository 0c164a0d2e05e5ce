"""CLRS-Text end to end (paper B §4.2): data, every (arm, seed) trained and evaluated, tables.

Each (arm, seed) is one unit of work, saved as a part when done (its answers and its training
log), so a killed run resumes at the next unit. Every arm trains with its normaliser in every
head and is evaluated with the same one (paper B: adaptive temperature in fine-tuning *and* at
inference). Seeds differ in the model's initialisation and the order of training batches; the
data are the same for every arm and seed, so the comparison is paired question by question.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
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

__all__ = ["compute", "load_dataset", "run_arm_seed"]


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


def run_arm_seed(
    cfg: Config, data: pd.DataFrame, arm: str, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train one model with ``arm`` in every head and answer every test question greedily.

    The tiny model runs on one CPU thread: its width-64 matrices are too small for a second
    thread to help, and where the cores are shared two threads spin (measured at load 15:
    1,315 ms of CPU per step with two threads against 105 ms with one).

    Returns (answers: a row per test question, training log: loss per logged step)."""
    one = 1 if cfg.model == "tiny" and cfg.device == "cpu" else None
    with _threads(one):
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


def compute(cfg: Config, store: ResultStore, *, progress: bool = True) -> dict[str, pd.DataFrame]:
    """Tables: ``answers`` (every arm, seed and test question), ``accuracy``, ``paired``,
    ``training`` (loss curves, seconds per step), ``dataset`` (questions per split and cell)."""
    with store.timed("data"):
        data, record = load_dataset(cfg)
    one = cfg.model == "tiny" and cfg.device == "cpu"  # see run_arm_seed
    store.update_meta(dataset=record, torch_threads=1 if one else torch.get_num_threads())
    params = {k: v for k, v in vars(cfg).items() if k != "preset"}
    answers, logs = [], []
    for arm in cfg.arms:
        for seed in range(cfg.seeds):
            key = f"{arm}-seed{seed}"
            if store.has_part("answers", params, key) and store.has_part("log", params, key):
                answers.append(store.load_part("answers", params, key))
                logs.append(store.load_part("log", params, key))
                continue
            with store.timed(f"train.{key}"):
                a, log = run_arm_seed(cfg, data, arm, seed)
            store.save_part("answers", params, key, a)
            store.save_part("log", params, key, log)
            answers.append(a)
            logs.append(log)
            if progress:
                acc = a.groupby("in_distribution")["correct"].mean().round(3).to_dict()
                sps = float(log["seconds_per_step"].iloc[0])
                cps = float(log["cpu_seconds_per_step"].iloc[0])
                print(
                    f"clrs-text: {key}: {sps * 1e3:.0f} ms/step ({cps * 1e3:.0f} ms CPU), "
                    f"accuracy by in_distribution {acc}",
                    flush=True,
                )
    all_answers = pd.concat(answers, ignore_index=True)
    test = data[data["split"] == "test"]
    counts = data.groupby(["split", "algorithm", "length"]).size().rename("questions")
    return {
        "answers": all_answers,
        "accuracy": accuracy_table(all_answers, chance_table(test)),
        "paired": paired_table(all_answers, cfg.arms[0]),
        "training": pd.concat(logs, ignore_index=True),
        "dataset": counts.reset_index(),
    }
