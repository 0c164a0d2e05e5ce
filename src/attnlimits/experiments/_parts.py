"""A resumable part that says what it holds, checked before a resume reuses it.

Private to :mod:`attnlimits.experiments` (:class:`~attnlimits.experiments.store.ResultStore`'s
parts). A part is valid Parquet whatever it holds: another table's part copied over it, or one
of a run with other settings, reads without complaint and is concatenated into a table of the
wrong shape. So each part carries, in its Parquet schema metadata (:data:`RECORD_KEY`), the
stage (table) it belongs to, the hash of the settings it was computed with, and its columns
with their types; :func:`check_part` refuses, in one line naming the part, one whose record is
missing or names another stage or other settings, and one whose columns or types are no longer
those it was written with.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["RECORD_KEY", "check_part", "write_part"]

#: The key of a part's record in its Parquet schema metadata.
RECORD_KEY = b"attnlimits.part"


def _columns(schema: pa.Schema) -> dict[str, str]:
    return {field.name: str(field.type) for field in schema}


def _stored(table: pa.Table) -> dict[str, str]:
    """The columns and types of ``table`` as a Parquet file of it reads back (a string
    dictionary comes back with ``string`` values, not ``large_string``): those of its first
    zero rows, written to memory."""
    sink = pa.BufferOutputStream()
    pq.write_table(table.slice(0, 0), sink)
    return _columns(pq.read_schema(pa.BufferReader(sink.getvalue())))


def write_part(df: pd.DataFrame, path: Path, stage: str, settings: str) -> None:
    """Write ``df`` to ``path`` as Parquet (as ``df.to_parquet(path, index=False)`` does), its
    record (``stage``, the ``settings`` hash, its columns and types) in the schema metadata."""
    table = pa.Table.from_pandas(df, preserve_index=False)
    record = {"stage": stage, "settings": settings, "columns": _stored(table)}
    metadata = {**(table.schema.metadata or {}), RECORD_KEY: json.dumps(record).encode()}
    pq.write_table(table.replace_schema_metadata(metadata), path)


def _changed(then: dict[str, Any], now: dict[str, str]) -> str:
    """The first column whose presence or type differs between ``then`` and ``now``."""
    for name in [*then, *now]:
        if then.get(name) != now.get(name):
            was = then.get(name, "absent")
            return f"column {name!r} is {now.get(name, 'absent')}, written as {was}"
    return "its columns are in another order"


def check_part(path: Path, stage: str, settings: str) -> None:
    """``ValueError`` naming ``path`` unless it is a part :func:`write_part` wrote for
    ``stage`` with the ``settings`` hash, with the columns and types it was written with."""
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as err:
        why = f"it is not a readable Parquet file ({str(err).strip().splitlines()[0]})"
    else:
        try:
            record = json.loads((schema.metadata or {}).get(RECORD_KEY, b"null"))
        except ValueError:
            record = None
        now = _columns(schema)
        if not isinstance(record, dict) or not isinstance(record.get("columns"), dict):
            why = "it carries no record of the run that wrote it (not a part of this attnlimits)"
        elif record.get("stage") != stage:
            why = f"it holds the {record.get('stage')!r} table, not {stage!r}"
        elif record.get("settings") != settings:
            then = record.get("settings")
            why = f"it was computed with other settings (hash {then}, this run's {settings})"
        elif record["columns"] != now or list(record["columns"]) != list(now):
            why = f"it was changed since it was written: {_changed(record['columns'], now)}"
        else:
            return
    raise ValueError(
        f"part {path} cannot be reused: {why}; remove it and rerun to compute it again"
    )
