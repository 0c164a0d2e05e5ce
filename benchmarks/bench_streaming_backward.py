"""Training memory and softcap speed of the streamed kernels on a random Llama (issue 30's shapes).

The model: a random ``LlamaForCausalLM`` with SmolLM2-135M's attention shapes (hidden 576,
9 query heads, 3 key/value heads, head dimension 64), 2 layers, one causal sequence of L tokens,
float32, ``--threads`` torch threads. Its vocabulary is ``--vocab`` (default 512) so that the
logits do not dwarf the attention's memory.

``memory``: each ``attn_implementation`` runs one forward + backward (loss = mean logit) in a
fresh child process. Peak memory growth is read from Linux's ``/proc/self/status``: the peak
resident set ``VmHWM`` is reset (``/proc/self/clear_refs`` ← 5) after building the model and
inputs, and the growth is ``VmHWM − VmRSS`` at that moment, so it counts everything the step
allocates (activations, saved tensors, gradients), not only the attention.

``speed``: forward under ``torch.no_grad()`` with ``attnlimits_<normalizer>`` against ``sdpa``
in one process, interleaved (sdpa, kernel, sdpa, kernel, ...), best of ``--repeats``; prints
the ratio speed(kernel) / speed(sdpa) = best sdpa time / best kernel time, with the load
average. ``--blocks`` sweeps the streaming block size.

Usage::

    python benchmarks/bench_streaming_backward.py memory --L 4096 --impl attnlimits_adaptive sdpa
    python benchmarks/bench_streaming_backward.py speed --L 8192 --blocks 256 512
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
from typing import Any

GIB = 2.0**30


def _model(L: int, impl: str, vocab: int, threads: int) -> tuple[Any, Any]:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    import attnlimits.kernels  # noqa: F401  (registers the attnlimits_* names)

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=vocab, hidden_size=576, intermediate_size=1536, num_hidden_layers=2,
        num_attention_heads=9, num_key_value_heads=3, head_dim=64, max_position_embeddings=L,
        attn_implementation=impl,
    )  # fmt: skip
    model = LlamaForCausalLM(cfg)
    ids = torch.randint(0, vocab, (1, L), generator=torch.Generator().manual_seed(1))
    return model, ids


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _memory_child(impl: str, L: int, vocab: int, threads: int, queue: Any) -> None:
    model, ids = _model(L, impl, vocab, threads)
    model.train()
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # reset VmHWM to the current RSS
    base = _status_kib("VmRSS")
    t0 = time.perf_counter()
    model(ids).logits.mean().backward()
    dt = time.perf_counter() - t0
    queue.put({"growth_gib": (_status_kib("VmHWM") - base) * 1024 / GIB, "time_s": dt})


def memory(a: argparse.Namespace) -> None:
    print(f"# forward + backward, L={a.L}, vocab={a.vocab}, threads={a.threads}, float32")
    print("| attn_implementation | peak RSS growth (GiB) | time (s) |")
    print("|---|---:|---:|")
    ctx = mp.get_context("spawn")
    for impl in a.impl:
        queue = ctx.Queue()
        proc = ctx.Process(target=_memory_child, args=(impl, a.L, a.vocab, a.threads, queue))
        proc.start()
        r = queue.get()
        proc.join()
        print(f"| {impl} | {r['growth_gib']:.3f} | {r['time_s']:.1f} |", flush=True)


def speed(a: argparse.Namespace) -> None:
    import torch

    from attnlimits.kernels.hf import CONFIG_ATTR

    model, ids = _model(a.L, "sdpa", a.vocab, a.threads)
    model.eval()
    kernel = f"attnlimits_{a.normalizer}"

    def timed(impl: str, block: int) -> float:
        model.set_attn_implementation(impl)
        setattr(model.config, CONFIG_ATTR, {"block_size": block})
        t0 = time.perf_counter()
        with torch.no_grad():
            model.model(ids)  # the decoder only: the logits are the same for both
        return time.perf_counter() - t0

    load = os.getloadavg()
    print(f"# forward, no_grad, L={a.L}, threads={a.threads}, load before {load[0]:.2f}")
    print(f"| kernel | block | best {kernel} (s) | best sdpa (s) | speed / sdpa |")
    print("|---|---:|---:|---:|---:|")
    for block in a.blocks:
        ref, got = [], []
        for _ in range(a.repeats):  # interleaved
            ref.append(timed("sdpa", block))
            got.append(timed(kernel, block))
        print(
            f"| {kernel} | {block} | {min(got):.3f} | {min(ref):.3f} | {min(ref) / min(got):.2f} |",
            flush=True,
        )
    print(f"# load after {os.getloadavg()[0]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    m = sub.add_parser("memory", help="peak RSS growth of one forward + backward")
    m.add_argument("--impl", nargs="+", default=["attnlimits_adaptive", "sdpa", "eager"])
    s = sub.add_parser("speed", help="forward time against sdpa, interleaved, best of N")
    s.add_argument("--normalizer", default="softcap")
    s.add_argument("--blocks", type=int, nargs="+", default=[256])
    s.add_argument("--repeats", type=int, default=3)
    for p in (m, s):
        p.add_argument("--L", type=int, default=4096 if p is m else 8192)
        p.add_argument("--vocab", type=int, default=512)
        p.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    memory(a) if a.what == "memory" else speed(a)


if __name__ == "__main__":
    main()
