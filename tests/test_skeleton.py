"""The experiment skeleton's runner: lock, settings check, resume, clean-up, redraw, file modes."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import stat
import sys
from pathlib import Path

import pandas as pd
import pytest

from attnlimits.experiments import skeleton
from attnlimits.experiments.store import TMP_SUFFIX, FolderBusyError, ResultStore
from toy_experiment import CALLS, TOY, ToyConfig


@pytest.fixture(autouse=True)
def _register_toy(monkeypatch):
    monkeypatch.setitem(skeleton.EXPERIMENTS, "toy", "toy_experiment")
    CALLS.clear()


def test_run_writes_everything_and_resumes(tmp_path):
    out = tmp_path / "run"
    report = skeleton.run(TOY, ToyConfig(), out, progress=False)
    assert report == out / "report.md" and "## Claims" in report.read_text()
    for rel in ("tables/values.parquet", "tables/values.csv", "tables/claims.parquet"):
        assert (out / rel).is_file(), rel
    assert (out / "figures/values.png").is_file() and (out / "figures/values.svg").is_file()
    meta = json.loads((out / "run.json").read_text())
    assert meta["experiment"] == "toy" and meta["params"] == {"steps": 3, "fail_at": -1}
    assert meta["machine"]["torch_threads"] >= 1 and "torch" in meta["versions"]
    assert meta["machine"]["cpu_capability"] and "mkl_instructions" in meta["machine"]
    assert meta["machine"]["allocator"].startswith(("mmap and trim thresholds", "default"))
    assert CALLS == [0, 1, 2]
    skeleton.run(TOY, ToyConfig(), out, progress=False)
    assert CALLS == [0, 1, 2], "a rerun with the same settings recomputed saved parts"


def test_run_json_records_peak_gpu_memory_only_where_cuda_was_used(tmp_path, monkeypatch):
    import torch

    skeleton.run(TOY, ToyConfig(), tmp_path / "cpu", progress=False)
    if not torch.cuda.is_initialized():
        assert "cuda_peak_allocated_bytes" not in json.loads(
            (tmp_path / "cpu/run.json").read_text()
        )
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda *a, **k: 12345)
    skeleton.run(TOY, ToyConfig(), tmp_path / "gpu", progress=False)
    meta = json.loads((tmp_path / "gpu/run.json").read_text())
    assert meta["cuda_peak_allocated_bytes"] == 12345


def test_other_settings_are_refused_by_name_then_fresh_starts_over(tmp_path):
    out = tmp_path / "run"
    skeleton.run(TOY, ToyConfig(), out, progress=False)
    with pytest.raises(ValueError, match=r"other settings \(steps\).*--fresh"):
        skeleton.run(TOY, ToyConfig(steps=4), out, progress=False)
    CALLS.clear()
    skeleton.run(TOY, ToyConfig(steps=4), out, progress=False, fresh=True)
    assert CALLS == [0, 1, 2, 3]
    assert len(pd.read_parquet(out / "tables/values.parquet")) == 4


def _hold(root: str, ready, release) -> None:
    with ResultStore(Path(root)).lock():
        ready.set()
        release.wait(30)


def test_a_second_process_gets_a_clear_busy_error(tmp_path):
    ctx = mp.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(tmp_path), ready, release))
    holder.start()
    try:
        assert ready.wait(60)
        with pytest.raises(FolderBusyError, match=rf"in use by pid {holder.pid} "):
            skeleton.run(TOY, ToyConfig(), tmp_path, progress=False)
    finally:
        release.set()
        holder.join(30)
    skeleton.run(TOY, ToyConfig(), tmp_path, progress=False)  # free again


def test_failure_before_any_part_removes_the_folder_it_created(tmp_path):
    out = tmp_path / "new"
    with pytest.raises(RuntimeError, match="boom"):
        skeleton.run(TOY, ToyConfig(fail_at=0), out, progress=False)
    assert not out.exists()


def test_failure_after_a_part_keeps_it_for_resume(tmp_path):
    out = tmp_path / "new"
    with pytest.raises(RuntimeError, match="boom"):
        skeleton.run(TOY, ToyConfig(fail_at=2), out, progress=False)
    assert ResultStore(out).n_parts() == 2


def test_failure_in_an_existing_folder_keeps_the_users_files(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(RuntimeError):
        skeleton.run(TOY, ToyConfig(fail_at=0), tmp_path, progress=False)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert not (tmp_path / "run.json").exists()


def test_files_get_the_umask_mode_and_stale_temporaries_go(tmp_path):
    stale = tmp_path / "figures" / f".fig.png.abc{TMP_SUFFIX}"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"half")
    old = os.umask(0o022)
    try:
        skeleton.run(TOY, ToyConfig(), tmp_path, progress=False)
    finally:
        os.umask(old)
    assert not stale.exists()
    for rel in ("run.json", "report.md", "tables/values.parquet", "figures/values.png"):
        assert stat.S_IMODE((tmp_path / rel).stat().st_mode) == 0o644, rel
    assert not list(tmp_path.rglob(f"*{TMP_SUFFIX}"))


def test_redraw_rebuilds_the_report_from_tables(tmp_path):
    skeleton.run(TOY, ToyConfig(), tmp_path, progress=False)
    (tmp_path / "report.md").unlink()
    (tmp_path / "figures/values.png").unlink()
    assert skeleton.redraw(tmp_path) == tmp_path / "report.md"
    assert (tmp_path / "figures/values.png").is_file()
    assert "| sum |" in (tmp_path / "report.md").read_text()


def test_redraw_of_a_folder_without_a_run_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="holds no finished run"):
        skeleton.redraw(tmp_path)


def test_a_config_of_another_type_is_refused(tmp_path):
    with pytest.raises(TypeError, match="takes a ToyConfig"):
        skeleton.run(TOY, {"steps": 3}, tmp_path)


def test_unknown_experiment_name():
    with pytest.raises(ValueError, match="unknown experiment 'nope'"):
        skeleton.get("nope")


def test_the_allocator_is_tuned_once_and_can_be_left_alone(monkeypatch):
    """glibc's thresholds raised once per process; ATTNLIMITS_MALLOC=default opts out."""
    from attnlimits.experiments import _allocator

    monkeypatch.setattr(_allocator, "_STATE", {})
    monkeypatch.setenv("ATTNLIMITS_MALLOC", "default")
    assert _allocator.tune()["malloc"].startswith("default")
    assert _allocator.state().startswith("default")
    monkeypatch.setattr(_allocator, "_STATE", {})
    monkeypatch.delenv("ATTNLIMITS_MALLOC")
    first = dict(_allocator.tune())
    assert _allocator.tune() == first  # once per process
    if sys.platform.startswith("linux"):
        assert first["malloc"] == f"mmap and trim thresholds {1 << 30} bytes"


