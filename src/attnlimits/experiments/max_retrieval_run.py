"""Max retrieval runners and figures (paper B, §4.1 / App. A; Figs. 2/7 and 9 analogues).

:func:`run_max_retrieval`: softmax models per seed, evaluated with softmax and with adaptive
temperature applied at inference only (the paper's comparison, with its paired t-test).
:func:`run_cross_normalizers`: every trainable registry normaliser trained from scratch, plus
inference-only swaps onto the softmax model. Both write tables, figures and metadata into a
:class:`~attnlimits.experiments.store.ResultStore` and resume from checkpoints and parts.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from matplotlib.figure import Figure
from tqdm.auto import tqdm

from attnlimits.experiments.max_retrieval import (
    EvalConfig,
    ModelConfig,
    NormSpec,
    attention_profile,
    evaluate,
    paired_table,
    summary_table,
)
from attnlimits.experiments.max_retrieval_train import TrainConfig, checkpoint_path, train
from attnlimits.experiments.store import ResultStore

__all__ = [
    "SWAPS",
    "TRAINED",
    "CrossConfig",
    "MaxRetrievalConfig",
    "plot_accuracy",
    "plot_attention_profile",
    "plot_logit_spread",
    "run_cross_normalizers",
    "run_max_retrieval",
]


# ---- figures -----------------------------------------------------------------------------


def plot_accuracy(summary: pd.DataFrame) -> Figure:
    """Accuracy vs set size (log x), one line per (norm, mode), ±std over seeds."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for (norm, mode), grp in summary.groupby(["norm", "mode"], sort=False):
        grp = grp.sort_values("size")
        ax.errorbar(
            grp["size"],
            grp["mean"],
            yerr=grp["std"].fillna(0.0),
            capsize=2,
            ls="-" if mode == "train" else "--",
            marker="o",
            ms=3,
            label=f"{norm}" + ("" if mode == "train" else f" ({mode})"),
        )
    ax.set(
        xscale="log",
        xlabel="set size n",
        ylabel="accuracy",
        ylim=(0, 1),
        title="Max retrieval: accuracy vs set size",
    )
    ax.axhline(0.1, color="0.7", lw=0.8, ls=":")  # chance
    ax.legend(fontsize=7, ncol=2)
    return fig


def plot_attention_profile(profile: pd.DataFrame, top: int = 32) -> Figure:
    """Fig. 2/7 analogue: mean attention on items ranked by priority, per size, per normaliser."""
    sizes = sorted(profile["size"].unique())
    fig, axes = plt.subplots(1, len(sizes), figsize=(3 * len(sizes), 3), sharey=True, squeeze=False)
    for ax, n in zip(axes[0], sizes, strict=True):
        for norm, grp in profile[(profile["size"] == n) & (profile["rank"] < top)].groupby(
            "norm", sort=False
        ):
            ax.plot(grp["rank"] + 1, grp["attention"], marker=".", label=str(norm))
        ax.set(
            title=f"n = {n}", xscale="log", yscale="log", xlabel="priority rank", ylim=(1e-6, 1.5)
        )
    axes[0, 0].set_ylabel("mean attention")
    axes[0, 0].legend(fontsize=8)
    return fig


