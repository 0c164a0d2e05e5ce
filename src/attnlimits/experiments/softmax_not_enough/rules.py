"""The verdict rules of paper B's statements (*Softmax is not Enough*), declared on the claims
engine from named thresholds (:mod:`attnlimits.claims`).

Each rule turns numbers measured on a run into a verdict of :mod:`attnlimits.claims.verdicts`
(``"n/a"`` only where the run lacks the numbers); "not testable" (a precondition of the
statement fails in the data) is decided where the tables are read (:mod:`.findings`), with its
reason, except where the precondition is itself a threshold (:data:`grows_if_learnt`). Every
threshold is a :class:`~attnlimits.claims.Threshold` written once below, with its provenance
and reason; each rule's ``text()`` is what the claims table's ``rule`` column and
``docs/max_retrieval.md`` print, formatted from those thresholds, so no docstring or doc repeats
their values. ``tests/test_softmax_not_enough_claims.py`` holds known answers for every verdict
of every rule on both sides of each threshold, and changes a threshold to see the text follow.

Thresholds set after earlier runs were public (:data:`~attnlimits.claims.AFTER_RUNS`) say so
in their reason, with the date and what was public; the docs print each one's flip point (the
value at which it would change the verdict, :meth:`~attnlimits.claims.Graded.flips`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from attnlimits.claims import (
    AFTER_RUNS,
    NA,
    NOT,
    NOT_TESTABLE,
    OURS,
    PARTLY,
    REPRODUCED,
    Band,
    Graded,
    Holds,
    Rule,
    Share,
    Threshold,
    finite,
)

__all__ = [
    "ALPHA",
    "FALLING",
    "GROWN",
    "HIGHER",
    "LEARNT",
    "MOST",
    "RISES",
    "ROUNDING",
    "RULES",
    "SHARP",
    "STABLE",
    "THRESHOLDS",
    "UNIFORM_HI",
    "UNIFORM_LO",
    "accuracy_falls",
    "bounded",
    "degrades",
    "dispersion_errors",
    "entropy_rises",
    "falls_everywhere",
    "grows",
    "grows_if_learnt",
    "higher_flip",
    "higher_on_target",
    "higher_with_interval",
    "monotone",
    "pooled_gain",
    "sharp",
    "significant_sizes",
    "spread_bound",
    "stable_baseline",
    "stable_methods",
    "towards_uniform",
    "wrong_top_grows",
    "wrong_top_with_training",
]

# ---- the thresholds, each once -----------------------------------------------------------------

#: The level of every test of the experiment; the pooled interval is its 1 − ALPHA interval.
ALPHA = Threshold(
    "ALPHA",
    0.05,
    OURS,
    "the conventional 5 % level; our copy of the paper states none (Table 1's p-values are "
    "lost in it)",
)
SHARP = Threshold(
    "SHARP",
    0.9,
    AFTER_RUNS,
    "written 2026-11-27, after the 2026-11-25 run's 0.922 at n = 16 was public: 'sharply and "
    "cleanly' read as one item holding nine tenths of the attention",
)
MOST = Threshold(
    "MOST",
    0.5,
    AFTER_RUNS,
    "written with SHARP, after the same run: the max item holding most of the mass is sharp "
    "in part",
)
UNIFORM_LO = Threshold(
    "UNIFORM_LO",
    -1.2,
    AFTER_RUNS,
    "written 2026-11-28 (issue 56) before the 20,000-step tables it decides, after the "
    "5,000-step run's n·α_max (14.8, 74, 130, 139) was public: 'towards the uniform "
    "distribution' read as the max item's attention falling at the uniform rate 1/n, a "
    "log-log slope within 0.2 of −1 (the band of paper A's 1/T rule)",
)
UNIFORM_HI = Threshold(
    "UNIFORM_HI",
    -0.8,
    AFTER_RUNS,
    "the upper end of UNIFORM_LO's band, written with it: n·α_max levelling off (growing by "
    "at most n^0.2)",
)
FALLING = Threshold(
    "FALLING",
    0.0,
    AFTER_RUNS,
    "written with UNIFORM_LO: a slope below 0 is dispersing, though not at the uniform rate",
)
HIGHER = Threshold(
    "HIGHER",
    1.05,
    OURS,
    "written 2026-11-28 (issue 56) before any run measured it: 'higher attention' read as at "
    "least 5 % more mean attention on the desired item than softmax gives it, so that "
    "rounding-level differences do not count",
)
GROWN = Threshold(
    "GROWN",
    1.5,
    AFTER_RUNS,
    "written 2026-11-28 (issue 56), after the 5,000-step run's spread (33 at step 100, 131 at "
    "step 5,000) was public: 'grows' read as at least half again from the first logged step "
    "to the last",
)
RISES = Threshold("RISES", 1.0, AFTER_RUNS, "written with GROWN: any rise at all, smaller than it")
STABLE = Threshold(
    "STABLE",
    0.95,
    AFTER_RUNS,
    "written 2026-11-28 (round 4, point 19), after the default run's accuracy at the training "
    "size (softmax 99.6 % at n = 16) was public: App. A's 'a stable baseline model' read as "
    "the softmax model at or above 95 % at its largest training size, the lower end of its "
    "95 % interval counting (as the size table's NEAR_CEILING reads near 100 %)",
)
LEARNT = Threshold(
    "LEARNT",
    0.9,
    AFTER_RUNS,
    "written 2026-11-29 (referee round 8, point 1), after the second λ's run was public "
    "(λ = 1e-2: training accuracy 0.22, the logit spread 0.013 → 0, read not reproduced by "
    "the rule written before it); more lenient: App. D's growth 'in spite of our weight decay "
    "loss' is said of a model that learnt the task (App. A: 'a stable baseline model'), so a "
    "λ at which the model does not learn it tests nothing: the training accuracy at the last "
    "step, median over seeds, at least nine tenths (CLRS-Text's in-distribution gate)",
)
ROUNDING = Threshold(
    "ROUNDING",
    1e-4,
    OURS,
    "float32 attention and logits: a bound checked up to this relative error, far below any "
    "gap a broken bound leaves",
)

# ---- the rules ---------------------------------------------------------------------------------

_share = Share("share", "it holds", "case")
_holds = Holds("holds", "the bound holds", "case")

#: (1.a) "sharply and cleanly ... on the problem sizes that the model was trained on": the max
#: item's mean attention at the largest training size at least SHARP; at least MOST: partly.
sharp = Graded(
    "sharp",
    "the max item's mean attention at the largest training size",
    Band(lo=SHARP),
    Band(lo=MOST),
)
#: (1.b) "eventually disperse towards the uniform distribution": the log-log slope of the max
#: item's mean attention against n over the profile's two largest sizes (n·α_max levelling off
#: is a slope of −1) in [UNIFORM_LO, UNIFORM_HI]; any other fall (slope below FALLING): partly;
#: no fall: not reproduced. Its own statistic: the check "must disperse" (Lemma 2.1, Thm 2.2)
#: asks only that the attention falls, which any dispersion does.
towards_uniform = Graded(
    "towards_uniform",
    "log-log slope of the max item's mean attention against n over the two largest sizes",
    Band(UNIFORM_LO, UNIFORM_HI),
    Band(hi=FALLING, open_hi=True),
)


def _pooled(low: float, high: float) -> str:
    if not (finite(low) and finite(high)):
        return NA
    return REPRODUCED if low > 0 else NOT if high < 0 else PARTLY


def _rises(lows: Sequence[float]) -> str:
    judged = [lo for lo in lows if finite(lo)]
    return _share([lo > 0 for lo in judged]) if judged else NA


#: (1.b)'s deciding rule since 2026-11-28 (referee point 10; written before the entropies it
#: decides were computed): "towards the uniform distribution" read on the softmax attention's
#: normalised entropy H/log n (1 at uniform), mean over seeds and the profile's test sets, per
#: profile size from the largest training size on; a step to the next larger size *rises*
#: where the difference's 1 − ALPHA interval (the two sizes' seeds × sets standard errors
#: added in quadrature, normal quantile; the seeds are shared, so this is wider than a paired
#: interval) lies above 0. Every step rises: reproduced; some: partly; none: not reproduced.
#: The slope of α_max (:data:`towards_uniform`) stays beside it as a reading: n·α_max levelling
#: off is what 1/n dispersion looks like, but it cannot show the distribution nearing uniform.
#: Since the round-5 referee's point 8 (2026-11-28, after the run's adaptive entropies were
#: public in its set_attention table, though not in any committed table) it also decides (2.h),
#: §5's "does not escape the conclusions of our theory", on the adaptive arm's entropy: the
#: theory's conclusion is dispersion, and adaptive's accuracy falling (:data:`accuracy_falls`,
#: the former statistic) is true of the hard argmax too, which never disperses.
entropy_rises = Rule(
    "entropy_rises",
    _rises,
    lambda: (
        f"normalised entropy H/log n rises (the step's {1 - ALPHA.value:.0%} interval above 0) "
        "at every step to a larger profile size from the training size on: reproduced; at "
        "some: partly; at none: not reproduced"
    ),
    (ALPHA,),
)


#: (2.a) §4.1's "more performant retrieval head on larger inputs, with statistical
#: significance": the gain pooled over the sizes above the training range, its 1 − ALPHA
#: interval over seeds and test sets wholly above 0; wholly below: not reproduced; else partly.
pooled_gain = Rule(
    "pooled_gain",
    _pooled,
    lambda: (
        f"pooled gain's {1 - ALPHA.value:.0%} interval above 0: reproduced; below 0: not "
        "reproduced; else partly"
    ),
    (ALPHA,),
)


def _significant(diffs: Sequence[float], ps: Sequence[float]) -> list[bool]:
    return [finite(p) and p < ALPHA.value and d > 0 for d, p in zip(diffs, ps, strict=True)]


#: §3's "Setting temperature to zero will then degrade accuracy": the trained softmax models
#: evaluated with a hard argmax (temperature → 0, inference only, :mod:`.argmax_arm`) against
#: softmax on the same seeds and sets, argmax − softmax pooled over the sizes above the training
#: range (each size once), its 1 − ALPHA interval over seeds and test sets (the statistics
#: module's paired interval) wholly below 0: reproduced; wholly above 0: not reproduced; else
#: partly. (2.a)'s rule with the sign turned, so that "larger inputs" is read the same way in
#: both; each size's own interval is shown beside it, not deciding. Written 2026-11-28 (issue
#: 56, referee point 2) after a timing trial of the arm at n = 16 and 1,024 had printed its
#: accuracies there; it has no threshold of its own (ALPHA is (2.a)'s).
degrades = Rule(
    "degrades",
    lambda low, high: _pooled(-high, -low),
    lambda: (
        f"argmax − softmax pooled over the sizes above the training range, its "
        f"{1 - ALPHA.value:.0%} interval below 0: reproduced; above 0: not reproduced; else "
        "partly"
    ),
    (ALPHA,),
)


#: (2.a), per size, as a reading shown beside the verdict (never deciding it): a size counts
#: where adaptive's mean is higher with p < ALPHA, once by the paper's paired t-test over seeds,
#: once by our paired interval over seeds and test sets. Every size / some / none.
significant_sizes = Rule(
    "significant_sizes",
    lambda diffs, ps: _share(_significant(diffs, ps)),
    lambda: (
        f"adaptive higher with p < {ALPHA} at every size above the training range: "
        "reproduced; some: partly; none: not reproduced"
    ),
    (ALPHA,),
)


def _higher(ratios: Sequence[float]) -> str:
    return _share([r >= HIGHER.value for r in ratios if finite(r)])


#: (2.b) Fig. 7 / §4.1's "higher attention being directed to the desired item, even in
#: situations where it did not receive the largest logit": per profile size above the training
#: range, on the sets where the max item lacks the top logit, adaptive's mean attention on it
#: over softmax's (seeds and such sets pooled) at least HIGHER; every size / some / none.
higher_on_target = Rule(
    "higher_on_target",
    _higher,
    lambda: (
        f"adaptive / softmax mean attention on the max item, where it lacks the top logit, "
        f"≥ {HIGHER} at every size above the training range: reproduced; some: partly; none: "
        "not reproduced"
    ),
    (HIGHER,),
)


def _higher_with_interval(
    ratios: Sequence[float],
    lows: Sequence[float],
    highs: Sequence[float],
    higher: float | None = None,
) -> str:
    """Per size: higher where ratio ≥ HIGHER and its interval lies above 1; not higher where
    ratio < HIGHER or the interval lies below 1; inconclusive (left out) where the interval
    holds 1 or is undefined. Verdict over the conclusive sizes, at most partly when any size
    was left out; none conclusive: n/a. ``higher``: HIGHER moved (for the flip point)."""
    level = HIGHER.value if higher is None else higher
    counted, left_out = [], 0
    for r, lo, hi in zip(ratios, lows, highs, strict=True):
        if not finite(r):
            continue
        if finite(lo) and lo > 1:
            counted.append(r >= level)
        elif finite(hi) and hi < 1:
            counted.append(False)
        else:
            left_out += 1
    if not counted:
        return NA
    verdict = _share(counted)
    return PARTLY if left_out and verdict == REPRODUCED else verdict


#: (2.b)'s rule since 2026-11-28 (referee point 15; written before its re-derivation, after
#: the run's ratios, 1.07 on 15 sets at n = 128, were public): per profile size above the
#: training range, the ratio of :data:`higher_on_target` with its 1 − ALPHA interval (delta
#: method on the paired (seed, set) rows, t on rows − 1 df, claims.statistics); a size counts
#: higher where the ratio ≥ HIGHER and the interval lies above 1, not higher where the ratio
#: is below HIGHER or the interval below 1, and is inconclusive (left out, named) where the
#: interval holds 1. Every counted size higher: reproduced, but partly if any was left out;
#: some: partly; none: not reproduced; none counted: n/a.
higher_with_interval = Rule(
    "higher_with_interval",
    _higher_with_interval,
    lambda: (
        f"per size above the training range, adaptive / softmax attention on the max item where "
        f"it lacks the top logit ≥ {HIGHER} with its {1 - ALPHA.value:.0%} interval above 1: "
        "higher; interval holding 1: inconclusive, left out; every counted size higher: "
        "reproduced (partly if one was left out); some: partly; none: not reproduced"
    ),
    (HIGHER, ALPHA),
)


def higher_flip(ratios: Sequence[float], lows: Sequence[float], highs: Sequence[float]) -> str:
    """(2.b)'s flip point (referee round 6, point 10): where HIGHER, moved just past the
    smallest ratio a size counts higher with, changes :data:`higher_with_interval`'s verdict,
    "; the verdict flips if HIGHER passes R"; else ""."""
    now = higher_with_interval(ratios, lows, highs)
    counted = [
        r
        for r, lo in zip(ratios, lows, strict=True)
        if finite(r) and finite(lo) and lo > 1 and r >= HIGHER.value
    ]
    if not counted:
        return ""
    r = min(counted)
    moved = _higher_with_interval(ratios, lows, highs, math.nextafter(r, math.inf))
    return f"; the verdict flips if HIGHER passes {r:.3g}" if moved != now else ""


#: (3.a, 3.b) App. D / Fig. 9's "grows with training time": the median over seeds of a logged
#: quantity at the last logged step over the first at least GROWN; any rise: partly.
grows = Graded(
    "grows",
    "median over seeds of last / first logged step",
    Band(lo=GROWN),
    Band(lo=RISES, open_lo=True),
)


def _grows_if_learnt(accuracy: float, ratio: float) -> str:
    if not finite(accuracy):
        return NA
    return grows(ratio) if accuracy >= LEARNT.value else NOT_TESTABLE


#: (3.c), the growth at a second weight decay λ (round 4, point 10), judged by :data:`grows`
#: on that λ's training log where the model learnt the task there (its training accuracy at the
#: last step, median over seeds, at least LEARNT); where it did not, not testable (a λ at which
#: nothing is learnt says nothing of a growth "in spite of" the weight decay). The precondition
#: is round 8's point 1 (2026-11-29, after the λ = 1e-2 run, more lenient); before it the row
#: read :data:`grows` alone, written before that run (not reproduced there: × 0.00).
grows_if_learnt = Rule(
    "grows_if_learnt",
    _grows_if_learnt,
    lambda: (
        f"the training accuracy at the last step, median over seeds, < {LEARNT}: not testable "
        f"(the model did not learn the task at that λ); else {grows.text()}"
    ),
    (LEARNT, GROWN, RISES),
)

#: §3's "forcing large parameters promotes overfitting, and the likelihood that the incorrect
#: item gets the largest logit" (Figure 2), read as that likelihood growing with the set size:
#: on App. F's sets (the same sets for every seed), the share where the max item lacks the top
#: logit at the largest size over the share at the smallest, at least GROWN; any rise: partly.
#: Written 2026-11-28 (referee point 19), after ``fit_sizes.csv``'s kept share (0.005 at
#: n = 16 … 0.225 at n = 2,048) was public: GROWN and RISES carry that label already.
wrong_top_grows = Graded(
    "wrong_top_grows",
    "share of App. F's sets where a wrong item has the largest logit, largest size over smallest",
    Band(lo=GROWN),
    Band(lo=RISES, open_lo=True),
)

#: The same sentence with its own subject (referee round 4, point 11): "forcing large
#: parameters" read as the parameters the model has after longer training, across the steps
#: ablation's training lengths (the default combination, ten seeds, the same App. F sets at
#: every length); the share of App. F's sets where a wrong item has the largest logit at the
#: longest length over the shortest, at least GROWN: reproduced; any rise: partly; else not
#: reproduced. The row reads it only where the logit spread (Prop. 3.1's proxy for the
#: parameters' size) grew over the same lengths; else it is not testable (:mod:`.findings`).
#: Written 2026-11-28, after ``appf_sensitivity/sensitivity.csv``'s kept inputs (1,978, 1,529
#: and 1,509 at 5,000, 10,000 and 20,000 steps) and ``steps_loss.csv``'s spread (131 → 172)
#: were public (2026-11-27): GROWN and RISES carry that label already.
wrong_top_with_training = Graded(
    "wrong_top_with_training",
    "share of App. F's sets where a wrong item has the largest logit, longest training length "
    "over shortest",
    Band(lo=GROWN),
    Band(lo=RISES, open_lo=True),
)

#: App. A's "Both methods prove to be effective in deriving a stable baseline model" (round 4,
#: point 19): the softmax arm's accuracy at the largest training size, the lower end of its
#: 1 − ALPHA interval over seeds and test sets, at least STABLE: reproduced; else not
#: reproduced. Whether *both methods* (mixed-size training, the L2 term) are what makes it
#: stable is not judged: no run trains without either (the row says so).
stable_baseline = Graded(
    "stable_baseline",
    "the softmax arm's accuracy at the largest training size, its interval's lower end",
    Band(lo=STABLE),
)


def _at_most_partly(low: float | None) -> str:
    verdict = stable_baseline(low)
    return PARTLY if verdict == REPRODUCED else verdict


#: (1.d)'s rule since 2026-11-28 (referee round 6, point 11; set after the runs, AFTER_RUNS,
#: stricter): the sentence's content is that *both methods* are effective, which no run tests
#: (none trains without either), so a stable baseline (:data:`stable_baseline` reproduced) reads
#: at most partly; below STABLE: not reproduced. Before it, (1.d) read reproduced on the
#: baseline alone (softmax 99.6 [99.3, 100.0] % at n = 16).
stable_methods = Rule(
    "stable_methods",
    _at_most_partly,
    lambda: (
        f"{stable_baseline.statistic} ≥ {STABLE}: partly (at most: that both methods make it "
        "so is not tested); else not reproduced"
    ),
    (STABLE,),
)


def _falls_below(train_low: float, largest_high: float) -> str:
    if not (finite(train_low) and finite(largest_high)):
        return NA
    return REPRODUCED if largest_high < train_low else NOT


#: An arm's accuracy falls out of distribution: at the largest test size the upper end of its
#: 1 − ALPHA interval over seeds and test sets lies below the lower end of its interval at the
#: largest training size: reproduced; else not reproduced (no partly: the intervals are apart
#: or not). Round 4's point 19, for two statements: App. B's Corollary B.1 (a check: the
#: softmax arm "will necessarily start to make prediction errors beyond a certain number of
#: items") and §5's "adaptive temperature ... does not escape the conclusions of our theory"
#: (the adaptive arm). Written 2026-11-28 after the default run's size table (softmax 17.8 %,
#: adaptive 23.4 % at n = 16,384 against 99.6 and 99.8 % at n = 16) was public; its only
#: threshold is ALPHA. Since the round-5 referee's point 8 a reading beside both rows, not
#: deciding (:data:`dispersion_errors` decides B.1, :data:`entropy_rises` on the adaptive arm
#: (2.h)): the hard argmax, which never disperses, falls too.
accuracy_falls = Rule(
    "accuracy_falls",
    _falls_below,
    lambda: (
        f"accuracy at the largest test size, its {1 - ALPHA.value:.0%} interval wholly below "
        "the interval at the largest training size: reproduced; else not reproduced"
    ),
    (ALPHA,),
)

#: Corollary B.1's "due to the dispersion effect" (the round-5 referee's point 8; rule changed
#: 2026-11-28 after the argmax arm's pooled 18.2 [15.1, 21.4] points was public, stricter: the
#: accuracy falling, :data:`accuracy_falls`, is true of the hard argmax too, which never
#: disperses, 99.8 → 35.3 %, so it cannot tell dispersion from a wrong top logit): argmax −
#: softmax on the same seeds and sets, pooled over the sizes above the training range, its
#: 1 − ALPHA interval wholly above 0 (softmax errs beyond the errors of its own largest logit,
#: what only its dispersion can add): reproduced; wholly below: not reproduced; else partly.
#: (2.a)'s rule on the argmax arm; the accuracy's fall is shown beside it, not deciding.
dispersion_errors = Rule(
    "dispersion_errors",
    _pooled,
    lambda: (
        f"argmax − softmax pooled over the sizes above the training range (the argmax never "
        f"disperses), its {1 - ALPHA.value:.0%} interval above 0: reproduced; below 0: not "
        "reproduced; else partly"
    ),
    (ALPHA,),
)

#: Check (Lemma 2.1, Thm 2.2 "must disperse"): the max item's mean attention falls at every
#: larger size of the profile.
falls_everywhere = Holds("falls_everywhere", "the max item's mean attention falls", "larger size")


def _bounded(shares: Sequence[float]) -> str:
    judged = [s for s in shares if finite(s)]
    return _holds(min(judged)) if judged else NA


#: Check (Lemma 2.1's two-sided bound, θ = 1): on every test set of the softmax arm,
#: 1/(1 + (n−1)e^{Δ}) ≤ α_k ≤ 1/(1 + (n−1)e^{−Δ}) for every item, Δ the set's logit spread, up
#: to ROUNDING relative error.
bounded = Rule(
    "bounded",
    _bounded,
    lambda: (
        "1/(1 + (n−1)e^Δ) ≤ α_min and α_max ≤ 1/(1 + (n−1)e^−Δ) on every test set (Δ the set's "
        f"logit spread, up to {ROUNDING:g} relative): reproduced; else not (a bound)"
    ),
    (ROUNDING,),
)
#: Check (Prop. 3.2): entropy non-decreasing in θ on the grid, for every spread.
monotone = Holds("monotone", "no decrease of H as θ grows", "spread")
#: Check (Prop. 3.1): the spread at most the bound at every logged step.
spread_bound = Holds("spread_bound", "spread ≤ bound", "logged step")

#: Every rule, in the order the claims table uses them (the docs' rules table).
RULES = (
    sharp,
    entropy_rises,
    towards_uniform,
    pooled_gain,
    significant_sizes,
    higher_with_interval,
    higher_on_target,
    degrades,
    grows,
    grows_if_learnt,
    wrong_top_grows,
    wrong_top_with_training,
    stable_methods,
    accuracy_falls,
    dispersion_errors,
    falls_everywhere,
    bounded,
    monotone,
    spread_bound,
)
#: Every threshold of paper B's rules, by name, in the order the rules use them (derived from
#: the rules: the docs' provenance table is drawn from it).
THRESHOLDS = {t.name: t for rule in RULES for t in rule.thresholds}
