"""A sweep's own results: every cell's tables in one, its ``run.json`` and its ``report.md``.

The merged table ``tables/<name>`` stacks the cells' ``tables/<name>`` in the spec's cell
order, led by the column ``cell`` (the cell's id, its folder under ``cells/``) and one column
per axis holding the cell's value (lists joined by commas). An axis whose name a cell's table
already uses as a column becomes ``<axis>_axis`` (``cell`` likewise). Failed cells add no rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from attnlimits.experiments.store import (
    ResultStore,
    atomic_write_text,
    machine_info,
    package_versions,
    read_run_json,
)
from attnlimits.experiments.sweep.backends import FAILED, CellResult
from attnlimits.experiments.sweep.scaling import scaling_table
from attnlimits.experiments.sweep.spec import Spec, label

__all__ = ["cell_wall_time", "merge_tables", "write_sweep_report"]

Results = Mapping[str, CellResult]


def _cell_tables(folder: Path) -> dict[str, pd.DataFrame]:
    return {p.stem: pd.read_parquet(p) for p in sorted((folder / "tables").glob("*.parquet"))}


def merge_tables(spec: Spec, results: Results, out: Path) -> dict[str, pd.DataFrame]:
    """Every cell's tables stacked by name, with ``cell`` and the axis values leading."""
    pieces: dict[str, list[pd.DataFrame]] = {}
    for cell in spec.cells:
        if results[cell.id].status == FAILED:
            continue
        for name, df in _cell_tables(Path(out) / "cells" / cell.id).items():
            lead = {"cell": cell.id} | {axis: label(v) for axis, v in cell.axes.items()}
            for i, (column, value) in enumerate(lead.items()):
                df.insert(i, column if column not in df.columns else f"{column}_axis", value)
            pieces.setdefault(name, []).append(df)
    return {name: pd.concat(dfs, ignore_index=True) for name, dfs in pieces.items()}


def cell_wall_time(folder: Path) -> float | None:
    """Seconds a cell's runs took in all (the skeleton's compute and report stages, every
    invocation; the experiments' own stages are inside compute), from its ``run.json``; None
    where it has none."""
    try:
        meta = read_run_json(folder / "run.json")
    except ValueError:
        return None
    total = meta.get("wall_time_total_s") or {}
    stages = [total[k] for k in ("compute", "report") if k in total]
    return round(sum(stages), 1) if stages else None


def _scaling(cells: list[dict[str, Any]], elapsed: float | None) -> list[str]:
    """The report's estimate of this sweep on more workers, from its cells' wall times."""
    times = [c["wall_time_s"] for c in cells if c["wall_time_s"] is not None]
    if not times:
        return []
    table = scaling_table(times)
    table = table[table["workers"] <= max(len(times), 1)]
    measured = "" if elapsed is None else f" This run's cells took {elapsed:.1f} s of wall time."
    lines = [
        "",
        "## Scaling (estimate)",
        "",
        f"The cells' wall times add up to {sum(times):.1f} s (longest {max(times):.1f} s)."
        f"{measured} Scheduled longest first over more workers (no start-up or queueing costs; "
        "a worker's first cell includes loading its model):",
        "",
        "| workers | wall time (s) | speed-up | efficiency |",
        "|---|---|---|---|",
    ]
    rows = table.itertuples()
    return lines + [f"| {r.workers} | {r.wall_s} | {r.speedup} | {r.efficiency} |" for r in rows]


def _md(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def write_sweep_report(
    spec: Spec,
    results: Results,
    store: ResultStore,
    tables: Mapping[str, pd.DataFrame],
    *,
    backend: str,
    address: str | None,
    elapsed: float | None = None,
) -> Path:
    """Write the merged tables, ``run.json`` and ``report.md`` of a sweep into ``store``'s
    folder; return the report. ``elapsed``: seconds the cells took in this run (the report
    sets it beside the scaling estimate)."""
    out = store.root
    for name, df in tables.items():
        store.write_table(df, name)
    cells: list[dict[str, Any]] = [
        {
            "id": c.id,
            "name": c.name,
            "axes": c.axes,
            "status": results[c.id].status,
            "error": results[c.id].error,
            "wall_time_s": cell_wall_time(Path(out) / "cells" / c.id),
            "seconds_this_run": results[c.id].seconds,
            "worker": results[c.id].worker,
            "models_loaded": results[c.id].loaded_models,
        }
        for c in spec.cells
    ]
    store.update_meta(
        experiment="sweep",
        swept=spec.experiment,
        spec=spec.text,
        spec_path=str(spec.path),
        backend=backend,
        address=address,
        resources=spec.resources,
        cells_wall_time_s=None if elapsed is None else round(elapsed, 1),
        cells=cells,
        versions=package_versions(),
        machine=machine_info(),
    )
    axes = list(spec.axes)
    failed = [c for c in cells if c["status"] == "failed"]
    lines = [
        f"# Sweep: {spec.experiment} over {' × '.join(axes) or 'one cell'}",
        "",
        f"Spec `{spec.path}`{' (quick preset)' if spec.quick else ''}: {len(cells)} cell(s), "
        f"backend {backend}; {len(failed)} failed. Merged tables in `tables/`: "
        + (", ".join(f"`{n}` ({len(df)} rows)" for n, df in tables.items()) or "none")
        + ".",
        "",
        "| cell | " + " | ".join(axes) + " | status | wall time (s) | worker | models loaded "
        "| report |",
        "|---" * (len(axes) + 6) + "|",
    ]
    for c in cells:
        values = " | ".join(_md(label(c["axes"][a])) for a in axes)
        link = f"cells/{c['id']}/report.md"
        report = f"[report]({link})" if (Path(out) / link).is_file() else "–"
        wall = "–" if c["wall_time_s"] is None else c["wall_time_s"]
        worker = c["worker"] or "–"
        loads = "–" if c["models_loaded"] is None else c["models_loaded"]
        lines.append(
            f"| `{c['id']}` | {values} | {c['status']} | {wall} | {worker} | {loads} | {report} |"
        )
    lines += _scaling(cells, elapsed)
    if failed:
        lines += ["", "## Failed cells", ""]
        lines += [f"- `{c['id']}` ({_md(c['name'])}): {_md(c['error'])}" for c in failed]
    path = Path(out) / "report.md"
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path
