"""What AttentionMonitor costs a training step: plain steps against monitored ones, same run.

A small randomly initialised GPT-2 (``--layers 4 --heads 4 --embd 128``, byte-sized vocabulary)
trains with AdamW on random tokens (``--batch 4 --seq 256``) in a hand-written PyTorch loop.
Three copies of the model (same weights, own optimiser, attention ``--attn``, sdpa by default)
take one training step each in turn, ``--steps`` rounds, so that a change in machine load hits
all three alike:

- ``plain``: no monitor;
- ``every=N`` (``--every``, 50): watched by an AttentionMonitor recording every N-th step
  (``--steps`` ≥ N so that the run holds a recorded step);
- ``every=1``: every step recorded (the cost of a recorded step).

Reported per set-up: mean and median ms/step over the steps (the median is robust to load
spikes; the mean of ``every=N`` carries its recorded steps, amortised) and the ratios of the means
to ``plain``; ``--repeats`` repeats the whole run and reports the median of each number.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_monitor.py --steps 50 --threads 1
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from typing import Any


def _model(args: argparse.Namespace) -> Any:
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        n_layer=args.layers, n_head=args.heads, n_embd=args.embd, n_positions=args.seq,
        vocab_size=256, bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(cfg)
    model.set_attn_implementation(args.attn)
    return model.train()


def _step(model: Any, opt: Any, batch: Any, mon: Any) -> float:
    """One training step (forward, backward, AdamW; then ``mon.step()``); its time in ms."""
    t0 = time.perf_counter()
    loss = model(batch, labels=batch).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if mon is not None:
        mon.step()
    return 1e3 * (time.perf_counter() - t0)


def _run(args: argparse.Namespace, setups: dict[str, int | None]) -> dict[str, list[float]]:
    """``args.steps`` rounds of one step per set-up; the step times in ms per set-up."""
    import copy

    import torch

    from attnlimits.monitor import AttentionMonitor

    base = _model(args)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 256, (4, args.batch, args.seq), generator=g)
    runs = []
    for every in setups.values():
        model = copy.deepcopy(base)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        for i in range(args.warmup):
            _step(model, opt, ids[i % len(ids)], None)
        mon = None if every is None else AttentionMonitor(every=every).watch(model)
        runs.append((model, opt, mon))
    times: dict[str, list[float]] = {name: [] for name in setups}
    for i in range(args.steps):
        for name, (model, opt, mon) in zip(setups, runs, strict=True):
            times[name].append(_step(model, opt, ids[i % len(ids)], mon))
    for _, _, mon in runs:
        if mon is not None:
            mon.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=50, help="rounds (default 50)")
    parser.add_argument("--repeats", type=int, default=1, help="whole runs (default 1)")
    parser.add_argument("--every", type=int, default=50, help="the sparse set-up's every")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per copy")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--embd", type=int, default=128)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--attn", default="sdpa", help="attn_implementation (sdpa, eager)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = parser.parse_args()

    import torch

    from attnlimits.monitor import AttentionHeadWarning

    warnings.simplefilter("ignore", AttentionHeadWarning)  # a random model is dispersed
    if args.threads:
        torch.set_num_threads(args.threads)
    setups: dict[str, int | None] = {"plain": None, f"every={args.every}": args.every}
    setups["every=1"] = 1
    start = time.perf_counter()
    repeats = [_run(args, setups) for _ in range(args.repeats)]
    took = time.perf_counter() - start

    def med(f: Any) -> dict[str, float]:
        return {n: statistics.median(f(r[n]) for r in repeats) for n in setups}

    mean, median = med(statistics.fmean), med(statistics.median)
    print(
        f"GPT-2 {args.layers} layers x {args.heads} heads, d={args.embd}, batch {args.batch} x "
        f"seq {args.seq}, attn={args.attn}, AdamW; torch {torch.__version__}, "
        f"{torch.get_num_threads()} thread(s); {args.repeats} x {args.steps} steps per set-up, "
        f"interleaved ({took:.0f} s)"
    )
    print(f"{'set-up':<10} {'mean ms/step':>13} {'median ms/step':>15} {'ratio (mean)':>13}")
    for name in setups:
        ratio = mean[name] / mean["plain"]
        print(f"{name:<10} {mean[name]:>13.1f} {median[name]:>15.1f} {ratio:>13.3f}")
    sparse = [t for r in repeats for t in r[f"every={args.every}"][args.every - 1 :: args.every]]
    if sparse:
        print(f"every={args.every}: its recorded steps took {statistics.median(sparse):.1f} ms")
    else:
        print(f"every={args.every}: no recorded step in {args.steps} steps (use --steps >= every)")
    extra = median["every=1"] - median["plain"]
    print(
        f"a recorded step costs {extra:+.1f} ms ({extra / median['plain']:+.1%}, medians); at "
        f"every={args.every} that is {extra / args.every:+.2f} ms/step amortised"
    )


if __name__ == "__main__":
    main()
