"""Speed of the ``attnlimits_<name>`` attention implementations as ratios to PyTorch's SDPA.

A random Llama with SmolLM2-135M's attention shapes (9 query heads, 3 key/value heads, head
dimension 64, hidden 576; ``--layers`` layers, small vocabulary, no LM head), one causal
sequence of L tokens, float32, forward under ``no_grad``. Every implementation runs on the same
weights, interleaved (one call of each in turn, in alternating order, ``--repeats`` rounds, best
kept), so a ratio
``t_sdpa / t_name`` (1.0 = SDPA's speed) compares calls that shared the machine's load; the
load average is printed before and after. ``--kernel streaming`` adds each normaliser's
streaming kernel (``config.attnlimits_params = {"kernel": "streaming"}``) beside its SDPA path.

``--memory L`` then measures the peak memory of one forward + backward at L tokens per
implementation, each in a fresh child process (rise of ``ru_maxrss`` over its level after
building the model and inputs).

Usage::

    python benchmarks/bench_sdpa.py --L 8192
    python benchmarks/bench_sdpa.py --L 8192 --threads 1   # steadier on a loaded machine
    python benchmarks/bench_sdpa.py --L 8192 --kernel streaming --names adaptive logn
    python benchmarks/bench_sdpa.py --L 0 --memory 4096 --names adaptive
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import resource
import time
from typing import Any

GIB = 2.0**30
NAMES = ["softmax_t", "logn", "ssmax", "softmax1", "sink_softmax", "adaptive"]


def _model(layers: int) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaModel

    import attnlimits.kernels  # noqa: F401  (registers the attnlimits_* names)

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=1024, hidden_size=576, intermediate_size=1536, num_hidden_layers=layers,
        num_attention_heads=9, num_key_value_heads=3, head_dim=64, max_position_embeddings=65536,
        attn_implementation="sdpa",
    )  # fmt: skip
    return LlamaModel(cfg).eval()


def _impls(names: list[str], kernels: list[str]) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, attn_implementation, attnlimits_params) to time, SDPA first."""
    out: list[tuple[str, str, dict[str, Any]]] = [("sdpa", "sdpa", {})]
    for name in names:
        for kernel in kernels:
            label = name if kernel == "sdpa" else f"{name} (streaming)"
            out.append((label, f"attnlimits_{name}", {"kernel": kernel}))
    return out


def speed(L: int, layers: int, repeats: int, impls: list[tuple[str, str, dict[str, Any]]]) -> None:
    import torch

    model = _model(layers)
    ids = torch.randint(0, 1024, (1, L), generator=torch.Generator().manual_seed(0))
    best = {label: float("inf") for label, _, _ in impls}
    with torch.no_grad():
        for r in range(repeats):  # alternate the order, so no name always follows another
            for label, impl, params in impls if r % 2 == 0 else impls[::-1]:
                model.set_attn_implementation(impl)
                model.config.attnlimits_params = params
                t0 = time.perf_counter()
                model(ids)
                best[label] = min(best[label], time.perf_counter() - t0)
    print(f"\n| L = {L} | best of {repeats} (s) | speed / SDPA |")
    print("|---|---:|---:|")
    for label, t in best.items():
        print(f"| {label} | {t:.2f} | {best['sdpa'] / t:.2f} |", flush=True)


def _memory_child(L: int, layers: int, impl: str, params: dict[str, Any], queue: Any) -> None:
    import torch

    model = _model(layers).train()
    model.set_attn_implementation(impl)
    model.config.attnlimits_params = params
    ids = torch.randint(0, 1024, (1, L), generator=torch.Generator().manual_seed(0))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0
    t0 = time.perf_counter()
    model(ids).last_hidden_state.square().mean().backward()
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0 - base
    queue.put((peak / GIB, seconds))


def memory(L: int, layers: int, impls: list[tuple[str, str, dict[str, Any]]]) -> None:
    print(f"\n| L = {L}, forward + backward | peak extra memory (GiB) | time (s) |")
    print("|---|---:|---:|")
    ctx = mp.get_context("spawn")
    for label, impl, params in impls:
        queue = ctx.Queue()
        proc = ctx.Process(target=_memory_child, args=(L, layers, impl, params, queue))
        proc.start()
        gib, seconds = queue.get()
        proc.join()
        print(f"| {label} | {gib:.2f} | {seconds:.1f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--L", type=int, nargs="+", default=[8192], help="0: skip the speed table")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--names", nargs="+", default=NAMES, help="attnlimits_<name> to time")
    ap.add_argument("--kernel", nargs="+", default=["sdpa"], choices=["sdpa", "streaming"])
    ap.add_argument("--memory", type=int, nargs="*", default=[], help="L for forward+backward")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's own)")
    a = ap.parse_args()
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    print(
        f"# {platform.processor() or platform.machine()}, torch {torch.__version__}, "
        f"threads={torch.get_num_threads()}, layers={a.layers}, float32, causal; "
        f"load before: {os.getloadavg()[0]:.1f}"
    )
    impls = _impls(a.names, a.kernel)
    for L in a.L:
        if L > 0:
            speed(L, a.layers, a.repeats, impls)
    for L in a.memory:
        memory(L, a.layers, impls)
    print(f"\n# load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
