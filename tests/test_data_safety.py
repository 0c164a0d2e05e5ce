"""Nothing a user owns is ever deleted, written over or served (issue 32, items 1-3 and 11;
issue 43, items 1-4).

- ``--fresh`` removes only the files a previous run listed in its folder's manifest; a folder
  that never held a run, or holds a user's files where a run writes, is refused by name;
- a run that loses the start-up race to another process removes nothing of the winner's;
- an empty ``--out`` (or the current folder) is refused, from Python and from the command line;
- a resume names its text by content: the default book given by its path is the same input;
- every call in ``src/`` that can delete a file is one of the reviewed sites below;
- no write, rename or delete passes through a symbolic link: every command that writes refuses
  a folder with a link where it writes, in one line, before any work;
- ``attnlimits report`` refuses a user's files it would write over;
- ``AttentionMonitor`` appends to its own table and refuses another file of that name;
- ``attnlimits view --port`` serves the page and the files it shows, nothing else.
"""

from __future__ import annotations

import ast
import json
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import torch
from matplotlib.figure import Figure
from typer.testing import CliRunner

from attnlimits.cli import app
from attnlimits.corpus import load_text, text_sha256
from attnlimits.experiments import skeleton
from attnlimits.experiments.store import FolderBusyError, ResultStore
from conftest import REPO
from tiny_models import tiny_model_dir

runner = CliRunner()
USERS = {"figures/thesis.png": b"my thesis figure", "tables/data.csv": b"a,b\n1,2\n"}
USERS |= {"report.md": b"# my report\n"}


@dataclass(frozen=True)
class Cfg:
    steps: int = 2
    text: Path | None = None
    reads_text: bool = False  # record the text's sha256 in run.json, as the experiments do
    fail: bool = False


CALLS: list[int] = []


def _compute(cfg: Cfg, store: ResultStore, *, progress: bool = True) -> dict[str, pd.DataFrame]:
    if cfg.reads_text:
        store.update_meta(text={"sha256": text_sha256(load_text(cfg.text))})
    if cfg.fail:
        raise RuntimeError("boom")

    def one(i: int) -> pd.DataFrame:
        CALLS.append(i)
        return pd.DataFrame({"step": [i]})

    params = {"steps": cfg.steps}
    parts = [store.part("toy", params, f"s{i}", lambda i=i: one(i)) for i in range(cfg.steps)]
    return {"values": pd.concat(parts, ignore_index=True)}


def _figures(tables, meta):
    fig = Figure()
    fig.add_subplot().plot(tables["values"]["step"])
    return {"values": fig}


def _claims(tables, meta):
    row = {"claim": "n", "paper": "-", "measured": len(tables["values"]), "rule": "-"}
    return pd.DataFrame([row | {"verdict": "n/a"}])


EXPERIMENT = skeleton.Experiment(
    name="safe", title="Safe", config=Cfg, compute=_compute, figures=_figures, claims=_claims
)


@pytest.fixture(autouse=True)
def _register(monkeypatch):
    monkeypatch.setitem(skeleton.EXPERIMENTS, "safe", __name__)
    CALLS.clear()


def _users_folder(root: Path) -> Path:
    for rel, data in USERS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def _intact(root: Path) -> None:
    for rel, data in USERS.items():
        assert (root / rel).read_bytes() == data, f"{rel} was deleted or written over"


# ---- item 1: --fresh ---------------------------------------------------------------------------


@pytest.mark.parametrize("fresh", [True, False])
def test_a_folder_that_never_held_a_run_is_refused_naming_its_files(tmp_path, fresh):
    """The issue's scenario: figures/thesis.png, tables/data.csv and report.md in v."""
    v = _users_folder(tmp_path / "v")
    why = "--fresh removes only a previous run's own results" if fresh else "write over them"
    with pytest.raises(
        ValueError, match=r"figures/thesis\.png, report\.md, tables/data\.csv"
    ) as err:
        skeleton.run(EXPERIMENT, Cfg(), v, progress=False, fresh=fresh)
    assert why in str(err.value) and "choose another --out" in str(err.value)
    _intact(v)
    assert sorted(p.relative_to(v).as_posix() for p in v.rglob("*")) == sorted(
        [*USERS, "figures", "tables"]
    ), "the refused run left files behind"


def test_a_long_list_of_a_users_files_claims_no_count(tmp_path):
    """Past three files the message said ", and 1 more" whatever the number (the list it
    formats stops at four): with six files of the user's it now says ", and more"."""
    v = tmp_path / "v"
    for i in range(6):
        (v / "tables").mkdir(parents=True, exist_ok=True)
        (v / "tables" / f"mine{i}.csv").write_text("a\n1\n")
    with pytest.raises(ValueError) as err:
        skeleton.run(EXPERIMENT, Cfg(), v, progress=False, fresh=True)
    msg = str(err.value)
    assert "tables/mine0.csv, tables/mine1.csv, tables/mine2.csv, and more)" in msg, msg
    assert "1 more" not in msg
    assert len(list((v / "tables").iterdir())) == 6


