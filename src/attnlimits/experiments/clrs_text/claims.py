"""Claims of a CLRS-Text run (paper B §4.2, Figure 8), judged on its tables, and its sections.

The statements (:data:`S`) use the shared vocabulary and finding rule of
:mod:`attnlimits.experiments.verdicts`: each carries the paper's words (``quote``, word for word
in ../shared/papers/paper-b-softmax-not-enough.txt; the test finds them) and our ``reading``.
§4.2's claim is per **algorithm**: "a significant advantage of the adaptive temperature-backed
model on nearly all of the thirty algorithms under study", seen in "performance profiles in-
and out-of-distribution". So, per arm other than softmax, one **headline** statement counts
algorithms by their whole profile, and the three regimes (in distribution, interpolation,
extrapolation) are **supporting** rows, judged by the same count, kept apart, deciding nothing.
Each rule is a small pure function with named thresholds (all ours; known-answer tests in
``tests/test_clrs_text.py``):

- :func:`outcome`: per algorithm and regime, the paired interval over seeds
  (``evaluate.paired_table``, pooled over the regime's testable lengths) above 0 is *better*,
  below 0 *worse*, inside ±:data:`EQUIVALENT` *equivalent*, else *inconclusive*; *mixed*
  when the pooled outcome is better (worse) but one testable length alone is significantly
  the other way (pooling hid a sign change).
- :func:`profile`: an algorithm's outcome over its testable regimes: *better* when better in
  one and worse or mixed in none, *worse* the other way round, *mixed* when both, *equivalent*
  when every regime is, else *inconclusive*.
- :func:`comparison_verdict`: from the counts of decided algorithms (better, worse, mixed,
  equivalent; inconclusive and untestable ones are not decided): *reproduced* when at least
  :data:`NEARLY_ALL` of them are better and at most :data:`OUTLIERS` worse (the paper itself
  names "underperformance on outlying algorithms"), *partly* when at least half are better and
  fewer worse than better, otherwise *not reproduced*; when fewer than :data:`COVERAGE` of the
  run's algorithms are decided: *partly* if any is better, else *not testable*.
- The headline is at most *partly* when no algorithm has a testable out-of-distribution
  regime: the profiles' size generalisation was then not tested.
- :func:`learned`: our precondition, an arm at :data:`~.evaluate.CEILING` or more in
  distribution on an algorithm (supporting rows, verdict n/a: it is not a paper's claim).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from attnlimits.experiments import verdicts
from attnlimits.experiments.clrs_text.config import REGIMES, Config
from attnlimits.experiments.clrs_text.cost import thirty
from attnlimits.experiments.clrs_text.evaluate import CEILING, MIN_SEEDS
from attnlimits.experiments.clrs_text.setup import setup_table
from attnlimits.experiments.report import markdown_table
from attnlimits.experiments.verdicts import FINDING, HEADLINE, SUPPORTING, Statement

__all__ = [
    "COVERAGE",
    "EQUIVALENT",
    "EVIDENCE",
    "NEARLY_ALL",
    "OUTLIERS",
    "S",
    "claims",
    "comparison_verdict",
    "learned",
    "outcome",
    "profile",
    "sections",
]

#: What decides each claim (report.html links the verdict to them): (pattern in the claim's
#: text, figure names, table names).
EVIDENCE = (
    (r"reaches the ceiling", ("profile",), ("accuracy",)),
    (r"advantage", ("profile",), ("paired", "accuracy")),
)

#: ours: "nearly all" algorithms, three in four or more of those decided
NEARLY_ALL = 0.75
#: ours: the share of decided algorithms that may be worse in a reproduction; §4.2 names three
#: outliers ("Heapsort, MST Kruskal and Bubble Sort") of its thirty
OUTLIERS = 0.10
#: ours: a difference whose interval lies within ± this (exact match, 0–1) is equivalent
EQUIVALENT = 0.05
#: ours: the share of the run's algorithms that must be decided for a count to decide
COVERAGE = 2 / 3

_ADVANTAGE = (
    "they demonstrate a significant advantage of the adaptive temperature-backed model on "
    "nearly all of the thirty algorithms under study"
)
_PROFILES = (
    "plotting their performance profiles in- and out-of-distribution at various problem sizes"
)
_FINE_TUNE = (
    "fine-tune Gemma 2B models (Gemma Team et al., 2024) on the thirty algorithmic execution "
    "tasks in CLRS-Text"
)
_RULE = (
    f"per algorithm and regime, the paired difference's 95 % interval (seeds' spread and "
    f"questions' sampling, ≥ {MIN_SEEDS} seeds) above 0 = better, below 0 = worse, within "
    f"±{EQUIVALENT:g} = equivalent, else inconclusive; reproduced: ≥ {NEARLY_ALL:.0%} of the "
    f"decided algorithms better and ≤ {OUTLIERS:.0%} worse; partly: ≥ half better and fewer "
    f"worse than better; fewer than {COVERAGE:.0%} of the run's algorithms decided: partly if "
    "any is better, else not testable (ours)"
)
_REGIME_READING = (
    "ours: Fig. 8's profiles (\"" + _PROFILES + '", a sentence on the method) read at {}, '
    "counted by the headline's rule; shown, deciding nothing"
)
#: The statements, by key: "finding", "advantage" (per other arm), one per regime, "learns".
S: dict[str, Statement] = {
    "finding": Statement(
        "has a significant advantage on nearly all algorithms (§4.2, Fig. 8)",
        FINDING,
        _ADVANTAGE,
        "per arm other than softmax, on this run's algorithms",
    ),
    "advantage": Statement(
        "has an advantage on nearly all algorithms, each judged over its profile",
        HEADLINE,
        _ADVANTAGE,
        "ours: an algorithm shows the advantage when the arm is better than softmax in one "
        'regime of its profile (in distribution, interpolation, extrapolation: "'
        + _PROFILES
        + '") and worse in none; at most partly when no algorithm could be tested out of '
        "distribution",
    ),
    "in distribution": Statement(
        "(a) in distribution (the training lengths)",
        SUPPORTING,
        _ADVANTAGE,
        _REGIME_READING.format("the training lengths"),
    ),
    "interpolation": Statement(
        "(b) by interpolation (unseen lengths inside the training range)",
        SUPPORTING,
        _ADVANTAGE,
        _REGIME_READING.format("unseen lengths inside the training range"),
    ),
    "extrapolation": Statement(
        "(c) by extrapolation (lengths outside the training range)",
        SUPPORTING,
        _ADVANTAGE,
        _REGIME_READING.format("lengths outside the training range"),
    ),
    "learns": Statement(
        "reaches the ceiling on every trained algorithm in distribution (our precondition)",
        SUPPORTING,
        _FINE_TUNE,
        f"our precondition, not the paper's claim (verdict n/a): exact match ≥ {CEILING:.0%} "
        "in distribution on each algorithm it is trained on, else its out-of-distribution "
        "comparison on that algorithm is not testable",
    ),
}
_OTHER_ARM = (
    "ours, an extension: §4.2 makes this claim for adaptive temperature only; for {} the same "
    "rule is applied. "
)
DECIDED = ("better", "worse", "mixed", "equivalent")


def learned(accuracy: float, ceiling: float = CEILING) -> bool:
    """Whether an in-distribution exact match of ``accuracy`` reaches the ``ceiling``."""
    return bool(accuracy >= ceiling)


def outcome(ci_low: float, ci_high: float, lengths: Sequence[tuple[float, float]] = ()) -> str:
    """One algorithm's outcome in one regime from its pooled 95 % interval ``(ci_low,
    ci_high)`` and its testable lengths' own intervals (module docstring); nan: inconclusive."""
    if math.isnan(ci_low) or math.isnan(ci_high):
        return "inconclusive"
    if ci_low > 0:
        return "mixed" if any(hi < 0 for _, hi in lengths) else "better"
    if ci_high < 0:
        return "mixed" if any(lo > 0 for lo, _ in lengths) else "worse"
    if -EQUIVALENT <= ci_low and ci_high <= EQUIVALENT:
        return "equivalent"
    return "inconclusive"