def plot_logit_spread(log: pd.DataFrame) -> Figure:
    """Fig. 9 analogue: largest logit spread during training and Prop. 3.1's bound."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, (_, grp) in enumerate(log.groupby("seed")):
        ax.plot(
            grp["step"],
            grp["spread"],
            color="C0",
            alpha=0.6,
            label="logit spread" if i == 0 else None,
        )
        ax.plot(
            grp["step"],
            grp["bound"],
            color="C3",
            alpha=0.6,
            ls="--",
            label="Prop. 3.1 bound" if i == 0 else None,
        )
    ax.set(
        yscale="log",
        xlabel="training step",
        ylabel="max − min scaled logit",
        title="Logit spread during training (one line per seed)",
    )
    ax.legend()
    return fig


# ---- runners -----------------------------------------------------------------------------

#: Normalisers trained from scratch in the cross-normaliser table (label -> registry spec).
TRAINED: dict[str, NormSpec] = {
    name: (name, {})
    for name in (
        "softmax",
        "adaptive",
        "ssmax",
        "sparsemax",
        "entmax15",
        "topk",
        "sigmoid",
        "stick_breaking",
    )
}
#: Inference-only swaps onto the softmax-trained model. Sigmoid and stick-breaking are left
#: out: they do not sum to one, so the readout MLP would see inputs of another scale.
SWAPS: dict[str, NormSpec] = {
    name: (name, {}) for name in ("adaptive", "ssmax", "sparsemax", "entmax15", "topk")
}


@dataclass
class MaxRetrievalConfig:
    """Softmax vs adaptive temperature (applied at inference only), one model per seed."""

    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    seeds: tuple[int, ...] = tuple(range(10))
    adaptive_params: dict[str, Any] = field(default_factory=dict)  # e.g. refit coeffs
    profile_sizes: tuple[int, ...] = (16, 128, 1024, 8192)
    workers: int = 1  # processes, one seed each; each uses one thread

    def __post_init__(self) -> None:
        self.seeds = tuple(int(s) for s in self.seeds)
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be a non-empty list of distinct ints, got {self.seeds}")
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")

    @classmethod
    def quick(cls) -> MaxRetrievalConfig:
        """2 seeds, short training, sizes up to 1024: the CI smoke run (< 3 min on 2 cores).

        Two single-threaded worker processes: one process with two intra-op threads was 5×
        slower on the shared 2-core machine (these ops are too small to split).
        """
        return cls(
            train=TrainConfig(steps=1500, ckpt_every=500),
            eval=EvalConfig(sizes=(16, 32, 64, 128, 256, 512, 1024), n_sets=2000),
            seeds=(0, 1),
            profile_sizes=(16, 128, 1024),
            workers=2,
        )


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
    """Train softmax models, evaluate softmax and adaptive (inference only); save everything.

    Tables: ``accuracy`` (tidy), ``summary``, ``paired`` (paper layout), ``training_log``,
    ``attention_profile``; figures: ``accuracy``, ``attention_profile``, ``logit_spread``.
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
    _save_all(
        store,
        tables,
        {
            "accuracy": plot_accuracy(summary),
            "attention_profile": plot_attention_profile(profile),
            "logit_spread": plot_logit_spread(log),
        },
    )
    return tables


@dataclass
class CrossConfig:
    """Every trainable normaliser trained from scratch, plus inference swaps onto softmax."""

    base: MaxRetrievalConfig = field(default_factory=MaxRetrievalConfig)
    trained: dict[str, NormSpec] = field(default_factory=lambda: dict(TRAINED))
    swaps: dict[str, NormSpec] = field(default_factory=lambda: dict(SWAPS))

    def __post_init__(self) -> None:
        if "softmax" not in self.trained:
            raise ValueError("trained must include 'softmax': it is the baseline and swap host")


def run_cross_normalizers(cfg: CrossConfig, store: ResultStore) -> dict[str, pd.DataFrame]:
    """Tidy ``cross_accuracy`` (norm, mode, seed, size, accuracy, ...), ``cross_summary``
    (mean, std, paired t-test vs softmax) and figure ``cross_accuracy``."""
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
    tables = {"cross_accuracy": acc, "cross_summary": summary}
    _save_all(store, tables, {"cross_accuracy": plot_accuracy(summary)})
    return tables


def _save_all(store: ResultStore, tables: dict[str, pd.DataFrame], figs: dict[str, Figure]) -> None:
    for name, df in tables.items():
        store.write_table(df, name)
    for name, fig in figs.items():
        store.save_figure(fig, name)
        plt.close(fig)