def test_fresh_on_the_command_line_leaves_a_users_folder_alone(tmp_path, book_path):
    """``attnlimits compare --quick --fresh --out v`` on a tiny model: one line, exit 2."""
    model = tiny_model_dir(tmp_path, "llama", load_text(book_path)[:50_000], max_positions=256)
    v = _users_folder(tmp_path / "v")
    argv = ["compare", "--model", str(model), "--text", str(book_path), "--quick", "--fresh"]
    res = runner.invoke(app, [*argv, "--out", str(v)])
    assert res.exit_code == 2, res.output
    assert res.output.strip().splitlines() == [
        f"error: {v} holds files attnlimits did not write (figures/thesis.png, report.md, "
        "tables/data.csv); --fresh removes only a previous run's own results: choose another "
        "--out"
    ]
    _intact(v)


def test_several_models_refuse_a_users_folder_before_any_runs(tmp_path, book_path):
    """``reproduce limitations`` with two models writes the joined report.md into --out after
    both ran: it overwrote a user's report.md there (it ran, and then wrote over it)."""
    model = tiny_model_dir(tmp_path, "llama", load_text(book_path)[:50_000], max_positions=256)
    v = _users_folder(tmp_path / "v")
    argv = ["reproduce", "limitations", "--model", str(model), "--model", str(model) + "/"]
    res = runner.invoke(app, [*argv, "--quick", "--fresh", "--out", str(v)])
    assert res.exit_code == 2, res.output
    assert res.output.strip().splitlines() == [
        f"error: {v} holds files attnlimits did not write (report.md, tables/data.csv), where "
        "the joined report of the models goes: choose another --out"
    ]
    _intact(v)
    assert sorted(p.relative_to(v).as_posix() for p in v.rglob("*")) == sorted(
        [*USERS, "figures", "tables"]
    ), "the refused run left files behind"


def test_fresh_in_a_run_folder_removes_the_runs_files_and_keeps_the_users(tmp_path):
    out = tmp_path / "run"
    skeleton.run(EXPERIMENT, Cfg(steps=2), out, progress=False)
    old_parts = sorted((out / "parts").iterdir())
    (out / "figures/thesis.png").write_bytes(b"mine")
    (out / "notes.md").write_bytes(b"mine too")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        skeleton.run(EXPERIMENT, Cfg(steps=3), out, progress=False, fresh=True)
    assert (out / "figures/thesis.png").read_bytes() == b"mine"
    assert (out / "notes.md").read_bytes() == b"mine too"
    assert not any(p.exists() for p in old_parts), "the previous run's parts stayed"
    assert len(pd.read_parquet(out / "tables/values.parquet")) == 3
    assert [str(w.message) for w in caught] == [
        f"--fresh kept files in {out} that attnlimits did not write: figures/thesis.png"
    ]


def test_fresh_refuses_a_run_whose_files_are_not_listed(tmp_path):
    """A run folder from before the manifest: its files cannot be told from a user's."""
    out = tmp_path / "old"
    skeleton.run(EXPERIMENT, Cfg(), out, progress=False)
    (out / ".attnlimits-files").unlink()
    before = sorted(out.rglob("*"))
    with pytest.raises(ValueError, match="before attnlimits listed the files it writes"):
        skeleton.run(EXPERIMENT, Cfg(steps=3), out, progress=False, fresh=True)
    assert sorted(out.rglob("*")) == before
    skeleton.run(EXPERIMENT, Cfg(), out, progress=False)  # a resume still works


def test_a_sweeps_folder_or_a_foreign_run_json_is_not_a_run(tmp_path):
    sweep = tmp_path / "sweep"
    store = ResultStore(sweep)
    with store.lock():
        store.update_meta(experiment="sweep", cells=[])
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs/run.json").write_text('{"name": "my own run.json"}')
    for folder, what in [(sweep, "a sweep folder"), (tmp_path / "theirs", "did not write")]:
        for fresh in (False, True):
            with pytest.raises(ValueError, match=what):
                skeleton.run(EXPERIMENT, Cfg(), folder, progress=False, fresh=fresh)
    assert json.loads((sweep / "run.json").read_text())["experiment"] == "sweep"
    assert json.loads((tmp_path / "theirs/run.json").read_text()) == {"name": "my own run.json"}


def test_a_hand_edited_manifest_cannot_reach_outside_the_folder(tmp_path):
    out = tmp_path / "run"
    skeleton.run(EXPERIMENT, Cfg(), out, progress=False)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    with open(out / ".attnlimits-files", "a") as f:
        f.write(f"../victim.txt\n{victim}\n")
    skeleton.run(EXPERIMENT, Cfg(steps=3), out, progress=False, fresh=True)
    assert victim.read_text() == "keep"


