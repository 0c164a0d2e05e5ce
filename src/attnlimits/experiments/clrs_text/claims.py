"""Claims of a CLRS-Text run (paper B §4.2, Figure 8), judged on its tables, and its sections.

The statements (:data:`S`) use the shared vocabulary and finding rule of
:mod:`attnlimits.experiments.verdicts`: each carries the paper's words (``quote``, word for word
in ../shared/papers/paper-b-softmax-not-enough.txt; the test finds them) and our ``reading``.
Per other arm, the finding "a significant advantage … on nearly all of the thirty algorithms"
has two **headline** statements, in distribution (training lengths) and out of it (longer
inputs); its verdict is :func:`~attnlimits.experiments.verdicts.combine` of theirs. That each
arm learns every trained algorithm is our precondition, a **supporting** row that decides
nothing. Each verdict is a small pure rule with named thresholds (known-answer tests in
``tests/test_clrs_text.py``):

- :func:`learned`: an arm has learned an algorithm when the lower end of its accuracy's
  Wilson interval (in distribution, every seed's answers pooled) is above chance plus
  :data:`LEARN_MARGIN`; chance is the accuracy of always giving the most common answer.
- :func:`outcome`: per algorithm and distribution, the paired comparison over **seeds**
  (``evaluate.paired_table``: the per-seed accuracy difference pooled over the testable
  lengths, its 95 % t-interval over seeds) is *better* when the interval lies above 0, *worse*
  when below, otherwise *no difference*. A length where both arms' intervals over seeds reach
  chance is not testable and left out; an algorithm with no testable length in a distribution
  is named and left out.
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
from attnlimits.experiments.clrs_text.config import Config
from attnlimits.experiments.clrs_text.cost import thirty
from attnlimits.experiments.clrs_text.setup import setup_table
from attnlimits.experiments.report import markdown_table
from attnlimits.experiments.verdicts import FINDING, HEADLINE, SUPPORTING, Statement

__all__ = [
    "EVIDENCE",
    "LEARN_MARGIN",
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
    (r"learns every trained algorithm", ("profile",), ("accuracy",)),
    (r"beats softmax", ("profile",), ("paired", "accuracy")),
)

LEARN_MARGIN = 0.10  # "well above chance": ten points above it, at the interval's lower end
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

#: The statements, by key: "finding", "in", "out" (per other arm), "learns" (per arm).
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
    "out": Statement(
        "beats softmax on nearly all algorithms, out of distribution (longer inputs)",
        HEADLINE,
        _PROFILES,
        "the advantage quoted for the finding, read into the profiles at lengths beyond training: "
        "the same rule as in distribution",
    ),
    "learns": Statement(
        "learns every trained algorithm in distribution (our precondition)",
        SUPPORTING,
        _FINE_TUNE,
        "our precondition, not the paper's claim: the arm learns each algorithm it is trained on",
    ),
}


def learned(ci_low: float, chance: float, margin: float = LEARN_MARGIN) -> bool:
    """Whether an accuracy whose interval starts at ``ci_low`` is well above ``chance``."""
    return bool(ci_low > chance + margin)


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
    # each training length against its own chance, as the rule states (the lowest interval
    # against the highest chance of another length was stricter than the rule)
    ok = [learned(lo, c) for lo, c in zip(a["ci_samples_low"], a["chance"], strict=True)]
    by_algo = a.assign(ok=ok).groupby("algorithm")["ok"].all()
    short = ", ".join(
        f"{al}: {g['accuracy'].mean():.2f} (chance ≤ {g['chance'].max():.2f})"
        for al, g in a.groupby("algorithm")
    )
    missed = sorted(by_algo.index[~by_algo.to_numpy(bool)])
    s = S["learns"]
    row = dataclasses.replace(s, claim=f"({arm}-learns) {arm} {s.claim}").judged(
        short + (f"; not learned: {', '.join(missed)}" if missed else ""),
        f"at every training length, Wilson 95 % lower end > chance + {LEARN_MARGIN:.2f}",
        verdicts.REPRODUCED if not missed else verdicts.NOT,
    )
    return row


def _compare_row(paired: pd.DataFrame, arm: str, ind: bool, label: str) -> dict[str, str]:
    mine = paired[(paired["arm"] == arm) & (paired["in_distribution"] == ind)]
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
        measured += f"; lengths left out (both arms' intervals reach chance): {gone}"
    if left and len(testable):
        measured += f"; not testable, left out: {', '.join(left)}"
    verdict = comparison_verdict(better, worse, len(outs), len(left))
    reason = ""
    if verdict == verdicts.NOT_TESTABLE:
        reason = (
            f"at every length ({', '.join(sorted(set(lengths['lengths']), key=int))}) of every "
            "algorithm both arms' 95 % intervals over seeds reach chance"
        )
    s = S["in" if ind else "out"]
    rule = (
        "per algorithm: per-seed accuracy difference over the testable lengths, 95 % t-interval "
        f"over seeds above 0 = better; ≥ {NEARLY_ALL:.0%} of testable algorithms better, none "
        "worse; a length where both arms' intervals over seeds reach chance is not testable"
    )
    row = dataclasses.replace(s, claim=f"{label} {arm} {s.claim}")
    return row.judged(measured, rule, verdict, reason)


def claims(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> pd.DataFrame:
    """Per other arm: the finding from its two headline statements (in and out of distribution),
    then the arms' learning rows (supporting, our precondition)."""
    acc, paired = tables["accuracy"], tables["paired"]
    arms = list(meta["params"]["arms"])
    learn = {arm: _learn_row(acc, arm) for arm in arms}
    out: list[dict[str, str]] = []
    for arm in arms[1:]:
        heads = [
            _compare_row(paired, arm, ind, label)
            for ind, label in ((True, "(a)"), (False, "(b)"))
            if ((paired["arm"] == arm) & (paired["in_distribution"] == ind)).any()
        ]
        if heads:
            support = [learn[arms[0]], learn[arm]]
            f = dataclasses.replace(S["finding"], claim=f"{arm} {S['finding'].claim}")
            out += verdicts.finding(f, [*heads, *support])
    out += [r for r in learn.values() if r not in out]
    return pd.DataFrame(out)


def _per_seed(answers: pd.DataFrame) -> pd.DataFrame:
    """Exact-match accuracy per (arm, algorithm, length), a column per seed."""
    keys = ["arm", "algorithm", "length", "in_distribution"]
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
    shown = acc[["arm", "algorithm", "length", "in_distribution", "questions", "seeds",
                 "accuracy (95 % over samples)", "95 % over seeds (decides)", "seed_sd",
                 "chance"]]  # fmt: skip
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
        "## Exact-match accuracy per algorithm and length",
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
        "intervals over seeds reach chance is not testable (`why`). `pairs`, `wins` (questions "
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