def _finished_then(tmp_path, damage) -> Path:
    skeleton.run(TOY, ToyConfig(), tmp_path / "run", progress=False)
    damage(tmp_path / "run")
    return tmp_path / "run"


def _empty_tables(out: Path) -> None:
    for p in (out / "tables").iterdir():
        p.unlink()


def _truncated_run_json(out: Path) -> None:
    (out / "run.json").write_text("{\n")


def _one_table_gone(out: Path) -> None:
    (out / "tables/values.parquet").unlink()
    pd.DataFrame({"x": [1]}).to_parquet(out / "tables/extra.parquet")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_empty_tables, "{OUT}/tables holds no tables: the run did not finish; rerun its command "
         "to resume it"),
        (_truncated_run_json, "{OUT}/run.json is not valid JSON (Expecting property name "
         "enclosed in double quotes: line 2 column 1); it was cut short or edited (attnlimits "
         "writes it whole): restore it, or use another folder"),
        (_one_table_gone, "{OUT}/tables has no values.parquet, which the report needs (it has "
         "extra): the run did not finish; rerun its command"),
    ],
    ids=["empty tables", "truncated run.json", "a table gone"],
)  # fmt: skip
def test_report_of_a_damaged_run_is_one_line_naming_the_file(tmp_path, damage, message):
    from typer.testing import CliRunner

    from attnlimits.cli import app

    out = _finished_then(tmp_path, damage)
    want = message.replace("{OUT}", str(out))
    with pytest.raises(ValueError) as err:
        skeleton.redraw(out)
    assert str(err.value) == want
    res = CliRunner().invoke(app, ["report", str(out)])
    assert res.exit_code == 2 and res.output.strip().splitlines() == [f"error: {want}"]


