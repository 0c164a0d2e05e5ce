"""One sweep end to end: check the spec, run the cells, merge their tables, write the report."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from attnlimits.experiments import budget
from attnlimits.experiments.store import ResultStore, check_out
from attnlimits.experiments.sweep.backends import (
    FAILED,
    cell_folder,
    check_address,
    check_backend,
    finished,
    run_cells,
)
from attnlimits.experiments.sweep.merge import merge_tables, write_sweep_report
from attnlimits.experiments.sweep.spec import Spec, load_spec

__all__ = ["default_out", "run_sweep", "sweep_estimate"]


def default_out(spec_path: Path | str) -> Path:
    """``results/sweep/<spec file's stem>``."""
    return Path("results/sweep") / Path(spec_path).stem


#: Where a sweep writes in its folder (names in the root; folders searched through).
PLACES = ("run.json", "report.md", "tables", "cells")


def _check_folder(store: ResultStore) -> None:
    """A sweep's folder holds a sweep, or nothing but attnlimits' files where a sweep writes."""
    found = store.meta.get("experiment")
    if store.meta and found != "sweep":
        what = f"a {found} run" if found else "a run.json attnlimits did not write"
        raise ValueError(f"{store.root} holds {what}, not a sweep: choose another --out")
    foreign = store.foreign_files(PLACES)
    if not store.meta and foreign:
        more = f", and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        raise ValueError(
            f"{store.root} holds files attnlimits did not write ({', '.join(foreign[:3])}{more});"
            " a sweep would write over them: choose another --out"
        )


def run_sweep(
    spec: Spec | Path | str,
    out: Path | str | None = None,
    *,
    backend: str = "serial",
    address: str | None = None,
    progress: bool = True,
    yes: bool = True,
) -> tuple[Path, int]:
    """Run every cell of ``spec`` into ``out/cells/<id>`` (see :func:`run_cells`), then write
    the merged tables, ``run.json`` and ``report.md`` into ``out``.

    Returns (``report.md``'s path, how many cells failed). A bad spec or backend raises
    ``ValueError`` (no Ray: ``ImportError``; a cluster address that does not answer, or an
    ``address`` with the serial backend: ``ValueError``) before any folder is made; a failing
    cell does not stop the others. ``out`` is locked for the sweep (a second sweep into it gets
    ``FolderBusyError``). ``out`` must be new, a sweep's, or hold no files attnlimits did not
    write where a sweep writes (``run.json``, ``report.md``, ``tables/``, ``cells/``): else a
    ``ValueError`` naming them. A sweep deletes nothing.

    Before any folder is made, the cells still to run are estimated (:func:`sweep_estimate`):
    with ``progress``, one line on stderr gives their count and time; a cell whose memory
    cannot fit here (serially), or a sweep longer than an hour unless ``yes``, raises
    :class:`~attnlimits.experiments.budget.BudgetError`.
    """
    from attnlimits.experiments import skeleton

    check_backend(backend)  # an unknown backend or a missing Ray: before any folder or cell
    if backend == "serial" and address:  # it was ignored without a word
        raise ValueError(
            f"--address {address} names a Ray cluster, but --backend serial runs every cell "
            "in this process: pass --backend ray to use the cluster, or leave --address out"
        )
    if backend == "ray":
        check_address(address or os.environ.get("RAY_ADDRESS"))  # likewise a dead address
    if not isinstance(spec, Spec):
        spec = load_spec(spec)
    out = check_out(out) if out is not None else default_out(spec.path)
    experiment = skeleton.get(spec.experiment)
    estimate = sweep_estimate(experiment, spec, out)
    budget.check(estimate, yes=yes, say=False, memory=backend == "serial", hint=" (or fewer cells)")
    if progress:
        print(
            f"sweep: {estimate.what}; estimated about {budget.format_seconds(estimate.seconds)}"
            f" of work in all, {budget.format_bytes(estimate.peak_bytes)} per cell at most",
            file=sys.stderr,
            flush=True,
        )
    store = ResultStore(out)
    with store.lock(PLACES):
        _check_folder(store)
        with store.timed("sweep"):
            start = time.perf_counter()
            results = run_cells(
                experiment,
                spec.cells,
                out,
                backend,
                address,
                resources=spec.resources,
                progress=progress,
            )
            elapsed = time.perf_counter() - start
            tables = merge_tables(spec, results, out)
            report = write_sweep_report(
                spec, results, store, tables, backend=backend, address=address, elapsed=elapsed
            )
    return report, sum(r.status == FAILED for r in results.values())


def sweep_estimate(experiment: Any, spec: Spec, out: Path) -> budget.Estimate:
    """The cells of ``spec`` not yet finished in ``out``, one after another: their summed time
    and the largest one's memory (:func:`~attnlimits.experiments.budget.combined`)."""
    todo = [c for c in spec.cells if not finished(experiment, c, cell_folder(out, c))]
    what = f"{len(spec.cells):,} cell(s) of {spec.experiment}, {len(todo):,} to run"
    if experiment.estimate is None:
        return budget.Estimate(what, 0.0, {})
    return budget.combined([experiment.estimate(c.config) for c in todo], what)
