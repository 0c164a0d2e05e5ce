"""Max retrieval training (paper B, §4.1 / App. A): every seed in one batched model.

One step draws one set size (from a stream shared by the seeds), then ``batch`` sets of that
size per seed from the seed's own generator, and advances all S seeds with one forward and
backward pass: the loss is the sum over seeds of each seed's mean cross-entropy, so seed s's
gradient is exactly its own, and Adam's update is elementwise, so each seed trains as it
would alone (tested against separate runs). The learning rate follows ``TrainConfig.schedule``
(cosine decay to zero by default, optional linear warm-up). Every ``log_every`` steps each
seed's loss, batch accuracy, learning rate and the largest logit spread beside its Prop. 3.1
bound are logged (Fig. 9 analogue), the spread on a fixed probe batch of ``max_size`` items per
seed. Every ``ckpt_every`` steps the model, optimiser, schedule, generators and log are written
atomically; a rerun with the same configuration resumes from the last checkpoint and ends with
bit-identical weights (same device and thread count).
"""

from __future__ import annotations

import io
import math
import pickle
from collections.abc import Sequence
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from attnlimits._checks import first_line
from attnlimits.experiments.softmax_not_enough.config import ModelConfig, TrainConfig
from attnlimits.experiments.softmax_not_enough.model import MaxRetrievalModel, make_seed_batches
from attnlimits.experiments.store import atomic_write_bytes, params_hash

__all__ = [
    "LOG_COLUMNS",
    "CheckpointError",
    "checkpoint_path",
    "load_checkpoint",
    "lr_factor",
    "train",
]

LOG_COLUMNS = ["step", "seed", "size", "lr", "loss", "acc", "spread", "bound"]


def checkpoint_path(
    folder: Path, model_cfg: ModelConfig, train_cfg: TrainConfig, seeds: Sequence[int]
) -> Path:
    """``<folder>/<normaliser>-<variant>-<S>seeds-<hash of both configs and the seeds>.pt``."""
    seeds = [int(s) for s in seeds]
    tag = params_hash({"model": asdict(model_cfg), "train": asdict(train_cfg), "seeds": seeds})
    name = f"{model_cfg.normalizer}-{model_cfg.variant}-{len(seeds)}seeds-{tag}.pt"
    return Path(folder) / name


def lr_factor(step: int, *, steps: int, warmup: int, schedule: str) -> float:
    """Learning-rate multiplier before update ``step + 1``: linear warm-up over ``warmup``
    steps, then constant or cosine decay to zero at ``steps``
    (0.5·(1 + cos(π·t)), t the fraction of the post-warm-up steps done)."""
    if step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    t = (step - warmup) / max(1, steps - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(t, 1.0)))


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed from: not plain training state, or unreadable."""


def load_checkpoint(path: Path, device: str | torch.device) -> dict[str, Any]:
    """A checkpoint's state, read as plain data only (``weights_only=True``: tensors, numbers,
    strings, lists and dicts), never by running what a pickle asks for. A results folder may
    come from anyone, and a pickle replaced by one with a ``__reduce__`` payload would run it
    on every rerun. Anything else is refused in one line (:class:`CheckpointError`), without
    pickle's advice to load with ``weights_only=False``."""
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError:
        raise CheckpointError(
            f"checkpoint {path} holds more than plain training state, so it is not loaded (a "
            "checkpoint could run code): remove it, or rerun with --fresh, to train afresh"
        ) from None
    except (RuntimeError, EOFError, OSError) as err:
        raise CheckpointError(
            f"checkpoint {path} cannot be read ({first_line(err)}): remove it, or rerun with "
            "--fresh"
        ) from None
    if not isinstance(state, dict):
        raise CheckpointError(
            f"checkpoint {path} is not a training state (a {type(state).__name__})"
        )
    return state


def _save(path: Path, state: dict[str, Any]) -> None:
    buf = io.BytesIO()
    torch.save(state, buf)
    atomic_write_bytes(path, buf.getvalue())


def _optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """Adam (L2 term) or AdamW, fused into one kernel per step where torch has one (CPU, CUDA):
    0.9 ms a step instead of 3.7 for the default's ten seeds (1 thread, best of 30; issue 45),
    the same update up to float rounding (tests/test_max_retrieval_training.py checks it against
    Adam written out by hand, and batched seeds against separate runs)."""
    opt_cls = torch.optim.AdamW if cfg.regularizer == "decoupled" else torch.optim.Adam
    fused = torch.device(cfg.device).type in ("cpu", "cuda")
    return opt_cls(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, fused=fused)


