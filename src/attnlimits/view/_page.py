"""The HTML around every page: Plotly's JavaScript embedded, the style, tables, the run's facts.

A page is one file that works offline by double-click: plotly.js (from the installed ``plotly``
package, the same build ``plotly.io.to_html`` embeds) sits inside it, the data as JSON, and the
glue of each kind of page as a short script. Figures the report also writes as PNG are linked
relative to the page (``figures/<name>.png``), so they show wherever the folder is copied.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping, Sequence, Set
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["document", "figure_links", "json_script", "markdown_html", "run_facts", "table_html"]

#: Rows of a table shown on a page (the whole table is in ``tables/<name>.csv``).
MAX_TABLE_ROWS = 300

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.2em 2em; color: #222; max-width: 1400px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; position: sticky; top: 0; }
.scroll { max-height: 420px; overflow: auto; display: inline-block; max-width: 100%; }
.controls { display: flex; gap: 1.2em; flex-wrap: wrap; align-items: center; margin: 0.5em 0; }
.controls label { font-size: 0.9em; }
.verdict-reproduced { background: #e3f5e1; } .verdict-partly { background: #fff4d6; }
.verdict-not-reproduced { background: #fbe1e1; } .verdict-not-testable { background: #e8e8f0; }
.note { color: #555; font-size: 0.9em; } img.fig { max-width: 100%; border: 1px solid #eee; }
:target { outline: 3px solid #e0a000; outline-offset: 2px; scroll-margin-top: 2em; }
.row { display: flex; gap: 1em; flex-wrap: wrap; } .row > div { flex: 1 1 480px; min-width: 0; }
"""


@lru_cache(maxsize=1)
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


def _clean(value: Any) -> Any:
    """JSON-able, with NaN and infinities as null (JSON has neither)."""
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return _clean(value.tolist())
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def json_script(name: str, data: Any) -> str:
    """``data`` as ``window[name]``, safe inside a ``<script>`` element."""
    text = json.dumps(_clean(data), allow_nan=False, separators=(",", ":")).replace("</", "<\\/")
    return f"<script>window.{name} = {text};</script>"


def _cell(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return "" if not math.isfinite(value) else f"{value:.4g}"
    return html.escape(str(value))


def table_html(
    df: pd.DataFrame,
    *,
    verdicts: bool = False,
    limit: int = MAX_TABLE_ROWS,
    raw: Set[str] = frozenset(),
) -> str:
    """``df`` as an HTML table (its first ``limit`` rows); with ``verdicts`` a row is coloured by
    its ``verdict`` column; the columns ``raw`` hold HTML (links the page wrote), not text."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = []
    for record in df.head(limit).itertuples(index=False):
        values = dict(zip(df.columns, record, strict=True))
        css = ""
        if verdicts and "verdict" in values:
            css = f' class="verdict-{str(values["verdict"]).replace(" ", "-")}"'
        cells = (v if c in raw else _cell(v) for c, v in values.items())
        rows.append(f"<tr{css}>" + "".join(f"<td>{v}</td>" for v in cells) + "</tr>")
    more = ""
    if len(df) > limit:
        more = f'<p class="note">first {limit} of {len(df)} rows; all in the CSV</p>'
    return f'<div class="scroll"><table><tr>{head}</tr>{"".join(rows)}</table></div>{more}'


def _inline(text: str) -> str:
    text = html.escape(text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", text)
    return re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', text)


def markdown_html(lines: Sequence[str]) -> str:
    """The report's Markdown sections as HTML: headings, tables, lists and paragraphs (what the
    experiments' ``sections`` write); anything else stays as escaped text."""
    out: list[str] = []
    table: list[list[str]] = []

    def flush() -> None:
        if table:
            body = [r for r in table if not all(re.fullmatch(r":?-+:?", c) for c in r)]
            head, rest = body[0], body[1:]
            out.append(
                '<div class="scroll"><table><tr>'
                + "".join(f"<th>{_inline(c)}</th>" for c in head)
                + "</tr>"
                + "".join(
                    "<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in rest
                )
                + "</table></div>"
            )
            table.clear()

    for line in "\n".join(lines).split("\n"):
        stripped = line.strip()
        if stripped.startswith("|"):
            table.append([c.strip() for c in re.split(r"(?<!\\)\|", stripped.strip("|"))])
            continue
        flush()
        heading = re.match(r"(#{1,6})\s+(.*)", stripped)
        if heading:
            level = min(len(heading.group(1)) + 1, 6)
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif stripped.startswith(("- ", "* ")):
            out.append(f"<li>{_inline(stripped[2:])}</li>")
        elif stripped.startswith("!["):
            continue  # figures are shown by figure_links
        elif stripped:
            out.append(f"<p>{_inline(stripped)}</p>")
    flush()
    return "\n".join(out)


def figure_links(names: Sequence[str]) -> str:
    """The report's static figures (written beside the page), each as an image."""
    return "\n".join(
        f'<h3 id="figure-{html.escape(n)}">{html.escape(n)}</h3>'
        f'<img class="fig" src="figures/{html.escape(n)}.png" '
        f'alt="{html.escape(n)}" loading="lazy">'
        for n in names
    )


def run_facts(meta: Mapping[str, Any]) -> str:
    """Model, machine, versions and wall times of the run, as a short list."""
    machine = meta.get("machine", {}) or {}
    versions = meta.get("versions", {}) or {}
    walls = meta.get("wall_time_total_s", {}) or {}
    items = [
        f"experiment: {meta.get('experiment', '?')}",
        f"machine: {machine.get('cpu', '?')}, {machine.get('cores', '?')} cores"
        + (f", GPU {machine['cuda']}" if machine.get("cuda") else ""),
        "versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        "wall time (s, all invocations): " + ", ".join(f"{k} {v}" for k, v in walls.items()),
        "parameters and input hashes: run.json",
    ]
    return "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>"


def document(title: str, body: str, *, scripts: Sequence[str] = (), plotly: bool = True) -> str:
    """A whole page: ``body`` after plotly.js (unless not ``plotly``); ``scripts`` (whole
    ``<script>`` elements) last."""
    js = f'<script type="text/javascript">{_plotly_js()}</script>' if plotly else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style>"
        f"{js}</head>\n"
        f"<body><h1>{html.escape(title)}</h1>\n{body}\n{''.join(scripts)}</body></html>\n"
    )
