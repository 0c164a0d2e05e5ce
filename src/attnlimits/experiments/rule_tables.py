"""An experiment's rules and thresholds as the docs print them, drawn from the rules themselves
(:mod:`attnlimits.claims`): every rule's text as its claims table prints it, and every threshold
once with its value, provenance, reason and the rules that read it. Nothing in them is typed
by hand, so a changed threshold changes the docs when they are refilled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from attnlimits.claims import Threshold
from attnlimits.experiments.report import markdown_table

__all__ = ["rules_table", "thresholds_table"]


def rules_table(rules: Sequence[Any]) -> str:
    """Each rule (a :mod:`attnlimits.claims.rules` shape: ``name``, ``text()``,
    ``thresholds``) as a row: its name, its text, the thresholds it reads."""
    table = pd.DataFrame(
        {
            "rule": [f"`{rule.name}`" for rule in rules],
            "as the claims table prints it": [rule.text() for rule in rules],
            "thresholds": [", ".join(t.name for t in rule.thresholds) or "—" for rule in rules],
        }
    )
    return markdown_table(table)


def thresholds_table(
    thresholds: Mapping[str, Threshold],
    rules: Sequence[Any] = (),
    also: Mapping[str, str] | None = None,
) -> str:
    """Every threshold once: its value (as the rules print it), provenance, reason and the
    ``rules`` that read it, then what else reads it (``also``, by threshold name: code that
    reads the tables, not a rule)."""
    limits, also = list(thresholds.values()), also or {}
    table = pd.DataFrame(
        {
            "threshold": [f"`{t.name}`" for t in limits],
            "value": [str(t) for t in limits],
            "provenance": [t.provenance for t in limits],
            "why": [t.reason or "the paper's number" for t in limits],
            "used by": [
                ", ".join(
                    [f"`{rule.name}`" for rule in rules if t in rule.thresholds]
                    + ([also[t.name]] if t.name in also else [])
                )
                or "—"
                for t in limits
            ],
        }
    )
    return markdown_table(table)