def test_a_failed_run_removes_only_what_it_wrote(tmp_path):
    """In a folder with a user's file elsewhere: the run's run.json goes, the user's file and
    the folder stay; in a new folder, everything goes."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine/notes.md").write_text("mine")
    for folder in (tmp_path / "mine", tmp_path / "new/deeper"):
        with pytest.raises(RuntimeError, match="boom"):
            skeleton.run(EXPERIMENT, Cfg(fail=True), folder, progress=False)
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.md"]
    assert not (tmp_path / "new").exists()


# ---- item 2: the start-up race -----------------------------------------------------------------


def test_the_loser_of_the_start_up_race_removes_nothing_of_the_winners(tmp_path, monkeypatch):
    """The loser found no folder; before it takes the lock, another process (here a thread:
    flock locks conflict between descriptors) creates the folder, locks it and saves a part."""
    out = tmp_path / "raced"
    held, release = threading.Event(), threading.Event()

    def winner() -> None:
        store = ResultStore(out)
        with store.lock():
            store.update_meta(experiment="safe", params={"steps": 2})
            store.save_part("toy", {"steps": 2}, "s0", pd.DataFrame({"step": [0]}))
            held.set()
            release.wait(60)

    thread = threading.Thread(target=winner)
    real = skeleton.ResultStore

    def store_after_the_winner_started(root):
        thread.start()
        assert held.wait(60)
        return real(root)

    monkeypatch.setattr(skeleton, "ResultStore", store_after_the_winner_started)
    try:
        with pytest.raises(FolderBusyError):
            skeleton.run(EXPERIMENT, Cfg(), out, progress=False)
        saved = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
        assert "run.json" in saved and ".attnlimits.lock" in saved, saved
        assert any(s.startswith("parts/") for s in saved), saved
    finally:
        release.set()
        thread.join(60)


# ---- item 3: an empty --out --------------------------------------------------------------------


@pytest.mark.parametrize("out", ["", "  ", ".", Path(""), "./"])
def test_an_empty_out_or_the_current_folder_is_refused(tmp_path, monkeypatch, out):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"^out .*(is empty|is the current folder)"):
        skeleton.run(EXPERIMENT, Cfg(), out, progress=False, fresh=True)
    if not str(out).strip():
        with pytest.raises(ValueError, match=r"^root is empty"):
            ResultStore(out)
    assert not list(tmp_path.iterdir())


def test_an_empty_out_on_the_command_line_is_one_line(tmp_path, monkeypatch):
    from attnlimits.experiments.sweep import run_sweep

    monkeypatch.chdir(tmp_path)
    (tmp_path / "spec.toml").write_text('experiment = "compare"\n')
    res = runner.invoke(app, ["compare", "--model", "nowhere", "--quick", "--out", ""])
    assert res.exit_code == 2 and res.output.strip().splitlines() == [
        "error: out '.' is the current folder (an empty --out is too); name a results folder "
        "of its own, e.g. results/run"
    ]
    with pytest.raises(ValueError, match="is empty"):
        run_sweep(tmp_path / "spec.toml", "", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.toml"]


def test_an_empty_out_for_several_models_is_refused_before_any_runs(tmp_path, monkeypatch):
    """``reproduce limitations --model A --model B --out ''``: the joined report would go into
    the current folder; refused before the first model runs."""
    text = "BOOK ONE: 1805\n\n" + "the war and the peace " * 200
    models = [str(tiny_model_dir(tmp_path / f, f, text)) for f in ("llama", "gpt2")]
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    argv = ["reproduce", "limitations", "--model", models[0], "--model", models[1], "--quick"]
    res = runner.invoke(app, [*argv, "--out", ""])
    assert res.exit_code == 2 and "is the current folder" in res.output, res.output
    assert not list(work.iterdir())


def test_a_sweep_refuses_to_write_over_a_users_files(tmp_path, monkeypatch):
    from attnlimits.experiments.sweep import run_sweep

    def cell_fails(*args, **kwargs):
        raise RuntimeError("no cell should run")

    monkeypatch.setattr(skeleton, "run", cell_fails)
    (tmp_path / "spec.toml").write_text('experiment = "compare"\n')
    v = _users_folder(tmp_path / "v")
    with pytest.raises(ValueError, match=r"did not write \(figures/thesis.png|\(report.md"):
        run_sweep(tmp_path / "spec.toml", v, progress=False)
    _intact(v)
    assert not (v / "cells").exists()


# ---- item 11: inputs compared by content -------------------------------------------------------


def test_a_resume_naming_the_default_book_by_its_path_is_the_same_run(tmp_path, book_path):
    if text_sha256(load_text(None)) != text_sha256(load_text(book_path)):
        pytest.skip("the default book here is not the file at book_path")
    out = tmp_path / "run"
    skeleton.run(EXPERIMENT, Cfg(reads_text=True), out, progress=False)  # the default book
    CALLS.clear()
    skeleton.run(EXPERIMENT, Cfg(reads_text=True, text=book_path), out, progress=False)
    assert CALLS == [], "the resume recomputed saved parts"
    other = tmp_path / "other.txt"
    other.write_text("another text entirely\n" * 50)
    with pytest.raises(ValueError, match=r"other settings \(text\)"):
        skeleton.run(EXPERIMENT, Cfg(reads_text=True, text=other), out, progress=False)
    edited = tmp_path / "edited.txt"  # the same path, later edited: another input
    edited.write_text("one text\n" * 50)
    again = Cfg(reads_text=True, text=edited)
    skeleton.run(EXPERIMENT, again, tmp_path / "e", progress=False)
    edited.write_text("another\n" * 50)
    with pytest.raises(ValueError, match=r"other settings \(text\)"):
        skeleton.run(EXPERIMENT, again, tmp_path / "e", progress=False)


def test_settings_diff_still_names_other_settings_beside_the_text(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("same words\n" * 20)
    b.write_text("same words\n" * 20)
    meta = {"text": {"sha256": text_sha256(load_text(a))}}
    stored = {"steps": 2, "text": str(a), "reads_text": False, "fail": False}
    assert skeleton.settings_diff(stored, Cfg(text=b), meta) == []
    assert skeleton.settings_diff(stored, Cfg(steps=3, text=b), meta) == ["steps"]
    with pytest.raises(FileNotFoundError):
        skeleton.settings_diff(stored, Cfg(text=tmp_path / "gone.txt"), meta)


# ---- the class: every deletion in src/ is a reviewed one ---------------------------------------

#: Calls that remove or replace files: os.<name>(...), shutil.<name>(...), and <x>.unlink(),
#: <x>.rmdir(), <x>.rmtree() on anything (Path's methods). str.replace and DataFrame.rename
#: cannot be told from Path.replace/rename by the syntax; the package calls neither of those.
OS_CALLS = {"os": {"remove", "unlink", "rmdir", "removedirs", "replace", "rename", "truncate"}}
OS_CALLS["shutil"] = {"rmtree", "move"}
METHODS = {"unlink", "rmdir", "rmtree"}

#: (file under src/attnlimits, function, call) -> (how many, why it deletes only ours).
REVIEWED = {
    ("experiments/_owned.py", "Manifest._rewrite", "os.replace"): (1, "the manifest itself"),
    ("experiments/_owned.py", "Manifest._rewrite", ".unlink"): (1, "its own mkstemp temporary"),
    ("experiments/_owned.py", "Manifest.remove", ".unlink"): (1, "listed files only"),
    ("experiments/_owned.py", "Manifest.remove", ".rmdir"): (1, "folders left empty"),
    ("experiments/_owned.py", "Manifest.remove_temporaries", ".unlink"): (1, "*.attnlimits-tmp"),
    ("experiments/_owned.py", "Manifest.discard", ".unlink"): (1, "manifest, lock, owner note"),
    ("experiments/_owned.py", "remove_empty", ".rmdir"): (1, "folders this process created"),
    ("_files.py", "atomic_target", "os.replace"): (1, "a file listed as ours first"),
    ("_files.py", "atomic_target", ".unlink"): (1, "its own mkstemp temporary"),
    ("experiments/store.py", "ResultStore.lock", ".unlink"): (1, "the lock's owner note"),
    ("_paths.py", "probe_write", "os.unlink"): (1, "its own mkstemp probe (store, monitor, cache)"),
    ("capture/_sources.py", "gguf_dir", "os.replace"): (1, "a new entry of the model cache"),
    ("capture/_sources.py", "gguf_dir", "shutil.rmtree"): (1, "its own mkdtemp folder"),
    ("capture/_content.py", "_remember", "os.replace"): (1, "a remembered hash, from its mkstemp"),
    ("capture/_content.py", "_remember", ".unlink"): (1, "its own mkstemp temporary"),
    ("corpus/text.py", "_fetch_into_cache", "os.replace"): (1, "the book's cache entry"),
    ("corpus/text.py", "_fetch_into_cache", ".unlink"): (1, "its own mkstemp download"),
    ("experiments/clrs_text/data.py", "cached_dataset", "os.replace"): (
        1,
        "the CLRS-Text dataset's cache entry, from its own temporary file (pid in the name)",
    ),
    ("experiments/clrs_text/data.py", "cached_dataset", ".unlink"): (
        1,
        "its own temporary file, after a failed write",
    ),
    ("cli/_errors.py", "no_empty_folders_left", ".rmdir"): (
        1,
        "folders on the way to --out that the failed command created, if empty (rmdir only)",
    ),
}


def _deletions(root: Path = REPO / "src" / "attnlimits") -> dict[tuple[str, str, str], int]:
    found: dict[tuple[str, str, str], int] = {}

    def visit(node: ast.AST, scope: str, rel: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{scope}.{child.name}" if scope else child.name
            call = None
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                f = child.func
                if isinstance(f.value, ast.Name) and f.attr in OS_CALLS.get(f.value.id, ()):
                    call = f"{f.value.id}.{f.attr}"
                elif f.attr in METHODS:
                    call = f".{f.attr}"
            if isinstance(child, ast.ImportFrom) and child.module in OS_CALLS:
                for alias in child.names:  # `from os import remove` would hide a call
                    if alias.name in OS_CALLS[child.module]:
                        call = f"from {child.module} import {alias.name}"
            if call:
                key = (rel, scope or "<module>", call)
                found[key] = found.get(key, 0) + 1
            visit(child, inner, rel)

    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        visit(tree, "", path.relative_to(root).as_posix())
    return found


def test_every_call_that_deletes_a_file_is_a_reviewed_one():
    """A new deletion (or one more in a reviewed function) fails here until it is reviewed:
    it must delete only what attnlimits wrote (a listed file, its own temporary, a folder it
    created and emptied) and be added to REVIEWED with the reason."""
    found = _deletions()
    reviewed = {key: n for key, (n, _why) in REVIEWED.items()}
    assert found == reviewed, {
        "new or changed": {k: v for k, v in found.items() if reviewed.get(k) != v},
        "gone": sorted(set(reviewed) - set(found)),
    }


def test_the_deletion_scan_sees_what_it_must(tmp_path):
    """The scan is not blind: a planted rmtree, unlink and `from os import remove` are found."""
    (tmp_path / "x.py").write_text(
        "import shutil\nfrom os import remove\ndef f(p):\n    shutil.rmtree(p)\n    p.unlink()\n"
    )
    assert set(_deletions(tmp_path)) == {
        ("x.py", "<module>", "from os import remove"),
        ("x.py", "f", "shutil.rmtree"),
        ("x.py", "f", ".unlink"),
    }


# ---- issue 43, item 1: no write, rename or delete through a symbolic link ----------------------

ENTERED: list[str] = []  # compute() calls of the experiments, patched (no model is loaded)


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path below ``root`` (not following links) with a file's bytes, and ``root``'s."""
    paths = [root, *root.rglob("*")]
    return {
        p.relative_to(root.parent).as_posix(): p.read_bytes() if p.is_file() else None
        for p in paths
    }


