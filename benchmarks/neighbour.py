"""A command's slowdown beside a CPU-bound neighbour: alone, then beside one, its ratio.

    python benchmarks/neighbour.py [--repeats 3] [--neighbours 1] [--env K=V ...] -- COMMAND ...

Runs COMMAND alone, then with ``--neighbours`` busy-loop processes (each one pure-Python
``while True`` loop: one core's worth of work, as a test run or a compile beside it would be),
alternating the two conditions ``--repeats`` times, and prints the median wall time of each and
their ratio. On a machine of C cores a command that uses them all should take at most
C / (C − neighbours) as long beside the neighbours (its share of the cores); OpenMP threads that
spin instead of sleeping make it a multiple of that (issue 45: 2.3–3.8× for paper B's training
on 2 cores with one neighbour). ``--env`` adds variables to COMMAND's environment, e.g.
``--env OMP_WAIT_POLICY=ACTIVE`` to measure the spinning the ``attnlimits`` command turns off.
Each neighbour is ended (by its own process id) after each timed run.

Example, paper B's training at small size (10 seeds, 100 steps), spinning vs sleeping threads::

    T="from attnlimits.experiments.softmax_not_enough.config import ModelConfig, TrainConfig;"
    T="$T from attnlimits.experiments.softmax_not_enough.train import train;"
    T="$T train(ModelConfig(), TrainConfig(steps=100), list(range(10)))"
    python benchmarks/neighbour.py --env OMP_WAIT_POLICY=ACTIVE -- python -c "$T"
    python benchmarks/neighbour.py --env OMP_WAIT_POLICY=PASSIVE -- python -c "$T"
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

BUSY = "while True:\n    pass\n"


@contextmanager
def beside(neighbours: int) -> Iterator[None]:
    """``neighbours`` busy-loop processes running for the ``with`` block, ended after it."""
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(neighbours)]
    try:
        time.sleep(0.2 if busy else 0.0)  # the neighbours are running before the block starts
        yield
    finally:
        for p in busy:
            p.kill()
            p.wait()


def timed(command: list[str], env: dict[str, str], neighbours: int) -> float:
    """Wall seconds of one run of ``command`` beside ``neighbours`` busy loops."""
    with beside(neighbours):
        start = time.perf_counter()
        done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL)
        took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"error: {' '.join(command)} exited {done.returncode}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--neighbours", type=int, default=1)
    ap.add_argument("--env", nargs="*", default=[], metavar="K=V")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        raise SystemExit("error: give a command after --")
    env = dict(os.environ) | dict(kv.split("=", 1) for kv in a.env)
    alone, beside = [], []
    print(f"# {os.cpu_count()} cores, {a.neighbours} neighbour(s), load before "
          f"{os.getloadavg()[0]:.2f}; {' '.join(a.env) or 'environment as is'}")  # fmt: skip
    for r in range(a.repeats):  # alternate, so slow drift in the machine's load hits both
        order = [(alone, 0), (beside, a.neighbours)]
        for out, n in order if r % 2 == 0 else order[::-1]:
            out.append(timed(command, env, n))
            print(f"  {'alone' if n == 0 else 'beside':6} {out[-1]:8.2f} s", flush=True)
    t0, t1 = statistics.median(alone), statistics.median(beside)
    cores = os.cpu_count() or 1
    share = cores / max(cores - a.neighbours, 1)
    print(
        f"alone {t0:.2f} s, beside {t1:.2f} s (medians of {a.repeats}): slowdown "
        f"{t1 / t0:.2f}× (its share of the cores: {share:.2f}×); "
        f"load after {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