def profile(outcomes: Sequence[str]) -> str:
    """One algorithm's outcome over its testable regimes' ``outcomes`` (module docstring);
    "not testable" when it has none."""
    if not outcomes:
        return "not testable"
    up = "better" in outcomes
    down = "worse" in outcomes
    if "mixed" in outcomes or (up and down):
        return "mixed"
    if up or down:
        return "better" if up else "worse"
    return "equivalent" if all(o == "equivalent" for o in outcomes) else "inconclusive"


def comparison_verdict(
    better: int, worse: int, decided: int, run: int, share: float = NEARLY_ALL
) -> str:
    """The verdict on "an advantage on nearly all algorithms" from ``decided`` algorithms
    (better, worse, mixed or equivalent) of the ``run``'s (module docstring)."""
    if run <= 0:
        return verdicts.NA
    if decided < COVERAGE * run:
        return verdicts.PARTLY if better else verdicts.NOT_TESTABLE
    if better >= share * decided and worse <= math.floor(OUTLIERS * decided):
        return verdicts.REPRODUCED
    if 2 * better >= decided and worse < better:
        return verdicts.PARTLY
    return verdicts.NOT


def _learn_row(acc: pd.DataFrame, arm: str) -> dict[str, str]:
    a = acc[(acc["arm"] == arm) & acc["in_distribution"]]
    pooled = a.assign(k=a["accuracy"] * a["questions"]).groupby("algorithm")
    by_algo = pooled["k"].sum() / pooled["questions"].sum()
    missed = sorted(by_algo.index[[not learned(v) for v in by_algo]])
    short = ", ".join(f"{al}: {v:.2f}" for al, v in by_algo.items())
    met = "precondition not met" if missed else "precondition met"
    s = S["learns"]
    return dataclasses.replace(s, claim=f"({arm}-learns) {arm} {s.claim}").judged(
        f"{met}: {short}" + (f"; below the ceiling: {', '.join(missed)}" if missed else ""),
        f"exact match in distribution (seeds pooled) ≥ {CEILING:.0%} on every algorithm",
        verdicts.NA,
    )