def _outside(tmp_path: Path) -> Path:
    """A user's folder outside every run folder: a file and a subfolder with a figure."""
    mine = tmp_path / "users"
    (mine / "figs").mkdir(parents=True)
    (mine / "notes.txt").write_text("my notes")
    (mine / "figs" / "values.png").write_bytes(b"my own figure")
    (mine / "figs" / "values.svg").write_bytes(b"<svg>mine</svg>")
    return mine


def _link(path: Path, target: Path) -> Path:
    """``path`` made a symbolic link to ``target`` (whatever was at ``path`` moved aside)."""
    if path.is_dir() and not path.is_symlink():
        path.rename(path.with_name(path.name + ".moved"))
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


def _refusal(link: Path) -> str:
    import os

    return (
        f"{link} is a symbolic link (to {os.readlink(link)}); attnlimits writes, renames and "
        "deletes nothing through a link: remove it, or use another folder"
    )


def _counting(cfg, store, *, progress=True):
    ENTERED.append(type(cfg).__name__)
    if not isinstance(cfg, Cfg):  # an experiment's own: it must never get this far
        raise RuntimeError(f"{type(cfg).__module__} computed")
    return _compute(cfg, store, progress=progress)


@pytest.mark.parametrize(
    ("rel", "target", "fresh"),
    [
        (".attnlimits.lock.owner", "notes.txt", False),  # the lock's owner note
        ("figures", "figs", True),  # a folder the manifest lists files in, under --fresh
        ("figures", "figs", False),  # figures/ on a resume
        ("tables", "figs", False),  # tables/ on a resume
        ("parts/toy-{hash}/s1.parquet", "figs/values.png", False),  # one part of a table
        ("parts", "figs", True),  # the parts' folder, under --fresh
        ("run.json", "notes.txt", False),  # the run's record
    ],
    ids=["lock owner", "figures --fresh", "figures resume", "tables resume", "a part",
         "parts --fresh", "run.json"],
)  # fmt: skip
def test_a_link_in_a_run_folder_is_refused_before_any_work(
    tmp_path, monkeypatch, rel, target, fresh
):
    """A symlinked owner note had its target overwritten, then the link removed; ``--fresh``
    deleted files through a symlinked ``figures/`` listed in the manifest; a resume whose
    ``figures/`` is a link failed after the compute with a raw pathlib message. Now: one line
    naming the link, before compute; the link's target untouched."""
    from attnlimits.experiments.store import params_hash

    toy = skeleton.Experiment(
        name="safe", title="Safe", config=Cfg, compute=_counting, figures=_figures, claims=_claims
    )
    out = tmp_path / "run"
    skeleton.run(toy, Cfg(steps=2), out, progress=False)
    mine = _outside(tmp_path)
    before = _snapshot(mine)
    link = _link(out / rel.format(hash=params_hash({"steps": 2})), mine / target)
    ENTERED.clear()
    with pytest.raises(ValueError) as err:
        skeleton.run(toy, Cfg(steps=3 if fresh else 2), out, progress=False, fresh=fresh)
    assert str(err.value) == _refusal(link)
    assert ENTERED == [], "the refusal came after the compute"
    assert _snapshot(mine) == before, "the link's target was written or deleted"
    assert link.is_symlink()


