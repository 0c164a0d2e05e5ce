"""docs/benchmarks.md's GPU block is what benchmarks/gpu/doc.py renders from the committed kit
output (docs/data/gpu/), so every GPU figure in the docs comes from a file in the repository."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from attnlimits.experiments.report import fill

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "docs" / "data" / "gpu" / "h100-2026-11-26"


def _doc_module():
    spec = importlib.util.spec_from_file_location("gpu_doc", ROOT / "benchmarks/gpu/doc.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_block_is_generated_from_the_committed_output(monkeypatch):
    doc = _doc_module()
    monkeypatch.chdir(ROOT)  # the block names the folder relative to the repository
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    assert fill(text, doc.blocks(RUN.relative_to(ROOT))) == text, (
        "stale: python benchmarks/gpu/doc.py docs/data/gpu/h100-2026-11-26"
    )


def test_gpu_block_reads_what_the_files_say(tmp_path):
    """Known answers: a changed ratio, a failed smoke and a passing kernel run show up."""
    doc = _doc_module()
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    bench = run / "bench_bf16_d128.md"
    bench.write_text(bench.read_text().replace("| 0.81 |  |", "| 0.99 |  |", 1))
    (run / "smoke.md").write_text(
        "| command | rc | s |\n|---|---:|---:|\n| scan | 0 | 5 |\n| compare | 2 | 7 |\n"
    )
    (run / "smoke_compare.log").write_text("loading\nerror: boom here\n")
    xml = run / "kernels.xml"
    xml.write_text(
        '<testsuites><testsuite><testcase name="test_cuda_a[x]"/>'
        '<testcase name="test_cuda_b[y]"><skipped/></testcase></testsuite></testsuites>'
    )
    out = doc.render(run)
    assert "| 65,536 | 1 | 28.230 | 623.2 | 0.99 |" in out
    assert "| `compare` | 2 | 7 | `error: boom here` |" in out
    assert "| `scan` | 0 | 5 | ran |" in out
    assert "1 of 1 passed, 0 failed, 0 errors, 1 skipped." in out
    assert "The failures" not in out


def test_fill_refuses_a_doc_without_markers():
    with pytest.raises(ValueError, match="no <!-- generated: gpu -->"):
        fill("no block here", _doc_module().blocks(RUN))


def _session(tmp_path: Path, *stages: str, rc: int = 0) -> tuple[list[str], int]:
    """Run session.sh's ``stages`` with a stand-in Python that records each call and exits
    ``rc``: the commands the GPU machine would run, without running them."""
    calls = tmp_path / "calls.txt"
    stub = tmp_path / "python"
    stub.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexit {rc}\n')
    stub.chmod(0o755)
    env = {
        "PATH": os.environ["PATH"],
        "PYTHON": str(stub),
        "STAGE": str(tmp_path / "stage"),
        "RES": str(tmp_path / "res"),
    }
    argv = ["bash", "benchmarks/gpu/session.sh", *stages]
    res = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    return calls.read_text().splitlines() if calls.exists() else [], res.returncode


def test_recheck_repeats_the_kernel_tests_and_limitations_on_cuda(tmp_path):
    """Issue 54: one stage, one call, repeats what the first H100 session left open: the CUDA
    kernel tests and ``reproduce limitations --quick --device cuda``, its traceback kept."""
    calls, rc = _session(tmp_path, "recheck")
    assert rc == 0 and len(calls) == 2, calls
    assert calls[0].startswith("-m pytest") and "tests/test_kernels_triton.py" in calls[0]
    assert "-k cuda or hopper" in calls[0] and "--junitxml" in calls[0]
    assert calls[1].startswith("-m attnlimits.cli --traceback reproduce limitations --quick")
    assert "--device cuda" in calls[1]
    smoke = (tmp_path / "res" / "smoke.md").read_text()
    assert "| limitations | 0 |" in smoke


def test_recheck_runs_both_halves_and_fails_when_either_does(tmp_path):
    calls, rc = _session(tmp_path, "recheck", rc=1)
    assert len(calls) == 2 and rc == 1  # the limitations run despite the failed kernel tests
    log = (tmp_path / "res" / "session.log").read_text()
    assert "== recheck: rc 1" in log