def _outcomes(paired: pd.DataFrame, arm: str) -> pd.DataFrame:
    """Per (algorithm, regime) of ``arm``: ``outcome`` ("not testable" where no length is),
    ``why`` and the pooled row's numbers."""
    mine = paired[paired["arm"] == arm]
    pooled = mine[mine["scope"] == "pooled"].reset_index(drop=True)
    lengths = mine[(mine["scope"] == "length") & mine["testable"]]
    spans = {k: list(zip(g["ci_low"], g["ci_high"], strict=True))
             for k, g in lengths.groupby(["algorithm", "regime"])}  # fmt: skip
    pooled["outcome"] = [
        outcome(lo, hi, spans.get((al, rg), [])) if ok else "not testable"
        for al, rg, lo, hi, ok in zip(pooled["algorithm"], pooled["regime"], pooled["ci_low"],
                                      pooled["ci_high"], pooled["testable"], strict=True)
    ]  # fmt: skip
    return pooled


def _count(outs: pd.Series, run: int) -> tuple[str, str, str]:
    """(verdict, counts in words, reason when not testable) of per-algorithm ``outs``."""
    n = {k: int((outs == k).sum()) for k in (*DECIDED, "inconclusive", "not testable")}
    decided = sum(n[k] for k in DECIDED)
    verdict = comparison_verdict(n["better"], n["worse"], decided, run)
    words = ", ".join(f"{v} {k}" for k, v in n.items() if v) + f" of {run} algorithms"
    reason = ""
    if verdict == verdicts.NOT_TESTABLE:
        reason = f"{decided} of {run} algorithms decided, fewer than {COVERAGE:.0%}"
    return verdict, words, reason