def test_the_store_and_the_manifest_refuse_a_link_on_the_way(tmp_path):
    """The one check every writer makes (_paths.inside), met by each writer of a held folder:
    a table, a figure, a part, run.json, a page written beside them; and --fresh's deletion."""
    from attnlimits.experiments.store import atomic_write_text

    mine = _outside(tmp_path)
    before = _snapshot(mine)
    store = ResultStore(tmp_path / "run")
    with store.lock():
        store.update_meta(experiment="safe", params={"steps": 2})
        store.write_table(pd.DataFrame({"a": [1]}), "t")
        (tmp_path / "run" / "figures").symlink_to(mine / "figs")  # made while the folder is held
        (tmp_path / "run" / "parts").symlink_to(mine)
        (tmp_path / "run" / "tables" / "t.csv").unlink()
        (tmp_path / "run" / "tables" / "t.csv").symlink_to(mine / "notes.txt")
        fig = Figure()
        fig.add_subplot().plot([1, 2])
        writes = {
            "figures": lambda: store.save_figure(fig, "values"),
            "parts": lambda: store.save_part("toy", {}, "s0", pd.DataFrame({"a": [1]})),
            "tables/t.csv": lambda: store.write_table(pd.DataFrame({"a": [2]}), "t"),
            "figures/": lambda: atomic_write_text(tmp_path / "run" / "figures" / "page.html", "x"),
        }
        for rel, write in writes.items():
            with pytest.raises(ValueError) as err:
                write()
            assert str(err.value) == _refusal(tmp_path / "run" / rel.rstrip("/"))
        store.manifest.listed.add("figures/values.png")  # as if a run had written it there
        store.manifest.remove({"figures/values.png"})
    assert _snapshot(mine) == before


