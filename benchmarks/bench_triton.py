"""Throughput of the Triton kernel (kernels/triton_attention.py) against PyTorch's SDPA on a GPU.

For each L, ``batch = max(1, --tokens // L)`` sequences of L queries against L keys, ``--heads``
query heads (``--group`` per key/value head), head dim ``--d``, causal, ``--dtype``. Timed with
``triton.testing.do_bench`` (median of repeated calls after a warm-up; the autotuner runs in an
untimed first call):

- ``sdpa``: ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``, plain softmax
  (flash backend for fp16/bf16), the speed PyTorch ships;
- ``softmax``, ``ssmax``, ``adaptive``: the Triton path of ``streaming_attention`` (T = 1,
  s = 0.43, paper B's β(H)), timed without the NaN/inf input scans of ``streaming_attention``;
- ``softmax+checks``: ``streaming_attention(..., backend="triton")`` as a user calls it.

``ratio`` is SDPA's time over the method's (1 = as fast as SDPA; the goal is ≥ 0.5 at 16K and
above). ``β≠1`` is the fraction of rows whose adaptive β differs from 1: those query tiles run the
second launch. TFLOP/s counts one causal attention (4·B·H·L²·d/2 flops) for every method;
tokens/s is B·L over the time; ``extra MiB`` is the peak GPU memory of one call above what q, k,
v already held (``torch.cuda.max_memory_allocated``): the output and per-row statistics, O(L).
At the end it prints the tile configuration the autotuner chose for each tuning key.

Without a CUDA device it prints that the GPU part was skipped and exits 0.

Usage::

    python benchmarks/bench_triton.py                      # L = 1K 4K 16K 64K, bf16, d = 128
    python benchmarks/bench_triton.py --dtype float16 --d 64 --L 16384 65536 --out table.md
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from attnlimits.kernels import streaming_attention

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
METHODS = ["sdpa", "softmax", "ssmax", "adaptive", "softmax+checks"]


def make_inputs(a: argparse.Namespace, L: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    B, H, Hkv = max(1, a.tokens // L), a.heads, a.heads // a.group
    g = torch.Generator(device="cuda").manual_seed(0)
    dt = DTYPES[a.dtype]
    q = torch.randn(B, H, L, a.d, device="cuda", generator=g).to(dt)  # (B, Hq, L, d)
    k = torch.randn(B, Hkv, L, a.d, device="cuda", generator=g).to(dt)  # (B, Hkv, L, d)
    v = torch.randn(B, Hkv, L, a.d, device="cuda", generator=g).to(dt)
    return q, k, v


def runner(method: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> Any:
    from attnlimits.kernels import triton_attention
    from attnlimits.kernels.spec import resolve_params

    scale = q.shape[-1] ** -0.5
    if method == "sdpa":
        gqa = {"enable_gqa": True} if q.shape[1] != k.shape[1] else {}
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)
    if method == "softmax+checks":
        return lambda: streaming_attention(q, k, v, "softmax", causal=True, backend="triton")
    opts = resolve_params(method, {})
    return lambda: triton_attention._forward(
        q, k, v, method, opts, causal=True, scale=scale, return_stats=False
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--L", type=int, nargs="+", default=[1024, 4096, 16384, 65536])
    ap.add_argument("--tokens", type=int, default=65536, help="batch = max(1, tokens // L)")
    ap.add_argument("--heads", type=int, default=16, help="query heads")
    ap.add_argument("--group", type=int, default=1, help="query heads per key/value head")
    ap.add_argument("--d", type=int, default=128, help="head dimension")
    ap.add_argument("--dtype", default="bfloat16", choices=list(DTYPES))
    ap.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    ap.add_argument("--out", type=Path, default=Path("results/bench_triton.md"))
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("# no CUDA device: the GPU part of this benchmark was skipped (docs/kernels.md)")
        return
    import triton
    from triton.testing import do_bench

    from attnlimits.kernels import triton_attention

    head = (
        f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__},"
        f" {platform.machine()}; heads={a.heads}, group={a.group}, d={a.d}, {a.dtype}, causal"
    )
    lines = [
        head,
        "",
        "| L | batch | method | ms | TFLOP/s | tokens/s | extra MiB | ratio vs SDPA | β≠1 |",
    ]
    lines.append("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(lines), flush=True)
    for L in a.L:
        q, k, v = make_inputs(a, L)
        B = q.shape[0]
        flops = 4.0 * B * a.heads * L * L * a.d / 2
        base = None
        for method in a.methods:
            fn = runner(method, q, k, v)
            with torch.no_grad():
                fn()  # compile and autotune outside the timing
                ms = float(do_bench(fn))
                torch.cuda.synchronize()
                base_mem = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
                fn()
                torch.cuda.synchronize()
                extra = (torch.cuda.max_memory_allocated() - base_mem) / 2**20
            base = ms if method == "sdpa" else base
            ratio = f"{base / ms:.2f}" if base is not None else ""
            frac = ""
            if method == "adaptive":
                st = streaming_attention(q, k, v, "adaptive", causal=True, return_stats=True)
                frac = f"{float((st.beta != 1).float().mean()):.2f}"
            tps = B * L / ms * 1e3
            row = (
                f"| {L} | {B} | {method} | {ms:.3f} | {flops / ms / 1e9:.1f} | {tps:.3g}"
                f" | {extra:.1f} | {ratio} | {frac} |"
            )
            lines.append(row)
            print(row, flush=True)
        del q, k, v
        torch.cuda.empty_cache()
    tiles = ["", "Tiles the autotuner chose (BLOCK_M, BLOCK_N, warps, stages) per tuning key:", ""]
    for tuner in triton_attention.tuned_kernels():
        for key, cfg in tuner.cache.items():
            kw = cfg.kwargs
            got = (kw.get("BLOCK_M"), kw.get("BLOCK_N"), cfg.num_warps, cfg.num_stages)
            tiles.append(f"- {key}: {got}")
    print("\n".join(tiles), flush=True)
    lines += tiles
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("\n".join(lines) + "\n")
    print(f"# table written to {a.out}")


if __name__ == "__main__":
    main()
