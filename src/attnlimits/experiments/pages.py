"""A run's page from its tables and its kind's name, as the report step writes it: for a
notebook, tests and benchmarks (``page_html(title, tables, {"experiment": "scan"})``).

The renderer (:mod:`attnlimits.view`) knows no experiment; these look the kind up by
``meta["experiment"]`` and hand the renderer what its page shows beyond its tables
(:func:`attnlimits.experiments.presets.page_of`). An unknown kind gets its tables alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from attnlimits.experiments.presets import page_of
from attnlimits.experiments.skeleton import EXPERIMENTS, get
from attnlimits.view import Page
from attnlimits.view import page_html as render
from attnlimits.view import write_page as render_into
from attnlimits.view.pages import Evidence

__all__ = ["page_for", "page_html", "write_page"]


def page_for(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> Page:
    """What the page of the run ``meta`` describes shows beyond its tables."""
    name = str(meta.get("experiment", ""))
    own = get(name).page if name in EXPERIMENTS else None
    return page_of(name, own, tables, meta)


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
    """:func:`attnlimits.view.page_html` with the page of the run's kind."""
    page = page_for(tables, meta)
    return render(title, tables, meta, claims, figures, sections, evidence, page, folder)


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
    """:func:`attnlimits.view.write_page` with the page of the run's kind."""
    page = page_for(tables, meta)
    return render_into(root, title, tables, meta, claims, figures, sections, evidence, page)
