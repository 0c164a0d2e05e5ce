"""A toy experiment registered as "safe" (the ``registered_safe`` fixture in tests/conftest.py)
and a user's files and folders, for the data-safety tests (tests/test_data_safety*.py, the
monitor's and the view server's refusals): nothing a user owns is ever deleted, written over or
served."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from attnlimits.corpus import load_text, text_sha256
from attnlimits.experiments import skeleton
from attnlimits.experiments.store import ResultStore

USERS = {"figures/thesis.png": b"my thesis figure", "tables/data.csv": b"a,b\n1,2\n"}
USERS |= {"report.md": b"# my report\n"}


@dataclass(frozen=True)
class Cfg:
    steps: int = 2
    text: Path | None = None
    reads_text: bool = False  # record the text's sha256 in run.json, as the experiments do
    fail: bool = False


CALLS: list[int] = []


def toy_compute(cfg: Cfg, store: ResultStore, *, progress: bool = True) -> dict[str, pd.DataFrame]:
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


def toy_figures(tables, meta):
    fig = Figure()
    fig.add_subplot().plot(tables["values"]["step"])
    return {"values": fig}


def toy_claims(tables, meta):
    row = {"claim": "n", "paper": "-", "measured": len(tables["values"]), "rule": "-"}
    return pd.DataFrame([row | {"verdict": "n/a"}])


EXPERIMENT = skeleton.Experiment(
    name="safe",
    title="Safe",
    config=Cfg,
    compute=toy_compute,
    figures=toy_figures,
    claims=toy_claims,
)


def users_folder(root: Path) -> Path:
    """``root`` holding a user's own files (:data:`USERS`), where a run would write."""
    for rel, data in USERS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def intact(root: Path) -> None:
    """Every file of :data:`USERS` under ``root`` is still there, byte for byte."""
    for rel, data in USERS.items():
        assert (root / rel).read_bytes() == data, f"{rel} was deleted or written over"


ENTERED: list[str] = []  # compute() calls of the experiments, patched (no model is loaded)


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path below ``root`` (not following links) with a file's bytes, and ``root``'s."""
    paths = [root, *root.rglob("*")]
    return {
        p.relative_to(root.parent).as_posix(): p.read_bytes() if p.is_file() else None
        for p in paths
    }


def outside_folder(tmp_path: Path) -> Path:
    """A user's folder outside every run folder: a file and a subfolder with a figure."""
    mine = tmp_path / "users"
    (mine / "figs").mkdir(parents=True)
    (mine / "notes.txt").write_text("my notes")
    (mine / "figs" / "values.png").write_bytes(b"my own figure")
    (mine / "figs" / "values.svg").write_bytes(b"<svg>mine</svg>")
    return mine


def make_link(path: Path, target: Path) -> Path:
    """``path`` made a symbolic link to ``target`` (whatever was at ``path`` moved aside)."""
    if path.is_dir() and not path.is_symlink():
        path.rename(path.with_name(path.name + ".moved"))
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


def link_refusal(link: Path) -> str:
    """The one line every writer refuses ``link`` with."""
    import os

    return (
        f"{link} is a symbolic link (to {os.readlink(link)}); attnlimits writes, renames and "
        "deletes nothing through a link: remove it, or use another folder"
    )


def counting_compute(cfg, store, *, progress=True):
    """A compute that logs its call in :data:`ENTERED`: the toy's computes, an experiment's
    own raises (no model is loaded)."""
    ENTERED.append(type(cfg).__name__)
    if not isinstance(cfg, Cfg):  # an experiment's own: it must never get this far
        raise RuntimeError(f"{type(cfg).__module__} computed")
    return toy_compute(cfg, store, progress=progress)
