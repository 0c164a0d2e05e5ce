"""Train a small random GPT-2 on War and Peace with transformers.Trainer and AttentionMonitor.

Characters are the tokens (the vocabulary is built from the text: no download), the model is a
randomly initialised GPT-2 (``--layers 4 --heads 4 --embd 128``, context ``--seq 128``), trained
for ``--steps`` AdamW steps on random windows of the book, on CPU. Every ``--every`` steps the
monitor records entropy, maximum weight, sink mass and logit spread per layer and head; the
example writes

- ``OUT/attention_monitor.parquet``: the monitor's per-head table;
- ``OUT/entropy.png``: entropy per layer (mean over heads) against step, with the entropy of
  uniform causal attention over the same rows, and the training loss.

A freshly initialised model attends almost uniformly (every head starts *dispersed*; the monitor
warns once per head); as it learns, the heads sharpen and the entropy falls.

Usage (under 2 minutes on one CPU thread: 1 min 42 s measured on a loaded machine)::

    OMP_NUM_THREADS=1 python examples/monitor_gpt2.py --text /path/to/war_and_peace.txt
"""

from __future__ import annotations

import argparse
import math
import os
import time
import warnings
from pathlib import Path
from typing import Any

import torch


class Windows(torch.utils.data.Dataset):
    """``n`` windows of ``seq`` token ids at seeded random offsets of ``ids``."""

    def __init__(self, ids: torch.Tensor, seq: int, n: int, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        self.ids, self.seq = ids, seq
        self.starts = torch.randint(0, len(ids) - seq, (n,), generator=g)

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        window = self.ids[int(self.starts[i]) :][: self.seq]
        return {"input_ids": window, "labels": window}


def plot(table: Any, losses: list[tuple[float, float]], seq: int, path: Path) -> None:
    """Entropy per layer (mean over heads) against step; the loss beside it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax_loss) = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [3, 2]})
    per_layer = table.groupby(["layer", "step"])["entropy"].mean()
    for layer in sorted(table.layer.unique()):
        curve = per_layer.loc[layer]
        ax.plot(curve.index, curve.to_numpy(), marker=".", label=f"layer {layer}")
    uniform = sum(math.log(i + 1) for i in range(seq)) / seq  # causal row i has i + 1 keys
    ax.axhline(uniform, color="grey", ls="--", lw=1, label="uniform attention")
    ax.set(xlabel="training step", ylabel="entropy (nats), mean over heads and rows")
    ax.set_title(f"Attention entropy per layer: char-level GPT-2, War and Peace, L={seq}")
    ax.legend(fontsize=8)
    if losses:
        ax_loss.plot(*zip(*losses, strict=True), color="black")
    ax_loss.set(xlabel="training step", ylabel="training loss (nats/char)", title="Loss")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", default=os.environ.get("ATTNLIMITS_TEXT"), help="book path")
    parser.add_argument("--out", type=Path, default=Path("results/monitor_gpt2"))
    parser.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    parser.add_argument("--every", type=int, default=10, help="record every N steps")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--embd", type=int, default=128)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.threads:
        torch.set_num_threads(args.threads)

    import pandas as pd
    import transformers

    from attnlimits.corpus import load_text
    from attnlimits.monitor import TABLE_NAME, AttentionHeadWarning, AttentionMonitor

    text = load_text(args.text)
    vocab = sorted(set(text))
    index = {ch: i for i, ch in enumerate(vocab)}
    ids = torch.tensor([index[ch] for ch in text], dtype=torch.long)
    print(f"{len(text):,} characters, vocabulary of {len(vocab)}")

    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=len(vocab), n_positions=args.seq, n_embd=args.embd, n_layer=args.layers,
        n_head=args.heads, bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(config)
    training = transformers.TrainingArguments(
        output_dir=str(args.out / "trainer"), max_steps=args.steps,
        per_device_train_batch_size=args.batch, learning_rate=args.lr, warmup_steps=20,
        lr_scheduler_type="cosine", logging_steps=50, save_strategy="no", report_to=[],
        use_cpu=True, disable_tqdm=True, seed=0,
    )  # fmt: skip
    data = Windows(ids, args.seq, args.steps * args.batch)
    trainer = transformers.Trainer(model, training, train_dataset=data)
    trainer.remove_callback(transformers.PrinterCallback)  # the loss is printed below
    AttentionMonitor(every=args.every, out_dir=args.out).attach(trainer)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AttentionHeadWarning)
        trainer.train()
    heads = [w for w in caught if issubclass(w.category, AttentionHeadWarning)]
    for w in heads[:3]:
        print("warning:", w.message)
    if len(heads) > 3:
        print(f"... {len(heads)} head warnings in all")

    losses = [(h["step"], h["loss"]) for h in trainer.state.log_history if "loss" in h]
    for step, loss in losses[:: max(1, len(losses) // 6)]:
        print(f"step {step:4d}: loss {loss:.3f}")
    table = pd.read_parquet(args.out / TABLE_NAME)
    plot(table, losses, args.seq, args.out / "entropy.png")
    last = table[table.step == table.step.max()].groupby("layer")[["entropy", "max_weight"]]
    print(f"step {table.step.max()}: per layer, mean over heads\n{last.mean().round(3)}")
    print(f"wrote {args.out / TABLE_NAME} and {args.out / 'entropy.png'}")
    print(f"took {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
