"""A statement judged on the steps ablation's committed tables rather than on a run: §3's
growing chance that a wrong item has the largest logit, with its own subject, parameter size.

Paper B, §3: "forcing large parameters promotes overfitting, and the likelihood that the
incorrect item gets the largest logit". Row (2.e) reads it with set size (our reading); this
row (referee round 4, point 11) reads it across the steps ablation's training lengths, where
the logit spread, Prop. 3.1's proxy for the parameters' size, grows (``steps_loss.csv``), on
App. F's sets, the same sets at every length (``appf_sensitivity/sensitivity.csv``'s kept
inputs on the default θ grid, ten seeds pooled). No run holds both tables, so
:mod:`.doc` adds the row to the committed claims table (:func:`with_row`) and re-makes
finding (2)'s row from its statements.
"""

from __future__ import annotations

import math

import pandas as pd

from attnlimits.claims.verdicts import (
    FINDING,
    NA,
    NOT_TESTABLE,
    SUPPORTING,
    Statement,
    finding,
)
from attnlimits.experiments.softmax_not_enough import rules
from attnlimits.experiments.softmax_not_enough.claims import Q_WRONG_TOP

__all__ = ["DEFAULT_GRID", "with_row", "wrong_top_by_length"]

#: The θ grid of ``sensitivity.csv`` whose kept inputs the row reads (the default procedure's).
DEFAULT_GRID = "0.005…2 step 0.005 (default)"
_CLAIM = (
    "(2.g) §3: the chance that a wrong item has the largest logit grows with parameter size "
    "(longer training), our reading"
)


def _number(text: object) -> float:
    """A committed CSV cell as a number ("1,978" and "131" alike); NaN where it is none."""
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return math.nan


def wrong_top_by_length(sensitivity: pd.DataFrame, steps_loss: pd.DataFrame) -> dict[str, str]:
    """The row: kept App. F inputs (a wrong item holds the top logit) per training length on
    the default grid, the final logit spread per length, and
    :data:`.rules.wrong_top_with_training` on the kept count at the longest length over the
    shortest; not testable where the spread did not grow over those lengths; n/a without
    both tables."""
    statement = Statement(
        _CLAIM,
        SUPPORTING,
        Q_WRONG_TOP,
        "ours: 'forcing large parameters' read as the parameters longer training gives (the "
        "final logit spread, Prop. 3.1's proxy for their size, grows with the steps); on App. "
        "F's sets (the same at every length, ten seeds pooled), the share where the max item "
        "lacks the top logit, longest length over shortest; from the steps ablation's committed "
        "tables (appf_sensitivity/sensitivity.csv, steps_loss.csv), not from the run above: "
        "its 20,000-step models are the ablation's own, the default configuration trained "
        "again, not the run's (whose App. F points, points.csv, fit_sizes.csv and fit_fits.csv, "
        "are a few more or fewer: float rounding differs between trainings)",
    )
    rule = rules.wrong_top_with_training
    grid = sensitivity[sensitivity["grid"].astype(str) == DEFAULT_GRID]
    kept = {int(_number(s)): _number(k) for s, k in zip(grid["steps"], grid["kept"], strict=True)}
    spread = {
        int(_number(s)): _number(v)
        for s, v in zip(steps_loss["steps"], steps_loss["final spread"], strict=True)
    }
    lengths = sorted(set(kept) & set(spread))
    if len(lengths) < 2:
        return statement.judged("the ablation's tables share fewer than two lengths", "", NA)
    first, last = lengths[0], lengths[-1]
    ratio = kept[last] / kept[first] if kept[first] > 0 else math.nan
    said = (
        "kept sets (a wrong item has the largest logit) on App. F's sets: "
        + ", ".join(f"{s:,} steps: {kept[s]:,.0f}" for s in lengths)
        + f" (× {ratio:.3g}); final logit spread: "
        + ", ".join(f"{spread[s]:.4g}" for s in lengths)
    )
    moved = rule.flips(ratio)
    if moved:
        said += f"; the verdict flips if {' or '.join(moved)} passes {ratio:.3g}"
    if not spread[last] > spread[first]:
        reason = "the logit spread did not grow over the training lengths"
        return statement.judged(said, rule.text(), NOT_TESTABLE, reason)
    return statement.judged(said, rule.text(), rule(ratio))


def with_row(claims: pd.DataFrame, row: dict[str, str]) -> pd.DataFrame:
    """``claims`` with ``row`` added among the statements of its finding (the claim's number
    before the dot, "(2.g)" → "(2)"), in its letter's order, the finding's row re-made from
    its statements (:func:`attnlimits.claims.verdicts.finding`); a row of that name already
    there is replaced."""
    number = row["claim"].split(" ")[0].split(".")[0].rstrip(")") + ")"
    records = [r for r in claims.to_dict("records") if r["claim"] != row["claim"]]
    head = next(i for i, r in enumerate(records) if r["claim"].startswith(number + " "))
    end = head + 1
    while end < len(records) and records[end]["claim"].startswith(number.rstrip(")") + "."):
        end += 1
    # in its letter's place among the statements: (2.g) after (2.f), before (2.h)
    parts = sorted([*records[head + 1 : end], row], key=lambda r: r["claim"].split(" ")[0])
    top = records[head]
    made = finding(
        Statement(top["claim"], FINDING, top["paper"], top.get("reading") or ""),
        [{k: str(v) for k, v in r.items()} for r in parts],
    )
    out = pd.DataFrame([*records[:head], *made, *records[end:]])
    return out[list(claims.columns)]