def test_report_of_a_sweep_or_a_foreign_run_json_names_it(tmp_path):
    (tmp_path / "tables").mkdir()
    for meta in ({"experiment": "sweep"}, {"experiment": "toy"}, [1, 2]):
        (tmp_path / "run.json").write_text(json.dumps(meta))
        with pytest.raises(ValueError, match=rf"^{tmp_path}/run\.json (is not|holds a JSON)"):
            skeleton.redraw(tmp_path)


def test_redraw_of_the_current_folder_works(tmp_path, monkeypatch):
    """``attnlimits report .`` inside a results folder (only a run refuses the current one)."""
    skeleton.run(TOY, ToyConfig(), tmp_path / "run", progress=False)
    monkeypatch.chdir(tmp_path / "run")
    assert skeleton.redraw(Path(".")) == Path("report.md")


def test_a_resume_refuses_a_part_copied_from_another_table(tmp_path):
    """Issue 43, class 7: a part of another table copied over one of this run's parts was
    concatenated into the table; now the resume stops in one line naming the part."""
    out = tmp_path / "run"
    skeleton.run(TOY, ToyConfig(), out, progress=False)
    part = next((out / "parts").glob("toy-*/s1.parquet"))
    other = ResultStore(tmp_path / "other")
    other.save_part("windows", {"steps": 3}, "s1", pd.DataFrame({"start": range(8), "x": 1.0}))
    part.write_bytes(next((tmp_path / "other" / "parts").glob("windows-*/s1.parquet")).read_bytes())
    with pytest.raises(ValueError, match=r"^part .*s1\.parquet cannot be reused: it holds the "):
        skeleton.run(TOY, ToyConfig(), out, progress=False)
    assert CALLS == [0, 1, 2] and part.is_file()  # nothing recomputed over it, nothing deleted


_TRIM_PROBE = """
import ctypes, os, sys
from attnlimits.experiments import _allocator
if sys.argv[1] == "tuned":
    _allocator.tune()
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
blocks = [libc.malloc(60 << 20) for _ in range(5)]  # 300 MB in the heap once tuned
for b in blocks:
    ctypes.memset(b, 1, 60 << 20)
before = rss()
for b in blocks[:-1]:  # the last one stays: the heap's top is in use, so only trim frees
    libc.free(b)
kept = rss()
trimmed = _allocator.trim()
print(before, kept, rss(), trimmed)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
@pytest.mark.parametrize("mode", ["tuned", "default"])
def test_trim_gives_the_heaps_freed_pages_back_only_when_tuned(mode):
    """Tuned, 240 MB freed below a live block stay resident until trim() gives them back;
    untuned, the blocks were mapped apart, freed at once, and trim() does nothing."""
    import subprocess

    env = {**os.environ, "ATTNLIMITS_MALLOC": "" if mode == "tuned" else "default"}
    out = subprocess.run([sys.executable, "-c", _TRIM_PROBE, mode], env=env,
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    before, kept, after, trimmed = out.split()
    before, kept, after = int(before), int(kept), int(after)
    freed = 240 << 20
    if mode == "tuned":
        assert trimmed == "True"
        assert kept > before - freed / 2  # freed, but kept in the heap
        assert after < kept - freed / 2  # trim gave it back
    else:
        assert trimmed == "False"
        assert kept < before - freed / 2  # mmap'd blocks went back at free
