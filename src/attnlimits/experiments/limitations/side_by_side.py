"""Several models' limitations runs in one claims table: claim | paper | one column per model.

``attnlimits reproduce limitations`` with more than one ``--model`` (the default runs
SmolLM2-135M and MiniLM-L6) runs each model into its own folder under ``--out`` and then
calls :func:`write_side_by_side`, which reads only the runs' claims tables, their Alg. 3
tables (Fig. 2c of every model on the joined page) and ``run.json`` (the page's Run section).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from attnlimits._paths import refuse_links
from attnlimits.experiments._owned import LOCK_NAME, MANIFEST, OWNER_NAME
from attnlimits.experiments.report import markdown_table
from attnlimits.experiments.store import ResultStore, atomic_write_text, foreign_files, listing

__all__ = [
    "JOINED",
    "check_joined",
    "model_folder",
    "redraw_side_by_side",
    "side_by_side",
    "write_side_by_side",
]

#: Where the joined report of several runs goes in their folder.
JOINED = ("report.md", "report.html", "tables")


def model_folder(model: str) -> str:
    """A folder name for a model name, hub id or path (``org/name`` -> ``org--name``)."""
    name = Path(model).name if Path(model).exists() else model.replace("/", "--")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "model"


FIXED = ("x_source", "claim", "role", "E form", "paper")  # the columns that are not models


def _cell(table: pd.DataFrame, detail: bool) -> pd.Series:
    """One model's cell: the verdict and whether it is robust to the alternative readings;
    with ``detail`` the numbers measured and each alternative's verdict too."""
    robust = table["robust"] if "robust" in table else pd.Series("—", index=table.index)
    if not detail:
        return table["verdict"] + " (robust: " + robust + ")"
    alts = table["alternatives"] if "alternatives" in table else pd.Series("—", index=table.index)
    return (
        "**"
        + table["verdict"]
        + "**: "
        + table["measured"]
        + " — alternatives: "
        + alts
        + " (robust: "
        + robust
        + ")"
    )


def side_by_side(claims: Mapping[str, pd.DataFrame], detail: bool = True) -> pd.DataFrame:
    """One row per (x source, claim or sub-claim): the form of E its verdict uses, per model
    its verdict, whether that is robust to the alternative readings and (``detail``) the
    numbers behind it, the paper's statement last (``claims``: model -> that run's claims)."""
    frames = []
    for model, table in claims.items():
        form = table["e_form"] if "e_form" in table else pd.Series("—", index=table.index)
        role = table["role"] if "role" in table else pd.Series("—", index=table.index)
        base = table[["x_source", "claim", "paper"]].assign(role=role, **{"E form": form})
        frames.append(base.assign(**{model: _cell(table, detail)}))
    merged = frames[0]
    for frame in frames[1:]:
        merged = merged.merge(
            frame,
            on=["x_source", "claim", "paper"],
            how="outer",
            sort=False,
            suffixes=("", " (other)"),
        )
        for col in ("E form", "role"):
            merged[col] = merged[col].fillna(merged.pop(f"{col} (other)"))
    order = {s: i for i, s in enumerate(dict.fromkeys(frames[0]["x_source"]))}
    merged = merged.sort_values("x_source", key=lambda s: s.map(order), kind="stable")
    cols = ["x_source", "claim", "role", "E form", *claims, "paper"]
    return merged.fillna("—")[cols].reset_index(drop=True)


def write_side_by_side(out: Path, runs: Mapping[str, Path]) -> Path:
    """Write ``out/report.md``, ``out/report.html``, ``out/tables/claims_by_model`` and
    ``out/tables/alg3`` (the runs' Alg. 3 tables with a ``model`` column), Parquet and CSV,
    for ``runs`` (model -> results folder of a finished run); return the report's path."""
    store = ResultStore(out)
    with store.lock():  # so the files are listed as attnlimits', and no second writer races
        return _write(store, out, runs)