def train(
    model_cfg: ModelConfig,
    cfg: TrainConfig,
    seeds: int | Sequence[int],
    *,
    ckpt: Path | None = None,
    progress: bool = False,
    stop_after: int | None = None,
) -> tuple[MaxRetrievalModel, pd.DataFrame]:
    """Train every seed in one batched model; return it (eval mode) and its log, one row per
    (logged step, seed): ``step, seed, size, lr, loss, acc, spread, bound``.

    Parameters
    ----------
    seeds : int or sequence of int
        One seed, or S seeds trained together (slice s of the model is seed ``seeds[s]``).
    ckpt : Path, optional
        Checkpoint file; resumed from if it exists, rewritten every ``cfg.ckpt_every`` steps
        and at the end.
    stop_after : int, optional
        Stop (after checkpointing) once this many steps are done: simulates an interruption.
    """
    seeds = (int(seeds),) if isinstance(seeds, int) else tuple(int(s) for s in seeds)
    dev = cfg.device
    model = MaxRetrievalModel(model_cfg, seeds).to(dev)
    opt = _optimizer(model, cfg)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, partial(lr_factor, steps=cfg.steps, warmup=cfg.warmup, schedule=cfg.schedule)
    )
    gens = [torch.Generator(device=dev).manual_seed(s) for s in seeds]
    size_gen = torch.Generator().manual_seed(cfg.size_seed)  # on CPU: same sizes everywhere
    shape: dict[str, Any] = {
        "n_classes": model_cfg.n_classes,
        "query_dim": model_cfg.query_dim,
        "device": dev,
    }
    # A fixed probe batch per seed at the largest training size, for the spread log: the
    # training batch's size varies, and a size-1 set has spread 0.
    probe = make_seed_batches(
        [torch.Generator(device=dev).manual_seed(s + 1) for s in seeds], 64, cfg.max_size, **shape
    )[:2]
    step, log = 0, []
    if ckpt is not None and Path(ckpt).exists():
        state = load_checkpoint(Path(ckpt), dev)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        for g, s in zip(gens, state["gens"], strict=True):
            g.set_state(s.to(g.get_state().device))
        size_gen.set_state(state["size_gen"].cpu())  # map_location put it on ``dev``
        step, log = state["step"], state["log"]

    def save() -> None:
        if ckpt is not None:
            _save(
                Path(ckpt),
                {
                    "model": model.state_dict(),
                    "opt": opt.state_dict(),
                    "sched": sched.state_dict(),
                    "gens": [g.get_state() for g in gens],
                    "size_gen": size_gen.get_state(),
                    "step": step,
                    "log": log,
                },
            )

    start, end = step, cfg.steps if stop_after is None else min(cfg.steps, stop_after)
    bar = None
    if progress:
        desc = f"{model_cfg.normalizer} ({model_cfg.variant}), {len(seeds)} seeds"
        bar = tqdm(total=cfg.steps, initial=step, desc=desc, leave=False)
    model.train()
    sizes = cfg.max_size - cfg.min_size + 1
    while step < end:
        n = cfg.min_size + int(torch.randint(sizes, (1,), generator=size_gen))
        items, query, target = make_seed_batches(gens, cfg.batch, n, **shape)
        logits = model(items, query)  # (S, B, C)
        assert isinstance(logits, torch.Tensor)
        loss = F.cross_entropy(logits.flatten(0, 1), target.flatten(), reduction="none")
        per_seed = loss.view(len(seeds), -1).mean(1)  # (S,)
        opt.zero_grad(set_to_none=True)
        per_seed.sum().backward()  # seed s's gradient is its own loss's
        lr = opt.param_groups[0]["lr"]
        opt.step()
        sched.step()
        step += 1
        if step % cfg.log_every == 0 or step == cfg.steps:
            spread, bound = model.spread_bound(*probe)
            acc = (logits.argmax(-1) == target).float().mean(1)
            log += [
                {
                    "step": step,
                    "seed": seed,
                    "size": n,
                    "lr": lr,
                    "loss": float(per_seed[i].detach()),
                    "acc": float(acc[i]),
                    "spread": float(spread[i]),
                    "bound": float(bound[i]),
                }
                for i, seed in enumerate(seeds)
            ]
        if step % cfg.ckpt_every == 0 and step < end:
            save()
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    if step > start:  # nothing new to save when resuming a finished run
        save()
    model.eval()
    return model, pd.DataFrame(log, columns=LOG_COLUMNS)
