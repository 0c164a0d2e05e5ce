"""Where a workload of ``benchmarks/floors.py`` spends its time: one stage, its operations.

    python benchmarks/profile_floors.py STAGE [--length L] [--tiny] [--top 12]

STAGE is one of ``topk``, ``adaptive``, ``softcap`` (a ``compare`` forward with that
normaliser, against the same forward through SDPA), ``e-exact``, ``delta``, ``alg5`` (paper A's
stages on layer 5, x = values, against their arithmetic floors as ``_floors_a`` counts them)
or ``scan`` (one window of ``scan`` against one SDPA forward per length). Prints the stage's
time beside its floor in the same run (best of ``--repeats``, interleaved for the forwards),
then ``torch.profiler``'s table of the operations by their own (self) CPU time and their
share of the stage's total (``--by python``: ``cProfile``'s functions, which shows the numba
kernels of paper A's stages; their default). ``--length`` sets L (compare and scan: the longest
length; paper A: the window); ``--tiny`` runs compare and scan on the 2-layer random Llama
with SmolLM2's attention shapes (``_floors_common.tiny_causal_lm``) instead of SmolLM2-135M.
Ratios at a smaller L than the floors table's are comparable only where the cause scales
alike: say so.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the _floors_* helpers

COMPARE = ("topk", "adaptive", "softcap")
PAPER_A = {"e-exact": "E exact", "delta": "δ", "alg5": "Alg. 5"}


def _lm(tiny: bool, L: int) -> tuple[Any, Any]:
    from _floors_common import tiny_causal_lm

    if tiny:
        return tiny_causal_lm(L, "sdpa")
    from attnlimits.capture import load_model
    from attnlimits.corpus import load_text, token_windows

    loaded = load_model("smollm2-135m")
    loaded.model.set_attn_implementation("sdpa")
    return loaded.model, token_windows(loaded.tokenizer, load_text(), L, 1)


def _compare(stage: str, L: int, tiny: bool) -> tuple[Callable[[], Any], Callable[[], Any]]:
    from _floors_lm import _sdpa_losses
    from attnlimits.experiments.compare import Config
    from attnlimits.experiments.compare.forward import run_forward

    cfg = Config()
    lengths = tuple(n for n in cfg.lengths if n <= L)
    model, ids = _lm(tiny, L)
    spec = next(s for s in cfg.specs(L) if s.split(":")[0] == stage)
    name, params = cfg.specs(L)[spec]

    def ours() -> None:
        run_forward(model, ids, name, params, lengths, cfg.rows, block_size=cfg.block_size)

    return ours, lambda: _sdpa_losses(model, ids)


def _scan(L: int, tiny: bool) -> tuple[Callable[[], Any], Callable[[], Any]]:
    import importlib

    import torch

    from attnlimits.capture import capture_qkv
    from attnlimits.experiments.scan import Config

    compute = importlib.import_module("attnlimits.experiments.scan.compute")
    cfg = Config()
    lengths = tuple(n for n in cfg.lengths if n <= L)
    model, ids = _lm(tiny, L)

    def ours() -> None:
        capture_qkv(model, ids, on_layer=lambda q: compute._layer_parts(q, lengths, cfg, True))

    def floor() -> None:
        model.set_attn_implementation("sdpa")
        with torch.no_grad():
            for n in lengths:
                model.base_model(ids[:, :n])

    return ours, floor


def _paper_a(stage: str, L: int) -> tuple[Callable[[], Any], float]:
    """(the stage on layer 5 with x = values, its arithmetic floor in seconds)."""
    from _floors_a import _alg5_counts, _counts
    from _floors_common import throughputs
    from attnlimits.capture import capture, load_model
    from attnlimits.corpus import load_text, token_windows
    from attnlimits.experiments import _allocator
    from attnlimits.experiments.limitations import Config
    from attnlimits.experiments.limitations.compute import per_key_vectors
    from profile_limitations import sensitivity_part, stage_parts

    _allocator.tune()
    loaded = load_model("smollm2-135m")
    ids = token_windows(loaded.tokenizer, load_text(), L, 1)
    caps: dict[int, Any] = {}
    capture(loaded.model, ids, on_layer=lambda c: caps.__setitem__(c.layer, c), layers=[5])
    cap, cfg, rate = caps[5], Config.preset(), throughputs()
    if stage == "alg5":
        fn, c = sensitivity_part(cap, cfg), _alg5_counts(cap, cfg)
    else:
        counts = _counts(cap, cfg, "values", per_key_vectors(cap, "values"))
        parts = dict(zip(counts, stage_parts(cap, cfg, "values", L).values(), strict=True))
        fn, c = parts[PAPER_A[stage]], counts[PAPER_A[stage]]
    return fn, c[0] / rate["matmul"] + c[1] / rate["elementwise"] + c[2] / rate["sort"]


def profile_table(fn: Callable[[], Any], top: int) -> str:
    """``fn``'s operations by self CPU time: name, calls, ms, share of the total."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    events.sort(key=lambda e: -e.self_cpu_time_total)
    lines = ["| operation | calls | self ms | share |", "|---|---:|---:|---:|"]
    for e in events[:top]:
        ms, share = e.self_cpu_time_total / 1e3, e.self_cpu_time_total / total
        lines.append(f"| {e.key} | {e.count} | {ms:,.1f} | {share:.0%} |")
    return "\n".join(lines) + f"\n\ntotal self CPU time {total / 1e6:.2f} s (all threads' ops)"