def _detail(rows: pd.DataFrame) -> str:
    return "; ".join(
        f"{al}: {o}" + (f" {d:+.3f} [{lo:+.3f}, {hi:+.3f}] at {ls}" if o != "not testable"
                        else f" ({why})")
        for al, o, d, lo, hi, ls, why in zip(rows["algorithm"], rows["outcome"],
                                             rows["difference"], rows["ci_low"], rows["ci_high"],
                                             rows["lengths"], rows["why"], strict=True)
    )  # fmt: skip


def _arm_rows(paired: pd.DataFrame, arm: str) -> list[dict[str, str]]:
    """The headline (per algorithm over its profile) and the three regimes' rows of ``arm``."""
    pooled = _outcomes(paired, arm)
    algos = sorted(set(pooled["algorithm"]))
    reading = _OTHER_ARM.format(arm) if arm != "adaptive" else ""
    rows = []
    for key in REGIMES:
        mine = pooled[pooled["regime"] == key].sort_values("algorithm")
        if not len(mine):
            continue
        verdict, words, reason = _count(mine["outcome"], len(algos))
        label, rest = S[key].claim.split(" ", 1)
        s = dataclasses.replace(
            S[key], claim=f"{label} {arm} {rest}", reading=reading + S[key].reading
        )
        rows.append(s.judged(f"{words}: {_detail(mine)}", _RULE, verdict, reason))
    testable = pooled[pooled["outcome"] != "not testable"]
    per_algo = testable.groupby("algorithm")["outcome"].agg(list).reindex(algos)
    outs = pd.Series([profile(o if isinstance(o, list) else []) for o in per_algo], index=algos)
    verdict, words, reason = _count(outs, len(algos))
    ood = (testable["regime"] != REGIMES[0]).any()
    measured = words + ": " + "; ".join(f"{a}: {o}" for a, o in outs.items())
    if not ood and verdict == verdicts.REPRODUCED:
        verdict = verdicts.PARTLY
    if not ood:
        measured += "; no algorithm testable out of distribution (size generalisation untested)"
    s = S["advantage"]
    head = dataclasses.replace(s, claim=f"(h) {arm} {s.claim}", reading=reading + s.reading)
    return [head.judged(measured, _RULE + "; at most partly with nothing out of distribution",
                        verdict, reason), *rows]  # fmt: skip


