"""Paper B's (3.c): the growth of App. D at a weight decay λ not chosen for it.

(3.a) and (3.b) judge a growth that our choice of λ = 1e-3 allowed (round 4's point 10), so
(3.c) reads (3.a)'s statistic on the training logs of other λ, written into the run's folder
by ``benchmarks/second_lambda.py`` (``tables/second_lambda_log``, one ``weight_decay`` per λ).
Each λ is judged by :data:`.rules.grows_if_learnt` (the growth rule, where the model learnt
the task at that λ; round 8's point 1). Where the log holds several λ, (3.c) is their verdicts
combined as a finding's headlines are (:func:`attnlimits.claims.combine`: a not testable λ is
left out, and then the row reads at most partly); that rule was written on 2026-11-29 (round
8), before any λ but 1e-2 was run, for the pre-registered third λ, :data:`PREREGISTERED`.
:func:`per_seed` is the committed table behind the rows (round 8's point 4).
"""

from __future__ import annotations

import math

import pandas as pd

from attnlimits.claims import HEADLINE, NA, NOT_TESTABLE, Statement, combine
from attnlimits.experiments.softmax_not_enough import rules
from attnlimits.experiments.softmax_not_enough.claims import Q_NORMS
from attnlimits.experiments.softmax_not_enough.unjudged import flip_text

__all__ = ["CLAIM", "PREREGISTERED", "READING", "not_run", "per_seed", "run_row"]

Row = dict[str, str]

#: The λ of (3.c), each written before its run: 1e-2 (2026-11-29, commit b064b58: a decade
#: above the default's 1e-3), then 3e-3 (2026-11-29, round 8's point 1, run after that: the
#: geometric middle of 1e-3 and 1e-2, since at 1e-2 the model learnt nothing).
PREREGISTERED = (1e-2, 3e-3)

CLAIM = "(3.c) the growth holds at a second weight decay λ, not chosen for it"
READING = (
    "ours (round 4, point 10; set after earlier runs were public, stricter): (3.a) and (3.b) "
    "judge a growth our choice of λ allowed (it was chosen because the spread still grows with "
    "it), so the finding needs the growth at a λ not chosen for it: (3.a)'s statistic on a "
    "training run identical but for λ (`benchmarks/second_lambda.py`; λ = 1e-2, ours, set "
    "before that run: a decade above the default's, where the L2 term pulls hardest against "
    "growth); where the model did not learn the task at that λ, not testable (round 8, point "
    "1: a precondition set after the λ = 1e-2 run, more lenient); a third λ, 3e-3, was "
    "pre-registered (round 8) and run after its rule was written, and several λ combine as "
    "a finding's headlines; in a run without that log this headline is n/a and the finding "
    "rule reads (3) at most partly"
)
_RULE = rules.grows_if_learnt.text() + " (on the second λ's training log)"


