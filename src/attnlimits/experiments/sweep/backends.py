"""Run a sweep's cells, one after another or as Ray tasks; each cell is one skeleton run.

Each cell runs :func:`attnlimits.experiments.skeleton.run` into ``out/cells/<cell id>``, so
everything the skeleton gives one run holds per cell: the folder lock, resuming from saved
parts (a cell that a killed worker left half-done picks up where it stopped when Ray retries
it, or when the sweep is run again), ``run.json``, tables and ``report.md``. A cell already
finished with the same settings is skipped without starting any work. A cell that fails is
recorded with its error; the other cells go on.

A process that runs cells keeps each model it loads (:func:`attnlimits.capture.keep_models`):
the serial backend for the sweep, a Ray worker for its life, so a model is loaded once per
worker, not once per cell. On Ray the driver reads each cell's text once and puts it in Ray's
object store (:func:`attnlimits.corpus.pack_text`): workers on other machines need no copy.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from attnlimits.experiments.store import read_run_json
from attnlimits.experiments.sweep.spec import Cell

__all__ = [
    "BACKENDS",
    "RAY_MISSING",
    "CellResult",
    "cell_folder",
    "check_address",
    "check_backend",
    "finished",
    "run_cells",
]

BACKENDS = ("serial", "ray")
RAY_MISSING = "--backend ray needs Ray: pip install 'attnlimits[ray]'"
#: Status of a cell after :func:`run_cells`: ran now, finished before (skipped), or failed.
DONE, SKIPPED, FAILED = "done", "skipped", "failed"
_CONNECT_TIMEOUT = 5.0  # seconds to reach a cluster's address before Ray is asked to


@dataclass(frozen=True)
class CellResult:
    """How one cell went in this sweep run."""

    status: str  # done, skipped or failed
    error: str | None = None  # the error of a failed cell, one line
    seconds: float | None = None  # wall time of this run of the cell (None: skipped)
    worker: str | None = None  # "host:pid" of the process that ran it
    loaded_models: int | None = None  # models it loaded from disk (0: its worker kept them)


Results = dict[str, CellResult]


def cell_folder(out: Path, cell: Cell) -> Path:
    return Path(out) / "cells" / cell.id


def finished(experiment: Any, cell: Cell, folder: Path) -> bool:
    """Whether ``folder`` holds a finished run of ``cell``: its report and the same settings."""
    from attnlimits.experiments.skeleton import settings_diff

    meta_path = folder / "run.json"
    if not (folder / "report.md").is_file() or not meta_path.is_file():
        return False
    try:  # a corrupt run.json or a text that cannot be read: the cell's run says which
        meta = read_run_json(meta_path)
        return meta.get("experiment") == experiment.name and not settings_diff(
            meta.get("params", {}), cell.config, meta
        )
    except (OSError, ValueError):
        return False


def _run_one(name: str, config: Any, folder: str) -> CellResult:
    """One cell, in this process. Never raises an ordinary error, so a Ray task retries only
    when its worker dies."""
    from attnlimits.capture import models_loaded
    from attnlimits.experiments import skeleton

    start, before = time.perf_counter(), models_loaded()
    try:
        skeleton.run(skeleton.get(name), config, Path(folder), progress=False)
        status, error = DONE, None
    except Exception as err:
        status, error = FAILED, f"{type(err).__name__}: {err}".splitlines()[0]
    return CellResult(
        status,
        error,
        round(time.perf_counter() - start, 2),
        f"{socket.gethostname()}:{os.getpid()}",
        models_loaded() - before,
    )


def _ray_cell(name: str, config: Any, folder: str, texts: dict[str, Any]) -> CellResult:
    """One cell as a Ray task: this worker keeps its models, and reads the shipped texts."""
    from attnlimits.capture import keep_models_in_this_process
    from attnlimits.corpus import unpack_text

    keep_models_in_this_process()
    unpack_text(texts)
    return _run_one(name, config, folder)


def check_backend(backend: str) -> None:
    """``ValueError`` for an unknown backend, ``ImportError`` for ray where Ray is missing."""
    if backend not in BACKENDS:
        raise ValueError(f"--backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "ray":
        _import_ray()


def check_address(address: str | None) -> None:
    """A cluster address (``host:port`` or ``ray://host:port``) that answers within 5 s, else
    ``ValueError`` at once (Ray itself retries an unreachable address for minutes); ``None``,
    ``auto`` and ``local`` pass."""
    if address in (None, "", "auto", "local"):
        return
    host, _, port = str(address).split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--address must be host:port or ray://host:port, got {address!r}")
    try:
        socket.create_connection((host.strip("[]"), int(port)), _CONNECT_TIMEOUT).close()
    except OSError as err:
        raise ValueError(
            f"cannot reach Ray at {address} ({err.strerror or type(err).__name__}); start the "
            "cluster (ray start --head) or check the address and that its port is open"
        ) from None


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError(RAY_MISSING) from None
    return ray


def _postfix(bar: Any, results: Results, running: int) -> None:
    statuses = [r.status for r in results.values()]
    failed = statuses.count(FAILED)
    bar.set_postfix(done=len(statuses) - failed, running=running, failed=failed)


def _tick(bar: Any, results: Results, running: int = 0) -> None:
    _postfix(bar, results, running)
    bar.update()


def _serial(experiment: Any, todo: Sequence[Cell], out: Path, bar: Any, results: Results) -> None:
    from attnlimits.capture import keep_models

    with keep_models():
        for cell in todo:
            _postfix(bar, results, running=1)
            results[cell.id] = _run_one(experiment.name, cell.config, str(cell_folder(out, cell)))
            _tick(bar, results)


def _texts(todo: Sequence[Cell]) -> dict[str, Any]:
    """Each distinct text the cells read, as raw bytes (a missing one: the cell says so)."""
    from attnlimits.corpus import pack_text

    texts: dict[str, Any] = {}
    for source in {getattr(c.config, "text", None) for c in todo if hasattr(c.config, "text")}:
        try:
            texts |= pack_text(source)
        except OSError:
            continue  # the cell fails in its worker with load_text's own message
    return texts


def _slots(ray: Any, resources: dict[str, float]) -> int:
    """How many cells the cluster runs at once, from its CPUs and GPUs (for the progress bar)."""
    total = ray.cluster_resources()
    fits = [total.get(k.upper(), 0.0) // resources[k] for k in ("cpus", "gpus") if resources[k]]
    return max(1, int(min(fits))) if fits else 1


def _ray(
    experiment: Any,
    todo: Sequence[Cell],
    out: Path,
    bar: Any,
    results: Results,
    address: str | None,
    resources: dict[str, float],
) -> None:
    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        where = address or os.environ.get("RAY_ADDRESS")
        try:
            # no INFO line on starting a local runtime, no workers' or raylet's logs here
            ray.init(
                address=where,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.WARNING,
            )
        except Exception as err:  # Ray raises ConnectionError, RuntimeError, ... here
            text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            where = where or "a local runtime"
            raise ValueError(f"cannot start or reach Ray at {where}: {text}") from None
    try:
        options: dict[str, Any] = {
            "num_cpus": resources["cpus"],
            "num_gpus": resources["gpus"],
            "max_retries": int(resources["retries"]),
        }
        if resources.get("memory_gb"):
            options["memory"] = int(resources["memory_gb"] * 2**30)
        task = ray.remote(**options)(_ray_cell)
        texts = ray.put(_texts(todo))  # once, whatever the number of cells and workers
        pending = {
            task.remote(experiment.name, cell.config, str(cell_folder(out, cell)), texts): cell
            for cell in todo
        }
        slots = _slots(ray, resources)
        _postfix(bar, results, running=min(slots, len(pending)))
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            cell = pending.pop(ready[0])
            try:
                results[cell.id] = ray.get(ready[0])
            except Exception as err:  # the worker died on every try (killed, out of memory)
                error = f"{type(err).__name__}: {err}".splitlines()[0]
                results[cell.id] = CellResult(FAILED, error)
            _tick(bar, results, running=min(slots, len(pending)))
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
    resources: dict[str, float] | None = None,
    progress: bool = True,
) -> Results:
    """Run every unfinished cell of a sweep; return cell id -> :class:`CellResult`.

    ``backend`` is ``"serial"`` (in this process, in order) or ``"ray"``: one task per cell on
    the Ray runtime at ``address``, else ``$RAY_ADDRESS``, else a local one started for this
    sweep. Each task asks for ``resources`` (the spec's ``[resources]``: cpus, gpus, memory_gb,
    retries; default one CPU, two retries if its worker dies).
    """
    check_backend(backend)
    if backend == "ray" and not _import_ray().is_initialized():
        check_address(address or os.environ.get("RAY_ADDRESS"))
    out = Path(out)
    resources = {"cpus": 1.0, "gpus": 0.0, "retries": 2} | dict(resources or {})
    results: Results = {
        c.id: CellResult(SKIPPED) for c in cells if finished(experiment, c, cell_folder(out, c))
    }
    todo = [c for c in cells if c.id not in results]
    bar = tqdm(
        total=len(cells),
        initial=len(results),
        desc=f"sweep ({backend})",
        unit="cell",
        disable=not progress,
    )
    with bar:
        if todo and backend == "serial":
            _serial(experiment, todo, out, bar, results)
        elif todo:
            _ray(experiment, todo, out, bar, results, address, resources)
    return {c.id: results[c.id] for c in cells}
