"""The generated blocks of ``docs/compare.md``: the comparison's rules and thresholds, drawn
from ``rules.py`` (no run's numbers: the doc's results are a run's ``report.md`` as written).

    python -m attnlimits.experiments.compare.doc [--doc docs/compare.md]

:func:`render` gives the blocks (the outcome rule, the claims' rules, every threshold once) and
:func:`main` writes them between the doc's ``<!-- generated: NAME -->`` markers
(:func:`attnlimits.experiments.report.refill`); ``tests/test_compare_rules.py`` checks that the
doc holds exactly these blocks, so a changed threshold cannot leave the doc behind.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from attnlimits.experiments.compare import rules
from attnlimits.experiments.report import refill
from attnlimits.experiments.rule_tables import rules_table, thresholds_table

__all__ = ["main", "render"]


def render() -> dict[str, str]:
    """The doc's generated blocks, by name."""
    return {
        "compare-outcomes": rules.effects_text() + ".",
        "compare-rules": rules_table(rules.RULES),
        "compare-thresholds": thresholds_table(rules.THRESHOLDS, rules.RULES, rules.READ_BY),
    }


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--doc", type=Path, default=Path("docs/compare.md"))
    args = ap.parse_args(argv)
    refill(args.doc, render())


if __name__ == "__main__":
    main()
