"""The HTML around every page: Plotly's JavaScript embedded, the style, tables, the run's facts.

A page is one file that works offline by double-click: plotly.js (from the installed ``plotly``
package, the same build ``plotly.io.to_html`` embeds) sits inside it, the data as JSON, and the
glue of each kind of page as a short script. Figures the report also writes as PNG are linked
relative to the page (``figures/<name>.png``), so they show wherever the folder is copied;
a figure an interactive plot mirrors is linked, not shown twice. Every table can be sorted,
filtered, cut to its top 10 by a column and downloaded as CSV (``tables.js``), and every page
opens with a table of contents of its sections.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping, Sequence, Set
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from attnlimits.claims.comparisons import (
    BETTER,
    EQUIVALENT,
    INCONCLUSIVE,
    MIXED,
    OUTCOMES,
    WORSE,
)
from attnlimits.claims.verdicts import NA, VERDICTS

__all__ = [
    "OUTCOME_COLOURS",
    "document",
    "figure_links",
    "json_script",
    "markdown_html",
    "run_facts",
    "table_html",
]

#: Rows of a table shown on a page (the whole table is in ``tables/<name>.csv``).
MAX_TABLE_ROWS = 300

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.2em 2em; color: #222; max-width: 1400px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; position: sticky; top: 0; cursor: pointer; }
th[aria-sort="ascending"]::after { content: " ▲"; }
th[aria-sort="descending"]::after { content: " ▼"; }
.tools { display: flex; gap: 0.8em; align-items: center; font-size: 0.85em; margin-top: 0.4em; }
nav.toc { font-size: 0.9em; border: 1px solid #ddd; padding: 0.3em 1em; display: inline-block; }
nav.toc ul { margin: 0.2em 0; padding-left: 1.2em; } nav.toc li.sub { display: inline; }
nav.toc li.sub::after { content: " · "; } nav.toc li.sub:last-child::after { content: ""; }
.scroll { max-height: 420px; overflow: auto; display: inline-block; max-width: 100%; }
.controls { display: flex; gap: 1.2em; flex-wrap: wrap; align-items: center; margin: 0.5em 0; }
.controls label { font-size: 0.9em; }
.verdict-reproduced { background: #e3f5e1; } .verdict-partly { background: #fff4d6; }
.verdict-not-reproduced { background: #fbe1e1; } .verdict-not-testable { background: #e8e8f0; }
td.verdict-reproduced, td.verdict-partly, td.verdict-not-reproduced, td.verdict-not-testable {
  border-left: 4px solid #888; }
.note { color: #555; font-size: 0.9em; }
img.fig { max-width: 100%; height: auto; border: 1px solid #eee; }
:target { outline: 3px solid #e0a000; outline-offset: 2px; scroll-margin-top: 2em; }
.row { display: flex; gap: 1em; flex-wrap: wrap; } .row > div { flex: 1 1 480px; min-width: 0; }
.tok-text { font-family: ui-monospace, monospace; font-size: 0.85em; line-height: 1.9;
  white-space: pre-wrap; max-height: 320px; overflow: auto; border: 1px solid #ddd;
  padding: 4px; }
.tok { border-radius: 2px; padding: 1px 0; } .tok.query { font-weight: bold; }
.gap { color: #999; }
"""
#: The colour of a cell holding a comparison's outcome (the claims engine's words, so a word
#: renamed there is renamed here; a test checks every outcome has one).
OUTCOME_COLOURS = {
    BETTER: "#d5efd1",
    WORSE: "#f6d0d0",
    EQUIVALENT: "#dde7f7",
    INCONCLUSIVE: "#eeeeee",
    MIXED: "#fbe8bd",
}
_STYLE += "".join(
    f".outcome-{word.replace(' ', '-')} {{ background: {colour}; }}\n"
    for word, colour in OUTCOME_COLOURS.items()
)


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


#: A cell that starts with a verdict (the side-by-side's model columns) is coloured as a row;
#: the words are the claims engine's (longest first, so "not reproduced" is never "reproduced").
_VERDICT = re.compile(
    r"\W*("
    + "|".join(re.escape(v) for v in sorted(set(VERDICTS) - {NA}, key=len, reverse=True))
    + r")\b"
)


def _text(value: Any) -> str:
    """A cell's text without the tags of its HTML."""
    return html.unescape(re.sub(r"<[^>]+>", "", str(value))).strip()


#: A cell whose whole text is a comparison's outcome (an ``outcome`` column, a per-size reading)
#: is coloured by it; only the whole cell, so a claim that merely starts with "better" is not.
_OUTCOME = re.compile("(" + "|".join(re.escape(w) for w in OUTCOMES) + ")")


