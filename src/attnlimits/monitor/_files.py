"""Where the monitor writes: its folder checked for writing, its earlier table read back (or
refused where the file is not the monitor's own)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from attnlimits._paths import inside, probe_write
from attnlimits.monitor._session import STATS

__all__ = ["COLUMNS", "TABLE_NAME", "earlier_rows", "writable"]

TABLE_NAME = "attention_monitor.parquet"
#: Columns of the table: per-head row means of :data:`STATS`, the largest row entropy and the
#: smallest ``H / log n_keys`` (rows with n_keys ≥ 2: the warnings' inputs), the key length
#: and the number of rows averaged.
COLUMNS = ("step", "layer", "head", *STATS, "entropy_max", "entropy_ratio_min", "length", "n_rows")


def writable(path: str | os.PathLike[str], what: str) -> Path:
    """``path`` created if missing and probed for writing; ``ValueError`` naming it otherwise
    (an empty path too: it would mean the current folder)."""
    if isinstance(path, str) and not path.strip():
        raise ValueError(f"{what} is empty ({path!r}); name a folder for the monitor's table")
    out = Path(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe_write(out, prefix=".attnlimits-monitor-probe-")
    except OSError as err:
        raise ValueError(f"{what} {str(out)!r} is not a writable folder: {err}") from None
    return out


def earlier_rows(out_dir: Path) -> list[dict[str, Any]]:
    """The rows of the table the monitor wrote in ``out_dir`` before (none where there is
    none). ``ValueError`` naming the file for a table there that is not the monitor's own (not
    Parquet, or other columns), a page there without the monitor's table beside it, and a
    symbolic link at either: the monitor never replaces them."""
    from attnlimits.view.monitor_page import MONITOR_PAGE

    table, page = out_dir / TABLE_NAME, out_dir / MONITOR_PAGE
    inside(out_dir, table)
    inside(out_dir, page)
    why = "the monitor appends only to its own table: move it away, or pass another out_dir"
    if not table.exists():
        if page.exists():
            raise ValueError(f"{page} is not the monitor's page (no {TABLE_NAME} beside it); {why}")
        return []
    import pandas as pd

    try:
        old = pd.read_parquet(table)
    except (OSError, ValueError):  # pyarrow's ArrowInvalid is a ValueError
        raise ValueError(f"{table} is not a Parquet table; {why}") from None
    ints = all(pd.api.types.is_integer_dtype(old[c]) for c in ("step", "layer", "head") if c in old)
    if list(old.columns) != list(COLUMNS) or not ints:
        raise ValueError(
            f"{table} is not the monitor's table (columns {', '.join(map(str, old.columns))}); "
            f"{why}"
        )
    return old.to_dict("records")
