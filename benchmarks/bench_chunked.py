"""The query-chunked attention path against the dense one it replaced, same run, same inputs.

``chunked_attention`` (``kernels/chunked.py``) runs the normalisers without an online form one
block of query rows at a time. Two speed-ups are measured here against the plain loop (the
normaliser over every key of the block, then ``@ v``), on causal attention with SmolLM2-135M's
head shape (9 query heads, 3 key/value heads, d = 64) at ``--L`` tokens:

- every normaliser: a causal block reads only the keys its last row can see;
- ``topk``: softmax over each row's k largest scores, then the weighted sum of those k value
  rows by ``embedding_bag``, no dense map.

Each variant runs ``--repeats`` times in turn (so that a change in machine load hits all alike);
the median seconds and the ratio to the dense loop are printed, and the outputs are checked to
agree (max abs difference).

Usage::

    python benchmarks/bench_chunked.py --L 4096 --normalizers topk,sparsemax --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from attnlimits.kernels.chunked import chunked_attention
from attnlimits.normalizers import get


def dense(q, k, v, name, params, chunk):  # the loop chunked_attention replaced
    B, Hq, L, _ = q.shape
    G = Hq // k.shape[1]
    kr, vr = k.repeat_interleave(G, 1), v.repeat_interleave(G, 1)
    out = torch.empty(B, Hq, L, v.shape[-1])
    for i0 in range(0, L, chunk):
        i1 = min(i0 + chunk, L)
        scores = q[:, :, i0:i1] @ kr.transpose(-1, -2) * q.shape[-1] ** -0.5
        keep = torch.arange(L)[None, :] <= torch.arange(i0, i1)[:, None]
        out[:, :, i0:i1] = get(name)(scores, mask=keep, **params) @ vr
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--L", type=int, default=4096)
    ap.add_argument("--normalizers", default="topk,sparsemax,softpick")
    ap.add_argument("--k", type=int, default=64, help="k of topk")
    ap.add_argument("--chunk", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(1, 9, args.L, 64, generator=gen) * 2
    k = torch.randn(1, 3, args.L, 64, generator=gen)
    v = torch.randn(1, 3, args.L, 64, generator=gen)
    print(f"L = {args.L}, 9 query / 3 kv heads, d = 64, causal, torch threads "
          f"{torch.get_num_threads()}")  # fmt: skip
    print("| normaliser | dense loop (s) | chunked_attention (s) | ratio | max abs diff |")
    print("|---|---|---|---|---|")
    for name in args.normalizers.split(","):
        params = {"k": args.k} if name == "topk" else {}
        times: dict[str, list[float]] = {"dense": [], "chunked": []}
        for _ in range(args.repeats):
            t = time.perf_counter()
            ref = dense(q, k, v, name, params, args.chunk)
            times["dense"].append(time.perf_counter() - t)
            t = time.perf_counter()
            got = chunked_attention(q, k, v, name, causal=True, chunk_rows=args.chunk, **params)
            times["chunked"].append(time.perf_counter() - t)
        a, b = (statistics.median(times[x]) for x in ("dense", "chunked"))
        diff = float((got - ref).abs().max())
        print(f"| {name} | {a:.2f} | {b:.2f} | {a / b:.2f}× | {diff:.1e} |")


if __name__ == "__main__":
    main()