def test_no_command_writes_through_a_link_out_of_its_folder(tmp_path, monkeypatch):
    """Every command that writes, on a folder whose subpaths are symbolic links to a user's
    folder outside it: each refuses in one line naming the link, before any compute (each
    experiment's compute is replaced by one that counts its calls), and the user's folder is
    as it was. The links: the lock's owner note, ``tables/`` and ``report.md`` (every command
    writes these), the joined report's models' folders, a sweep's ``cells/``, the monitor's
    table."""
    import dataclasses
    import importlib

    from attnlimits.experiments.store import atomic_write_bytes

    for name, module in skeleton.EXPERIMENTS.items():
        mod = importlib.import_module(module)
        if name != "safe":
            monkeypatch.setattr(
                mod, "EXPERIMENT", dataclasses.replace(mod.EXPERIMENT, compute=_counting)
            )
    text = "BOOK ONE: 1805\n\n" + "the war and the peace of 1805 and 1812 " * 200
    model = str(tiny_model_dir(tmp_path / "m", "llama", text, digits=True))
    spec = tmp_path / "spec.toml"
    spec.write_text(
        f'experiment = "compare"\nquick = true\n[fixed]\nmodel = "{model}"\n[axes]\nseed = [0, 1]\n'
    )
    commands = {
        "scan": ["scan", model, "--quick"],
        "compare": ["compare", "--model", model, "--quick"],
        "limitations": ["reproduce", "limitations", "--model", model, "--quick"],
        "limitations x2": [
            "reproduce",
            "limitations",
            "--model",
            model,
            "--model",
            model + "/",
            "--quick",
        ],
        "softmax-not-enough": ["reproduce", "softmax-not-enough", "--quick"],
        "clrs-text": ["reproduce", "clrs-text", "--quick"],
        "long-context": ["demo", "long-context", "--model", model, "--quick"],
        "sweep": ["sweep", str(spec)],
        "report": ["report"],
    }
    links = {".attnlimits.lock.owner": "notes.txt", "tables": "figs", "report.md": "notes.txt"}
    extra = {"limitations x2": {"llama": "figs"}, "sweep": {"cells": "figs"}}
    mine = _outside(tmp_path)
    before = _snapshot(mine)
    tried = 0
    for command, argv in commands.items():
        for rel, target in {**links, **extra.get(command, {})}.items():
            v = tmp_path / "runs" / f"{command}-{rel}"
            if command == "report":  # a finished run to redraw
                skeleton.run(EXPERIMENT, Cfg(), v, progress=False)
            link = _link(v / rel, mine / target)
            ENTERED.clear()
            args = [*argv, str(v)] if command == "report" else [*argv, "--out", str(v)]
            res = runner.invoke(app, args)
            errors = [line for line in res.output.splitlines() if line.startswith("error:")]
            assert (res.exit_code, errors) == (2, [f"error: {_refusal(link)}"]), (
                command,
                rel,
                res.output,
            )
            assert res.output.strip().splitlines()[-1] == errors[0], (command, rel)
            assert ENTERED == [], f"{command} computed before refusing {rel}"
            assert _snapshot(mine) == before, f"{command} touched the target of {rel}"
            assert link.is_symlink(), f"{command} removed the link {rel}"
            tried += 1
    from attnlimits.monitor import TABLE_NAME, AttentionMonitor

    for rel in (TABLE_NAME, "attention_monitor.html"):
        link = _link(tmp_path / "mon" / rel, mine / "notes.txt")
        with pytest.raises(ValueError) as err:
            AttentionMonitor(out_dir=tmp_path / "mon")
        assert str(err.value) == _refusal(link)
        link.unlink()
    with pytest.raises(ValueError) as err:  # a writer outside any held folder: the same check
        atomic_write_bytes(_link(tmp_path / "page.html", mine / "notes.txt"), b"x")
    assert str(err.value) == _refusal(tmp_path / "page.html")
    assert _snapshot(mine) == before
    assert tried == 9 * 3 + 2


