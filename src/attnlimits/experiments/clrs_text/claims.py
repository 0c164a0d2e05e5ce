"""Claims of a CLRS-Text run (paper B §4.2, Figure 8), judged on its tables, and its sections.

The statements (:data:`S`) use the shared vocabulary and finding rule of
:mod:`attnlimits.experiments.verdicts`: each carries the paper's words (``quote``, word for word
in ../shared/papers/paper-b-softmax-not-enough.txt; the test finds them) and our ``reading``.
Per other arm, the finding "a significant advantage … on nearly all of the thirty algorithms"
has three **headline** statements, one per regime: in distribution (training lengths), by
interpolation (unseen lengths inside the training range) and by extrapolation (outside it);
its verdict is :func:`~attnlimits.experiments.verdicts.combine` of theirs. That each arm
reaches the ceiling on every trained algorithm is our precondition, a **supporting** row that
decides nothing by itself. Each verdict is a small pure rule with named thresholds
(known-answer tests in ``tests/test_clrs_text.py``):

- :func:`learned`: an arm has learned an algorithm when its exact match in distribution (every
  seed's answers pooled) is at least :data:`~.evaluate.CEILING`.
- :func:`outcome`: per algorithm and regime, the paired comparison over **seeds**
  (``evaluate.paired_table``: the per-seed accuracy difference pooled over the testable
  lengths, its 95 % t-interval over seeds) is *better* when the interval lies above 0, *worse*
  when below, otherwise *no difference*. A length where both arms' intervals over seeds reach
  the trivial baseline is not testable and left out, and so is, out of distribution, an
  algorithm on which an arm is below the ceiling in distribution; an algorithm with no
  testable length in a regime is named and left out.
- :func:`comparison_verdict`: *reproduced* when the share of testable algorithms better is at
  least :data:`NEARLY_ALL` and none is worse, *not reproduced* when none is better or more are
  worse than better, otherwise *partly*; *not testable* when no algorithm is testable.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from attnlimits.experiments import verdicts
from attnlimits.experiments.clrs_text.config import REGIMES, Config
from attnlimits.experiments.clrs_text.cost import thirty
from attnlimits.experiments.clrs_text.evaluate import CEILING
from attnlimits.experiments.clrs_text.setup import setup_table
from attnlimits.experiments.report import markdown_table
from attnlimits.experiments.verdicts import FINDING, HEADLINE, SUPPORTING, Statement

__all__ = [
    "EVIDENCE",
    "NEARLY_ALL",
    "S",
    "claims",
    "comparison_verdict",
    "learned",
    "outcome",
    "sections",
]

#: What decides each claim (report.html links the verdict to them): (pattern in the claim's
#: text, figure names, table names).
EVIDENCE = (
    (r"reaches the ceiling", ("profile",), ("accuracy",)),
    (r"beats softmax", ("profile",), ("paired", "accuracy")),
)

NEARLY_ALL = 0.75  # "nearly all" algorithms: three in four or more

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

_OUT_READING = (
    'ours: the advantage the finding quotes, read into the profiles §4.2 says Fig. 8 plots ("'
    + _PROFILES
    + '", a sentence on the method, not a claim) at lengths the model was not trained on ({}): '
    "the same rule as in distribution"
)
#: The statements, by key: "finding", "in", "interpolation", "extrapolation" (per other arm),
#: "learns" (per arm).
S: dict[str, Statement] = {
    "finding": Statement(
        "beats softmax on nearly all algorithms (Fig. 8)",
        FINDING,
        _ADVANTAGE,
        "per arm other than softmax, in and out of distribution, on this run's algorithms",
    ),
    "in": Statement(
        "beats softmax on nearly all algorithms, in distribution",
        HEADLINE,
        _ADVANTAGE,
        "Fig. 8's profiles at the training lengths: per algorithm, the per-seed accuracy "
        "difference pooled over the testable training lengths, its 95 % t-interval over seeds "
        f"above 0 on ≥ {NEARLY_ALL:.0%} of the testable algorithms, below 0 on none",
    ),
    "interpolation": Statement(
        "beats softmax on nearly all algorithms, by interpolation (unseen lengths in the range)",
        HEADLINE,
        _ADVANTAGE,
        _OUT_READING.format("unseen lengths inside the training range"),
    ),
    "extrapolation": Statement(
        "beats softmax on nearly all algorithms, by extrapolation (longer inputs)",
        HEADLINE,
        _ADVANTAGE,
        _OUT_READING.format("lengths outside the training range"),
    ),
    "learns": Statement(
        "reaches the ceiling on every trained algorithm in distribution (our precondition)",
        SUPPORTING,
        _FINE_TUNE,
        f"our precondition, not the paper's claim: exact match ≥ {CEILING:.0%} in distribution "
        "on each algorithm it is trained on, else its out-of-distribution comparison on that "
        "algorithm is not testable",
    ),
}


def learned(accuracy: float, ceiling: float = CEILING) -> bool:
    """Whether an in-distribution exact match of ``accuracy`` reaches the ``ceiling``."""
    return bool(accuracy >= ceiling)


def outcome(ci_low: float, ci_high: float) -> str:
    """``"better"``, ``"worse"`` or ``"no difference"`` from the 95 % interval over seeds of
    one algorithm's paired accuracy difference (nan: one seed, no interval: no difference)."""
    if math.isnan(ci_low) or math.isnan(ci_high):
        return "no difference"
    if ci_low > 0:
        return "better"
    return "worse" if ci_high < 0 else "no difference"


