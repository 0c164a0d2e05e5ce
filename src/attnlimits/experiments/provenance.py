"""Where each setting of an experiment comes from: one provenance table per experiment.

Every experiment that reproduces a paper keeps one tuple of :class:`Setting` rows in its own
``provenance`` module (:mod:`.limitations.provenance`, :mod:`.softmax_not_enough.provenance`,
:mod:`.clrs_text.provenance`): the config fields a row covers, how its value reads (drawn from
the run's settings, never retyped), its label and the reason. The labels are the claims
engine's (:mod:`attnlimits.claims.thresholds`), so a setting and a threshold are labelled
alike:

- *paper* (:data:`PAPER`): the paper states it (its words, where quoted, are in our copy);
- *lost in our copy* (:data:`LOST`): the paper gave a value that our copy of its text lost;
  the value is our choice, and the reason starts "our choice, because";
- *ours* (:data:`OURS`): the paper does not state it, or we depart from it;
- *ours, set after earlier runs were public* (:data:`AFTER_RUNS`).

From that one tuple come the set-up table every report prints (:func:`table`), the table in
the experiment's doc (the ``<!-- generated: … -->`` block its doc module fills from
:func:`table` of the defaults) and the pointer in its config docstrings. ``tests/
test_provenance.py`` checks that every config field has exactly one row and that each doc
holds the generated table; ``python -m attnlimits.experiments.provenance`` refills the three
docs' blocks after a default changes.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from attnlimits.claims.thresholds import AFTER_RUNS, LOST, OURS, PAPER, PROVENANCES

__all__ = [
    "AFTER_RUNS",
    "COLUMNS",
    "DOCS",
    "LOST",
    "LOST_PREFIX",
    "OURS",
    "PAPER",
    "PROVENANCES",
    "Params",
    "Setting",
    "blocks",
    "config_fields",
    "covered",
    "main",
    "markdown",
    "table",
]

#: A run's settings, flat: field name (``"lr"``, or ``"train.lr"`` where a config nests) to
#: value, as ``run.json`` stores them (JSON values: tuples are lists).
Params = Mapping[str, Any]
#: A cell: fixed text, or text drawn from the run's settings.
Text = str | Callable[[Params], str]
#: How a lost setting's reason begins (the brief's wording; :class:`Setting` refuses others).
LOST_PREFIX = "our choice, because"
#: The columns of every set-up table; ``paper`` only where an experiment's rows fill it.
COLUMNS = ("setting", "config", "paper", "this run", "label", "why")
#: (doc file, its block's name, the module whose ``defaults()`` the block prints).
DOCS: tuple[tuple[str, str, str], ...] = (
    ("docs/limitations.md", "provenance", "attnlimits.experiments.limitations.provenance"),
    ("docs/max_retrieval.md", "provenance", "attnlimits.experiments.softmax_not_enough.provenance"),
    ("docs/clrs_text.md", "clrs-setup", "attnlimits.experiments.clrs_text.provenance"),
)


def _text(cell: Text, params: Params) -> str:
    return cell(params) if callable(cell) else cell


@dataclass(frozen=True)
class Setting:
    """One row of a provenance table.

    ``name``: what the reader calls the setting; ``fields``: the config fields the row covers
    (every field of the experiment's config is in exactly one row; none for a setting no field
    holds, such as the task); ``value``: how this run's value reads; ``label``: one of
    :data:`PROVENANCES`; ``reason``: why. ``value``, ``label``, ``reason`` and ``paper`` (what
    the paper does, for a table with that column) are text or a function of the run's
    settings, so a run that picks the other arm of a choice gets that arm's label and reason.
    A row is shown where the run has its first field (a run without App. F's refit has no
    App. F rows; a run saved before a later field existed keeps the row)."""

    name: str
    fields: tuple[str, ...]
    value: Text
    label: Text
    reason: Text
    paper: Text = ""

    def row(self, params: Params) -> dict[str, str]:
        """This setting's row for a run (its label and reason checked)."""
        label, why = _text(self.label, params), _text(self.reason, params)
        if label not in PROVENANCES:
            raise ValueError(f"setting {self.name}: label {label!r} is none of {PROVENANCES}")
        if label == LOST and not why.startswith(LOST_PREFIX):
            raise ValueError(f"setting {self.name}: a lost setting's reason starts {LOST_PREFIX!r}")
        if label != PAPER and not why.strip():
            raise ValueError(f"setting {self.name} ({label}) needs its reason")
        return {
            "setting": self.name,
            "config": ", ".join(self.fields) or "—",
            "paper": _text(self.paper, params),
            "this run": _text(self.value, params),
            "label": label,
            "why": why,
        }


def table(
    settings: Iterable[Setting], params: Params, columns: Sequence[str] = COLUMNS
) -> pd.DataFrame:
    """The set-up table of a run: a row per setting whose first field the run has (or that
    has none), ``columns`` only (a table without the paper column leaves it out)."""
    rows = [s.row(params) for s in settings if not s.fields or s.fields[0] in params]
    return pd.DataFrame(rows, columns=list(COLUMNS))[list(columns)]


def covered(settings: Iterable[Setting]) -> list[str]:
    """Every field the rows cover, in row order (a field twice is listed twice)."""
    return [f for s in settings for f in s.fields]


def config_fields(config: Any, prefix: str = "") -> dict[str, Any]:
    """A config dataclass (or its class) as flat :data:`Params`: field name to default value
    (``prefix`` before each name), JSON-shaped as ``run.json`` stores it."""
    import json

    if isinstance(config, type):
        config = config()
    if not is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"{config!r} is not a dataclass instance")
    values = json.loads(json.dumps(asdict(config), default=str))
    return {f"{prefix}{f.name}": values[f.name] for f in fields(config)}


def markdown(module: str) -> str:
    """The default run's table of an experiment's provenance ``module`` (its ``defaults()``),
    as the doc prints it."""
    from attnlimits.experiments.report import markdown_table

    return markdown_table(importlib.import_module(module).defaults())


def blocks() -> dict[str, dict[str, str]]:
    """Doc file -> its generated provenance block (name -> Markdown)."""
    return {doc: {name: markdown(module)} for doc, name, module in DOCS}


def main(argv: Sequence[str] | None = None) -> None:
    """Refill the provenance blocks of the three docs from the configs' defaults."""
    from attnlimits.experiments.report import refill

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("root", type=Path, nargs="?", default=Path("."), help="the repository")
    args = parser.parse_args(argv)
    for doc, found in blocks().items():
        refill(args.root / doc, found)


if __name__ == "__main__":
    main()
