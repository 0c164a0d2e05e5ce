"""Sweep specs that would hang, exhaust memory or recurse are refused in one line (issue 43,
class 9): a key given twice, a recursive alias, nesting 5,000 deep, "billion laughs" aliases,
and grids of a million cells (counted from the axis lengths before any cell is built).

Each spec is loaded in a forked child bounded in time (:data:`LIMIT` s) and memory (1 GB more
than it starts with), so a regression fails the test instead of hanging it or the machine.
"""

from __future__ import annotations

import multiprocessing
import resource
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from attnlimits.experiments import skeleton  # imported here, not in each forked child
from attnlimits.experiments.sweep import load_spec
from attnlimits.experiments.sweep import spec as spec_module

LIMIT = 60.0  # seconds; a refusal takes milliseconds, the bombs minutes to forever
EXTRA_MEMORY = 2**30


def _laughs(width: int, levels: int) -> str:
    """The billion laughs: level k lists ``width`` aliases of level k - 1 (width**levels)."""
    lines = ["experiment: scan", "fixed:", f"  l0: &l0 [{', '.join(['lol'] * width)}]"]
    for k in range(1, levels):
        lines.append(f"  l{k}: &l{k} [{', '.join([f'*l{k - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def _axes(**sizes: int) -> str:
    return 'experiment = "scan"\nquick = true\n[axes]\n' + "".join(
        f"{name} = {list(range(2, n + 2))}\n" for name, n in sizes.items()
    )


# (class, file name, text, words the one-line message must hold)
BOMBS = [
    ("duplicate key", "top.yaml", "experiment: compare\nquick: true\nexperiment: scan\n",
     ["'experiment' given twice", "line 1", "line 3"]),
    ("duplicate key", "nested.yaml", "experiment: scan\nfixed:\n  windows: 1\n  rows: 8\n"
     "  windows: 2\n", ["'windows' given twice", "line 3", "line 5"]),
    ("duplicate key", "axes.yml", "experiment: scan\naxes:\n  seed: [0]\n  seed: [1]\n",
     ["'seed' given twice", "line 4"]),
    ("duplicate key", "top.toml", 'experiment = "compare"\nexperiment = "scan"\n',
     ["'experiment' given twice", "line 2"]),
    ("duplicate key", "table.toml", 'experiment = "scan"\n[fixed]\nwindows = 1\n[fixed]\n'
     "rows = 8\n", ["'fixed' given twice", "line 4"]),
    ("recursive alias", "mapping.yaml", "experiment: scan\naxes: &x {seed: *x}\n",
     ["alias *x", "its own anchor", "line 2"]),
    ("recursive alias", "list.yaml", "experiment: scan\naxes:\n  seed: &s [1, [2, *s]]\n",
     ["alias *s", "its own anchor", "line 3"]),
    ("deep nesting", "flow.yaml", "experiment: scan\naxes:\n  seed: " + "[" * 5000 + "]" * 5000
     + "\n", ["nested deeper than 32 levels", "line 3"]),
    ("deep nesting", "block.yaml", "experiment: scan\nfixed:\n"
     + "".join("  " * (i + 1) + "-\n" for i in range(5000)), ["nested deeper than 32 levels"]),
    ("deep nesting", "deep.toml", 'experiment = "scan"\n[axes]\nseed = ' + "[" * 5000
     + "]" * 5000 + "\n", ["nested deeper than 32 levels"]),
    ("deep nesting", "alias.yaml", "experiment: scan\nfixed:\n  a: &a " + "[" * 20 + "]" * 20
     + "\n  b: " + "[" * 20 + "*a" + "]" * 20 + "\n", ["nested deeper than 32 levels", "line 4"]),
    ("billion laughs", "laughs.yaml", _laughs(9, 10), ["alias *l", "past 100,000 values"]),
    ("billion laughs", "quadratic.yaml", "experiment: scan\nfixed:\n  a: &a ["
     + ", ".join(["1"] * 1000) + "]\n  b: [" + ", ".join(["*a"] * 1000) + "]\n",
     ["alias *a", "past 100,000 values", "line 4"]),
    ("billion laughs", "merge.yaml", "experiment: scan\nfixed:\n  a: &a {" + ", ".join(
        f"k{i}: [{', '.join(['1'] * 100)}]" for i in range(100)) + "}\n  b: {<<: [" + ", ".join(
        ["*a"] * 100) + "]}\n", ["alias *a", "past 100,000 values"]),
    ("large grid", "square.toml", _axes(seed=1000, rows=1000),
     ["1,000,000 cells", "seed 1,000 × rows 1,000", "10,000"]),
    ("large grid", "cube.toml", _axes(seed=100, rows=100, windows=100),
     ["1,000,000 cells", "seed 100 × rows 100 × windows 100"]),
]  # fmt: skip


def _child(path: Path, out: Connection) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (used + EXTRA_MEMORY, hard))
    try:
        load_spec(path)
        out.send(("loaded", ""))
    except BaseException as err:
        out.send((type(err).__name__, str(err)))


def _load_bounded(path: Path) -> tuple[str, str]:
    """(exception type or "loaded", message) of ``load_spec(path)`` in a bounded child."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(path, send))
    child.start()
    try:
        if not receive.poll(LIMIT):
            pytest.fail(f"load_spec({path.name}) ran past {LIMIT} s: a hang, not a refusal")
        return receive.recv()
    except EOFError:
        return "died", f"exit code {child.exitcode}"
    finally:
        child.kill()
        child.join()


@pytest.mark.parametrize(
    ("kind", "name", "text", "words"), BOMBS, ids=[f"{b[0]}:{b[1]}" for b in BOMBS]
)
def test_a_spec_bomb_is_refused_in_one_line(tmp_path, kind, name, text, words):
    path = tmp_path / name
    path.write_text(text)
    error, message = _load_bounded(path)
    assert error == "ValueError", (kind, error, message[:300])
    assert "\n" not in message and message.startswith(str(path)), message
    for word in words:
        assert word in message, (word, message)


def test_the_bombs_cover_each_class_twice():
    assert "scan" in skeleton.EXPERIMENTS
    kinds = [b[0] for b in BOMBS]
    assert all(kinds.count(k) >= 2 for k in kinds), kinds
    assert len(_laughs(9, 10).encode()) < 600  # a few hundred bytes, a billion strings


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("merge.yaml", "experiment: scan\nquick: true\nfixed:\n  <<: {windows: 1, rows: 8}\n"
         "  windows: 2\n"),
        ("alias.yaml", "experiment: scan\nquick: true\nfixed:\n  windows: &w 4\n"
         "axes:\n  rows: [*w, 8]\n"),
    ],
)  # fmt: skip
def test_specs_within_the_bounds_still_load(tmp_path, name, text):
    """A merge key overridden by the mapping's own key is no repeat; plain aliases load."""
    path = tmp_path / name
    path.write_text(text)
    assert load_spec(path).cells


def test_a_grid_of_max_cells_loads_and_one_more_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(spec_module, "MAX_CELLS", 6)
    path = tmp_path / "six.toml"
    path.write_text(_axes(seed=3, rows=2))
    assert len(load_spec(path).cells) == 6
    path.write_text(_axes(seed=7))
    with pytest.raises(ValueError, match=r"7 cells \(seed 7\), over the 6 a sweep may hold"):
        load_spec(path)
