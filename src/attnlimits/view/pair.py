"""Two runs of one kind on one page (``attnlimits view A B``): their claims side by side, their
heads on one colour scale with the difference, then their own pages in two columns.

:func:`pair_html` takes each run's label, the URL of its page (served beside this one) and
its claims table; it knows no experiment. Claims are matched by their text (the
k-th row of a claim in A with the k-th in B); a claim one run lacks shows "–" on that side.
Where both pages expose layer × head grids (``window.attnlimitsView.grids``, as the scan's
page does), ``pair.js`` draws A and B on one colour scale and B − A per diagnostic and L,
heads matched by (layer, head), on what both runs have, and names what only one has; it reads
the grids from the two pages in the browser, so serving the pair reads no table of heads.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from importlib import resources
from typing import Any

import pandas as pd

from attnlimits.view._page import document, table_html

__all__ = ["Side", "pair_html"]

#: Per side, the claims' columns put side by side.
_SHOWN = ("verdict", "measured")


@dataclass(frozen=True)
class Side:
    """One run of the pair: a label, its page's URL, its claims (or None)."""

    label: str
    href: str
    claims: pd.DataFrame | None = None


def _verdict(value: Any) -> str:
    if not isinstance(value, str):
        return "–"
    return (
        f'<span class="verdict-{html.escape(value.replace(" ", "-"))}">{html.escape(value)}</span>'
    )


def _keyed(claims: pd.DataFrame, tag: str) -> pd.DataFrame:
    cols = [c for c in _SHOWN if c in claims]
    out = claims[["claim", *cols]].assign(occurrence=claims.groupby("claim").cumcount())
    return out.rename(columns={c: f"{c} ({tag})" for c in cols})


def _claims(a: pd.DataFrame, b: pd.DataFrame) -> str:
    """The claims of both runs, one row per claim, verdicts coloured; "≠" where they differ."""
    joined = _keyed(a, "A").merge(_keyed(b, "B"), on=["claim", "occurrence"], how="outer")
    joined = joined.drop(columns="occurrence")
    raw = set()
    if "verdict (A)" in joined and "verdict (B)" in joined:
        same = joined["verdict (A)"].fillna("–") == joined["verdict (B)"].fillna("–")
        joined.insert(1, "A vs B", same.map({True: "=", False: "≠"}))
    for col in ("verdict (A)", "verdict (B)"):
        if col in joined:
            joined[col] = joined[col].map(_verdict)
            raw.add(col)
    return table_html(joined, limit=len(joined), raw=raw)


#: The heads of both runs, filled by pair.js (removed where the pages have no grids).
_GRIDS = """<div id="pair-grids">
<h2 id="pair-grids-title">Heads, A and B on one scale, and B − A</h2>
<div class="controls">
 <label>diagnostic <select id="pair-metric"></select></label>
 <label>length L <select id="pair-length"></select></label>
</div>
<p id="pair-shared" class="note">Waiting for both pages ...</p>
<div class="row"><div id="pair-a" style="height:460px"></div>
<div id="pair-b" style="height:460px"></div></div>
<div id="pair-diff" style="height:460px"></div>
</div>"""


def pair_html(kind: str, a: Side, b: Side) -> str:
    """The page of the pair (see the module docstring)."""
    parts = [
        f'<p class="note">two runs of {html.escape(kind)}: A = {html.escape(a.label)}, '
        f"B = {html.escape(b.label)}. Each page below is the run's own report.html.</p>"
    ]
    if (
        a.claims is not None
        and b.claims is not None
        and "claim" in a.claims
        and "claim" in b.claims
    ):
        parts += ["<h2>Claims, side by side</h2>", _claims(a.claims, b.claims)]
    columns = "".join(
        f'<div><h2>{tag}: {html.escape(side.label)}</h2><iframe id="page-{tag.lower()}" '
        f'src="{html.escape(side.href)}" title="{tag}: {html.escape(side.label)}" '
        'style="width:100%;height:85vh;border:1px solid #ccc"></iframe></div>'
        for tag, side in (("A", a), ("B", b))
    )
    parts += [_GRIDS, f'<div class="row">{columns}</div>']
    glue = resources.files(__package__).joinpath("pair.js").read_text(encoding="utf-8")
    return document(
        f"{a.label} vs {b.label}", "\n".join(parts), scripts=[f"<script>{glue}</script>"]
    )
