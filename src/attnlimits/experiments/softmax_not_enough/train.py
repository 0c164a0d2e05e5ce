"""Max retrieval training (paper B, §4.1 / App. A): AdamW, one set size per batch, checkpoints.

Every batch holds ``batch`` sets of one size drawn uniformly from ``{min_size..max_size}``
(default 1..16: "up to 16 items"). A size-1 set is trivial but harmless; we keep it so the
training distribution is exactly "uniform up to 16". Every ``log_every`` steps the loss, the
batch accuracy and the largest logit spread beside its Prop. 3.1 bound are logged (Fig. 9
analogue), the spread on a fixed probe batch of ``max_size`` items. Every ``ckpt_every``
steps the model, optimiser, data-generator state and log are written atomically; a rerun with
the same configuration resumes from the last checkpoint and ends with bit-identical weights
(on the same device and thread count).
"""

from __future__ import annotations

import io
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from attnlimits.experiments.softmax_not_enough.config import ModelConfig, TrainConfig
from attnlimits.experiments.softmax_not_enough.model import MaxRetrievalModel, make_batch
from attnlimits.experiments.store import atomic_write_bytes, params_hash

__all__ = ["checkpoint_path", "train"]


def checkpoint_path(
    folder: Path, model_cfg: ModelConfig, train_cfg: TrainConfig, seed: int
) -> Path:
    """``<folder>/<normaliser>-seed<seed>-<hash of both configs>.pt``."""
    tag = params_hash({"model": asdict(model_cfg), "train": asdict(train_cfg), "seed": seed})
    return Path(folder) / f"{model_cfg.normalizer}-seed{seed}-{tag}.pt"


def _save(path: Path, state: dict[str, Any]) -> None:
    buf = io.BytesIO()
    torch.save(state, buf)
    atomic_write_bytes(path, buf.getvalue())


def _optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    opt_cls = torch.optim.AdamW if cfg.decoupled else torch.optim.Adam
    return opt_cls(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)


def train(
    model_cfg: ModelConfig,
    cfg: TrainConfig,
    seed: int,
    *,
    ckpt: Path | None = None,
    progress: bool = False,
    stop_after: int | None = None,
) -> tuple[MaxRetrievalModel, pd.DataFrame]:
    """Train one model; return it (eval mode) and its log ``step, size, loss, acc, spread, bound``.

    Parameters
    ----------
    ckpt : Path, optional
        Checkpoint file; resumed from if it exists, rewritten every ``cfg.ckpt_every`` steps
        and at the end.
    stop_after : int, optional
        Stop (after checkpointing) once this many steps are done: simulates an interruption.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # initial weights depend on the seed only
        model = MaxRetrievalModel(model_cfg).to(cfg.device)
    opt = _optimizer(model, cfg)
    gen = torch.Generator(device=cfg.device).manual_seed(seed)
    # A fixed probe batch at the largest training size, for the spread log: the training
    # batch's size varies, and a size-1 set has spread 0.
    probe = make_batch(
        64,
        cfg.max_size,
        n_classes=model_cfg.n_classes,
        query_dim=model_cfg.query_dim,
        device=cfg.device,
        generator=torch.Generator(device=cfg.device).manual_seed(seed + 1),
    )[:2]
    step, log = 0, []
    if ckpt is not None and Path(ckpt).exists():
        state = torch.load(ckpt, map_location=cfg.device, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        gen.set_state(state["gen"].to(gen.get_state().device))
        step, log = state["step"], state["log"]

    def save() -> None:
        if ckpt is not None:
            _save(
                Path(ckpt),
                {
                    "model": model.state_dict(),
                    "opt": opt.state_dict(),
                    "gen": gen.get_state(),
                    "step": step,
                    "log": log,
                },
            )

    start, end = step, cfg.steps if stop_after is None else min(cfg.steps, stop_after)
    bar = None
    if progress:
        bar = tqdm(
            total=cfg.steps, initial=step, desc=f"{model_cfg.normalizer} seed {seed}", leave=False
        )
    model.train()
    sizes = cfg.max_size - cfg.min_size + 1
    while step < end:
        n = cfg.min_size + int(torch.randint(sizes, (1,), generator=gen, device=cfg.device))
        items, query, target = make_batch(
            cfg.batch,
            n,
            n_classes=model_cfg.n_classes,
            query_dim=model_cfg.query_dim,
            generator=gen,
            device=cfg.device,
        )
        logits = model(items, query)
        assert isinstance(logits, torch.Tensor)
        loss = F.cross_entropy(logits, target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        if step % cfg.log_every == 0 or step == cfg.steps:
            spread, bound = model.spread_bound(*probe)
            acc = float((logits.argmax(-1) == target).float().mean())
            log.append(
                {
                    "step": step,
                    "size": n,
                    "loss": float(loss.detach()),
                    "acc": acc,
                    "spread": spread,
                    "bound": bound,
                }
            )
        if step % cfg.ckpt_every == 0 and step < end:
            save()
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    if step > start:  # nothing new to save when resuming a finished run
        save()
    model.eval()
    return model, pd.DataFrame(log, columns=["step", "size", "loss", "acc", "spread", "bound"])
