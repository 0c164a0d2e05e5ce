"""Run a sweep's cells, one after another or as Ray tasks; each cell is one skeleton run.

Each cell runs :func:`attnlimits.experiments.skeleton.run` into ``out/cells/<cell id>``, so
everything the skeleton gives one run holds per cell: the folder lock, resuming from saved
parts (a cell that a killed worker left half-done picks up where it stopped when Ray retries
it, or when the sweep is run again), ``run.json``, tables and ``report.md``. A cell already
finished with the same settings is skipped without starting any work. A cell that fails is
recorded with its error; the other cells go on.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from attnlimits.experiments.sweep.spec import Cell

__all__ = ["BACKENDS", "RAY_MISSING", "cell_folder", "check_backend", "finished", "run_cells"]

BACKENDS = ("serial", "ray")
RAY_MISSING = "--backend ray needs Ray: pip install 'attnlimits[ray]'"
#: Status of a cell after :func:`run_cells`: ran now, finished before (skipped), or failed.
DONE, SKIPPED, FAILED = "done", "skipped", "failed"
#: Cell id -> (status, error text or None).
Results = dict[str, tuple[str, str | None]]


def cell_folder(out: Path, cell: Cell) -> Path:
    return Path(out) / "cells" / cell.id


def finished(experiment: Any, cell: Cell, folder: Path) -> bool:
    """Whether ``folder`` holds a finished run of ``cell``: its report and the same settings."""
    from attnlimits.experiments.skeleton import settings_diff

    meta_path = folder / "run.json"
    if not (folder / "report.md").is_file() or not meta_path.is_file():
        return False
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return False
    return meta.get("experiment") == experiment.name and not settings_diff(
        meta.get("params", {}), cell.config
    )


def _run_one(name: str, config: Any, folder: str) -> tuple[str, str | None]:
    """One cell, in this process: (status, error text or None). Never raises an ordinary error,
    so a Ray task retries only when its worker dies."""
    from attnlimits.experiments import skeleton

    try:
        skeleton.run(skeleton.get(name), config, Path(folder), progress=False)
    except Exception as err:
        return FAILED, f"{type(err).__name__}: {err}"
    return DONE, None


def check_backend(backend: str) -> None:
    """``ValueError`` for an unknown backend, ``ImportError`` for ray where Ray is missing."""
    if backend not in BACKENDS:
        raise ValueError(f"--backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "ray":
        _import_ray()


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError(RAY_MISSING) from None
    return ray


def _tick(bar: Any, results: Results) -> None:
    statuses = [s for s, _ in results.values()]
    bar.set_postfix(done=len(statuses) - statuses.count(FAILED), failed=statuses.count(FAILED))
    bar.update()


def _serial(experiment: Any, todo: Sequence[Cell], out: Path, bar: Any, results: Results) -> None:
    for cell in todo:
        results[cell.id] = _run_one(experiment.name, cell.config, str(cell_folder(out, cell)))
        _tick(bar, results)


def _ray(
    experiment: Any,
    todo: Sequence[Cell],
    out: Path,
    bar: Any,
    results: Results,
    address: str | None,
) -> None:
    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        where = address or os.environ.get("RAY_ADDRESS")
        try:
            ray.init(address=where, include_dashboard=False, log_to_driver=False)
        except Exception as err:  # Ray raises ConnectionError, RuntimeError, ... here
            text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            where = where or "a local runtime"
            raise ValueError(f"cannot start or reach Ray at {where}: {text}") from None
    try:
        task = ray.remote(num_cpus=1, max_retries=2)(_run_one)
        pending = {
            task.remote(experiment.name, cell.config, str(cell_folder(out, cell))): cell
            for cell in todo
        }
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            cell = pending.pop(ready[0])
            try:
                results[cell.id] = ray.get(ready[0])
            except Exception as err:  # the worker died on every try (killed, out of memory)
                results[cell.id] = (FAILED, f"{type(err).__name__}: {err}".splitlines()[0])
            _tick(bar, results)
    finally:
        if started:
            ray.shutdown()


def run_cells(
    experiment: Any,
    cells: Sequence[Cell],
    out: Path,
    backend: str = "serial",
    address: str | None = None,
    *,
    progress: bool = True,
) -> Results:
    """Run every unfinished cell of a sweep; return cell id -> (status, error text or None).

    ``backend`` is ``"serial"`` (in this process, in order) or ``"ray"``: one task per cell
    (one CPU each, retried twice if its worker dies) on the Ray runtime at ``address``, else
    ``$RAY_ADDRESS``, else a local one started for this sweep.
    """
    check_backend(backend)
    out = Path(out)
    results: Results = {
        c.id: (SKIPPED, None) for c in cells if finished(experiment, c, cell_folder(out, c))
    }
    todo = [c for c in cells if c.id not in results]
    bar = tqdm(total=len(cells), initial=len(results), desc=f"sweep ({backend})", unit="cell",
               disable=not progress)  # fmt: skip
    with bar:
        if todo and backend == "serial":
            _serial(experiment, todo, out, bar, results)
        elif todo:
            _ray(experiment, todo, out, bar, results, address)
    return {c.id: results[c.id] for c in cells}
