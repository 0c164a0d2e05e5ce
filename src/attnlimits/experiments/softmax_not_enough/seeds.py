"""Max retrieval over seeds (paper B, §4.1 / App. A): every seed in one batched run.

:func:`run_max_retrieval`: softmax models, evaluated with softmax and with adaptive
temperature applied at inference only (the paper's comparison, with its paired t-test).
:func:`run_cross_normalizers`: every trainable registry normaliser trained from scratch, plus
inference-only swaps onto the softmax model. :func:`run_ablation`: LR schedule × regulariser ×
model variant, and the training length. All return tables and resume from the checkpoints
and parts in a :class:`~attnlimits.experiments.store.ResultStore`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import torch

from attnlimits.experiments.softmax_not_enough.argmax_arm import TABLE, argmax_accuracy
from attnlimits.experiments.softmax_not_enough.config import (
    ABLATION,
    CrossConfig,
    MaxRetrievalConfig,
    ModelConfig,
    NormSpec,
)
from attnlimits.experiments.softmax_not_enough.evaluate import (
    attention_profile,
    evaluate,
    paired_table,
    set_attention,
    summary_table,
)
from attnlimits.experiments.softmax_not_enough.model import MaxRetrievalModel
from attnlimits.experiments.softmax_not_enough.train import checkpoint_path, train
from attnlimits.experiments.store import ResultStore

__all__ = [
    "run_ablation",
    "run_cross_normalizers",
    "run_max_retrieval",
    "softmax_model",
    "trained_model",
]


def trained_model(
    cfg: MaxRetrievalConfig, store: ResultStore, model_cfg: ModelConfig | None = None
) -> tuple[MaxRetrievalModel, pd.DataFrame]:
    """Train (or load from its checkpoint) every seed of ``cfg`` in one batched model."""
    mcfg = model_cfg or cfg.model
    ckpt = checkpoint_path(store.root / "checkpoints", mcfg, cfg.train, cfg.seeds)
    return train(mcfg, cfg.train, cfg.seeds, ckpt=ckpt, progress=True)


def _train_and_eval(
    cfg: MaxRetrievalConfig,
    model_cfg: ModelConfig,
    norms: Mapping[str, NormSpec],
    store: ResultStore,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Accuracy and training log of ``cfg.seeds`` trained with ``model_cfg``; stored as parts."""
    params = {
        "model": model_cfg,
        "train": cfg.train,
        "eval": cfg.eval,
        "norms": dict(norms),
        "seeds": cfg.seeds,
    }
    key = f"{model_cfg.normalizer}-{model_cfg.variant}"
    if store.has_part("eval", params, key) and store.has_part("log", params, key):
        return store.part("eval", params, key, pd.DataFrame), store.part(
            "log", params, key, pd.DataFrame
        )
    model, log = trained_model(cfg, store, model_cfg)
    log = store.part("log", params, key, lambda: log)
    acc = store.part("eval", params, key, lambda: evaluate(model, cfg.eval, norms, progress=True))
    return acc, log


def _softmax_and_adaptive(cfg: MaxRetrievalConfig) -> dict[str, NormSpec]:
    return {"softmax": ("softmax", {}), "adaptive": ("adaptive", dict(cfg.adaptive_params))}


def _summary(acc: pd.DataFrame, cfg: MaxRetrievalConfig) -> pd.DataFrame:
    return summary_table(acc)


def softmax_model(cfg: MaxRetrievalConfig) -> ModelConfig:
    """``cfg``'s model with the softmax normaliser: the model the benchmark trains."""
    return replace(cfg.model, normalizer="softmax", normalizer_params={})


