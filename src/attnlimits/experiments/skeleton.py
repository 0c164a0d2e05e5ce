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

:func:`run` owns everything around the experiment: the folder lock, the check that a resumed
run has the settings of the stored one, ``run.json`` (parameters, versions, machine, wall
times), tables (Parquet + CSV), figures (PNG + SVG), the claims table and ``report.md``, and
removing what a run that failed before writing anything useful had created.
"""

from __future__ import annotations

import importlib
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from attnlimits.experiments import _allocator, budget
from attnlimits.experiments.report import write_report
from attnlimits.experiments.store import ResultStore, jsonable, machine_info, package_versions

__all__ = [
    "CLAIM_COLUMNS",
    "EXPERIMENTS",
    "Experiment",
    "Tables",
    "get",
    "redraw",
    "run",
    "settings_diff",
]

Tables = dict[str, pd.DataFrame]
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


def get(name: str) -> Experiment:
    """The experiment registered as ``name`` (a key of :data:`EXPERIMENTS`)."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}")
    module = importlib.import_module(EXPERIMENTS[name])
    return module.EXPERIMENT


def settings_diff(stored: Mapping[str, Any], config: Any) -> list[str]:
    """The settings in which ``config`` differs from a stored run's ``params`` (field names)."""
    now = jsonable(config)
    keys = sorted(set(stored) | set(now))
    return [k for k in keys if stored.get(k) != now.get(k)]


def _check_config(config: Any, experiment: Experiment) -> None:
    if not (is_dataclass(config) and isinstance(config, experiment.config)):
        raise TypeError(
            f"{experiment.name} takes a {experiment.config.__name__}, got {type(config).__name__}"
        )


def _clear(store: ResultStore) -> None:
    """Remove a previous run's results (``--fresh``): parts, tables, figures, report, run.json."""
    for name in ("parts", "tables", "figures", "checkpoints"):
        shutil.rmtree(store.root / name, ignore_errors=True)
    for name in ("report.md", "run.json"):
        (store.root / name).unlink(missing_ok=True)
    store.meta = {}


def _remove_if_useless(store: ResultStore, created: bool) -> None:
    """After a failure: remove what this run created if nothing useful (no part) was saved."""
    if store.n_parts() or (store.root / "tables").exists():
        return
    if created:
        shutil.rmtree(store.root, ignore_errors=True)
    else:
        (store.root / "run.json").unlink(missing_ok=True)


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

    Resumes an interrupted run with the same settings. A folder holding a run with other
    settings is refused with a ``ValueError`` naming them, unless ``fresh`` (start afresh,
    deleting that run's results). A folder in use by another process raises
    :class:`~attnlimits.experiments.store.FolderBusyError`.
    """
    _check_config(config, experiment)
    if experiment.estimate is not None:  # before anything exists: a refusal leaves nothing
        budget.check(experiment.estimate(config), yes=yes, say=progress)
    _allocator.tune()  # freed temporaries reused, not faulted in again (recorded in run.json)
    out = Path(out)
    created = not out.exists()
    store = ResultStore(out)
    started = False  # this run has written its run.json: on failure, clean up after it
    try:
        with store.lock():
            stored = store.meta.get("params")
            if fresh:
                _clear(store)
            elif stored is not None:
                differ = settings_diff(stored, config)
                if store.meta.get("experiment") != experiment.name:
                    differ = ["experiment", *differ]
                if differ:
                    raise ValueError(
                        f"{out} holds a run with other settings ({', '.join(differ)}); "
                        "pass --fresh to start afresh there, or another --out"
                    )
            store.update_meta(
                experiment=experiment.name,
                params=config,
                versions=package_versions(),
                machine=machine_info(),
            )
            started = True
            with store.timed("compute"):
                tables = experiment.compute(config, store, progress=progress)
            _record_gpu_memory(store)
            for name, df in tables.items():
                store.write_table(df, name)
            return _report(experiment, store, tables)
    except BaseException:
        if started:
            _remove_if_useless(store, created)
        elif created:
            shutil.rmtree(out, ignore_errors=True)
        raise


def _record_gpu_memory(store: ResultStore) -> None:
    """Where this process used CUDA, its peak allocated GPU memory in ``run.json`` (bytes; the
    run's own, on the current device, since ``torch.cuda`` counts from process start)."""
    import torch

    if torch.cuda.is_initialized():
        store.update_meta(cuda_peak_allocated_bytes=int(torch.cuda.max_memory_allocated()))


def _report(experiment: Experiment, store: ResultStore, tables: Tables) -> Path:
    meta = dict(store.meta)
    with store.timed("report"):
        figures = experiment.figures(tables, meta)
        for name, fig in figures.items():
            store.save_figure(fig, name)
        claims = experiment.claims(tables, meta)
        missing = [c for c in CLAIM_COLUMNS if c not in claims]
        if missing:
            raise AssertionError(f"{experiment.name}'s claims lack columns {missing}")
        store.write_table(claims, "claims")
        sections = experiment.sections(tables, meta)
    return write_report(store, experiment.title, claims, list(figures), sections)


def redraw(out: Path) -> Path:
    """Redraw the figures, claims and ``report.md`` of a finished run from its saved tables."""
    out = Path(out)
    if not (out / "run.json").is_file() or not (out / "tables").is_dir():
        raise ValueError(f"{out} holds no finished run (no run.json and tables/)")
    store = ResultStore(out)
    with store.lock():
        experiment = get(str(store.meta.get("experiment")))
        tables = {
            p.stem: pd.read_parquet(p)
            for p in sorted((out / "tables").glob("*.parquet"))
            if p.stem != "claims"
        }
        return _report(experiment, store, tables)


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