def comparison_verdict(
    better: int, worse: int, total: int, untestable: int = 0, share: float = NEARLY_ALL
) -> str:
    """The verdict on "adaptive is better on nearly all algorithms" from the outcomes of the
    ``total`` testable algorithms (``untestable`` more were left out as not testable)."""
    if total <= 0:
        return verdicts.NOT_TESTABLE if untestable else verdicts.NA
    if worse == 0 and better >= share * total:
        return verdicts.REPRODUCED
    if better == 0 or worse > better:
        return verdicts.NOT
    return verdicts.PARTLY


def _learn_row(acc: pd.DataFrame, arm: str) -> dict[str, str]:
    a = acc[(acc["arm"] == arm) & acc["in_distribution"]]
    pooled = a.assign(k=a["accuracy"] * a["questions"]).groupby("algorithm")
    by_algo = pooled["k"].sum() / pooled["questions"].sum()
    missed = sorted(by_algo.index[[not learned(v) for v in by_algo]])
    short = ", ".join(f"{al}: {v:.2f}" for al, v in by_algo.items())
    s = S["learns"]
    row = dataclasses.replace(s, claim=f"({arm}-learns) {arm} {s.claim}").judged(
        short + (f"; below the ceiling: {', '.join(missed)}" if missed else ""),
        f"exact match in distribution (seeds pooled) ≥ {CEILING:.0%} on every algorithm",
        verdicts.REPRODUCED if not missed else verdicts.NOT,
    )
    return row


def _compare_row(paired: pd.DataFrame, arm: str, regime: str, label: str) -> dict[str, str]:
    mine = paired[(paired["arm"] == arm) & (paired["regime"] == regime)]
    p = mine[mine["scope"] == "pooled"]
    lengths = mine[mine["scope"] == "length"]
    testable = p[p["testable"]]
    outs = [outcome(lo, hi) for lo, hi in zip(testable["ci_low"], testable["ci_high"], strict=True)]
    better, worse = outs.count("better"), outs.count("worse")
    left = sorted(p.loc[~p["testable"], "algorithm"])
    dropped = lengths[~lengths["testable"]]
    parts = [
        f"{al}: {d:+.3f} [{lo:+.3f}, {hi:+.3f}] at {ls}"
        for al, d, lo, hi, ls in zip(testable["algorithm"], testable["difference"],
                                     testable["ci_low"], testable["ci_high"], testable["lengths"],
                                     strict=True)
    ]  # fmt: skip
    measured = f"{better} better, {worse} worse of {len(outs)} testable"
    if parts:
        measured += ": " + "; ".join(parts)
    if len(dropped) and len(testable):
        gone = ", ".join(f"{al} {ls}" for al, ls in zip(dropped["algorithm"], dropped["lengths"],
                                                        strict=True))  # fmt: skip
        measured += f"; lengths left out (not testable): {gone}"
    why = dict(zip(p["algorithm"], p["why"], strict=True))
    if left and len(testable):
        measured += "; not testable, left out: " + "; ".join(f"{a} ({why[a]})" for a in left)
    verdict = comparison_verdict(better, worse, len(outs), len(left))
    reason = ""
    if verdict == verdicts.NOT_TESTABLE:
        reason = "; ".join(f"{a}: {why[a]}" for a in left)
    s = S["in" if regime == "in distribution" else regime]
    rule = (
        "per algorithm: per-seed accuracy difference over the testable lengths, 95 % t-interval "
        f"over seeds above 0 = better; ≥ {NEARLY_ALL:.0%} of testable algorithms better, none "
        "worse; not testable: a length where both arms' intervals over seeds reach the trivial "
        f"baseline, and out of distribution an algorithm with an arm below {CEILING:.0%} in "
        "distribution"
    )
    row = dataclasses.replace(s, claim=f"{label} {arm} {s.claim}")
    return row.judged(measured, rule, verdict, reason)


def claims(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> pd.DataFrame:
    """Per other arm: the finding from its headline statements (in distribution, interpolation,
    extrapolation), then the arms' ceiling rows (supporting, our precondition)."""
    acc, paired = tables["accuracy"], tables["paired"]
    arms = list(meta["params"]["arms"])
    learn = {arm: _learn_row(acc, arm) for arm in arms}
    out: list[dict[str, str]] = []
    for arm in arms[1:]:
        heads = [
            _compare_row(paired, arm, regime, label)
            for regime, label in zip(REGIMES, ("(a)", "(b)", "(c)"), strict=True)
            if ((paired["arm"] == arm) & (paired["regime"] == regime)).any()
        ]
        if heads:
            support = [learn[arms[0]], learn[arm]]
            f = dataclasses.replace(S["finding"], claim=f"{arm} {S['finding'].claim}")
            out += verdicts.finding(f, [*heads, *support])
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
        "`scope` pooled: over the distribution's testable `lengths`. A length where both arms' "
        "intervals over seeds reach the trivial baseline is not testable (`why`), and so is, out "
        f"of distribution, an algorithm with an arm below {CEILING:.0%} in distribution. "
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
