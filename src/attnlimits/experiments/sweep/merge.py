"""A sweep's own results: every cell's tables in one, its ``run.json`` and its ``report.md``.

The merged table ``tables/<name>`` stacks the cells' ``tables/<name>`` in the spec's cell
order, led by the column ``cell`` (the cell's id, its folder under ``cells/``) and one column
per axis holding the cell's value (lists joined by commas). An axis whose name a cell's table
already uses as a column becomes ``<axis>_axis`` (``cell`` likewise). Failed cells add no rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from attnlimits.experiments.store import (
    ResultStore,
    atomic_write_text,
    machine_info,
    package_versions,
)
from attnlimits.experiments.sweep.spec import Spec, label

__all__ = ["cell_wall_time", "merge_tables", "write_sweep_report"]

Results = Mapping[str, tuple[str, Any]]


def _cell_tables(folder: Path) -> dict[str, pd.DataFrame]:
    return {p.stem: pd.read_parquet(p) for p in sorted((folder / "tables").glob("*.parquet"))}


def merge_tables(spec: Spec, results: Results, out: Path) -> dict[str, pd.DataFrame]:
    """Every cell's tables stacked by name, with ``cell`` and the axis values leading."""
    pieces: dict[str, list[pd.DataFrame]] = {}
    for cell in spec.cells:
        if results[cell.id][0] == "failed":
            continue
        for name, df in _cell_tables(Path(out) / "cells" / cell.id).items():
            lead = {"cell": cell.id} | {axis: label(v) for axis, v in cell.axes.items()}
            for i, (column, value) in enumerate(lead.items()):
                df.insert(i, column if column not in df.columns else f"{column}_axis", value)
            pieces.setdefault(name, []).append(df)
    return {name: pd.concat(dfs, ignore_index=True) for name, dfs in pieces.items()}


def cell_wall_time(folder: Path) -> float | None:
    """Seconds a cell's runs took in all (compute and report, every invocation), from its
    ``run.json``; None where it has none."""
    try:
        meta = json.loads((folder / "run.json").read_text())
    except (OSError, ValueError):
        return None
    total = meta.get("wall_time_total_s") or {}
    return round(sum(total.values()), 1) if total else None


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
) -> Path:
    """Write the merged tables, ``run.json`` and ``report.md`` of a sweep into ``store``'s
    folder; return the report."""
    out = store.root
    for name, df in tables.items():
        store.write_table(df, name)
    cells = [
        {
            "id": c.id,
            "name": c.name,
            "axes": c.axes,
            "status": results[c.id][0],
            "error": results[c.id][1],
            "wall_time_s": cell_wall_time(Path(out) / "cells" / c.id),
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
        "| cell | " + " | ".join(axes) + " | status | wall time (s) | report |",
        "|---" * (len(axes) + 4) + "|",
    ]
    for c in cells:
        values = " | ".join(_md(label(c["axes"][a])) for a in axes)
        link = f"cells/{c['id']}/report.md"
        report = f"[report]({link})" if (Path(out) / link).is_file() else "–"
        wall = "–" if c["wall_time_s"] is None else c["wall_time_s"]
        lines.append(f"| `{c['id']}` | {values} | {c['status']} | {wall} | {report} |")
    if failed:
        lines += ["", "## Failed cells", ""]
        lines += [f"- `{c['id']}` ({_md(c['name'])}): {_md(c['error'])}" for c in failed]
    path = Path(out) / "report.md"
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path
