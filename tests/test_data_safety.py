"""Nothing a user owns is ever deleted or written over (issue 32, items 1-3 and 11; issue 43,
item 2).

- ``--fresh`` removes only the files a previous run listed in its folder's manifest; a folder
  that never held a run, or holds a user's files where a run writes, is refused by name;
- a run that loses the start-up race to another process removes nothing of the winner's;
- an empty ``--out`` (or the current folder) is refused, from Python and from the command line;
- a resume names its text by content: the default book given by its path is the same input;
- ``attnlimits report`` refuses a user's files it would write over.

The rest of the class, by what it protects: every call in ``src/`` that can delete a file is a
reviewed one (tests/test_data_safety_deletions.py); no write, rename or delete passes through a
symbolic link (tests/test_data_safety_links.py); ``AttentionMonitor`` appends to its own table
and refuses another file of that name (tests/test_data_safety_monitor.py); ``attnlimits view
--port`` serves the page and the files it shows, nothing else (tests/test_view_server.py).
"""

from __future__ import annotations

import json
import threading
import warnings
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from attnlimits.cli import app
from attnlimits.corpus import load_text, text_sha256
from attnlimits.experiments import skeleton
from attnlimits.experiments.store import FolderBusyError, ResultStore
from safe_experiment import (
    CALLS,
    EXPERIMENT,
    USERS,
    Cfg,
    intact,
    link_refusal,
    make_link,
    snapshot,
    users_folder,
)
from tiny_models import tiny_model_dir

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("registered_safe")  # the toy experiment as "safe"


# ---- item 1: --fresh ---------------------------------------------------------------------------


@pytest.mark.parametrize("fresh", [True, False])
def test_a_folder_that_never_held_a_run_is_refused_naming_its_files(tmp_path, fresh):
    """The issue's scenario: figures/thesis.png, tables/data.csv and report.md in v."""
    v = users_folder(tmp_path / "v")
    why = "--fresh removes only a previous run's own results" if fresh else "write over them"
    with pytest.raises(
        ValueError, match=r"figures/thesis\.png, report\.md, tables/data\.csv"
    ) as err:
        skeleton.run(EXPERIMENT, Cfg(), v, progress=False, fresh=fresh)
    assert why in str(err.value) and "choose another --out" in str(err.value)
    intact(v)
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
    v = users_folder(tmp_path / "v")
    argv = ["compare", "--model", str(model), "--text", str(book_path), "--quick", "--fresh"]
    res = runner.invoke(app, [*argv, "--out", str(v)])
    assert res.exit_code == 2, res.output
    assert res.output.strip().splitlines() == [
        f"error: {v} holds files attnlimits did not write (figures/thesis.png, report.md, "
        "tables/data.csv); --fresh removes only a previous run's own results: choose another "
        "--out"
    ]
    intact(v)


def test_several_models_refuse_a_users_folder_before_any_runs(tmp_path, book_path):
    """``reproduce limitations`` with two models writes the joined report.md into --out after
    both ran: it overwrote a user's report.md there (it ran, and then wrote over it)."""
    model = tiny_model_dir(tmp_path, "llama", load_text(book_path)[:50_000], max_positions=256)
    v = users_folder(tmp_path / "v")
    argv = ["reproduce", "limitations", "--model", str(model), "--model", str(model) + "/"]
    res = runner.invoke(app, [*argv, "--quick", "--fresh", "--out", str(v)])
    assert res.exit_code == 2, res.output
    assert res.output.strip().splitlines() == [
        f"error: {v} holds files attnlimits did not write (report.md, tables/data.csv), where "
        "the joined report of the models goes: choose another --out"
    ]
    intact(v)
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
    v = users_folder(tmp_path / "v")
    with pytest.raises(ValueError, match=r"did not write \(figures/thesis.png|\(report.md"):
        run_sweep(tmp_path / "spec.toml", v, progress=False)
    intact(v)
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
    before = snapshot(v)
    res = runner.invoke(app, ["report", str(v)])
    assert res.exit_code == 2 and res.output.strip().splitlines() == [
        f"error: {v} holds files attnlimits did not write (figures/values.png, figures/values.svg, "
        "report.md, and more), which the report would write over: move them away, then rerun "
        "attnlimits report"
    ], res.output
    assert snapshot(v) == before, "the refused report wrote or listed something"
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
    link = make_link(side / "b", tmp_path / "elsewhere")
    before = snapshot(tmp_path / "elsewhere")
    res = runner.invoke(app, ["report", str(side)])
    assert res.exit_code == 2 and res.output.strip().splitlines() == [
        f"error: {link_refusal(link)}"
    ]
    assert snapshot(tmp_path / "elsewhere") == before