def _ends(log: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    per = log.sort_values("step").groupby("seed")
    return per.first(), per.last()


def _one(log: pd.DataFrame, lam: float | None) -> tuple[str, str, str]:
    """One λ's measured text, verdict and not-testable reason (the rule's statistic: the
    median over seeds of the per-seed last / first logit spread, as (3.a))."""
    first, last = _ends(log)
    ratio = float((last["spread"] / first["spread"]).median())
    bound = float((last["bound"] / first["bound"]).median())
    lam2 = float(log["weight_decay"].iloc[0]) if "weight_decay" in log else math.nan
    accuracy = float(last["acc"].median()) if "acc" in log else math.nan
    verdict = rules.grows_if_learnt(accuracy, ratio)
    if verdict == NOT_TESTABLE:  # round 8, point 4: the precondition's flip point
        flips = f"; the verdict flips if {rules.LEARNT.name} passes {accuracy:.3g}"
    elif ratio <= 0:  # a ratio of spreads is ≥ 0: no threshold can pass below it
        flips = "; cannot flip (ratio 0)"
    else:
        flips = flip_text(rules.grows, ratio)
    measured = (
        f"λ = {lam2:g} (the default's λ = {lam if lam is not None else math.nan:g}), "
        f"{len(first)} seeds, step {int(log['step'].min()):,} → {int(log['step'].max()):,}: "
        f"logit spread {first['spread'].median():.3g} → {last['spread'].median():.3g}, the "
        f"median of the per-seed ratios × {ratio:.2f} (the verdict reads it)"
        + flips
        + f"; the bound (as (3.b)) × {bound:.2f}"
        + f"; training accuracy at the last step, median over seeds, {accuracy:.2f}"
    )
    measured += _learnt_seeds(first, last)
    reason = ""
    if verdict == NOT_TESTABLE:  # the precondition decided: say what the rule alone read
        reason = f"the model did not learn the task at λ = {lam2:g}"
        measured += (
            f" (< {rules.LEARNT}: the model did not learn the task at this λ; the rule written "
            f"before the run, {rules.grows.name} alone, read it {rules.grows(ratio)}"
            + (", and a ratio of 0 cannot flip it" if ratio <= 0 else "")
            + ")"
        )
    return measured, verdict, reason


def _learnt_seeds(first: pd.DataFrame, last: pd.DataFrame) -> str:
    """Description, not deciding (round 8): how many seeds learnt the task at this λ (their
    own last-step accuracy at least LEARNT) and how their spread moved, since a median over
    seeds can hide a split."""
    if "acc" not in last:
        return ""
    learnt = last["acc"] >= rules.LEARNT.value
    said = f" ({int(learnt.sum())} of {len(last)} seeds reach {rules.LEARNT} alone"
    if learnt.any():
        ratio = last.loc[learnt, "spread"] / first.loc[learnt, "spread"]
        said += (
            f"; their logit spread {first.loc[learnt, 'spread'].min():.3g}–"
            f"{first.loc[learnt, 'spread'].max():.3g} → {last.loc[learnt, 'spread'].min():.3g}–"
            f"{last.loc[learnt, 'spread'].max():.3g}, × {ratio.min():.3g}–{ratio.max():.3g}"
        )
    return said + ")"


def run_row(log: pd.DataFrame, lam: float | None) -> Row:
    """(3.c) on the second λ's training log: one λ judged by :data:`.rules.grows_if_learnt`;
    several (a ``weight_decay`` column with more than one value) each judged so, then
    combined as a finding's headlines (the rule of 2026-11-29, before any such run)."""
    statement = Statement(CLAIM, HEADLINE, Q_NORMS, READING)
    groups = [g for _, g in log.groupby("weight_decay")] if "weight_decay" in log else [log]
    judged = [_one(g, lam) for g in groups]
    if len(judged) == 1:
        return statement.judged(judged[0][0], _RULE, judged[0][1], judged[0][2])
    verdicts = [v for _, v, _ in judged]
    verdict = combine(verdicts)
    measured = (
        " | ".join(m + f": {v}" for m, v, _ in judged)
        + f"; the λ combined as a finding's headlines: {verdict}"
    )
    reason = "; ".join(r for _, _, r in judged if r) if verdict == NOT_TESTABLE else ""
    return statement.judged(
        measured, _RULE + ", each λ, combined as a finding's headlines", verdict, reason
    )


def not_run(lam: float | None, train_s: float | None) -> Row:
    """(3.c): n/a in a run without the second λ's training log, with what that run costs."""
    cost = (
        "one more training stage of this run (the same ten seeds and steps at another λ, "
        "training only: the spread and bound are logged during training), which took "
        f"{train_s:,.0f} s ({train_s / 3600:.1f} h) here, on this run's machine as loaded as it "
        "was (a loaded machine's time overstates a quiet one's; docs/max_retrieval.md#speed)"
        if train_s is not None and math.isfinite(train_s)
        else "one more training stage of this run (its time is not recorded)"
    )
    said = f"λ = {lam:g}" if lam is not None else "one λ"
    return Statement(CLAIM, HEADLINE, Q_NORMS, READING).judged(
        f"not run: this run trains {said} only; a second λ would cost {cost}",
        rules.grows.text() + " (on the second λ's training log)",
        NA,
    )


def _fmt(values: pd.Series, spec: str) -> pd.Series:
    return values.map(f"{{:{spec}}}".format)


def per_seed(training_log: pd.DataFrame, second: pd.DataFrame | None, lam: float) -> pd.DataFrame:
    """Per λ and seed, the first and last logged step's logit spread, bound and batch accuracy
    with the two ratios (3.a), (3.b) and (3.c) read: the default's ``training_log`` at ``lam``
    and each λ of ``second`` (its ``weight_decay``), so that a reader can recompute them."""
    logs = [training_log.assign(weight_decay=lam)]
    if second is not None and len(second):
        logs += [g for _, g in second.groupby("weight_decay")]
    frames = []
    for log in logs:  # one frame per λ, the seeds in columns
        first, last = _ends(log)
        has_acc = "acc" in log
        frames.append(
            pd.DataFrame(
                {
                    "λ": f"{float(log['weight_decay'].iloc[0]):g}",
                    "seed": first.index.astype(int),
                    "first step": first["step"].astype(int),
                    "last step": last["step"].astype(int),
                    "spread first": _fmt(first["spread"], ".4g"),
                    "spread last": _fmt(last["spread"], ".4g"),
                    "spread ratio": _fmt(last["spread"] / first["spread"], ".3g"),
                    "bound first": _fmt(first["bound"], ".4g"),
                    "bound last": _fmt(last["bound"], ".4g"),
                    "bound ratio": _fmt(last["bound"] / first["bound"], ".3g"),
                    "acc first": _fmt(first["acc"], ".3f") if has_acc else "",
                    "acc last": _fmt(last["acc"], ".3f") if has_acc else "",
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
