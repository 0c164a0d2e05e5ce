"""A run's page from its tables and its kind's name, as the report step writes it: for a
notebook, tests and benchmarks (``page_html(RunPage(title, tables, {"experiment": "scan"}))``).

The renderer (:mod:`attnlimits.view`) knows no experiment; these look the kind up by
``meta["experiment"]`` and hand the renderer what its page shows beyond its tables
(:func:`attnlimits.experiments.presets.page_of`). An unknown kind gets its tables alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from attnlimits.experiments.presets import page_of
from attnlimits.experiments.skeleton import EXPERIMENTS, get
from attnlimits.view import Page, RunPage
from attnlimits.view import page_html as render
from attnlimits.view import write_page as render_into

__all__ = ["RunPage", "page_for", "page_html", "write_page"]


def page_for(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> Page:
    """What the page of the run ``meta`` describes shows beyond its tables."""
    name = str(meta.get("experiment", ""))
    own = get(name).page if name in EXPERIMENTS else None
    return page_of(name, own, tables, meta)


def page_html(run: RunPage, folder: Path | None = None) -> str:
    """:func:`attnlimits.view.page_html` with the page of the run's kind (unless ``run`` names
    one)."""
    return render(_with_page(run), folder)


def write_page(root: Path, run: RunPage) -> Path:
    """:func:`attnlimits.view.write_page` with the page of the run's kind (unless ``run`` names
    one)."""
    return render_into(root, _with_page(run))


def _with_page(run: RunPage) -> RunPage:
    return run if run.page is not None else replace(run, page=page_for(run.tables, run.meta))
