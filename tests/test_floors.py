"""benchmarks/floors.py: its table's columns, positive ratios, and docs/benchmarks.md's floors
block generated from the committed table (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "floors.py"
CSV = ROOT / "docs" / "data" / "benchmarks" / "floors.csv"
WORKLOADS = {"paper-b", "compare", "limitations", "backward", "scan"}


def _floors():
    sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("floors", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # 40-170 s on 2 cores (JAX's compile of one size among them)
def test_quick_run_writes_every_workload_with_a_positive_ratio(tmp_path):
    out = tmp_path / "floors.csv"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--out", str(out)],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    df = pd.read_csv(out)
    floors = _floors()
    assert list(df.columns) == floors.COLUMNS
    assert set(df["name"]) == WORKLOADS
    for col in ("time_s", "floor_s", "ratio"):
        assert (df[col] > 0).all() and df[col].notna().all(), col
    assert ((df["ratio"] - df["time_s"] / df["floor_s"]).abs() < 1e-9).all()
    assert set(df["kind"]) <= {"AVX2", "AVX-512", "x86_64", "aarch64"}
    assert df["quick"].all() and df["load_end"].notna().all()
    # --only replaces its workload's rows and keeps the others
    again = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--only", "scan", "--out", str(out)],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    df2 = pd.read_csv(out)
    assert set(df2["name"]) == WORKLOADS and len(df2) == len(df)
    kept = df2[df2["name"] != "scan"].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, df[df["name"] != "scan"].reset_index(drop=True))


def test_the_doc_block_is_generated_from_the_committed_table():
    floors = _floors()
    from attnlimits.experiments.report import fill

    text = (ROOT / "docs" / "benchmarks.md").read_text()
    new = fill(text, {"floors": floors.render(pd.read_csv(CSV))})
    assert new == text, "stale: python benchmarks/floors.py --doc"


def test_the_block_says_what_the_table_says():
    """Known answers: a changed ratio, a quick run and the machine line show up."""
    floors = _floors()
    df = pd.read_csv(CSV)
    df.loc[0, ["time_s", "floor_s", "ratio"]] = [3.0, 2.0, 1.5]
    df["quick"] = True
    df["load_start"], df["kind"] = 1.25, "AVX2"
    out = floors.render(df)
    first = df.iloc[0]
    assert f"| {first.workload} | {first.stage} | 3 | 2 | 1.50 |" in out
    assert "**quick shapes**" in out and "AVX2" in out and "load average 1.25" in out


def test_check_reports_a_stale_block(tmp_path):
    floors = _floors()
    doc = tmp_path / "benchmarks.md"
    doc.write_text("x\n<!-- generated: floors -->\nold\n<!-- /generated: floors -->\n")
    assert floors.write_doc(CSV, doc, check=True) == 1
    assert floors.write_doc(CSV, doc, check=False) == 0
    assert floors.write_doc(CSV, doc, check=True) == 0
    (tmp_path / "none.md").write_text("no markers")
    with pytest.raises(ValueError, match="no <!-- generated: floors -->"):
        floors.write_doc(CSV, tmp_path / "none.md", check=True)


def test_a_loaded_run_joins_the_table_beside_the_unloaded_rows(tmp_path):
    """Known answers for --neighbours: a loaded run replaces only the loaded rows of its
    workload, an unloaded one only the unloaded rows; a table without the column reads as
    unloaded; the block names the neighbours in the machine line and the stage."""
    floors = _floors()
    committed = pd.read_csv(CSV)
    committed = committed[committed["neighbours"] == 0]  # the unloaded rows
    old = tmp_path / "old.csv"
    committed.drop(columns="neighbours").to_csv(old, index=False)
    paper_b = committed[committed["name"] == "paper-b"].copy()
    loaded = paper_b.assign(neighbours=1, time_s=9.0, floor_s=3.0, ratio=3.0, load_start=2.5)
    once = floors.merged(loaded, old)
    assert list(once.columns) == floors.COLUMNS
    assert len(once) == len(committed) + 1
    pb = once[once["name"] == "paper-b"]
    assert list(pb["neighbours"]) == [0, 1] and list(pb["ratio"])[1] == 3.0
    once.to_csv(old, index=False)
    twice = floors.merged(loaded.assign(ratio=4.0), old)  # the loaded row replaced, not added
    assert len(twice) == len(once)
    assert list(twice.loc[twice["name"] == "paper-b", "ratio"])[1] == 4.0
    idle = floors.merged(paper_b.assign(ratio=0.25), old)  # the unloaded row replaced
    assert list(idle.loc[idle["name"] == "paper-b", "ratio"]) == [0.25, 3.0]
    block = floors.render(once)
    assert "2.50 at the start and 1.94 at the end — **beside 1 busy neighbour(s)**" in block
    assert "per step, beside 1 busy neighbour(s) | 9 | 3 | 3.00 |" in block
    assert block.count("busy neighbour(s)") == 2  # the unloaded rows say nothing of one


def test_neighbours_must_not_be_negative():
    done = subprocess.run([sys.executable, str(SCRIPT), "--neighbours", "-1"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and "--neighbours must be 0 or more" in done.stderr
