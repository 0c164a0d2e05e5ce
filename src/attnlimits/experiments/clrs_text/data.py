"""CLRS-Text data (Markeeva et al. 2024), as paper B's §4.2 uses it: generated once, cached.

The generators are dm-clrs 2.0.3's (the ``clrs`` extra, loaded without TensorFlow by
:mod:`._clrs_import`). :func:`build_dataset` makes one table of questions and answers with a
``split`` column: the training set at each algorithm's training lengths from the training seed,
a validation set at the training lengths from :data:`VALIDATION_SEED` (ours: it chooses each
arm's learning rate and when training stops), and the test set at the test lengths from the
test seeds. Small sizes repeat questions (at length 4, as few as 26 of 200 are unique for some
graph algorithms), so each split is deduplicated by question text, every validation question
that training holds is dropped, and every test question that training or validation holds: the
three splits are disjoint.

Two formats (``fmt``): ``"trace"`` (dm-clrs's ``use_hints=True``, CLRS-Text's form: the answer
is the algorithm's trace, then `` | `` and the result) and ``"answer"`` (the result only).

The defaults of CLRS-Text's own split (``generate_clrs_text.py`` of dm-clrs 2.0.3), which the
paper's benchmark is: :data:`PAPER_TRAIN_LENGTHS`, :data:`PAPER_TEST_LENGTHS` (validation
lengths up to 64), the seeds and sample counts below; as the package has them (five
algorithms, dfs, dijkstra, insertion_sort, mst_prim and topological_sort, train at lengths past
their largest validation length).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from attnlimits._paths import write_error
from attnlimits.corpus import cache_dir, check_cache
from attnlimits.experiments.store import params_hash

__all__ = [
    "ALGORITHMS",
    "COLUMNS",
    "FORMATS",
    "MAX_LENGTH",
    "MIN_LENGTH",
    "PAPER_TEST_LENGTHS",
    "PAPER_TEST_SAMPLES",
    "PAPER_TEST_SEEDS",
    "PAPER_TRAIN_LENGTHS",
    "PAPER_TRAIN_SAMPLES",
    "PAPER_TRAIN_SEEDS",
    "SPLITS",
    "VALIDATION_SEED",
    "build_dataset",
    "cached_dataset",
    "check_algorithms",
    "check_dataset",
    "check_lengths",
    "result_of",
]

#: The thirty algorithms of CLRS-30, in CLRS-Text's order (``clrs._src.specs.CLRS_30_ALGS``).
ALGORITHMS: tuple[str, ...] = (
    "articulation_points",
    "activity_selector",
    "bellman_ford",
    "bfs",
    "binary_search",
    "bridges",
    "bubble_sort",
    "dag_shortest_paths",
    "dfs",
    "dijkstra",
    "find_maximum_subarray_kadane",
    "floyd_warshall",
    "graham_scan",
    "heapsort",
    "insertion_sort",
    "jarvis_march",
    "kmp_matcher",
    "lcs_length",
    "matrix_chain_order",
    "minimum",
    "mst_kruskal",
    "mst_prim",
    "naive_string_matcher",
    "optimal_bst",
    "quickselect",
    "quicksort",
    "segments_intersect",
    "strongly_connected_components",
    "task_scheduling",
    "topological_sort",
)
_A, _B, _C = (4, 5, 10), (4, 5, 10, 11, 12, 15, 19), (4, 5, 10, 11, 12, 15, 19, 23, 28, 31)
#: *paper*: CLRS-Text's training lengths per algorithm.
PAPER_TRAIN_LENGTHS: dict[str, tuple[int, ...]] = {
    "articulation_points": _B,
    "activity_selector": _C,
    "bellman_ford": _C,
    "bfs": _C,
    "binary_search": _C,
    "bridges": (4, 5),
    "bubble_sort": _A,
    "dag_shortest_paths": _B,
    "dfs": _C[:8],
    "dijkstra": _C[:9],
    "find_maximum_subarray_kadane": _C,
    "floyd_warshall": _A,
    "graham_scan": _C,
    "heapsort": _A,
    "insertion_sort": _C,
    "jarvis_march": _C[:5],
    "kmp_matcher": _C,
    "lcs_length": _A,
    "matrix_chain_order": _A,
    "minimum": _C,
    "mst_kruskal": _A,
    "mst_prim": _C[:9],
    "naive_string_matcher": _C,
    "optimal_bst": _A,
    "quickselect": _C,
    "quicksort": _A,
    "segments_intersect": _C,
    "strongly_connected_components": _C[:6],
    "task_scheduling": _C,
    "topological_sort": _C[:8],
}
_TOP = {
    "activity_selector": 40,
    "articulation_points": 19,
    "bellman_ford": 32,
    "bfs": 41,
    "binary_search": 64,
    "bridges": 7,
    "bubble_sort": 11,
    "dag_shortest_paths": 19,
    "dfs": 20,
    "dijkstra": 25,
    "find_maximum_subarray_kadane": 64,
    "floyd_warshall": 11,
    "graham_scan": 31,
    "heapsort": 11,
    "insertion_sort": 25,
    "jarvis_march": 13,
    "kmp_matcher": 64,
    "lcs_length": 12,
    "matrix_chain_order": 12,
    "minimum": 64,
    "mst_kruskal": 10,
    "mst_prim": 26,
    "naive_string_matcher": 64,
    "optimal_bst": 10,
    "quickselect": 64,
    "quicksort": 12,
    "segments_intersect": 64,
    "strongly_connected_components": 16,
    "task_scheduling": 41,
    "topological_sort": 21,
}
#: *paper*: CLRS-Text's validation lengths per algorithm: every length from 4 up to its top.
PAPER_TEST_LENGTHS: dict[str, tuple[int, ...]] = {
    a: tuple(range(4, top + 1)) for a, top in _TOP.items()
}
PAPER_TRAIN_SEEDS: tuple[int, ...] = (0,)  # *paper*
PAPER_TEST_SEEDS: tuple[int, ...] = (3, 14, 35, 81, 94)  # *paper*
PAPER_TRAIN_SAMPLES = 10_000  # *paper*: per algorithm and length
PAPER_TEST_SAMPLES = 125  # *paper*: per algorithm, length and seed
#: ours: the validation set's seed, neither CLRS-Text's training seed nor one of its test seeds
VALIDATION_SEED = 1
#: The formats: ``trace`` (CLRS-Text's, dm-clrs ``use_hints=True``) and ``answer`` (result only).
FORMATS = ("trace", "answer")
#: A dataset's splits, disjoint by question text.
SPLITS = ("train", "validation", "test")
#: Lengths the generators make for every algorithm: from 4 (below it several fail: strongly
#: connected components at 3, the string matchers at 2, most at 1) to 64 (CLRS-Text's largest).
MIN_LENGTH, MAX_LENGTH = 4, 64
#: A dataset's columns.
COLUMNS = ("split", "algorithm", "length", "question", "answer")


def check_algorithms(algorithms: Sequence[str], name: str = "algorithms") -> tuple[str, ...]:
    """``algorithms`` as a tuple; ``("all",)`` is the thirty; unknown names raise ``ValueError``
    naming them and listing the known ones."""
    given = tuple(algorithms)
    if given == ("all",):
        return ALGORITHMS
    if not given:
        raise ValueError(
            f"{name} needs at least one algorithm; known: all, {', '.join(ALGORITHMS)}"
        )
    unknown = [a for a in given if a not in ALGORITHMS]
    if unknown:
        raise ValueError(
            f"{name}: unknown CLRS-Text algorithm(s) {', '.join(map(repr, unknown))}; "
            f"known: all, {', '.join(ALGORITHMS)}"
        )
    return given


def check_lengths(lengths: Sequence[int], name: str) -> tuple[int, ...]:
    """``lengths`` as a tuple of whole numbers from :data:`MIN_LENGTH` to :data:`MAX_LENGTH`."""
    got = tuple(lengths)
    bad: list[object] = [n for n in got if isinstance(n, bool) or not isinstance(n, int)]
    bad += [n for n in got if n not in bad and not MIN_LENGTH <= n <= MAX_LENGTH]
    if not got or bad:
        raise ValueError(
            f"{name} must be whole numbers from {MIN_LENGTH} to {MAX_LENGTH} (the lengths "
            f"CLRS-Text's generators make for every algorithm), got {list(got)}"
        )
    return got


def _unique(rows: list[dict], split: str, algorithm: str, length: int) -> pd.DataFrame:
    df = pd.DataFrame(
        {
            "split": split,
            "algorithm": algorithm,
            "length": length,
            "question": [r["question"] for r in rows],
            "answer": [r["answer"] for r in rows],
        }
    )
    return df.drop_duplicates("question", ignore_index=True)


def build_dataset(
    train_lengths: Mapping[str, Sequence[int]],
    test_lengths: Mapping[str, Sequence[int]],
    *,
    train_samples: int,
    test_samples: int,
    validation_samples: int | None = None,
    fmt: str = "trace",
    train_seed: int = PAPER_TRAIN_SEEDS[0],
    test_seeds: Sequence[int] = PAPER_TEST_SEEDS[:1],
    validation_seed: int = VALIDATION_SEED,
) -> pd.DataFrame:
    """The deduplicated training, validation and test questions (columns :data:`COLUMNS`).

    ``train_samples`` are drawn per algorithm and training length with ``train_seed``;
    ``validation_samples`` (default ``test_samples``) per algorithm and training length with
    ``validation_seed``; ``test_samples`` per algorithm, test length and each of ``test_seeds``.
    Each split is deduplicated; validation loses what training holds, test what either holds (so
    a cell may hold fewer). ``fmt``: one of :data:`FORMATS`. Needs the ``clrs`` extra: without
    it, a ``ValueError`` saying how to install it.
    """
    from attnlimits.experiments.clrs_text._clrs_import import generate, load_generators

    val_samples = test_samples if validation_samples is None else validation_samples
    for what, n in (
        ("train_samples", train_samples),
        ("test_samples", test_samples),
        ("validation_samples", val_samples),
    ):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{what} must be a whole number ≥ 1, got {n!r}")
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    check_algorithms(list(train_lengths) + list(test_lengths))
    for a in train_lengths:
        check_lengths(train_lengths[a], f"train lengths of {a}")
    for a in test_lengths:
        check_lengths(test_lengths[a], f"test lengths of {a}")
    try:
        load_generators()
    except ModuleNotFoundError as err:
        raise ValueError(str(err)) from None
    hints = fmt == "trace"

    def split(name: str, lengths: Mapping[str, Sequence[int]], n: int, seeds: Sequence[int]):
        rows = [
            _unique(generate(a, k, n, seed, hints), name, a, k)
            for a, ks in lengths.items()
            for k in ks
            for seed in seeds
        ]
        return pd.concat(rows, ignore_index=True).drop_duplicates("question", ignore_index=True)

    train = split("train", train_lengths, train_samples, (train_seed,))
    val = split("validation", train_lengths, val_samples, (validation_seed,))
    val = val[~val["question"].isin(set(train["question"]))]
    test = split("test", test_lengths, test_samples, tuple(test_seeds))
    test = test[~test["question"].isin(set(train["question"]) | set(val["question"]))]
    return pd.concat([train, val, test], ignore_index=True).astype({"length": "int64"})


def result_of(answers: pd.Series) -> pd.Series:
    """The result part of each answer: after the last `` | `` (the trace format), else the whole
    answer (the answer format, or a generated text that lost the separator)."""
    return answers.str.rsplit(" | ", n=1).str[-1]


def check_dataset(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """``df`` if it is a dataset of :func:`build_dataset` (columns, splits, disjoint splits),
    else a ``ValueError`` naming ``where``."""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{where} is not a CLRS-Text dataset: it lacks columns {missing}")
    splits = set(df["split"])
    if splits != set(SPLITS):
        raise ValueError(f"{where}: splits must be {', '.join(SPLITS)}; got {sorted(splits)}")
    shared = df.groupby("question")["split"].nunique()
    if (shared > 1).any():
        raise ValueError(
            f"{where}: {int((shared > 1).sum())} questions are in more than one split "
            f"(e.g. {shared[shared > 1].index[0][:40]!r})"
        )
    check_algorithms(sorted(set(df["algorithm"])), f"{where}'s algorithms")
    return df


def cached_dataset(
    train_lengths: Mapping[str, Sequence[int]],
    test_lengths: Mapping[str, Sequence[int]],
    *,
    train_samples: int,
    test_samples: int,
    validation_samples: int | None = None,
    fmt: str = "trace",
    train_seed: int = PAPER_TRAIN_SEEDS[0],
    test_seeds: Sequence[int] = PAPER_TEST_SEEDS[:1],
    validation_seed: int = VALIDATION_SEED,
    folder: Path | None = None,
) -> tuple[pd.DataFrame, Path]:
    """:func:`build_dataset`'s table, made once and kept as Parquet in ``folder`` (default the
    user cache's ``clrs_text/``) under a name hashed from every argument
    (:func:`~attnlimits.experiments.store.params_hash`); written atomically, so
    a killed run leaves no half file. Returns (table, its file)."""
    spec = {
        "train_lengths": {a: list(v) for a, v in train_lengths.items()},
        "test_lengths": {a: list(v) for a, v in test_lengths.items()},
        "train_samples": train_samples,
        "test_samples": test_samples,
        "validation_samples": validation_samples,
        "format": fmt,
        "train_seed": train_seed,
        "test_seeds": list(test_seeds),
        "validation_seed": validation_seed,
        "generator": "dm-clrs==2.0.3",
    }
    path = (folder or cache_dir() / "clrs_text") / f"clrs_text-{params_hash(spec)}.parquet"
    if path.is_file():
        return check_dataset(pd.read_parquet(path), str(path)), path
    if folder is None:  # a cache that cannot take the table: refused before generating it
        check_cache("clrs_text")
    df = build_dataset(
        train_lengths,
        test_lengths,
        train_samples=train_samples,
        test_samples=test_samples,
        validation_samples=validation_samples,
        fmt=fmt,
        train_seed=train_seed,
        test_seeds=test_seeds,
        validation_seed=validation_seed,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        df.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except OSError as err:  # a full disk: the file named, not only an errno
        raise write_error(path, err) from err
    finally:
        tmp.unlink(missing_ok=True)
    return df, path
