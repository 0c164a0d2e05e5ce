"""How long ``attnlimits view DIR --port 0`` takes from launch to the first byte it serves.

Each repeat launches the command as a user would (a new Python process running the CLI; the
``attnlimits`` script when it is on PATH, else ``python -c "from attnlimits.cli import app;
app()"``), waits for the address it prints, asks for the page and stops at its first byte.
The page is a scan's (``RUN``'s ``report.html``, or a synthetic scan's page, 4 layers × 4 heads
at 2 lengths, built once before timing: about 5 MB, plotly.js embedded, so that the server's
look at the page's links is a realistic one). Reported: the median, min and max over
``--repeats`` launches (default 5), and the part up to the printed address.

Usage::

    python benchmarks/view_start.py                          # the synthetic page
    python benchmarks/view_start.py results/scan/smollm2-135m --repeats 9
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

SRC = Path(__file__).resolve().parents[1] / "src"


def _synthetic(out: Path) -> Path:
    from attnlimits.experiments.pages import RunPage, write_page
    from attnlimits.experiments.scan.synthetic import synthetic_scan

    out.mkdir(parents=True)
    meta = {"experiment": "scan", "model": {"id": "synthetic 4 × 4"}}
    write_page(out, RunPage("Scan: synthetic", synthetic_scan(4, 4, (64, 128), rows=4), meta))
    return out


def _command(folder: Path) -> list[str]:
    script = shutil.which("attnlimits")
    if script:
        return [script, "view", str(folder), "--port", "0"]
    code = "from attnlimits.cli import app; app()"
    return [sys.executable, "-c", code, "view", str(folder), "--port", "0"]


def _launch(folder: Path, timeout: float) -> tuple[float, float]:
    """(s to the printed address, s to the page's first byte), from the launch."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC),
           os.environ.get("PYTHONPATH")]))}  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.Popen(_command(folder), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env)  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        printed = time.perf_counter() - start
        found = re.search(r"http://\S+", line)
        if not found:
            raise SystemExit(f"error: the command printed no address: {line!r}")
        url = urlsplit(found.group(0))
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
        conn.request("GET", url.path)
        resp = conn.getresponse()
        if resp.status != 200 or not resp.read(1):
            raise SystemExit(f"error: {url.path} answered {resp.status}")
        first = time.perf_counter() - start
        conn.close()
        return printed, first
    finally:
        proc.terminate()
        proc.wait(timeout=timeout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", type=Path, help="a results folder with report.html")
    parser.add_argument("--repeats", type=int, default=5, help="launches (default 5)")
    parser.add_argument("--timeout", type=float, default=120.0, help="s per launch (default 120)")
    args = parser.parse_args()
    if args.repeats < 1:
        raise SystemExit(f"error: --repeats must be ≥ 1, got {args.repeats}")
    if args.run is not None and not (args.run / "report.html").is_file():
        raise SystemExit(f"error: {args.run} holds no report.html")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.run if args.run is not None else _synthetic(Path(tmp) / "scan")
        size = (folder / "report.html").stat().st_size / 1e6
        got = [_launch(folder, args.timeout) for _ in range(args.repeats)]
    printed, first = [g[0] for g in got], [g[1] for g in got]
    print(f"page {folder / 'report.html'} ({size:.1f} MB), {args.repeats} launches")
    for name, t in (("address printed", printed), ("first byte served", first)):
        print(f"{name:<18} median {statistics.median(t):.2f} s, min {min(t):.2f} s, "
              f"max {max(t):.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
