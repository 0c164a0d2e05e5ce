"""No write, rename or delete passes through a symbolic link (issue 43, item 1): every command
that writes refuses a folder with a link where it writes, in one line, before any work; the
store and the manifest refuse a link made while a run holds the folder."""

from __future__ import annotations

import pandas as pd
import pytest
from matplotlib.figure import Figure
from typer.testing import CliRunner

from attnlimits.cli import app
from attnlimits.experiments import skeleton
from attnlimits.experiments.store import ResultStore
from safe_experiment import (
    ENTERED,
    EXPERIMENT,
    Cfg,
    counting_compute,
    link_refusal,
    make_link,
    outside_folder,
    snapshot,
    toy_claims,
    toy_figures,
)
from tiny_models import tiny_model_dir

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("registered_safe")  # the toy experiment as "safe"


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
        name="safe",
        title="Safe",
        config=Cfg,
        compute=counting_compute,
        figures=toy_figures,
        claims=toy_claims,
    )
    out = tmp_path / "run"
    skeleton.run(toy, Cfg(steps=2), out, progress=False)
    mine = outside_folder(tmp_path)
    before = snapshot(mine)
    link = make_link(out / rel.format(hash=params_hash({"steps": 2})), mine / target)
    ENTERED.clear()
    with pytest.raises(ValueError) as err:
        skeleton.run(toy, Cfg(steps=3 if fresh else 2), out, progress=False, fresh=fresh)
    assert str(err.value) == link_refusal(link)
    assert ENTERED == [], "the refusal came after the compute"
    assert snapshot(mine) == before, "the link's target was written or deleted"
    assert link.is_symlink()


def test_the_store_and_the_manifest_refuse_a_link_on_the_way(tmp_path):
    """The one check every writer makes (_paths.inside), met by each writer of a held folder:
    a table, a figure, a part, run.json, a page written beside them; and --fresh's deletion."""
    from attnlimits.experiments.store import atomic_write_text

    mine = outside_folder(tmp_path)
    before = snapshot(mine)
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
            assert str(err.value) == link_refusal(tmp_path / "run" / rel.rstrip("/"))
        store.manifest.listed.add("figures/values.png")  # as if a run had written it there
        store.manifest.remove({"figures/values.png"})
    assert snapshot(mine) == before


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
                mod, "EXPERIMENT", dataclasses.replace(mod.EXPERIMENT, compute=counting_compute)
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
    mine = outside_folder(tmp_path)
    before = snapshot(mine)
    tried = 0
    for command, argv in commands.items():
        for rel, target in {**links, **extra.get(command, {})}.items():
            v = tmp_path / "runs" / f"{command}-{rel}"
            if command == "report":  # a finished run to redraw
                skeleton.run(EXPERIMENT, Cfg(), v, progress=False)
            link = make_link(v / rel, mine / target)
            ENTERED.clear()
            args = [*argv, str(v)] if command == "report" else [*argv, "--out", str(v)]
            res = runner.invoke(app, args)
            errors = [line for line in res.output.splitlines() if line.startswith("error:")]
            assert (res.exit_code, errors) == (2, [f"error: {link_refusal(link)}"]), (
                command,
                rel,
                res.output,
            )
            assert res.output.strip().splitlines()[-1] == errors[0], (command, rel)
            assert ENTERED == [], f"{command} computed before refusing {rel}"
            assert snapshot(mine) == before, f"{command} touched the target of {rel}"
            assert link.is_symlink(), f"{command} removed the link {rel}"
            tried += 1
    from attnlimits.monitor import TABLE_NAME, AttentionMonitor

    for rel in (TABLE_NAME, "attention_monitor.html"):
        link = make_link(tmp_path / "mon" / rel, mine / "notes.txt")
        with pytest.raises(ValueError) as err:
            AttentionMonitor(out_dir=tmp_path / "mon")
        assert str(err.value) == link_refusal(link)
        link.unlink()
    with pytest.raises(ValueError) as err:  # a writer outside any held folder: the same check
        atomic_write_bytes(make_link(tmp_path / "page.html", mine / "notes.txt"), b"x")
    assert str(err.value) == link_refusal(tmp_path / "page.html")
    assert snapshot(mine) == before
    assert tried == 9 * 3 + 2
