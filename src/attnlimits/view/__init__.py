"""Every result as an interactive page: ``report.html``, beside ``report.md``.

The report step writes ``report.html`` (:func:`write_page`); ``attnlimits view DIR`` opens it.
This package is a renderer below the experiments: each experiment hands it what its page shows
beyond its tables (:class:`Page`; the scan's views live in
:mod:`attnlimits.experiments.scan.page`, whose :func:`~attnlimits.experiments.scan.page.scan` is
the notebook's view of a scan). Pages use Plotly (docs/view.md says why), its JavaScript
embedded: nothing is fetched. :func:`json_script` and :func:`table_html` are the pieces an
experiment's own views are built from.

The names load on first use: ``attnlimits view`` (which needs the pages' file names only)
imports no pandas, numpy or plotly.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnlimits.view._page import json_script, table_html
    from attnlimits.view.pages import Page, RunPage, page_html, write_page

__all__ = [
    "MONITOR_PAGE",
    "PAGE_NAME",
    "Page",
    "RunPage",
    "json_script",
    "page_html",
    "table_html",
    "write_page",
]

#: The page's name in a results folder.
PAGE_NAME = "report.html"
#: The monitor's page in its folder.
MONITOR_PAGE = "attention_monitor.html"
_LAZY = {
    "Page": "pages",
    "RunPage": "pages",
    "page_html": "pages",
    "write_page": "pages",
    "json_script": "_page",
    "table_html": "_page",
}


def __getattr__(name: str) -> Any:
    """The renderer's names, imported on first use (see the module docstring)."""
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
