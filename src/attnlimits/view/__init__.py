"""Every result as an interactive page: ``report.html``, beside ``report.md``.

The report step writes ``report.html`` (:func:`write_page`); ``attnlimits view DIR`` opens it.
This package is a renderer below the experiments: each experiment hands it what its page shows
beyond its tables (:class:`Page`; the scan's views live in
:mod:`attnlimits.experiments.scan.page`, whose :func:`~attnlimits.experiments.scan.page.scan` is
the notebook's view of a scan). Pages use Plotly (docs/view.md says why), its JavaScript
embedded: nothing is fetched. :func:`json_script` and :func:`table_html` are the pieces an
experiment's own views are built from.
"""

from attnlimits.view._page import json_script, table_html
from attnlimits.view.pages import PAGE_NAME, Page, page_html, write_page

__all__ = ["PAGE_NAME", "Page", "json_script", "page_html", "table_html", "write_page"]
