"""The shape every experiment follows, and the one runner that drives it.

An experiment is a subpackage of :mod:`attnlimits.experiments` with four modules and one object:

- ``config.py``: a frozen ``@dataclass Config`` whose ``__post_init__`` checks every field (bad
  input fails before any work) and a ``quick()`` classmethod: the preset is applied first and
  the caller's explicit keyword arguments win;
- ``compute.py``: ``compute(config, store, *, progress) -> tables``, resumable through the
  store's parts (a rerun loads what a killed run saved); it may add to ``run.json`` with
  ``store.update_meta`` (model facts, input hashes);
- ``figures.py``: ``figures(tables, meta) -> {name: Figure}``;
- ``claims.py``: ``claims(tables, meta) -> DataFrame`` with columns :data:`CLAIM_COLUMNS`
  (and any grouping columns, e.g. ``x_source``), plus optional ``sections(tables, meta)``:
  Markdown lines for the report after the claims;
- ``__init__.py``: ``EXPERIMENT = Experiment(...)`` naming the pieces.

Figures, claims and sections read *tables* and ``run.json``'s contents (``meta``), never a
config or a model, so ``attnlimits report DIR`` redraws a report from a results folder
(:func:`redraw`) and no report module imports its experiment's computation.

:func:`run` owns everything around the experiment: the folder lock, the check that the folder
is a new one or holds a run of attnlimits', the check that a resumed run has the settings of the
stored one, ``run.json`` (parameters, versions, machine, wall times), tables (Parquet + CSV),
figures (PNG + SVG), the claims table, ``report.md`` and ``report.html`` (:mod:`attnlimits.view`),
and removing what a run that failed before writing anything useful had written. It deletes only
files the folder's manifest lists (what attnlimits wrote there; see
:mod:`attnlimits.experiments._owned`).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from attnlimits.experiments import _allocator, _owned, budget
from attnlimits.experiments.report import write_report
from attnlimits.experiments.store import (
    ResultStore,
    check_out,
    jsonable,
    listing,
    machine_info,
    package_versions,
)

__all__ = [
    "CLAIM_COLUMNS",
    "EXPERIMENTS",
    "REPORT_FILES",
    "Experiment",
    "Tables",
    "get",
    "redraw",
    "run",
    "settings_diff",
]

Tables = dict[str, pd.DataFrame]
#: What the report step writes besides the figures (relative to the run's folder).
REPORT_FILES = ("report.md", "report.html", "tables/claims.parquet", "tables/claims.csv")
Meta = Mapping[str, Any]
#: Columns every claims table has: the paper's statement, the paper's own number or wording,
#: what was measured here, the rule that turns the measurement into the verdict, the verdict.
CLAIM_COLUMNS = ("claim", "paper", "measured", "rule", "verdict")
#: Experiment name -> the subpackage holding ``EXPERIMENT`` (imported only when asked for).
EXPERIMENTS = {
    "limitations": "attnlimits.experiments.limitations",
    "softmax-not-enough": "attnlimits.experiments.softmax_not_enough",
    "long-context": "attnlimits.experiments.long_context",
    "scan": "attnlimits.experiments.scan",
    "compare": "attnlimits.experiments.compare",
    "clrs-text": "attnlimits.experiments.clrs_text",
}


def _no_sections(tables: Tables, meta: Meta) -> list[str]:
    return []


@dataclass(frozen=True)
class Experiment:
    """The pieces of one experiment (see the module docstring for each one's contract)."""

    name: str  # the CLI's name and run.json's "experiment"; a key of EXPERIMENTS
    title: str  # the report's heading
    config: type  # the frozen Config dataclass
    compute: Callable[..., Tables]
    figures: Callable[[Tables, Meta], dict[str, Figure]]
    claims: Callable[[Tables, Meta], pd.DataFrame]
    sections: Callable[[Tables, Meta], list[str]] = _no_sections
    #: config -> its memory and time, checked before any work (:mod:`.budget`)
    estimate: Callable[[Any], budget.Estimate] | None = None
    #: per claim, what decides it: (pattern searched in the claim's text, figure names, table
    #: names); report.html links each verdict to them (:data:`attnlimits.view.pages.Evidence`)
    evidence: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()
    #: (tables, meta) -> the views of its own on report.html (:class:`attnlimits.view.Page`);
    #: None: its presets (:mod:`.presets`)
    page: Callable[[Any, Any], Any] | None = None


def get(name: str) -> Experiment:
    """The experiment registered as ``name`` (a key of :data:`EXPERIMENTS`)."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}")
    module = importlib.import_module(EXPERIMENTS[name])
    return module.EXPERIMENT


def settings_diff(
    stored: Mapping[str, Any], config: Any, meta: Mapping[str, Any] | None = None
) -> list[str]:
    """The settings in which ``config`` differs from a stored run's ``params`` (field names).

    The ``text`` is compared by content, not by how its path is spelled: the sha256 that the
    stored run's ``run.json`` (``meta``) recorded for the text it read, else that of the text
    its path names now, against the text ``config`` names. A text ``config`` names that cannot
    be read raises its own error (``FileNotFoundError``, ``ValueError``).
    """
    now = jsonable(config)
    keys = sorted(set(stored) | set(now))
    differ = [k for k in keys if k != "text" and stored.get(k) != now.get(k)]
    if ("text" in stored or "text" in now) and not _same_text(stored, now, meta or {}):
        differ = sorted([*differ, "text"])
    return differ


def _same_text(stored: Mapping[str, Any], now: Mapping[str, Any], meta: Mapping[str, Any]) -> bool:
    from attnlimits.corpus import load_text, text_sha256

    recorded = meta.get("text")
    then = recorded.get("sha256") if isinstance(recorded, Mapping) else None
    if then is None and stored.get("text") == now.get("text"):
        return True  # nothing recorded to compare with: the same path is the same input
    if then is None:
        try:
            then = text_sha256(load_text(stored.get("text")))
        except (OSError, ValueError):  # the stored run's text is gone: not the same input
            return False
    return then == text_sha256(load_text(now.get("text")))


def _check_config(config: Any, experiment: Experiment) -> None:
    if not (is_dataclass(config) and isinstance(config, experiment.config)):
        raise TypeError(
            f"{experiment.name} takes a {experiment.config.__name__}, got {type(config).__name__}"
        )


def _take(store: ResultStore, experiment: Experiment, config: Any, fresh: bool) -> None:
    """Check that the folder (locked) may take this run, and with ``fresh`` delete the previous
    run's own files. Refuses with a ``ValueError`` a folder whose files where a run writes are
    not attnlimits', one that holds a sweep or another kind of record, and (unless ``fresh``)
    a run with other settings, naming them."""
    out, meta = store.root, store.meta
    if not meta:  # no run here: nothing but attnlimits' own files where a run writes
        foreign = store.foreign_files()
        if foreign:
            why = (
                "--fresh removes only a previous run's own results"
                if fresh
                else "a run would write over them"
            )
            raise ValueError(
                f"{out} holds files attnlimits did not write ({listing(foreign)}); "
                f"{why}: choose another --out"
            )
        if fresh:
            store.remove_listed()  # at most what a run killed before its run.json wrote
        return
    name, params = meta.get("experiment"), meta.get("params")
    if name not in EXPERIMENTS or not isinstance(params, dict):
        what = f"a {name} folder" if name == "sweep" else "a run.json attnlimits did not write"
        raise ValueError(f"{out} holds {what}, not an experiment's run: choose another --out")
    if fresh:
        if "run.json" not in store.manifest.listed:
            raise ValueError(
                f"{out} holds a run written before attnlimits listed the files it writes, so "
                "--fresh cannot tell them from yours: remove it yourself, or choose another --out"
            )
        store.remove_listed()
        kept = store.foreign_files()
        if kept:
            warnings.warn(
                f"--fresh kept files in {out} that attnlimits did not write: {listing(kept)}",
                stacklevel=3,
            )
        return
    differ = settings_diff(params, config, meta)
    if name != experiment.name:
        differ = ["experiment", *differ]
    if differ:
        raise ValueError(
            f"{out} holds a run with other settings ({', '.join(differ)}); "
            "pass --fresh to start afresh there, or another --out"
        )


def _useful(store: ResultStore) -> bool:
    """Whether a failed run leaves something to resume from: parts, tables or checkpoints that
    attnlimits wrote (by this run or an earlier one)."""
    places = ("parts/", "tables/", "checkpoints/")
    listed = store.manifest.listed
    return any(rel.startswith(places) and (store.root / rel).is_file() for rel in listed)


def run(
    experiment: Experiment,
    config: Any,
    out: Path,
    *,
    progress: bool = True,
    fresh: bool = False,
    yes: bool = True,
) -> Path:
    """Run ``experiment`` with ``config`` into the folder ``out``; return ``report.md``'s path.

    First, before any folder, text or model is touched, the experiment's estimate is checked
    (:func:`.budget.check`): a run whose memory cannot fit, or one longer than an hour unless
    ``yes``, raises :class:`~attnlimits.experiments.budget.BudgetError` (a ``ValueError``).

    ``out`` is a new folder, one holding a run, or one whose files where a run writes
    (``run.json``, ``report.md``, ``report.html``, ``tables/``, ``figures/``, ``parts/``,
    ``checkpoints/``) are all attnlimits'; anything else, and an empty ``out`` or the current
    folder, is refused with a ``ValueError`` naming what was found. Resumes an interrupted run
    with the same settings. A run with other settings is refused with a ``ValueError`` naming
    them, unless ``fresh`` (start afresh, deleting the files that run wrote and nothing else).
    A folder in use by another process raises
    :class:`~attnlimits.experiments.store.FolderBusyError`. After a failure that saved nothing
    to resume from, the files this call wrote are deleted, and the folder if this call created
    it and it holds nothing else.
    """
    _check_config(config, experiment)
    out = check_out(out)
    if experiment.estimate is not None:  # before anything exists: a refusal leaves nothing
        budget.check(experiment.estimate(config), yes=yes, say=progress)
    _allocator.tune()  # freed temporaries reused, not faulted in again (recorded in run.json)
    new = _owned.make_folder(out)  # what this call created: all it may ever remove of folders
    try:
        store = ResultStore(out)
    except BaseException:
        _owned.remove_empty(new)
        raise
    with store.lock():  # first: until it is held the folder may be another process's
        try:
            _take(store, experiment, config, fresh)
            store.update_meta(
                experiment=experiment.name,
                params=config,
                versions=package_versions(),
                machine=machine_info(),
            )
            with store.timed("compute"):
                tables = experiment.compute(config, store, progress=progress)
            _record_gpu_memory(store)
            for name, df in tables.items():
                store.write_table(df, name)
            return _report(experiment, store, tables)
        except BaseException:
            if not _useful(store):
                store.discard(new)
            raise


def _record_gpu_memory(store: ResultStore) -> None:
    """Where this process used CUDA, its peak allocated GPU memory in ``run.json`` (bytes; the
    run's own, on the current device, since ``torch.cuda`` counts from process start)."""
    import torch

    if torch.cuda.is_initialized():
        store.update_meta(cuda_peak_allocated_bytes=int(torch.cuda.max_memory_allocated()))


def _report(
    experiment: Experiment, store: ResultStore, tables: Tables, *, redrawn: bool = False
) -> Path:
    """Draw the figures, claims and sections, then write them, the page and ``report.md``.
    ``redrawn`` (``attnlimits report DIR``): first refuse, naming them, files there that the
    report would write over and the folder's manifest does not list (a user's own)."""
    meta = dict(store.meta)
    with store.timed("report"):
        figures = experiment.figures(tables, meta)
        claims = experiment.claims(tables, meta)
        missing = [c for c in CLAIM_COLUMNS if c not in claims]
        if missing:
            raise AssertionError(f"{experiment.name}'s claims lack columns {missing}")
        sections = experiment.sections(tables, meta)
        if redrawn:
            drawn = [f"figures/{n}.{ext}" for n in figures for ext in ("png", "svg")]
            theirs = store.unlisted([*REPORT_FILES, *drawn])
            if theirs:
                raise ValueError(
                    f"{store.root} holds files attnlimits did not write ({listing(theirs)}), "
                    "which the report would write over: move them away, then rerun attnlimits "
                    "report"
                )
        for name, fig in figures.items():
            store.save_figure(fig, name)
        store.write_table(claims, "claims")
        from attnlimits.experiments.presets import page_of  # the same tables as a page
        from attnlimits.view import RunPage, write_page

        page = page_of(experiment.name, experiment.page, tables, meta)
        run = RunPage(
            experiment.title, tables, meta, claims, list(figures), sections, experiment.evidence
        )
        write_page(store.root, replace(run, page=page))
    return write_report(store, experiment.title, claims, list(figures), sections)


class _SavedTables(dict[str, pd.DataFrame]):
    """A finished run's tables; one the report needs but the folder lacks is a ``ValueError``
    naming the folder and the table, not a ``KeyError``."""

    def __init__(self, folder: Path, tables: Tables) -> None:
        super().__init__(tables)
        self.folder = folder

    def __missing__(self, name: str) -> pd.DataFrame:
        raise ValueError(
            f"{self.folder} has no {name}.parquet, which the report needs (it has "
            f"{listing(sorted(self)) or 'none'}): the run did not finish; rerun its command"
        )


def redraw(out: Path) -> Path:
    """Redraw the figures, claims, ``report.md`` and ``report.html`` of a finished run from its
    saved tables.

    A folder without ``run.json`` and ``tables/``, a ``run.json`` that is corrupt or names no
    experiment, missing tables, a symbolic link where the report writes, and files there that
    attnlimits did not write (not listed in the folder's manifest) raise a ``ValueError``
    naming the file, link or table; nothing is written then."""
    out = check_out(out, "folder", here=True)
    if not (out / "run.json").is_file() or not (out / "tables").is_dir():
        raise ValueError(f"{out} holds no finished run (no run.json and tables/)")
    store = ResultStore(out)
    with store.lock():
        name, meta_path = store.meta.get("experiment"), out / "run.json"
        if name not in EXPERIMENTS or not isinstance(store.meta.get("params"), dict):
            raise ValueError(
                f"{meta_path} is not an experiment run's record (experiment {name!r}); "
                f"attnlimits report redraws runs of {', '.join(EXPERIMENTS)}"
            )
        experiment = get(str(name))
        saved = {
            p.stem: pd.read_parquet(p)
            for p in sorted((out / "tables").glob("*.parquet"))
            if p.stem != "claims"
        }
        if not saved:
            raise ValueError(
                f"{out / 'tables'} holds no tables: the run did not finish; rerun its command "
                "to resume it"
            )
        return _report(experiment, store, _SavedTables(out / "tables", saved), redrawn=True)


def preset_values(
    config_type: type, preset: Mapping[str, Any], given: Mapping[str, Any], what: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Config's keyword values: ``preset`` first, then the caller's ``given`` values (None
    means not given; unknown names raise ``TypeError``). A named model whose context is short
    (:data:`~attnlimits.capture.NAMED_CONTEXT`) keeps the default ``lengths`` up to it unless
    lengths were given. Returns (values, the given values)."""
    from attnlimits.capture import NAMED_CONTEXT

    given = {k: v for k, v in given.items() if v is not None}
    names = {f.name for f in fields(config_type)}
    unknown = sorted(set(given) - names)
    if unknown:
        raise TypeError(f"unknown {what} setting(s) {unknown}; known: {sorted(names)}")
    values = {**preset, **given}
    context = NAMED_CONTEXT.get(str(values.get("model", getattr(config_type, "model", ""))))
    if context and "lengths" in names and "lengths" not in given:
        default = values.get("lengths", getattr(config_type, "lengths", ()))
        values["lengths"] = tuple(n for n in default if n <= context) or (context,)
    return values, given


def config_fields(config_type: type) -> list[str]:
    """The field names of a Config dataclass (what the CLI may set)."""
    return [f.name for f in fields(config_type)]
