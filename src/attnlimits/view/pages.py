"""One page per results folder: ``report.html``, beside ``report.md``, from the same tables.

:func:`page_html` builds the page of a run from its tables, claims, sections and ``run.json``;
kinds with a page of their own (scan) get their interactive views, the others their tables as
interactive plots (:mod:`.explore`: the kind's presets, e.g. compare's, and an explorer); every
kind gets the claims table, the report's sections, its tables and its static figures.

Each claim row links to what decides it: the experiment's ``evidence`` (its ``EVIDENCE``: claim
pattern -> figure names, table names) becomes a "decided by" column of in-page links, to the
interactive plot mirroring a named figure (else its static image) and to the named table
(its CSV where the table is not on the page).
:func:`write_page` writes it atomically into the folder (listed in the folder's manifest, as
every file a run writes).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from attnlimits.experiments.store import atomic_write_text
from attnlimits.view._page import document, figure_links, markdown_html, run_facts, table_html
from attnlimits.view.explore import explore_body, explore_data, explore_scripts, figure_targets
from attnlimits.view.scan_page import scan_body, scan_data, scan_script

__all__ = ["PAGE_NAME", "Evidence", "page_html", "write_page"]

#: Per claim: (a regular expression searched in its ``claim`` text, the names of the figures
#: and of the tables that decide it); every entry whose pattern matches adds its links.
Evidence = Sequence[tuple[str, Sequence[str], Sequence[str]]]

#: The page's name in a results folder.
PAGE_NAME = "report.html"
#: Tables too big or too raw to list on a page (they stay in tables/, Parquet and CSV); the
#: scan's per-length heads table is the heatmap's, its KS tests are long.
_NOT_LISTED = {"patterns", "windows", "samples", "critical_tests"}
_SHOWN = {"scan": {"heads"}}


def _interactive(
    name: str, tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]
) -> tuple[str, list[str]]:
    """(body, scripts) of the kind's own views; empty for a kind without them."""
    if name == "scan" and "heads" in tables:
        data = scan_data(tables["heads"], tables.get("patterns"), meta)
        return scan_body(data), scan_script(data)
    return "", []


def _decided_by(
    claims: pd.DataFrame, evidence: Evidence, plots: Mapping[str, str], figures: Sequence[str],
    listed: Sequence[str], tables: Mapping[str, pd.DataFrame],
) -> list[str]:  # fmt: skip
    """Per claim row, the HTML links to the plots and tables that decide it."""
    out = []
    if "claim" not in claims or not evidence:
        return [""] * len(claims)
    for claim in claims["claim"].astype(str):
        figs: dict[str, None] = {}
        tabs: dict[str, None] = {}
        for pattern, fig_names, table_names in evidence:
            if re.search(pattern, claim):
                figs.update(dict.fromkeys(fig_names))
                tabs.update(dict.fromkeys(table_names))
        links = []
        for f in figs:
            if f in plots:
                links.append(f'<a class="evidence" href="#{plots[f]}">plot {html.escape(f)}</a>')
            elif f in figures:
                links.append(f'<a class="evidence" href="#figure-{html.escape(f)}">figure '
                             f"{html.escape(f)}</a>")  # fmt: skip
        for t in tabs:
            if t in listed:
                links.append(f'<a class="evidence" href="#table-{html.escape(t)}">table '
                             f"{html.escape(t)}</a>")  # fmt: skip
            elif t in tables:
                links.append(f'<a class="evidence" href="tables/{html.escape(t)}.csv">table '
                             f"{html.escape(t)} (CSV)</a>")  # fmt: skip
        out.append(" · ".join(links))
    return out


def page_html(
    title: str,
    tables: Mapping[str, pd.DataFrame],
    meta: Mapping[str, Any],
    claims: pd.DataFrame | None = None,
    figures: Sequence[str] = (),
    sections: Sequence[str] = (),
    evidence: Evidence = (),
    folder: Path | None = None,
) -> str:
    """The whole page of a run (see the module docstring); ``folder``: where its figures are
    (their sizes go on the page)."""
    name = str(meta.get("experiment", ""))
    body, scripts = _interactive(name, tables, meta)
    shown = _SHOWN.get(name, set()) if body else set()
    listed = [t for t in sorted(tables) if t not in _NOT_LISTED | shown and t != "claims"]
    plots: dict[str, str] = {"heatmaps": "main"} if body else {}
    if not body:  # a kind without views of its own: its tables as interactive plots
        explore = explore_data(name, tables, listed, meta)
        body, scripts = explore_body(explore), explore_scripts(explore)
        plots = figure_targets(explore)
    parts = [f'<p class="note">{html.escape(name)} · report.md holds the same claims and '
             "sections; tables/ holds every table as Parquet and CSV.</p>"]  # fmt: skip
    if claims is not None and len(claims):
        links = _decided_by(claims, evidence, plots, figures, listed, tables)
        if any(links):
            at = list(claims.columns).index("verdict") + 1 if "verdict" in claims else 0
            claims = claims.copy()
            claims.insert(at, "decided by", links)
        parts += [
            "<h2>Claims</h2>",
            table_html(claims, verdicts=True, raw={"decided by"}, name="claims"),
        ]
    parts.append(body)
    if sections:
        parts += ["<h2>Report</h2>", '<div class="sections">', markdown_html(sections), "</div>"]
    if listed:
        parts.append("<h2>Tables</h2>")
        for t in listed:
            parts += [
                f'<h3 id="table-{html.escape(t)}">{html.escape(t)} '
                f'<a class="note" href="tables/{html.escape(t)}.csv">CSV</a></h3>',
                table_html(tables[t], name=t),
            ]
    if figures:
        parts += ["<h2>Figures (static)</h2>", figure_links(figures, plots, folder)]
    parts += ["<h2>Run</h2>", run_facts(meta)]
    return document(title, "\n".join(parts), scripts=scripts)


def write_page(
    root: Path,
    title: str,
    tables: Mapping[str, pd.DataFrame],
    meta: Mapping[str, Any],
    claims: pd.DataFrame | None = None,
    figures: Sequence[str] = (),
    sections: Sequence[str] = (),
    evidence: Evidence = (),
) -> Path:
    """Write ``root/report.html`` (atomically; listed in the folder's manifest when the folder
    is held, as by the report step). Returns its path."""
    path = Path(root) / PAGE_NAME
    atomic_write_text(
        path, page_html(title, tables, meta, claims, figures, sections, evidence, root)
    )
    return path
