"""CLRS-Text data (paper B §4.2): the generators without TensorFlow, the split, the fixture.

The fixture ``tests/data/clrs_text_fixture.parquet`` (trace format) was made by the data step
itself::

    build_dataset({a: (4, 6) for a in A}, {a: (4, 5, 6, 8) for a in A},
                  train_samples=50, test_samples=5, validation_samples=5)

with ``A = DEFAULT_ALGORITHMS`` (default seeds), and ``clrs_text_answer_fixture.parquet`` the
same for minimum alone with ``fmt="answer"``; ``test_the_fixture_is_what_the_data_step_makes``
regenerates both where the ``clrs`` extra is installed.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pandas as pd
import pytest

from attnlimits.experiments.clrs_text import _clrs_import
from attnlimits.experiments.clrs_text.config import DEFAULT_ALGORITHMS
from attnlimits.experiments.clrs_text.data import (
    ALGORITHMS,
    PAPER_TEST_LENGTHS,
    PAPER_TEST_SEEDS,
    PAPER_TRAIN_LENGTHS,
    build_dataset,
    cached_dataset,
    check_algorithms,
    check_dataset,
    check_lengths,
    result_of,
)

FIXTURE = Path(__file__).parent / "data" / "clrs_text_fixture.parquet"
ANSWER_FIXTURE = Path(__file__).parent / "data" / "clrs_text_answer_fixture.parquet"
HAS_CLRS = all(importlib.util.find_spec(m) is not None for m in ("clrs", "jax", "chex"))
needs_clrs = pytest.mark.skipif(not HAS_CLRS, reason="the clrs extra is not installed")


def fixture() -> pd.DataFrame:
    return pd.read_parquet(FIXTURE)


def test_the_fixture_is_a_split_without_leaks_or_repeats():
    df = check_dataset(fixture(), "fixture")
    assert set(df["algorithm"]) == set(DEFAULT_ALGORITHMS)
    assert set(df["split"]) == {"train", "validation", "test"}
    assert not df["question"].duplicated().any()  # within and across the three splits
    assert (df["question"].str.endswith("\n") & df["answer"].str.endswith("\n\n")).all()
    # the trace format: the question asks for the trace and the output, the answer holds both
    assert df["question"].str.contains("initial_trace: ", regex=False).all()
    assert df["question"].str.contains("\ntrace | ", regex=False).all()
    assert df["answer"].str.contains(" | ", regex=False).all()
    # the question names its algorithm and holds `length` items
    assert all(
        q.startswith(a + ":\n") for q, a in zip(df["question"], df["algorithm"], strict=True)
    )


def test_paper_lengths_cover_the_thirty_from_four_to_sixtyfour():
    assert set(PAPER_TRAIN_LENGTHS) == set(PAPER_TEST_LENGTHS) == set(ALGORITHMS)
    assert len(ALGORITHMS) == 30
    for a in ALGORITHMS:
        assert min(PAPER_TRAIN_LENGTHS[a]) == 4 and max(PAPER_TEST_LENGTHS[a]) <= 64
    assert max(max(v) for v in PAPER_TEST_LENGTHS.values()) == 64
    # dm-clrs 2.0.3's own split, quirks kept: five algorithms train past their top test length
    past = [a for a in ALGORITHMS if max(PAPER_TRAIN_LENGTHS[a]) > max(PAPER_TEST_LENGTHS[a])]
    assert past == ["dfs", "dijkstra", "insertion_sort", "mst_prim", "topological_sort"]
    assert PAPER_TRAIN_LENGTHS["bridges"] == (4, 5) and PAPER_TEST_LENGTHS["bridges"][-1] == 7


def test_algorithm_names_are_checked_and_listed():
    assert check_algorithms(["all"]) == ALGORITHMS
    with pytest.raises(ValueError, match=r"unknown CLRS-Text algorithm\(s\) 'sortt'; known: all, "):
        check_algorithms(["minimum", "sortt"])
    with pytest.raises(ValueError, match="at least one"):
        check_algorithms([])


@pytest.mark.parametrize("bad", [[3], [65], [4.5], [True], []])
def test_lengths_the_generators_cannot_make_are_refused(bad):
    with pytest.raises(ValueError, match="from 4 to 64"):
        check_lengths(bad, "train_lengths")


@pytest.mark.parametrize(("src", "dst"), [("train", "test"), ("train", "validation"),
                                          ("validation", "test")])  # fmt: skip
def test_a_dataset_with_a_leak_is_refused(src, dst):
    df = fixture()
    leak = df[df["split"] == src].head(1).assign(split=dst)
    with pytest.raises(ValueError, match="in more than one split"):
        check_dataset(pd.concat([df, leak]), "x")
    with pytest.raises(ValueError, match="splits must be train, validation, test"):
        check_dataset(df[df["split"] != "validation"], "x")
    with pytest.raises(ValueError, match="lacks columns"):
        check_dataset(df.drop(columns="answer"), "x")


def test_without_the_extra_the_error_says_how_to_install(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "clrs" else real(n, *a)
    )
    monkeypatch.delitem(sys.modules, "clrs", raising=False)
    monkeypatch.setattr(_clrs_import, "_LOADED", None)  # as in a process that never loaded it
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'attnlimits\[clrs\]'"):
        _clrs_import.load_generators()
    with pytest.raises(ValueError, match=r"missing: dm-clrs"):
        cached_dataset({"minimum": (4,)}, {"minimum": (4,)}, train_samples=2, test_samples=2,
                       folder=tmp_path / "cache")  # fmt: skip
    assert not (tmp_path / "cache").exists()  # nothing left on disk


@needs_clrs
def test_generators_load_without_tensorflow_and_leave_no_modules(monkeypatch):
    monkeypatch.setattr(_clrs_import, "_LOADED", None)  # load it here, not earlier
    before = {m for m in sys.modules if m == "clrs" or m.startswith(("clrs.", "tensorflow"))}
    _, names = _clrs_import.load_generators()
    after = {m for m in sys.modules if m == "clrs" or m.startswith(("clrs.", "tensorflow"))}
    assert names == ALGORITHMS and after == before
    rows = _clrs_import.generate("insertion_sort", 4, 2, 0, use_hints=False)
    assert rows[0]["question"] == "insertion_sort:\nkey: [0.548 0.715 0.602 0.544]\npred:\n"
    assert rows[0]["answer"] == "[0.544 0.548 0.602 0.715]\n\n"
    rows = _clrs_import.generate("insertion_sort", 4, 2, 0)  # the trace format by default
    assert rows[0]["question"] == (
        "insertion_sort:\nkey: [0.548 0.715 0.602 0.544], initial_trace: "
        "[0.548 0.715 0.602 0.544]\ntrace | pred:\n"
    )
    assert rows[0]["answer"] == (
        "[0.548 0.715 0.602 0.544], [0.548 0.602 0.715 0.544] | [0.544 0.548 0.602 0.715]\n\n"
    )


def test_the_result_is_what_follows_the_trace():
    answers = pd.Series(["0, 0 | 3\n\n", "[3 3 2 3] | [3 3 0 3]\n\n", "2\n\n", "a | b | c"])
    assert result_of(answers).tolist() == ["3\n\n", "[3 3 0 3]\n\n", "2\n\n", "c"]


@needs_clrs
def test_the_fixture_is_what_the_data_step_makes(tmp_path):
    A = DEFAULT_ALGORITHMS
    kw = {"train_samples": 50, "test_samples": 5, "validation_samples": 5}
    made, path = cached_dataset({a: (4, 6) for a in A}, {a: (4, 5, 6, 8) for a in A}, **kw,
                                folder=tmp_path)  # fmt: skip
    pd.testing.assert_frame_equal(made, fixture())
    again, same = cached_dataset({a: (4, 6) for a in A}, {a: (4, 5, 6, 8) for a in A}, **kw,
                                 folder=tmp_path)  # fmt: skip
    assert same == path and [p.name for p in tmp_path.iterdir()] == [path.name]
    pd.testing.assert_frame_equal(again, made)
    answer, other = cached_dataset({"minimum": (4, 6)}, {"minimum": (4, 5, 6, 8)}, **kw,
                                   fmt="answer", folder=tmp_path)  # fmt: skip
    assert other != path  # the format is part of the cache's key
    pd.testing.assert_frame_equal(answer, pd.read_parquet(ANSWER_FIXTURE))
    assert not answer["answer"].str.contains(" | ", regex=False).any()


@needs_clrs
def test_deduplication_and_split_at_a_length_with_repeats():
    # bfs at length 4 repeats questions; seeds 0 and 3 share some: none may cross the split
    df = build_dataset({"bfs": (4,)}, {"bfs": (4,)}, train_samples=300, test_samples=300,
                       validation_samples=300, fmt="answer")  # fmt: skip
    train, test = df[df["split"] == "train"], df[df["split"] == "test"]
    val = df[df["split"] == "validation"]
    assert len(train) < 300 and not train["question"].duplicated().any()
    assert 0 < len(val) < 300 and not val["question"].isin(set(train["question"])).any()
    assert len(test) < 300 and not test["question"].isin(set(train["question"])).any()
    assert not test["question"].isin(set(val["question"])).any()
    check_dataset(df, "bfs at 4")  # the three splits disjoint


@needs_clrs
def test_every_test_seed_is_drawn():
    one = build_dataset({"minimum": (4,)}, {"minimum": (4,)}, train_samples=2, test_samples=3)
    five = build_dataset({"minimum": (4,)}, {"minimum": (4,)}, train_samples=2, test_samples=3,
                         test_seeds=PAPER_TEST_SEEDS)  # fmt: skip
    assert (one["split"] == "test").sum() == 3 and (five["split"] == "test").sum() == 15
