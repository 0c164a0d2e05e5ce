"""The results folder: atomic files, resumable parts, metadata."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from attnlimits.experiments.store import ResultStore, atomic_write_text, params_hash


def test_atomic_write_leaves_old_file_when_interrupted(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "a.txt"
    atomic_write_text(target, "old")

    def boom(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]  # no temporary left behind


def test_parts_resume_without_recomputing(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    calls: list[int] = []

    def compute() -> pd.DataFrame:
        calls.append(1)
        return pd.DataFrame({"x": [1, 2]})

    params = {"L": 32, "N": 5}
    first = store.part("alg1", params, "layer0", compute)
    again = ResultStore(tmp_path).part("alg1", params, "layer0", compute)
    pd.testing.assert_frame_equal(first, again)
    assert len(calls) == 1
    ResultStore(tmp_path).part("alg1", {"L": 64, "N": 5}, "layer0", compute)
    assert len(calls) == 2  # other parameters never reuse stale parts


def test_meta_merges_and_records_versions(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.update_meta(params={"a": 1}, wall_time_s={"alg1": 1.0})
    with store.timed("alg2"):
        pass
    with ResultStore(tmp_path).timed("alg2"):  # a resumed invocation adds to the total
        pass
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["params"] == {"a": 1}
    assert set(meta["wall_time_s"]) == {"alg1", "alg2"}
    assert meta["wall_time_total_s"]["alg2"] >= meta["wall_time_s"]["alg2"]
    assert "torch" in meta["versions"]


def test_tables_round_trip(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    df = pd.DataFrame({"layer": [0, 1], "d": [0.5, 1.5]})
    store.write_table(df, "alg1")
    pd.testing.assert_frame_equal(store.read_table("alg1"), df)
    assert (tmp_path / "tables" / "alg1.csv").exists()


def test_unwritable_folder_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ValueError, match="not writable"):
        ResultStore(blocker / "sub")


def test_params_hash_is_order_independent() -> None:
    assert params_hash({"a": 1, "b": 2}) == params_hash({"b": 2, "a": 1})
    assert params_hash({"a": 1}) != params_hash({"a": 2})


def test_a_corrupt_run_json_is_named(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text('{"experiment": "scan",\n')
    with pytest.raises(ValueError, match=rf"^{tmp_path}/run\.json is not valid JSON \(.*line 2"):
        ResultStore(tmp_path)
    (tmp_path / "run.json").write_bytes(b"\xff\xfe")
    with pytest.raises(ValueError, match=rf"^{tmp_path}/run\.json cannot be read"):
        ResultStore(tmp_path)


def test_every_file_the_store_writes_is_listed_before_it_is_written(tmp_path: Path) -> None:
    """The manifest is what --fresh and the clean-up may delete: it must list every file."""
    store = ResultStore(tmp_path)
    with store.lock():
        store.update_meta(params={"a": 1})
        store.write_table(pd.DataFrame({"x": [1]}), "t")
        store.save_part("s", {}, "k", pd.DataFrame({"x": [1]}))
        atomic_write_text(tmp_path / "report.md", "# r")  # a writer outside the store
    atomic_write_text(tmp_path / "elsewhere.md", "not held: not listed")
    listed = (tmp_path / ".attnlimits-files").read_text().splitlines()
    part = f"parts/s-{params_hash({})}/k.parquet"
    assert sorted(listed) == sorted(
        ["run.json", "tables/t.parquet", "tables/t.csv", part, "report.md"]
    )


@pytest.mark.parametrize("writer", ["part", "run.json", "table"])
def test_a_full_disk_names_the_file_and_says_so(tmp_path: Path, monkeypatch, writer) -> None:
    """``[Errno 28] No space left on device`` alone names no file: every write of a result
    names its path and says "disk full" in words (the errno kept for callers)."""
    import errno

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")  # no filename, as write(2) gives

    store = ResultStore(tmp_path)
    monkeypatch.setattr(pd.DataFrame, "to_parquet", full)
    monkeypatch.setattr(pq, "write_table", full)  # a part's writer (experiments/_parts.py)
    monkeypatch.setattr(os, "fsync", full)
    df = pd.DataFrame({"a": [1]})
    write, path = {
        "part": (lambda: store.save_part("s", {}, "k", df), store.parts_dir("s", {}) / "k.parquet"),
        "run.json": (lambda: store.update_meta(x=1), tmp_path / "run.json"),
        "table": (lambda: store.write_table(df, "t"), tmp_path / "tables" / "t.parquet"),
    }[writer]
    with pytest.raises(OSError) as err:
        write()
    assert str(err.value) == f"cannot write {path}: disk full (no space left on device)"
    assert err.value.errno == errno.ENOSPC


def test_other_write_errors_name_the_file_too(tmp_path: Path, monkeypatch) -> None:
    import errno

    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "fsync", denied)
    with pytest.raises(PermissionError, match=f"^cannot write {tmp_path / 'a.txt'}: Permission"):
        atomic_write_text(tmp_path / "a.txt", "x")
    assert list(tmp_path.iterdir()) == []  # its temporary is gone


# ---- a resume reuses a part only if it is one of this stage and these settings -------------------
# (issue 43, class 7: a part of another table copied over a heads-* part was concatenated as is)

PARAMS = {"L": 32, "N": 5}


def _saved(root: Path, stage: str = "heads", params: dict = PARAMS) -> Path:
    """Save one part of ``stage`` under ``params``; return its file."""
    store = ResultStore(root)
    store.save_part(stage, params, "w0-l0", pd.DataFrame({"head": [0, 1], "entropy": [0.5, 0.7]}))
    return store.parts_dir(stage, params) / "w0-l0.parquet"


def _another_table(root: Path, part: Path) -> None:
    other = ResultStore(root / "other")
    other.save_part("windows", PARAMS, "w0-l0", pd.DataFrame({"start": range(5), "x": 1.0}))
    part.write_bytes((other.parts_dir("windows", PARAMS) / "w0-l0.parquet").read_bytes())


def _other_settings(root: Path, part: Path) -> None:
    part.write_bytes(_saved(root / "other", params={"L": 64, "N": 5}).read_bytes())


def _wrong_dtype_by_pandas(root: Path, part: Path) -> None:
    df = pd.read_parquet(part)
    df.astype({"head": "float64"}).to_parquet(part, index=False)  # the columns, no record


def _wrong_dtype_keeping_the_record(root: Path, part: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(part)
    fields = [pa.field("head", pa.float64()), table.schema.field("entropy")]
    cast = table.cast(pa.schema(fields, metadata=table.schema.metadata))
    pq.write_table(cast, part)


def _not_parquet(root: Path, part: Path) -> None:
    part.write_bytes(b"PAR1 not really")


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (_another_table, "it holds the 'windows' table, not 'heads'"),
        (_other_settings, "it was computed with other settings"),
        (_wrong_dtype_by_pandas, "it carries no record of the run that wrote it"),
        (_wrong_dtype_keeping_the_record, "column 'head' is double, written as int64"),
        (_not_parquet, "it is not a readable Parquet file"),
    ],
)
def test_a_part_not_of_this_stage_and_settings_is_refused_by_name(tmp_path, damage, why):
    part = _saved(tmp_path)
    damage(tmp_path, part)
    store = ResultStore(tmp_path)
    for ask in (store.has_part, store.load_part):
        with pytest.raises(ValueError) as err:
            ask("heads", PARAMS, "w0-l0")
        message = str(err.value)
        assert message.startswith(f"part {part} cannot be reused: ") and why in message
        assert "\n" not in message
    with pytest.raises(ValueError, match="cannot be reused"):
        store.part("heads", PARAMS, "w0-l0", lambda: pytest.fail("computed over a bad part"))


def test_a_saved_part_round_trips_with_its_record(tmp_path):
    df = pd.DataFrame({"a": [1, 2], "b": ["x", None], "c": pd.Categorical(["p", "q"])})
    store = ResultStore(tmp_path)
    store.save_part("s", PARAMS, "k", df)
    assert store.has_part("s", PARAMS, "k")
    pd.testing.assert_frame_equal(store.load_part("s", PARAMS, "k"), df)
    empty = store.part("e", PARAMS, "k", pd.DataFrame)  # an empty part, as softmax-not-enough's
    assert store.has_part("e", PARAMS, "k") and empty.empty