def claims(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> pd.DataFrame:
    """Per other arm: the finding, its headline (per algorithm over its profile) and the three
    regimes' rows, then the arms' ceiling rows (supporting, our precondition, n/a)."""
    acc, paired = tables["accuracy"], tables["paired"]
    arms = list(meta["params"]["arms"])
    learn = {arm: _learn_row(acc, arm) for arm in arms}
    out: list[dict[str, str]] = []
    for arm in arms[1:]:
        if not (paired["arm"] == arm).any():
            continue
        reading = _OTHER_ARM.format(arm) if arm != "adaptive" else ""
        f = S["finding"]
        f = dataclasses.replace(f, claim=f"{arm} {f.claim}", reading=reading + f.reading)
        out += verdicts.finding(f, [*_arm_rows(paired, arm), learn[arms[0]], learn[arm]])
    out += [r for r in learn.values() if r not in out]
    return pd.DataFrame(out)


def _per_seed(answers: pd.DataFrame) -> pd.DataFrame:
    """Exact-match accuracy per (arm, algorithm, length), a column per seed."""
    keys = ["arm", "algorithm", "length", "regime"]
    wide = answers.pivot_table(index=keys, columns="seed", values="correct", aggfunc="mean")
    wide.columns = [f"seed {c}" for c in wide.columns]
    return wide.round(3).reset_index()


def sections(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> list[str]:
    """Set-up (paper / lost in our copy / ours), accuracy per cell, the paired table, cost."""
    acc = tables["accuracy"].copy()
    acc["accuracy (95 % over samples)"] = [
        f"{a:.3f} [{lo:.3f}, {hi:.3f}]"
        for a, lo, hi in zip(
            acc["accuracy"], acc["ci_samples_low"], acc["ci_samples_high"], strict=True
        )
    ]
    acc["95 % over seeds (decides)"] = [
        f"[{lo:.3f}, {hi:.3f}]"
        for lo, hi in zip(acc["ci_seeds_low"], acc["ci_seeds_high"], strict=True)
    ]
    shown = acc[["arm", "algorithm", "length", "regime", "questions", "seeds",
                 "accuracy (95 % over samples)", "95 % over seeds (decides)", "seed_sd",
                 "result_accuracy", "chance", "uniform", "chance_result",
                 "uniform_result"]]  # fmt: skip
    train = tables["training"]
    speed = train.groupby("arm")[["seconds_per_step", "cpu_seconds_per_step"]].median()
    threads = meta.get("torch_threads", "?")
    cost = [
        f"- {arm}: {1e3 * r.seconds_per_step:.0f} ms per training step, "
        f"{1e3 * r.cpu_seconds_per_step:.0f} ms of CPU (median over seeds; {threads} "
        f"thread{'' if threads == 1 else 's'}; "
        "other load on the machine is not recorded: compare arms within a run only)"
        for arm, r in speed.iterrows()
    ]
    params = meta.get("params")
    if isinstance(params, Mapping) and len(speed):
        fields = {f.name for f in dataclasses.fields(Config)}
        cfg = Config(**{k: v for k, v in params.items() if k in fields})
        column = "cpu_seconds_per_step" if cfg.device == "cpu" else "seconds_per_step"
        cost += thirty(cfg, speed[column].to_dict(), int(meta.get("processes", 1)))
    return [
        "## Set-up",
        "",
        markdown_table(setup_table(meta)),
        "",
        "## Learning rate per arm (seed 0's models on the validation split)",
        "",
        "`score`: the mean over algorithms of validation exact match at the model's best check; "
        "`step`: the first check that reached it; the chosen rate trains every seed.",
        "",
        markdown_table(tables["learning_rate"]) if "learning_rate" in tables else "(none)",
        "",
        "## Exact-match accuracy per algorithm and length",
        "",
        "`accuracy`: exact match of the whole generated answer (in the trace format: trace and "
        "result); `result_accuracy`: of the result only (after the last ` | `), comparable "
        "across formats. Trivial baselines: `chance` (the most common answer), `uniform` (a "
        "uniform guess over the answer's format), and the same for the result (`*_result`).",
        "",
        markdown_table(shown),
        "",
        "## Accuracy per seed (arm × seed × algorithm × length)",
        "",
        "Each seed is one trained model; the seeds are the unit of every interval that decides "
        "a verdict (questions are nested within seeds).",
        "",
        markdown_table(_per_seed(tables["answers"])) if "answers" in tables else "(no answers)",
        "",
        "## Paired comparison per algorithm (over seeds; same questions for every seed)",
        "",
        "`difference`: the mean over seeds of each seed's accuracy difference (arm − baseline), "
        "with its 95 % t-interval over seeds (`ci_low`, `ci_high`) and the t-test's `p_t`; "
        "`scope` pooled: over the regime's testable `lengths`. The interval counts the seeds' "
        "spread and the questions' sampling. A length is not testable (`why`) with fewer than "
        f"{MIN_SEEDS} seeds or where neither arm's interval over seeds is above the trivial "
        f"baseline, and so is, out of distribution, an algorithm with an arm below {CEILING:.0%} "
        "in distribution. "
        "`pairs`, `wins` (questions "
        "only the arm answers) and `losses` count (seed, question) pairs: description only, not "
        "independent.",
        "",
        markdown_table(tables["paired"]),
        "",
        "## Cost",
        "",
        *cost,
        "",
    ]
