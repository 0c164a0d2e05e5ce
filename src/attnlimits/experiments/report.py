"""Pieces shared by the experiments' Markdown reports: verdicts and tables."""

from __future__ import annotations

import pandas as pd

__all__ = ["markdown_table", "verdict"]


def verdict(checks: list[bool]) -> str:
    """ "reproduced" if every check passed, "partly" if some did, else "not reproduced"."""
    if all(checks):
        return "reproduced"
    return "partly" if any(checks) else "not reproduced"


def markdown_table(df: pd.DataFrame) -> str:
    """``df`` as a Markdown table; floats to 4 significant digits, ``|`` in cells escaped."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines)


def _cell(v: object) -> str:
    text = f"{v:.4g}" if isinstance(v, float) else str(v)
    return text.replace("|", "\\|")