# ---- issue 43, item 2: attnlimits report over a user's files ----------------------------------


def test_report_refuses_a_users_report_and_figures_in_a_folder_without_a_manifest(tmp_path):
    """``attnlimits report DIR`` on run.json and tables/ with the user's own report.md and
    figures/values.png beside them and no manifest overwrote both, then listed them as its own.
    Refused now in one line naming them; a figure of the user's that the report does not
    write over (figures/thesis.png in a run's folder) does not stop it."""
    v = tmp_path / "v"
    skeleton.run(EXPERIMENT, Cfg(), v, progress=False)
    (v / ".attnlimits-files").unlink()  # a folder the user assembled, or from before the list
    (v / "report.md").write_bytes(b"# my report\n")
    (v / "figures/values.png").write_bytes(b"my figure")
    (v / "report.html").unlink()
    before = _snapshot(v)
    res = runner.invoke(app, ["report", str(v)])
    assert res.exit_code == 2 and res.output.strip().splitlines() == [
        f"error: {v} holds files attnlimits did not write (figures/values.png, figures/values.svg, "
        "report.md, and more), which the report would write over: move them away, then rerun "
        "attnlimits report"
    ], res.output
    assert _snapshot(v) == before, "the refused report wrote or listed something"
    run = tmp_path / "run"  # a run's own folder, with a figure of the user's: redrawn
    skeleton.run(EXPERIMENT, Cfg(), run, progress=False)
    (run / "figures/thesis.png").write_bytes(b"my thesis figure")
    res = runner.invoke(app, ["report", str(run)])
    assert res.exit_code == 0, res.output
    assert (run / "figures/thesis.png").read_bytes() == b"my thesis figure"
    assert "figures/thesis.png" not in (run / ".attnlimits-files").read_text()


def test_report_of_models_side_by_side_refuses_a_link_to_a_models_folder(tmp_path):
    """``attnlimits report`` on a side-by-side folder redraws each model's folder below it: a
    model's folder that is a link out of it is refused before anything is redrawn."""
    side = tmp_path / "side"
    skeleton.run(EXPERIMENT, Cfg(), tmp_path / "elsewhere", progress=False)
    skeleton.run(EXPERIMENT, Cfg(), side / "a", progress=False)
    link = _link(side / "b", tmp_path / "elsewhere")
    before = _snapshot(tmp_path / "elsewhere")
    res = runner.invoke(app, ["report", str(side)])
    assert res.exit_code == 2 and res.output.strip().splitlines() == [f"error: {_refusal(link)}"]
    assert _snapshot(tmp_path / "elsewhere") == before


# ---- issue 43, item 3: AttentionMonitor never replaces a table -------------------------------


def _loop(out_dir: Path, steps: int) -> list[int]:
    """A hand-written loop of ``steps`` steps recording every step; the table's steps after."""
    from attnlimits.monitor import TABLE_NAME, AttentionMonitor
    from monitor_models import batch, tiny

    model = tiny("llama", "sdpa")
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        with AttentionMonitor(every=1, out_dir=out_dir).watch(model) as mon:
            for _ in range(steps):
                model(batch()[0])
                mon.step()
    return sorted(pd.read_parquet(out_dir / TABLE_NAME)["step"].unique().tolist())


