"""One markdown row from a ``pyperf command`` result: median (min–max) wall time, peak RSS.

``session.sh``'s ``time:NAME`` stage runs a whole command RUNS times, each in a fresh process
from an empty folder, with ``pyperf command -p RUNS -n 1 -w 0 -l 1`` (pyperf: one timed value
per process, no calibration, and each process's peak RSS, ``command_max_rss``). This prints
the row the docs quote, with the GPU and date::

    python3 benchmarks/gpu/times.py time_scan.json "attnlimits scan smollm2-135m --device cuda"
"""

from __future__ import annotations

import statistics
import sys
from datetime import datetime, timezone

import pyperf


def mmss(s: float) -> str:
    return f"{s:.1f} s" if s < 60 else f"{int(s // 60)}:{s % 60:04.1f}"


def main() -> None:
    path, command = sys.argv[1], sys.argv[2]
    bench = pyperf.Benchmark.load(path)
    values = list(bench.get_values())
    rss = [r.get_metadata().get("command_max_rss", 0) for r in bench.get_runs()]
    try:
        import torch

        gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    except ImportError:
        gpu = "?"
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    print(
        f"| `{command}` | {mmss(statistics.median(values))} | {mmss(min(values))}–"
        f"{mmss(max(values))} | {len(values)} | {max(rss) / 1e9:.2f} GB | {gpu} | {date} |"
    )


if __name__ == "__main__":
    main()
