"""The comparison's report: the papers' statements about normalisers judged on the swap (the
shared vocabulary, :mod:`attnlimits.claims.verdicts`; ``statements.py``, ``rules.py``), then
per normaliser where it is better or worse than softmax and what it costs.

Per normaliser and length, each measure's comparison with softmax ends in the one comparison
vocabulary (:mod:`attnlimits.claims.comparisons`: better, worse, equivalent, inconclusive; not
testable with its reason), by ``rules.perplexity_outcome`` and ``rules.retrieval_outcome``.
How the 0.5 % perplexity margin maps (decided once, ``rules.py``' docstring): beyond the
significance test **and** beyond the margin is better or worse; the interval inside ± the
margin is equivalent; anything else is inconclusive; one sequence (no standard error) is not
testable.

Reads the ``summary`` table and ``run.json`` only.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from attnlimits import normalizers as nz
from attnlimits.claims import BETTER, NOT_TESTABLE, WORSE
from attnlimits.claims.verdicts import NA, Statement
from attnlimits.experiments.compare import rules
from attnlimits.experiments.compare.config import BASELINE
from attnlimits.experiments.compare.statements import (
    ADAPTIVE,
    ADAPTIVE_SHARPER,
    ALL,
    COVERS,
    LENGTH_AWARE,
)
from attnlimits.experiments.report import markdown_table

__all__ = ["COLUMNS", "EVIDENCE", "SOURCES", "claims", "effects", "sections"]

#: What decides each claim (report.html links the verdict to them): (pattern in the claim's
#: text, plot names, table names).
EVIDENCE = ((r"swapped into", ("perplexity_change", "accuracy", "cost"), ("summary",)),)

#: What each normaliser is, in short (ours: the effects table's second column; only the claims
#: table's "paper" column quotes a paper).
SOURCES = {
    "adaptive": "Veličković et al. (paper B), Fig. 4: β(H) sharpens dispersed heads at test time",
    "ssmax": "Nakanishi 2025: s·log n keeps attention sharp as n grows (trained with it)",
    "ssmax_trained": "SSMax with s = 1/log(train length): softmax at the trained length (ours)",
    "logn": "Qwen: logits × max(1, log n / log train length); the identity within the context",
    "yarn": "YaRN (Peng et al. 2023): attention factor (0.1 ln s + 1)² with RoPE scaling",
    "llama4_temperature": "Llama 4: temperature tuning 1 + a·log(⌊n/floor⌋ + 1) past the floor",
    "softcap": "Gemma 2: cap·tanh(l/cap), logits capped at 50 (for training stability)",
    "softmax1": "Miller 2023: +1 in the denominator lets a head attend to nothing",
    "sink_softmax": "gpt-oss: a learned sink logit per head",
    "topk": "top-k attention: only the k largest logits of a row",
}
#: The claims table's columns, as the reproductions' (:meth:`Statement.judged`).
COLUMNS = ["claim", "role", "paper", "reading", "measured", "rule", "verdict"]
#: top-k's k where a spec does not give it (the normaliser's own default).
_TOPK_K = inspect.signature(nz.get("topk")).parameters["k"].default
#: Differences from the normalisers' own set-ups (every row is *ours*).
DIFFERENCES = (
    "Normalisers are swapped in at inference only, into a model trained with softmax; their "
    "sources train with them (except logn, YaRN's factor and Llama 4's temperature, which are "
    "inference-time by design).",
    "One forward per sequence at the longest L: under the causal mask the rows of the band "
    "[L/2, L) see exactly what a window of L tokens would show them.",
    "The retrieval probe's needles and queries overwrite a few book tokens of each sequence; "
    "perplexity counts the remaining book tokens only, so both measures share the forwards.",
    "softmax is the model's own SDPA; every other normaliser runs attnlimits' kernels: per-row "
    "scales, sinks and adaptive temperature reformulated onto SDPA, softcap on the streaming "
    "kernel, the sparse and unnormalised maps query-chunked; so part of a normaliser's time "
    "is its kernel, not the normaliser itself (docs/compare.md, docs/kernels.md).",
    "Head entropy is measured on sampled rows of each band with the registry's tensor "
    "function on the layer's own q and k, of the weights normalised to sum one.",
)


def effects(summary: pd.DataFrame) -> pd.DataFrame:
    """Per normaliser and length: ``ppl_effect`` and ``retrieval_effect``, each an outcome of
    :mod:`attnlimits.claims.comparisons` (or not testable) from the normaliser's point of view,
    by ``rules.perplexity_outcome`` (the paired per-sequence changes) and
    ``rules.retrieval_outcome`` (the accuracy difference, both arms' standard errors)."""
    df = summary[summary["normalizer"] != BASELINE].copy()
    base = summary[summary["normalizer"] == BASELINE].set_index("length")
    se = df["delta_nll_sd"] / np.sqrt(df["sequences"])  # NaN with one sequence: not testable
    df["ppl_effect"] = [
        rules.perplexity_outcome(d, s, n - 1)
        for d, s, n in zip(df["delta_nll"], se, df["sequences"], strict=True)
    ]
    acc0, se0 = (df["length"].map(base[c]) for c in ("accuracy", "accuracy_se"))
    gap = df["accuracy"] - acc0
    bound = np.sqrt(df["accuracy_se"] ** 2 + se0**2)
    df["retrieval_effect"] = [
        rules.retrieval_outcome(g, b) for g, b in zip(gap, bound, strict=True)
    ]
    return df


def _where(df: pd.DataFrame, column: str, value: str) -> str:
    lengths = df.loc[df[column] == value, "length"].tolist()
    return ", ".join(str(n) for n in lengths) or "none"


def _effects_table(df_all: pd.DataFrame, meta: Mapping[str, Any]) -> pd.DataFrame:
    """Per normaliser: what it is (ours, in short), its numbers at the longest L, where it is
    better and worse than softmax (every normaliser, those no paper makes a claim about too)."""
    params = meta.get("normalizers", {})
    rows = []
    for spec, df in df_all.groupby("normalizer", sort=False):
        name = params.get(spec, {}).get("name", spec.split(":")[0])
        longest = df[df["length"] == df["length"].max()].iloc[0]
        better = [_where(df, c, BETTER) for c in ("ppl_effect", "retrieval_effect")]
        worse = [_where(df, c, WORSE) for c in ("ppl_effect", "retrieval_effect")]
        untested = _where(df, "ppl_effect", NOT_TESTABLE)
        rows.append(
            {
                "normaliser": spec,
                "what it is (ours, in short)": SOURCES.get(name, "—"),
                "at the longest L": f"L = {int(longest['length'])}: perplexity "
                f"{longest['perplexity_change']:+.1%}, retrieval {longest['accuracy']:.2f} ± "
                f"{longest['accuracy_se']:.2f}; {longest['time_vs_softmax']:.2f}× softmax's time",
                "effects": f"perplexity {BETTER} at L = {better[0]}, {WORSE} at {worse[0]}"
                + (
                    f", {NOT_TESTABLE} at {untested} ({rules.ONE_SEQUENCE})"
                    if untested != "none"
                    else ""
                )
                + f"; retrieval {BETTER} at {better[1]}, {WORSE} at {worse[1]}",
            }
        )
    return pd.DataFrame(rows)


def _train_length(meta: Mapping[str, Any]) -> int | None:
    given = meta.get("params", {}).get("train_length")
    return given or meta.get("model", {}).get("max_context")


def _judge(
    s: Statement, df: pd.DataFrame, base: pd.DataFrame, meta: Mapping[str, Any], k: int
) -> dict[str, str]:
    """One statement on one normaliser's rows ``df`` against softmax's ``base`` (by length)."""
    train = _train_length(meta)
    larger = df[df["length"] > (train or math.inf)]
    if s in (ADAPTIVE, ADAPTIVE_SHARPER):
        rule = (rules.more_performant if s is ADAPTIVE else rules.sharper).text()
        if train is None:
            return s.judged("", rule, NOT_TESTABLE, "the training length is unknown")
        if not len(larger):
            reason = f"no L past the training length {train}"
            return s.judged("", rule, NOT_TESTABLE, reason)
        if s is ADAPTIVE:
            measured = "; ".join(
                f"L={int(r.length)}: {r.accuracy:.2f} ± {r.accuracy_se:.2f} (softmax "
                f"{base.loc[r.length, 'accuracy']:.2f}), {r.retrieval_effect}"
                for r in larger.itertuples()
            )
            verdict = rules.more_performant(list(larger["retrieval_effect"]))
            return s.judged(measured, rule, verdict)
        h, h0 = larger["head_entropy_median"], larger["length"].map(base["head_entropy_median"])
        measured = "; ".join(
            f"L={int(n)}: H {a:.2f} (softmax {b:.2f})"
            for n, a, b in zip(larger["length"], h, h0, strict=True)
        )
        return s.judged(measured, rule, rules.sharper(list(h), list(h0)))
    if s is LENGTH_AWARE:
        rule = rules.roughly_constant.text()
        lo, hi = int(df["length"].min()), int(df["length"].max())
        if lo == hi:
            return s.judged(f"one length (L = {lo})", rule, NA)
        mw, mw0 = df.set_index("length")["head_max_weight_median"], base["head_max_weight_median"]
        ratio, base_ratio = float(mw[hi] / mw[lo]), float(mw0[hi] / mw0[lo])
        measured = f"L = {lo} → {hi}: ×{ratio:.2f} (softmax ×{base_ratio:.2f})"
        return s.judged(measured, rule, rules.roughly_constant(ratio, base_ratio))
    rule = rules.preferred.text()
    much_longer = rules.MUCH_LONGER
    far = df[df["length"] >= much_longer * k]
    if not len(far):
        reason = f"no L ≥ {much_longer}·k = {much_longer * k:g}"
        return s.judged("", rule, NOT_TESTABLE, reason)

    def said(effect: str) -> str:
        return f"{effect} ({rules.ONE_SEQUENCE})" if effect == NOT_TESTABLE else effect

    measured = "; ".join(
        f"L={int(r.length)}: perplexity {said(r.ppl_effect)}, retrieval {r.retrieval_effect}"
        for r in far.itertuples()
    )
    verdict = rules.preferred(list(far["ppl_effect"]), list(far["retrieval_effect"]))
    return s.judged(measured, rule, verdict)


def claims(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> pd.DataFrame:
    summary = tables["summary"]
    model = str(meta.get("model", {}).get("id", "model"))
    params = meta.get("normalizers", {})
    base = summary[summary["normalizer"] == BASELINE].set_index("length")
    rows = []
    for spec, df in effects(summary).groupby("normalizer", sort=False):
        name = params.get(spec, {}).get("name", spec.split(":")[0])
        k = int(params.get(spec, {}).get("params", {}).get("k", _TOPK_K))
        for s in ALL:
            if name in COVERS[s]:
                claim = f"{spec} swapped into {model}: {s.claim}"
                rows.append(_judge(s, df, base, meta, k) | {"claim": claim})
    return pd.DataFrame(rows, columns=COLUMNS)


def sections(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]) -> list[str]:
    summary = tables["summary"]
    cols = {
        "normalizer": "normaliser",
        "length": "L",
        "perplexity": "perplexity",
        "perplexity_change": "vs softmax",
        "accuracy": "retrieval",
        "accuracy_se": "± s.e.",
        "head_entropy_median": "head H (median)",
        "head_mass_mean": "mass on keys",
        "seconds_per_forward": "s / forward",
    }
    table = summary[list(cols)].rename(columns=cols)
    params = meta.get("normalizers", {})
    used = [
        f"- `{spec}`: `{v.get('name')}` with {v.get('params') or 'its defaults'}"
        for spec, v in params.items()
    ]
    return [
        "## Effects per normaliser",
        "",
        f"Against softmax, per length: {rules.effects_text()}.",
        "",
        markdown_table(_effects_table(effects(summary), meta)),
        "",
        "## Table",
        "",
        "Perplexity on the book tokens of the rows that see L/2 … L tokens (mean over "
        "sequences); retrieval: share of probes whose five digits are all the model's top "
        "token; head H: median over heads of the entropy on sampled rows; mass on keys: the "
        "weight the normaliser puts on the keys at all (1 for softmax).",
        "",
        markdown_table(table),
        "",
        "## Normalisers and parameters",
        "",
        *used,
        "",
        "## Differences from the sources' set-ups",
        "",
        *[f"- {d}" for d in DIFFERENCES],
    ]