def cprofile_table(fn: Callable[[], Any], top: int) -> str:
    """``fn``'s Python functions by their own time (``cProfile``'s tottime): a numba kernel's
    time lands in the Python function that calls it, which ``torch.profiler`` does not see."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.runcall(fn)
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in stats.values())
    lines = ["| function | calls | own ms | share |", "|---|---:|---:|---:|"]
    for (path, line, name), v in sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]:
        where = name if path == "~" else f"{Path(path).name}:{line} {name}"
        lines.append(f"| {where} | {v[1]} | {v[2] * 1e3:,.1f} | {v[2] / total:.0%} |")
    return "\n".join(lines) + f"\n\ntotal {total:.2f} s (wall, one thread's view)"


def main() -> None:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads, as floors.py
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stage", choices=[*COMPARE, *PAPER_A, "scan"])
    ap.add_argument("--length", type=int, default=None, help="L (default: 2048, paper A 1024)")
    ap.add_argument("--tiny", action="store_true", help="compare/scan on the 2-layer model")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (1: the streamed kernels' block threads, which "
        "torch.profiler does not follow, stay off)",
    )
    ap.add_argument("--top", type=int, default=12, help="operations listed")
    ap.add_argument(
        "--by",
        choices=["torch", "python"],
        default=None,
        help="torch.profiler's ops or cProfile's functions (default: python for "
        "paper A, whose numba kernels torch does not see; torch otherwise)",
    )
    a = ap.parse_args()
    import torch

    from _floors_common import best, interleaved

    if a.threads:
        torch.set_num_threads(a.threads)

    L = a.length or (1024 if a.stage in PAPER_A else 2048)
    if a.stage in PAPER_A:
        fn, f = _paper_a(a.stage, L)
        t = best(fn, a.repeats)
        what = "arithmetic floor"
    else:
        fn, floor = _scan(L, a.tiny) if a.stage == "scan" else _compare(a.stage, L, a.tiny)
        t, f = interleaved(fn, floor, a.repeats)
        what = "SDPA floor"
    print(f"{a.stage} at L = {L}: {t:.4f} s, {what} {f:.4f} s, ratio {t / f:.2f}\n")
    by = a.by or ("python" if a.stage in PAPER_A else "torch")
    print((cprofile_table if by == "python" else profile_table)(fn, a.top))


if __name__ == "__main__":
    main()
