"""One page per results folder: ``report.html``, beside ``report.md``, from the same tables.

:func:`page_html` builds the page of a run from its tables, claims, sections and ``run.json``,
and what its experiment hands over (:class:`Page`: this package knows no experiment): a kind
with views of its own (the scan's) hands their body and scripts, the others their presets, drawn
with their tables as interactive plots (:mod:`.explore`: the presets and an explorer); every
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
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from attnlimits._files import atomic_write_text
from attnlimits.view import PAGE_NAME
from attnlimits.view._page import document, figure_links, markdown_html, run_facts, table_html
from attnlimits.view.explore import explore_body, explore_data, explore_scripts, figure_targets

__all__ = ["PAGE_NAME", "Evidence", "Page", "RunPage", "page_html", "write_page"]

#: Per claim: (a regular expression searched in its ``claim`` text, the names of the figures
#: and of the tables that decide it); every entry whose pattern matches adds its links.
Evidence = Sequence[tuple[str, Sequence[str], Sequence[str]]]


@dataclass(frozen=True)
class Page:
    """What an experiment hands the page beyond its tables (all optional).

    ``body`` and ``scripts``: views of its own (HTML, and the ``<script>`` elements that draw
    them); ``plots``: figure name -> the id of the element on the page that mirrors it (a claim
    naming that figure links there); ``shown``: tables those views show (not listed again).
    ``presets`` (:mod:`attnlimits.experiments.presets`'s specs) are drawn from the tables and
    ``derived`` (tables the presets draw that the run's lack), with the explorer, before the
    body; without presets or a body, the explorer alone. ``unlisted``:
    tables too big or too raw to list on the page (they stay in tables/, Parquet and CSV).
    """

    body: str = ""
    scripts: Sequence[str] = ()
    plots: Mapping[str, str] = field(default_factory=dict)
    shown: Set[str] = frozenset()
    presets: Sequence[Mapping[str, Any]] = ()
    derived: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    unlisted: Set[str] = frozenset()


@dataclass(frozen=True)
class RunPage:
    """Everything a run's page shows, handed over as one value: its ``title``, ``tables`` and
    ``meta`` (its run.json), the ``claims`` table, the ``figures``' names, the report's
    ``sections`` (Markdown lines), what decides each claim (``evidence``) and what its
    experiment hands over beyond its tables (``page``; none: its tables, claims and sections
    alone)."""

    title: str
    tables: Mapping[str, pd.DataFrame]
    meta: Mapping[str, Any]
    claims: pd.DataFrame | None = None
    figures: Sequence[str] = ()
    sections: Sequence[str] = ()
    evidence: Evidence = ()
    page: Page | None = None


def _decided_by(
    claims: pd.DataFrame,
    evidence: Evidence,
    plots: Mapping[str, str],
    figures: Sequence[str],
    listed: Sequence[str],
    tables: Mapping[str, pd.DataFrame],
) -> list[str]:
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
                links.append(
                    f'<a class="evidence" href="#figure-{html.escape(f)}">figure '
                    f"{html.escape(f)}</a>"
                )
        for t in tabs:
            if t in listed:
                links.append(
                    f'<a class="evidence" href="#table-{html.escape(t)}">table {html.escape(t)}</a>'
                )
            elif t in tables:
                links.append(
                    f'<a class="evidence" href="tables/{html.escape(t)}.csv">table '
                    f"{html.escape(t)} (CSV)</a>"
                )
        out.append(" · ".join(links))
    return out


def page_html(run: RunPage, folder: Path | None = None) -> str:
    """The whole page of a run (see the module docstring); ``folder``: where its figures are
    (their sizes go on the page)."""
    title, tables, meta, claims = run.title, run.tables, run.meta, run.claims
    figures, sections, evidence = run.figures, run.sections, run.evidence
    name = str(meta.get("experiment", ""))
    page = run.page or Page()
    body, scripts = page.body, list(page.scripts)
    shown = set(page.shown) if body else set()
    listed = [t for t in sorted(tables) if t not in set(page.unlisted) | shown and t != "claims"]
    plots: dict[str, str] = dict(page.plots) if body else {}
    if page.presets or not body:  # its tables as interactive plots, then its own views
        explore = explore_data(tables, listed, page.presets, page.derived)
        body, scripts = explore_body(explore) + body, explore_scripts(explore) + scripts
        plots = figure_targets(explore) | plots
    parts = [
        f'<p class="note">{html.escape(name)} · report.md holds the same claims and '
        "sections; tables/ holds every table as Parquet and CSV.</p>"
    ]
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


def write_page(root: Path, run: RunPage) -> Path:
    """Write ``root/report.html`` (atomically; listed in the folder's manifest when the folder
    is held, as by the report step). Returns its path."""
    path = Path(root) / PAGE_NAME
    atomic_write_text(path, page_html(run, root))
    return path
