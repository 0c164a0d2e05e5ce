"""What every workload of ``benchmarks/floors.py`` shares: the machine, timing, throughputs.

A row of the floors table is one workload (or one stage of it) beside its floor, measured in
the same process: ``time_s`` and ``floor_s`` in seconds, ``ratio = time_s / floor_s``.
"""

from __future__ import annotations

import datetime
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The table's columns, in order (tests/test_floors.py pins them).
COLUMNS = [
    "name", "workload", "stage", "time_s", "floor_s", "ratio", "floor", "note",
    "kind", "cpu", "cores", "torch", "threads", "omp_wait_policy", "load_start", "load_end",
    "date", "quick", "neighbours",
]  # fmt: skip


def cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def machine(load_start: float) -> dict[str, Any]:
    """The columns every row shares but ``load_end``, read when the table is written."""
    import torch

    from attnlimits.experiments.store import machine_info

    flags = cpu_flags()
    kind = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else platform.machine()
    return {
        "kind": kind,
        "cpu": machine_info()["cpu"],
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(unset)"),
        "load_start": round(load_start, 2),
        "date": datetime.date.today().isoformat(),
    }


def best(fn: Callable[[], Any], repeats: int) -> float:
    """The fastest of ``repeats`` calls (seconds): the least disturbed by other work."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def interleaved(a: Callable[[], Any], b: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """Best times of ``a`` and ``b`` called in turn (a, b, b, a, ...): both share the load."""
    ta, tb = [], []
    for r in range(repeats):
        for fn, out in ((a, ta), (b, tb)) if r % 2 == 0 else ((b, tb), (a, ta)):
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
    return min(ta), min(tb)


def row(workload: str, stage: str, t: float, floor: float, what: str, note: str = "") -> dict:
    return {
        "workload": workload,
        "stage": stage,
        "time_s": t,
        "floor_s": floor,
        "ratio": t / floor,
        "floor": what,
        "note": note,
    }


def throughputs(repeats: int = 5) -> dict[str, float]:
    """This machine's rates, measured now: float32 matrix products (flop/s), an element-wise
    pass (elements/s of ``c = a * b + c``), sorting rows of 1,024 floats (elements/s)."""
    import torch

    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(1024, 1024, generator=g), torch.randn(1024, 1024, generator=g)
    mm = 2 * 1024**3 / best(lambda: torch.mm(a, b), repeats)
    x, y, z = (torch.randn(1 << 22, generator=g) for _ in range(3))
    ew = (1 << 22) / best(lambda: torch.addcmul(z, x, y, out=z), repeats)
    rows = torch.randn(4096, 1024, generator=g)
    srt = rows.numel() / best(lambda: torch.sort(rows, dim=-1), repeats)
    return {"matmul": mm, "elementwise": ew, "sort": srt}


def tiny_causal_lm(L: int, impl: str, vocab: int = 512) -> tuple[Any, Any]:
    """A random 2-layer Llama with SmolLM2-135M's attention shapes and one sequence of ``L``
    ids: ``bench_streaming_backward.py``'s model, in eval mode."""
    import torch

    from bench_streaming_backward import _model

    model, ids = _model(L, impl, vocab, torch.get_num_threads())
    return model.eval(), ids