def test_a_second_loop_appends_to_the_monitors_table(tmp_path):
    """Steps [1, 2, 3] of a first loop became [1] after a second loop of one step into the
    same out_dir; now the second loop's step is appended, numbered on: [1, 2, 3, 4]."""
    assert _loop(tmp_path / "mon", 3) == [1, 2, 3]
    assert _loop(tmp_path / "mon", 1) == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        ("attention_monitor.parquet", "table", r"is not the monitor's table \(columns a, b\)"),
        ("attention_monitor.parquet", b"not parquet at all", r"is not a Parquet table"),
        (
            "attention_monitor.html",
            b"<p>my page</p>",
            r"is not the monitor's page \(no attention_monitor.parquet beside it\)",
        ),
    ],
    ids=["a user's table", "not Parquet", "a user's page"],
)
def test_the_monitor_refuses_a_file_of_its_name_that_is_not_its_own(tmp_path, name, content, why):
    from attnlimits.monitor import AttentionMonitor

    mine = tmp_path / "mon" / name
    mine.parent.mkdir()
    if content == "table":
        pd.DataFrame({"a": [1], "b": [2]}).to_parquet(mine)
    else:
        mine.write_bytes(content)
    before = mine.read_bytes()
    with pytest.raises(
        ValueError,
        match=rf"^{mine} {why}; the monitor appends only to its own "
        "table: move it away, or pass another out_dir$",
    ):
        AttentionMonitor(out_dir=tmp_path / "mon")
    assert mine.read_bytes() == before


def test_a_trainer_from_step_0_refuses_an_earlier_trainings_table(tmp_path):
    """A second training from scratch into the same output_dir replaced the first's table."""
    import transformers

    from attnlimits.monitor import TABLE_NAME, AttentionMonitor
    from monitor_models import Tokens, tiny

    assert _loop(tmp_path, 2) == [1, 2]
    before = (tmp_path / TABLE_NAME).read_bytes()
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=2, report_to=[],
        use_cpu=True, save_strategy="no", disable_tqdm=True,
    )  # fmt: skip
    trainer = transformers.Trainer(tiny("gpt2", "eager"), args, train_dataset=Tokens())
    AttentionMonitor(every=1).attach(trainer)
    with pytest.raises(ValueError, match=r"holds an earlier training's rows \(steps 1 … 2\); "):
        trainer.train()
    assert (tmp_path / TABLE_NAME).read_bytes() == before


# ---- issue 43, item 4: attnlimits view serves the page, and only what it shows -----------------


def _get(url: str, path: str) -> tuple[int, bytes]:
    """GET ``path`` (sent as given: no normalisation) from the server at ``url``."""
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


@pytest.mark.parametrize("given", ["folder", "page"])
def test_view_serves_the_page_and_what_it_shows_only(tmp_path, given):
    """Given a page file, the server served its whole parent folder with a listing; given a
    run folder, it listed it, served dotfiles (.env, the manifest) and followed links out of
    it. Now: the page (also at /) and the figures and CSVs it references; the rest is 404,
    ``..`` encoded or not included."""
    import os
    import re
    import subprocess
    import sys

    run = tmp_path / "run"
    skeleton.run(EXPERIMENT, Cfg(), run, progress=False)
    (run / ".env").write_text("SECRET=1")
    (run / "notes.txt").write_text("my notes, not on the page")
    (tmp_path / "secret.txt").write_text("outside the run")
    (run / "figures" / "values.png").unlink()
    (run / "figures" / "values.png").symlink_to(tmp_path / "secret.txt")  # shown by the page
    (run / "out").symlink_to(tmp_path)
    page = (run / "report.html").read_bytes()
    assert b'src="figures/values.png"' in page and b'href="tables/values.csv"' in page
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    code = "from attnlimits.cli import app; app()"
    target = run if given == "folder" else run / "report.html"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "view", str(target), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )  # fmt: skip
    try:
        url = re.search(r"http://\S+", proc.stdout.readline())
        assert url, "no address printed"
        served = {p: _get(url.group(0), p) for p in ("/report.html", "/", "/tables/values.csv")}
        assert served["/report.html"] == (200, page) and served["/"] == (200, page)
        assert served["/tables/values.csv"] == (200, (run / "tables/values.csv").read_bytes())
        refused = [
            "/figures/", "/tables", "/figures/?C=M;O=D",  # listings
            "/.env", "/.attnlimits-files", "/.attnlimits.lock", "/%2eenv",  # dotfiles
            "/figures/values.png", "/out/secret.txt", "/out/",  # links out of the run
            "/notes.txt", "/run.json", "/figures/values.svg", "/tables/values.parquet",  # the rest
            "/../secret.txt", "/%2e%2e/secret.txt", "/figures/..%2f..%2fsecret.txt",  # traversal
            "/tables/%2e%2e/%2e%2e/secret.txt", "//etc/passwd",
        ]  # fmt: skip
        for path in refused:
            status, body = _get(url.group(0), path)
            assert status == 404, (path, status, body[:200])
            assert b"outside the run" not in body and b"SECRET" not in body, path
    finally:
        proc.terminate()
        proc.wait(timeout=60)
