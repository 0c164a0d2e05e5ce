"""Fault test: a reproduction killed (SIGKILL) at random moments resumes to the same tables.

An uninterrupted run on a tiny local model gives the reference; then, for several seeds of the
kill time, a run is killed part-way, resumed with the same command, and every table is compared
cell by cell with the reference (they must be identical: the same computation on the same
machine and thread count). No temporary file may survive the resumed run.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from attnlimits.experiments.store import TMP_SUFFIX
from tiny_models import tiny_model_dir

pytestmark = pytest.mark.slow


def _command(model: Path, book: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "attnlimits.cli", "reproduce", "limitations", "--model", str(model),
        "--text", str(book), "--quick", "--windows", "2", "--out", str(out),
    ]  # fmt: skip


def _run(cmd: list[str]) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    start = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    return time.perf_counter() - start


def _tables(out: Path) -> dict[str, pd.DataFrame]:
    return {p.stem: pd.read_parquet(p) for p in sorted((out / "tables").glob("*.parquet"))}


def test_killed_runs_resume_to_identical_tables(tmp_path, book_path):
    model = tiny_model_dir(tmp_path, "llama", book_path.read_text(encoding="utf-8")[:200_000])
    reference = tmp_path / "reference"
    full = _run(_command(model, book_path, reference))
    want = _tables(reference)
    assert want, "the reference run wrote no tables"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for seed in range(3):
        out = tmp_path / f"killed{seed}"
        delay = random.Random(seed).uniform(0.3, 0.95) * full
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        proc = subprocess.Popen(_command(model, book_path, out), env=env, **quiet)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        _run(_command(model, book_path, out))
        got = _tables(out)
        assert set(got) == set(want), seed
        for name, df in want.items():
            where = f"{name} (seed {seed})"
            pd.testing.assert_frame_equal(got[name], df, check_exact=True, obj=where)
        assert not list(out.rglob(f"*{TMP_SUFFIX}")), "a temporary file survived the resume"
