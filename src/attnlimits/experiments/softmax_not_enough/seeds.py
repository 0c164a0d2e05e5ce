"""Max retrieval over seeds (paper B, §4.1 / App. A): training and evaluation per seed.

:func:`run_max_retrieval`: softmax models per seed, evaluated with softmax and with adaptive
temperature applied at inference only (the paper's comparison, with its paired t-test).
:func:`run_cross_normalizers`: every trainable registry normaliser trained from scratch, plus
inference-only swaps onto the softmax model. Both return tables and resume from the
checkpoints and parts in a :class:`~attnlimits.experiments.store.ResultStore`.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from attnlimits.experiments.softmax_not_enough.config import (
    CrossConfig,
    EvalConfig,
    MaxRetrievalConfig,
    ModelConfig,
    NormSpec,
    TrainConfig,
)
from attnlimits.experiments.softmax_not_enough.evaluate import (
    attention_profile,
    evaluate,
    paired_table,
    summary_table,
)
from attnlimits.experiments.softmax_not_enough.train import checkpoint_path, train
from attnlimits.experiments.store import ResultStore

__all__ = ["run_cross_normalizers", "run_max_retrieval"]


def _seed_job(
    model_cfg: ModelConfig,
    train_cfg: TrainConfig,
    eval_cfg: EvalConfig,
    norms: dict[str, NormSpec],
    seed: int,
    root: Path,
    threads: int | None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train (or resume) one seed, evaluate it under ``norms``; parts make it resumable."""
    if threads is not None:
        torch.set_num_threads(threads)
    store = ResultStore(root)
    ckpt = checkpoint_path(root / "checkpoints", model_cfg, train_cfg, seed)
    params = {"model": model_cfg, "train": train_cfg, "eval": eval_cfg, "norms": norms}
    key = f"{model_cfg.normalizer}-seed{seed}"
    if store.has_part("eval", params, key) and store.has_part("log", params, key):
        return store.part("eval", params, key, pd.DataFrame), store.part(
            "log", params, key, pd.DataFrame
        )
    model, log = train(model_cfg, train_cfg, seed, ckpt=ckpt)
    log = store.part("log", params, key, lambda: log.assign(seed=seed))
    acc = store.part(
        "eval", params, key, lambda: evaluate(model, eval_cfg, norms).assign(seed=seed)
    )
    return acc, log


def _train_and_eval(
    model_cfg: ModelConfig,
    train_cfg: TrainConfig,
    eval_cfg: EvalConfig,
    norms: Mapping[str, NormSpec],
    seeds: Sequence[int],
    store: ResultStore,
    workers: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    common = (model_cfg, train_cfg, eval_cfg, dict(norms))
    desc = f"{model_cfg.normalizer} seeds"
    if workers == 1:
        out = [_seed_job(*common, s, store.root, None) for s in tqdm(seeds, desc=desc)]
    else:
        ctx = mp.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=ctx) as ex:
            futs = [ex.submit(_seed_job, *common, s, store.root, 1) for s in seeds]
            out = [f.result() for f in tqdm(futs, desc=desc)]
    return pd.concat([o[0] for o in out]), pd.concat([o[1] for o in out])


def run_max_retrieval(cfg: MaxRetrievalConfig, store: ResultStore) -> dict[str, pd.DataFrame]:
    """Train softmax models, evaluate softmax and adaptive (inference only).

    Tables: ``accuracy`` (tidy), ``summary``, ``paired`` (paper layout), ``training_log``,
    ``attention_profile``.
    """
    mcfg = replace(cfg.model, normalizer="softmax", normalizer_params={})
    norms: dict[str, NormSpec] = {
        "softmax": ("softmax", {}),
        "adaptive": ("adaptive", dict(cfg.adaptive_params)),
    }
    store.update_meta(max_retrieval={"config": cfg, "threads": torch.get_num_threads()})
    with store.timed("max_retrieval.train_eval"):
        acc, log = _train_and_eval(mcfg, cfg.train, cfg.eval, norms, cfg.seeds, store, cfg.workers)
    acc = acc.assign(mode="inference")
    acc.loc[acc["norm"] == "softmax", "mode"] = "train"
    summary = summary_table(acc)
    paired = paired_table(acc, id_size=cfg.train.max_size)
    model, _ = train(
        mcfg,
        cfg.train,
        cfg.seeds[0],
        ckpt=checkpoint_path(store.root / "checkpoints", mcfg, cfg.train, cfg.seeds[0]),
    )
    profile = attention_profile(model, cfg.profile_sizes, norms)
    tables = {
        "accuracy": acc,
        "summary": summary,
        "paired": paired,
        "training_log": log,
        "attention_profile": profile,
    }
    return tables


def run_cross_normalizers(cfg: CrossConfig, store: ResultStore) -> dict[str, pd.DataFrame]:
    """Tidy ``cross_accuracy`` (norm, mode, seed, size, accuracy, ...) and ``cross_summary``
    (mean, std, paired t-test vs softmax)."""
    b = cfg.base
    store.update_meta(cross_normalizers={"config": cfg})
    parts = []
    with store.timed("cross_normalizers.train_eval"):
        for label, (name, params) in cfg.trained.items():
            mcfg = replace(b.model, normalizer=name, normalizer_params=dict(params))
            norms = {label: (name, dict(params))}
            if name == "softmax":
                norms |= {f"{k} (swap)": (n, dict(p)) for k, (n, p) in cfg.swaps.items()}
            acc, _ = _train_and_eval(mcfg, b.train, b.eval, norms, b.seeds, store, b.workers)
            parts.append(
                acc.assign(
                    mode=np.where(acc["norm"].str.endswith("(swap)"), "inference-swap", "train")
                )
            )
    acc = pd.concat(parts, ignore_index=True)
    acc["norm"] = acc["norm"].str.replace(" (swap)", "", regex=False)
    summary = summary_table(acc)
    return {"cross_accuracy": acc, "cross_summary": summary}
