"""Several models' limitations runs in one claims table: claim | paper | one column per model.

``attnlimits reproduce limitations`` with more than one ``--model`` (the default runs
SmolLM2-135M and MiniLM-L6) runs each model into its own folder under ``--out`` and then
calls :func:`write_side_by_side`, which reads only the runs' claims tables and ``run.json``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from attnlimits.experiments.report import markdown_table
from attnlimits.experiments.store import ResultStore, atomic_write_text

__all__ = ["model_folder", "redraw_side_by_side", "side_by_side", "write_side_by_side"]


def model_folder(model: str) -> str:
    """A folder name for a model name, hub id or path (``org/name`` -> ``org--name``)."""
    name = Path(model).name if Path(model).exists() else model.replace("/", "--")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "model"


def side_by_side(claims: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per (x source, claim): the paper's statement, then per model its verdict with
    the measured numbers behind it (``claims``: model -> that run's claims table)."""
    frames = []
    for model, table in claims.items():
        cell = "**" + table["verdict"] + "**: " + table["measured"]
        frames.append(table[["x_source", "claim", "paper"]].assign(**{model: cell}))
    merged = frames[0]
    for frame in frames[1:]:
        merged = merged.merge(frame, on=["x_source", "claim", "paper"], how="outer", sort=False)
    order = {s: i for i, s in enumerate(dict.fromkeys(frames[0]["x_source"]))}
    merged = merged.sort_values("x_source", key=lambda s: s.map(order), kind="stable")
    return merged.fillna("—")[["x_source", "claim", *claims, "paper"]].reset_index(drop=True)


def write_side_by_side(out: Path, runs: Mapping[str, Path]) -> Path:
    """Write ``out/report.md``, ``out/report.html`` and
    ``out/tables/claims_by_model.{parquet,csv}`` for ``runs`` (model -> results folder of a
    finished run); return the report's path."""
    claims = {m: pd.read_parquet(d / "tables" / "claims.parquet") for m, d in runs.items()}
    table = side_by_side(claims)
    store = ResultStore(out)
    store.write_table(table, "claims_by_model")
    lines = [
        "# Limitations of Normalization in Attention: the models side by side",
        "",
        "Each model's own report (figures, set-up differences, E in three forms) is in its "
        "folder; this table puts their claims together. A cell is the verdict, then what was "
        "measured (windows pooled; the verdict is judged in every window).",
        "",
    ]
    for model, folder in runs.items():
        meta = json.loads((folder / "run.json").read_text())
        params = meta.get("params", {})
        lines.append(
            f"- **{model}**: [{folder.name}/report.md]({folder.name}/report.md), "
            f"{params.get('windows')} windows of {max(params.get('lengths', [0]))} tokens"
        )
    verdicts = table.copy()
    for model in runs:
        verdicts[model] = verdicts[model].str.split("**: ", regex=False).str[0].str.strip("*")
    lines += [
        "",
        "## Verdicts",
        "",
        markdown_table(verdicts),
        "",
        "## Verdicts with what was measured",
        "",
        markdown_table(table),
        "",
    ]
    path = out / "report.md"
    atomic_write_text(path, "\n".join(lines))
    from attnlimits.view import write_page  # the same, as a page linking the models' pages

    linked = [line.replace("/report.md", "/report.html") for line in lines[2:]]
    write_page(out, lines[0][2:], {}, {"experiment": "limitations"}, sections=linked)
    return path


def redraw_side_by_side(folder: Path) -> Path | None:
    """Redraw every model's run in ``folder`` and the table that joins them; None when
    ``folder`` is not a side-by-side folder (it holds a run itself, or no run below it)."""
    from attnlimits.experiments import skeleton

    runs = sorted(p.parent for p in folder.glob("*/run.json"))
    if (folder / "run.json").exists() or not runs:
        return None
    models: dict[str, Path] = {}
    for run in runs:
        skeleton.redraw(run)
        models[str(json.loads((run / "run.json").read_text())["params"]["model"])] = run
    table = folder / "tables" / "claims_by_model.parquet"
    if table.exists():  # the order the models were run in
        order = list(pd.read_parquet(table).columns[2:-1])
        rank = {m: order.index(m) if m in order else len(order) for m in models}
        models = dict(sorted(models.items(), key=lambda m: rank[m[0]]))
    return write_side_by_side(folder, models)