def _outcome_class(text: str) -> str:
    found = _OUTCOME.fullmatch(text)
    return f' class="outcome-{found.group(1).replace(" ", "-")}"' if found else ""


def _verdict_class(text: str, whole: bool = False) -> str:
    """The class of a verdict cell (``whole``: a row's verdict column, which colours its row
    by any value, as the claims tables always did)."""
    if whole:
        return f' class="verdict-{html.escape(text.replace(" ", "-"))}"'
    found = _VERDICT.match(text)
    return f' class="verdict-{found.group(1).replace(" ", "-")}"' if found else ""


def _value(value: Any) -> str:
    """A float's full value for sorting and CSV, where the cell shows it rounded."""
    if isinstance(value, (float, np.floating)) and math.isfinite(value):
        return f' data-v="{float(value)!r}"' if f"{value:.4g}" != repr(float(value)) else ""
    return ""


def table_html(
    df: pd.DataFrame,
    *,
    verdicts: bool = False,
    limit: int = MAX_TABLE_ROWS,
    raw: Set[str] = frozenset(),
    name: str = "table",
) -> str:
    """``df`` as an HTML table (its first ``limit`` rows) with a filter box, "top 10 by", and
    a CSV download of the rows shown (``name``: the file's name); with ``verdicts`` a row is
    coloured by its ``verdict`` column, and a cell that starts with a verdict by it; a cell that
    is a comparison's outcome (:data:`OUTCOME_COLOURS`) is coloured by it in any table; the
    columns ``raw`` hold HTML (links the page wrote), not text."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    columns = [str(c) for c in df.columns]
    at = columns.index("verdict") if verdicts and "verdict" in columns else None
    rows = []
    for record in df.head(limit).itertuples(index=False):
        css = "" if at is None else _verdict_class(_text(record[at]), whole=True)
        cells = []
        for c, v in zip(columns, record, strict=True):
            tag = _verdict_class(_text(v)) if verdicts and c != "verdict" else ""
            tag = tag or _outcome_class(_text(v))
            cells.append(f"<td{tag}{_value(v)}>{v if c in raw else _cell(v)}</td>")
        rows.append(f"<tr{css}>" + "".join(cells) + "</tr>")
    more = ""
    if len(df) > limit:
        more = f'<p class="note">first {limit} of {len(df)} rows; all in the CSV</p>'
    numeric = [i for i, t in enumerate(df.dtypes) if pd.api.types.is_numeric_dtype(t)]
    top = "".join(
        f'<option value="{i}">{html.escape(str(df.columns[i]))}</option>' for i in numeric
    )
    tools = (
        '<div class="tools"><input type="search" class="t-filter" placeholder="filter rows" '
        'aria-label="filter rows">'
        + (
            f'<label>top 10 by <select class="t-top"><option value="">all rows</option>{top}'
            "</select></label>"
            if numeric
            else '<select class="t-top" hidden></select>'
        )
        + '<button type="button" class="t-csv">download CSV (rows shown)</button>'
        '<span class="t-count note"></span></div>'
    )
    return (
        f'<div class="tablebox" data-name="{html.escape(name)}">{tools}<div class="scroll">'
        f'<table class="data"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
        f"</table></div>{more}</div>"
    )


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
            head = body[0]
            rest = [(r + [""] * len(head))[: len(head)] for r in body[1:]]
            out.append(
                table_html(
                    pd.DataFrame(rest, columns=head).map(_inline),
                    verdicts=True,
                    raw=set(head),
                    name="section",
                )
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


def _size(folder: Path | None, name: str) -> str:
    """The PNG's width and height as attributes (so that it takes its place before it loads
    and anchors below it stay put); empty where the file cannot be read."""
    if folder is None:
        return ""
    from PIL import Image  # matplotlib's own dependency; read only for a page with figures

    try:
        with Image.open(folder / "figures" / f"{name}.png") as image:
            width, height = image.size
    except (OSError, ValueError):
        return ""
    return f' width="{width}" height="{height}"'


def figure_links(
    names: Sequence[str], mirrored: Mapping[str, str] | None = None, folder: Path | None = None
) -> str:
    """The report's static figures (written beside the page in ``folder/figures``), each as an
    image with its size, or, where an interactive plot mirrors it (``mirrored``: figure name
    -> the plot's id), as links to that plot and to its PNG and SVG."""
    mirrored = mirrored or {}
    out = []
    for n in names:
        e = html.escape(n)
        if n in mirrored:
            out.append(
                f'<p id="figure-{e}">{e}: shown as the <a href="#{html.escape(mirrored[n])}">'
                f'interactive plot</a>; <a href="figures/{e}.png">PNG</a>, '
                f'<a href="figures/{e}.svg">SVG</a></p>'
            )
            continue
        size = _size(folder, n)
        out.append(
            f'<h3 id="figure-{e}">{e}</h3><img class="fig" src="figures/{e}.png" alt="{e}"'
            f'{size} loading="{"lazy" if size else "eager"}">'
        )
    return "\n".join(out)


def run_facts(meta: Mapping[str, Any]) -> str:
    """Model, machine, versions and wall times of the run, as a short list; with ``runs``
    (name -> a run's ``run.json``: runs side by side) one list per run."""
    runs = meta.get("runs")
    if isinstance(runs, Mapping) and runs:
        return "".join(
            f"<p><b>{html.escape(str(k))}</b></p>{run_facts(v)}" for k, v in runs.items()
        )
    machine = meta.get("machine", {}) or {}
    versions = meta.get("versions", {}) or {}
    walls = meta.get("wall_time_total_s", {}) or {}
    model = (meta.get("params") or {}).get("model") or (meta.get("model") or {}).get("id")
    items = [
        f"experiment: {meta.get('experiment', '?')}" + (f", model {model}" if model else ""),
        f"machine: {machine.get('cpu', '?')}, {machine.get('cores', '?')} cores"
        + (f", GPU {machine['cuda']}" if machine.get("cuda") else ""),
        "versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        "wall time (s, all invocations): " + ", ".join(f"{k} {v}" for k, v in walls.items()),
        "parameters and input hashes: run.json",
    ]
    return "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>"


def _contents(body: str) -> tuple[str, str]:
    """(``body`` with an id on each h2 and h3 lacking one, the table of contents: its h2s,
    each with the h3s below it, e.g. tables and figures)."""
    used: set[str] = set(re.findall(r'\sid="([^"]+)"', body))
    entries: list[tuple[int, str, str]] = []

    def anchor(match: re.Match[str]) -> str:
        level, attrs, inner = int(match.group(1)), match.group(2) or "", match.group(3)
        text = html.escape(_text(re.sub(r"<a\b.*?</a>", "", inner, flags=re.S)))
        found = re.search(r'\sid="([^"]+)"', attrs)
        if found:
            ident = found.group(1)
        else:
            base = re.sub(r"[^a-z0-9]+", "-", html.unescape(text).lower()).strip("-") or "part"
            ident, n = f"s-{base}", 1
            while ident in used:
                n += 1
                ident = f"s-{base}-{n}"
            used.add(ident)
            attrs = f'{attrs} id="{ident}"'
        entries.append((level, ident, text))
        return f"<h{level}{attrs}>{inner}</h{level}>"

    body = re.sub(r"<h([23])(\s[^>]*)?>(.*?)</h\1>", anchor, body, flags=re.S)
    items: list[str] = []
    subs: list[str] = []
    for level, ident, text in [*entries, (2, "", "")]:
        if level == 3:
            subs.append(f'<li class="sub"><a href="#{ident}">{text}</a></li>')
            continue
        if items and subs:
            items[-1] = items[-1].replace("</li>", f"<ul>{''.join(subs)}</ul></li>")
        subs = []
        if ident:
            items.append(f'<li><a href="#{ident}">{text}</a></li>')
    if not items:
        return body, ""
    return body, f'<nav class="toc" id="contents"><b>Contents</b><ul>{"".join(items)}</ul></nav>'


def document(title: str, body: str, *, scripts: Sequence[str] = (), plotly: bool = True) -> str:
    """A whole page: its table of contents, ``body`` after plotly.js (unless not ``plotly``);
    the address's glue (``address.js``: state in the URL's hash), ``scripts`` (whole
    ``<script>`` elements), then the tables' glue."""
    body, toc = _contents(body)
    here = resources.files("attnlimits.view")
    tables = here.joinpath("tables.js").read_text(encoding="utf-8")
    address = here.joinpath("address.js").read_text(encoding="utf-8")
    js = f'<script type="text/javascript">{_plotly_js()}</script>' if plotly else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style>"
        f"{js}</head>\n"
        f"<body><h1>{html.escape(title)}</h1>\n{toc}\n{body}\n<script>{address}</script>"
        f"{''.join(scripts)}"
        f"<script>{tables}</script></body></html>\n"
    )
