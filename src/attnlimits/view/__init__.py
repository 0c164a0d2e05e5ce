"""Every result as an interactive page: ``report.html`` and the same views in a notebook.

The report step writes ``report.html`` beside ``report.md`` (:func:`write_page`); ``attnlimits
view DIR`` opens it. In a notebook, :func:`scan` turns a scan's ``heads`` table into a Plotly
figure (``attnlimits.view.scan(pd.read_parquet("results/scan/x/tables/heads.parquet"))``).
Pages use Plotly (docs/view.md says why), its JavaScript embedded: nothing is fetched.
"""

from attnlimits.view.pages import PAGE_NAME, page_html, write_page
from attnlimits.view.scan_page import scan, scan_data

__all__ = ["PAGE_NAME", "page_html", "scan", "scan_data", "write_page"]