def _write(store: ResultStore, out: Path, runs: Mapping[str, Path]) -> Path:
    claims = {m: pd.read_parquet(d / "tables" / "claims.parquet") for m, d in runs.items()}
    table = side_by_side(claims)
    store.write_table(table, "claims_by_model")
    lines = [
        "# Limitations of Normalization in Attention: the models side by side",
        "",
        "Each model's own report (figures, set-up differences, E in three forms) is in its "
        "folder; this table puts their claims together: each finding, then its sub-claims, as "
        "the paper states them (`paper`: its words). A finding's verdict comes from its "
        "headline statements alone; checks (properties a theorem guarantees) are in their own "
        "table and never decide a finding. A cell is the verdict on the windows pooled and "
        "whether it is robust to the alternative readings (another form of E, the other KS "
        "level, the paper's 144 heads, the ε range, max over rows); `E form` is the form of E "
        "the verdict uses.",
        "",
    ]
    metas = {m: json.loads((d / "run.json").read_text()) for m, d in runs.items()}
    for model, folder in runs.items():
        params = metas[model].get("params", {})
        n = params.get("windows")
        lines.append(
            f"- **{model}**: [{folder.name}/report.md]({folder.name}/report.md), "
            f"{n} window{'' if n == 1 else 's'} of {max(params.get('lengths', [0]))} tokens"
        )
    verdicts = side_by_side(claims, detail=False)
    checks = verdicts["role"] == "check"
    lines += [
        "",
        "## Verdicts",
        "",
        markdown_table(verdicts[~checks]),
        "",
        "## Checks",
        "",
        markdown_table(verdicts[checks]),
        "",
        "## Verdicts with what was measured and each alternative reading",
        "",
        markdown_table(table),
        "",
    ]
    path = out / "report.md"
    atomic_write_text(path, "\n".join(lines))
    from attnlimits.experiments.pages import (  # the same, linking the models' pages
        RunPage,
        write_page,
    )

    first = lines.index("## Verdicts")  # on the page: the verdicts as its claims table
    shown = lines[2:first] + lines[first + 4 :]
    linked = [line.replace("/report.md", "/report.html") for line in shown]
    alg3 = [
        pd.read_parquet(d / "tables" / "alg3.parquet").assign(model=m)
        for m, d in runs.items()
        if (d / "tables" / "alg3.parquet").is_file()
    ]  # Fig. 2c of each model, one plot per model and x source
    tables = {"alg3": pd.concat(alg3, ignore_index=True)} if alg3 else {}
    for name, df in tables.items():  # the page's table, as every table a page lists
        store.write_table(df, name)
    meta = {"experiment": "limitations", "runs": metas}
    write_page(out, RunPage(lines[0][2:], tables, meta, verdicts[~checks], sections=linked))
    return path


def check_joined(out: Path, runs: Iterable[str] = ()) -> None:
    """Before any model runs or redraws: refuse (``ValueError``, one line) a symbolic link in
    ``out`` where the joined report goes or at the models' folders ``runs`` (names in ``out``),
    and an ``out`` holding a user's files where the joined report goes (they would be written
    over after every model ran). A side-by-side folder from before attnlimits listed its files
    (``tables/claims_by_model.parquet`` there) is taken as ours."""
    out = Path(out)
    refuse_links(out, (*JOINED, *runs, MANIFEST, LOCK_NAME, OWNER_NAME))
    if (out / "tables" / "claims_by_model.parquet").is_file():
        return
    foreign = foreign_files(out, JOINED)
    if foreign:
        raise ValueError(
            f"{out} holds files attnlimits did not write ({listing(foreign)}), where the joined "
            "report of the models goes: choose another --out"
        )


def redraw_side_by_side(folder: Path) -> Path | None:
    """Redraw every model's run in ``folder`` and the table that joins them; None when
    ``folder`` is not a side-by-side folder (it holds a run itself, or no run below it)."""
    from attnlimits.experiments import skeleton

    runs = sorted(p.parent for p in folder.glob("*/run.json"))
    if (folder / "run.json").exists() or not runs:
        return None
    check_joined(folder, [run.name for run in runs])
    models: dict[str, Path] = {}
    for run in runs:
        skeleton.redraw(run)
        models[str(json.loads((run / "run.json").read_text())["params"]["model"])] = run
    table = folder / "tables" / "claims_by_model.parquet"
    if table.exists():  # the order the models were run in
        order = [c for c in pd.read_parquet(table).columns if c not in FIXED]
        rank = {m: order.index(m) if m in order else len(order) for m in models}
        models = dict(sorted(models.items(), key=lambda m: rank[m[0]]))
    return write_side_by_side(folder, models)
