"""Peak memory and throughput: streaming attention vs materialised attention vs torch SDPA.

One head group (batch 1, ``--group`` query heads sharing one key/value head), causal,
float32, L queries against L keys. Every (method, L) runs in a fresh child process so that
its peak memory can be read: on CPU the rise of the child's ``ru_maxrss`` (resource module)
over its level after building the inputs; on CUDA ``torch.cuda.max_memory_allocated`` minus
the inputs. The materialised baseline is skipped, with the memory it would need, when that
exceeds ``--max-gib``. SDPA computes plain softmax only (no entropy, no β); it is the speed
and memory floor that PyTorch ships, not the same computation. On CUDA, "streaming" is the
fused Triton kernel (``--backend auto``) unless ``--backend torch``; for its throughput against
SDPA in half precision see ``benchmarks/bench_triton.py``.

Usage::

    python benchmarks/bench_streaming.py --L 1024 4096 16384 --threads 1
    python benchmarks/bench_streaming.py --device cuda --L 1024 4096 16384 65536
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import platform
import resource
import time
from typing import Any

GIB = 2.0**30


def naive_bytes(L: int, group: int) -> float:
    """Rough peak of kernels.naive_attention: about six float32 [group, L, L] tensors alive."""
    return 6 * 4.0 * group * L * L


def _child(args: dict[str, Any], method: str, L: int, queue: Any) -> None:
    import torch
    import torch.nn.functional as F

    from attnlimits.kernels import naive_attention, streaming_attention

    torch.set_num_threads(args["threads"])
    dev, G, d = torch.device(args["device"]), args["group"], args["d"]
    g = torch.Generator(device=dev).manual_seed(0)
    q = torch.randn(1, G, L, d, device=dev, generator=g)  # (B, Hq, L, d)
    k = torch.randn(1, 1, L, d, device=dev, generator=g)  # (B, Hkv, L, d)
    v = torch.randn(1, 1, L, d, device=dev, generator=g)
    norm, params = args["normalizer"], {}

    def run() -> Any:
        if method == "streaming":
            return streaming_attention(
                q, k, v, norm, causal=True, block_size=args["block"], backend=args["backend"],
                **params,
            )  # fmt: skip
        if method == "naive":
            return naive_attention(q, k, v, norm, causal=True, **params)
        kk, vv = k.expand(1, G, L, d), v.expand(1, G, L, d)  # (B, Hq, L, d) views
        return F.scaled_dot_product_attention(q, kk, vv, is_causal=True)

    cuda = dev.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0
    times = []
    while len(times) < args["repeats"] and sum(times) < args["budget_s"]:
        t0 = time.perf_counter()
        out = run()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        del out
        if len(times) == 1:  # memory of the first call; later calls reuse the allocator's cache
            if cuda:
                peak = torch.cuda.max_memory_allocated() - base
            else:
                peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0 - base
    queue.put({"time_s": min(times), "peak_gib": max(peak, 0.0) / GIB})


def measure(args: dict[str, Any], method: str, L: int) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(args, method, L, queue))
    proc.start()
    res = queue.get()
    proc.join()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--L", type=int, nargs="+", default=[1024, 4096, 16384, 65536])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--d", type=int, default=64, help="head dimension")
    ap.add_argument("--group", type=int, default=1, help="query heads per key/value head")
    ap.add_argument("--block", type=int, default=512, help="streaming block size")
    ap.add_argument("--normalizer", default="adaptive", choices=["softmax", "ssmax", "adaptive"])
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--backend", default="auto", choices=["auto", "torch", "triton"])
    ap.add_argument("--repeats", type=int, default=3, help="timed calls (best is reported)")
    ap.add_argument("--budget-s", type=float, default=5.0, help="stop repeating after this long")
    ap.add_argument("--max-gib", type=float, default=4.0, help="skip naive above this estimate")
    ap.add_argument("--methods", nargs="+", default=["streaming", "naive", "sdpa"])
    a = ap.parse_args()
    args = {
        "device": a.device, "d": a.d, "group": a.group, "block": a.block,
        "normalizer": a.normalizer, "threads": a.threads, "repeats": a.repeats,
        "budget_s": a.budget_s, "backend": a.backend,
    }  # fmt: skip
    print(
        f"# {platform.processor() or platform.machine()}, {a.device}, threads={a.threads}, "
        f"d={a.d}, group={a.group}, block={a.block}, normalizer={a.normalizer}, "
        f"backend={a.backend}, causal, float32"
    )
    print("| L | method | time (s) | queries/s | peak extra memory (GiB) |")
    print("|---:|---|---:|---:|---:|")
    for L in a.L:
        for method in a.methods:
            if method == "naive" and naive_bytes(L, a.group) / GIB > a.max_gib:
                need = naive_bytes(L, a.group) / GIB
                print(f"| {L} | naive | skipped | | would need {need:.1f} GiB |", flush=True)
                continue
            r = measure(args, method, L)
            rate = a.group * L / r["time_s"]
            print(
                f"| {L} | {method} | {r['time_s']:.3f} | {rate:,.0f} | {r['peak_gib']:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