def run_max_retrieval(
    cfg: MaxRetrievalConfig,
    store: ResultStore,
    *,
    extra_norms: Mapping[str, NormSpec] | None = None,
) -> dict[str, pd.DataFrame]:
    """Train softmax models, evaluate softmax, adaptive and ``extra_norms`` (inference only)
    on the same sets.

    Tables: ``accuracy`` (tidy), ``summary``, ``paired`` (paper layout: softmax vs adaptive),
    ``training_log``, ``attention_profile`` (softmax and adaptive), ``set_attention``
    (per profile set: the attention on the desired item, its entropy and Lemma 2.1's
    quantities) and ``argmax_accuracy`` (:mod:`.argmax_arm`: softmax and a hard argmax on the
    evaluation's sets, inference only; its own part, so an older run gains it on a rerun).
    """
    mcfg = softmax_model(cfg)
    norms = _softmax_and_adaptive(cfg)
    store.update_meta(max_retrieval={"config": cfg, "threads": torch.get_num_threads()})
    with store.timed("max_retrieval.train_eval"):
        acc, log = _train_and_eval(cfg, mcfg, norms | dict(extra_norms or {}), store)
    acc = acc.assign(mode="inference")
    acc.loc[acc["norm"] == "softmax", "mode"] = "train"
    model, _ = trained_model(cfg, store, mcfg)
    with store.timed("max_retrieval.intervals"):
        summary = _summary(acc, cfg)
    with store.timed("max_retrieval.argmax"):
        part = {"model": mcfg, "train": cfg.train, "eval": cfg.eval, "seeds": cfg.seeds}
        argmax = store.part(
            "argmax", part, "softmax", lambda: argmax_accuracy(model, acc, cfg.eval)
        )
    return {
        "accuracy": acc,
        "summary": summary,
        "paired": paired_table(summary, id_size=cfg.train.max_size),
        "training_log": log,
        "attention_profile": attention_profile(model, cfg.profile_sizes, norms),
        "set_attention": set_attention(model, cfg.profile_sizes, norms),
        TABLE: argmax,
    }


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
            acc, _ = _train_and_eval(b, mcfg, norms, store)
            parts.append(
                acc.assign(
                    mode=np.where(acc["norm"].str.endswith("(swap)"), "inference-swap", "train")
                )
            )
    acc = pd.concat(parts, ignore_index=True)
    acc["norm"] = acc["norm"].str.replace(" (swap)", "", regex=False)
    return {"cross_accuracy": acc, "cross_summary": _summary(acc, b)}


def run_ablation(
    cfg: MaxRetrievalConfig, store: ResultStore, steps: Sequence[int] = ()
) -> dict[str, pd.DataFrame]:
    """LR schedule × regulariser × model variant (:data:`ABLATION`) at ``cfg``'s steps, and
    ``cfg``'s own combination at each of ``steps`` (the training length); softmax and
    adaptive at inference, ``cfg.seeds`` each; a run equal to ``cfg`` reuses its models.

    Tables: ``ablation_accuracy`` (tidy: schedule, regularizer, variant, steps, norm, seed,
    size, …), ``ablation_summary`` (:func:`.evaluate.summary_table` per run: mean, seed SE,
    the intervals over seeds and sets, paired tests) and ``ablation_training_log`` (the
    training log of each steps run: steps, step, seed, loss, …).
    """
    norms = _softmax_and_adaptive(cfg)
    t, v = cfg.train, cfg.model.variant
    # the run's own combination at every length first (it reuses the main run's model), then
    # the other combinations: an interrupted ablation has its newest question answered
    own: tuple[str, ...] = (t.schedule, t.regularizer, v)
    runs: list[tuple[Any, ...]] = [(*own, n) for n in dict.fromkeys((t.steps, *steps))]
    runs += [(*c, t.steps) for c in itertools.product(*ABLATION.values()) if c != own]
    parts, summaries, logs = [], [], []
    with store.timed("ablation.train_eval"):
        for schedule, regularizer, variant, n_steps in runs:
            run = replace(
                cfg,
                train=replace(t, schedule=schedule, regularizer=regularizer, steps=n_steps),
                model=replace(cfg.model, variant=variant),
            )
            acc, log = _train_and_eval(run, softmax_model(run), norms, store)
            setting = {
                "schedule": schedule,
                "regularizer": regularizer,
                "variant": variant,
                "steps": n_steps,
            }
            parts.append(acc.assign(**setting))
            summaries.append(_summary(acc, cfg).assign(**setting))
            if (schedule, regularizer, variant) == own:
                logs.append(log.assign(steps=n_steps))
    return {
        "ablation_accuracy": pd.concat(parts, ignore_index=True),
        "ablation_summary": pd.concat(summaries, ignore_index=True),
        "ablation_training_log": pd.concat(logs, ignore_index=True),
    }
