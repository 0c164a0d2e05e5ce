"""Made-up tables of each kind of run, for the tests of claims and pages (tests/test_view*.py,
tests/test_long_context.py, tests/test_softmax_not_enough.py): numbers chosen so that each verdict
and each plot has something to show; none is a measurement. Paper A's are built in
limitations_tables.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

import limitations_tables
from attnlimits.experiments.long_context import summarize
from attnlimits.experiments.softmax_not_enough import entropy_vs_temperature
from attnlimits.experiments.softmax_not_enough.uncertainty import pack_hits, unpack_hits

LOW, HIGH = 10, 40  # the tiny word-level tokenizer knows these numbers


def long_context_tables(modes: tuple[str, ...], ns: tuple[int, ...]) -> dict[str, pd.DataFrame]:
    """Summaries of made-up answers (prompt 0 right in every cell) for ``modes`` x ``ns``."""
    cells = [(m, n, p) for m in modes for n in ns for p in (0, 1)]
    answers = pd.DataFrame(
        {"mode": [c[0] for c in cells], "n": [c[1] for c in cells],
         "prompt": [c[2] for c in cells], "n_tokens": 9, "target": 30,
         "predicted": [30.0 if c[2] == 0 else 10.0 for c in cells],
         "correct": [c[2] == 0 for c in cells], "numbers": "10 30"}
    )  # fmt: skip
    heads = answers[["mode", "n", "prompt"]].assign(
        layer=0, head=0, entropy=1.0, entropy_base=1.0, beta=1.0, spread=2.0, n_keys=9,
        log_keys=math.log(9),
    )  # fmt: skip
    return summarize(answers, heads) | {"answers": answers}


def monitor_table() -> pd.DataFrame:
    """3 steps × 2 layers × 2 heads; layer 1 head 0 collapses at step 20, layer 0 head 1
    disperses at step 30."""
    rng = np.random.default_rng(0)
    idx = pd.MultiIndex.from_product(
        [[10, 20, 30], [0, 1], [0, 1]], names=["step", "layer", "head"]
    )
    t = idx.to_frame(index=False)
    for col in ("entropy", "max_weight", "sink_mass", "logit_spread"):
        t[col] = rng.random(len(t))
    t["entropy_max"] = 1.0
    t["entropy_ratio_min"] = 0.5
    t.loc[(t.step == 20) & (t.layer == 1) & (t["head"] == 0), "entropy_max"] = 0.01
    t.loc[(t.step == 30) & (t.layer == 0) & (t["head"] == 1), "entropy_ratio_min"] = 0.99
    t["length"], t["n_rows"] = 12, 24
    return t


def clrs_tables() -> tuple[dict[str, pd.DataFrame], dict]:
    """Two algorithms, a training length 4 and a longer 8; made-up answers of two arms."""
    from attnlimits.experiments.clrs_text.evaluate import (
        accuracy_table,
        baseline_table,
        paired_table,
    )

    rng = np.random.default_rng(3)
    rows = [
        {"arm": arm, "seed": seed, "algorithm": algo, "length": n, "in_distribution": n == 4,
         "regime": "in distribution" if n == 4 else "extrapolation",
         "question": f"{algo}{n}q{i}", "answer": str(i % 3), "correct": bool(rng.random() < p),
         "result_correct": True}
        for arm, p in (("softmax", 0.4), ("adaptive", 0.7)) for seed in (0, 1)
        for algo in ("minimum", "insertion_sort") for n in (4, 8) for i in range(6)
    ]  # fmt: skip
    ans = pd.DataFrame(rows)
    acc = accuracy_table(ans, baseline_table(ans.drop_duplicates("question")))
    train = pd.DataFrame({"arm": ["softmax", "adaptive"] * 2, "seed": 0, "step": [1, 1, 2, 2],
                          "loss": [2.0, 2.1, 1.0, 0.9]})  # fmt: skip
    tables = {"accuracy": acc, "paired": paired_table(ans, acc), "training": train}
    return tables, {"params": {"arms": ["softmax", "adaptive"], "model": "m", "seeds": 2}}


def kind_tables(name: str) -> tuple[dict[str, pd.DataFrame], dict]:
    """(tables, meta) of a run of ``name``, from each experiment's own test tables."""
    if name == "softmax-not-enough":
        tables = softmax_not_enough_tables(0.1)
        tables["training_log"] = tables["training_log"].assign(step=[1, 2], norm="softmax")
        return tables, {"benchmark": {"train": {"max_size": 16}}}
    if name == "long-context":
        meta = {"params": {"model": "m", "prompts": 2, "low": LOW, "high": HIGH}}
        return long_context_tables(("softmax", "adaptive"), (2, 3)), meta
    if name == "limitations":
        return limitations_tables.tables(), limitations_tables.META
    if name == "clrs-text":
        return clrs_tables()
    summary = compare_summary()
    return {"summary": summary}, {"model": {"id": "m"}}


def compare_summary() -> pd.DataFrame:
    """A compare run's summary: softmax and adaptive at two lengths (numbers made up)."""
    rows = [
        {"normalizer": spec, "name": spec, "length": n, "perplexity_change": 0.01 * n / 64,
         "delta_nll": 0.01, "delta_nll_sd": 0.001, "sequences": 4, "accuracy": 0.5,
         "accuracy_se": 0.05, "head_entropy_median": 2.0, "seconds_per_forward": 0.1,
         "time_vs_softmax": 1.2}
        for spec in ("softmax", "adaptive") for n in (64, 128)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def fit_tables() -> dict[str, pd.DataFrame]:
    """App. F's tables: points, bins and two polynomials (one on a larger θ lower bound)."""
    rng = np.random.default_rng(7)
    h = rng.uniform(0.1, 4.0, 40)
    beta = 1 + h + rng.normal(0, 0.1, 40)
    points = pd.DataFrame({"entropy": h, "beta_star": beta, "theta_star": 1 / beta,
                           "edge": np.where(h > 3.8, "top", ""),
                           "seed": np.arange(40) % 10})  # fmt: skip
    bins = pd.DataFrame({"entropy_median": [1.0, 3.0], "beta_median": [2.0, 4.0],
                         "beta_q25": [1.8, 3.5], "beta_q75": [2.2, 4.4]})  # fmt: skip
    coeffs = pd.DataFrame({"fit": ["paper", "refit", "refit"],
                           "coeffs": [[0.1, 1.0, 1.0], [1.0, 1.0], [2.0, 0.5]],
                           "inverse": [False, False, False], "theta_min": [0.01, 0.01, 0.1],
                           "mae_beta": [0.3, 0.1, 0.2]})  # fmt: skip
    # the share of App. F's sets where a wrong item has the top logit, per size ((2.e))
    sizes = pd.DataFrame({"size": [16, 2048], "n_sets": [300, 300], "kept": [2, 60],
                          "kept_frac": [2 / 300, 0.2]})  # fmt: skip
    return {"temperature_fit_points": points, "temperature_fit_bins": bins,
            "temperature_fit_coeffs": coeffs, "temperature_fit_sizes": sizes}  # fmt: skip


def compare_like() -> dict[str, pd.DataFrame]:
    """A compare run's summary table: 3 normalisers × 3 lengths (numbers made up)."""
    rng = np.random.default_rng(5)
    rows = [
        {"normalizer": spec, "length": n, "perplexity_change": rng.normal(),
         "accuracy": rng.random(), "head_entropy_median": rng.random() * 3,
         "seconds_per_forward": rng.random()}
        for spec in ("softmax", "adaptive", "logn:train_length=64")
        for n in (64, 128, 256)
    ]  # fmt: skip
    return {"summary": pd.DataFrame(rows)}


def two_sources() -> tuple[dict[str, pd.DataFrame], dict]:
    """The limitations test tables with a second x source whose numbers differ."""
    out = limitations_tables.tables()
    for name in ("alg1", "alg2", "alg3", "alg4"):
        df = out[name]
        other = df.assign(x_source="hidden")
        if name == "alg3":
            other["critical_n"] = np.where(df["critical_n"] > 0, df["critical_n"] + 7, -1)
        out[name] = pd.concat([df, other], ignore_index=True)
    return out, {**limitations_tables.META, "experiment": "limitations"}


def softmax_accuracy(sizes: list[int], gain: float, seeds: int = 10, m: int = 100) -> pd.DataFrame:
    """An :func:`evaluate`-shaped table with hits: softmax right on about half the sets,
    adaptive on the same sets flipped to right (gain > 0) or wrong (gain < 0) on a share
    ``|gain|`` of them, per seed and size."""
    rng = np.random.default_rng(0)
    rows = []
    for n in sizes:
        soft = rng.random((seeds, m)) < 0.5
        flip = rng.random((seeds, m)) < 2 * abs(gain)
        adap = soft | flip if gain > 0 else soft & ~flip
        for norm, hits in (("softmax", soft), ("adaptive", adap)):
            rows.append(pd.DataFrame({"norm": norm, "seed": np.arange(seeds), "size": n,
                                      "n_sets": m, "hits": pack_hits(hits)}))  # fmt: skip
    return pd.concat(rows, ignore_index=True)


def _set_attention(
    sizes: list[int], ratio: float, entropy: tuple[float, ...] | None = None
) -> pd.DataFrame:
    """A :func:`.evaluate.set_attention`-shaped table from random logits (Lemma 2.1's columns
    exact), two seeds with the same logits; item 0 is the desired one, adaptive puts ``ratio``
    times softmax's attention on it; the normalised ``entropy`` per size is given (a rise
    towards uniform by default), with a small wobble per (seed, set)."""
    rng = np.random.default_rng(1)
    entropy = entropy or tuple(0.1 + 0.3 * k for k in range(len(sizes)))
    rows = []
    for n, h in zip(sizes, entropy, strict=True):
        for k in range(4):
            e = rng.normal(size=n)
            log_a = e - np.logaddexp.reduce(e)
            for seed in (0, 1):
                common = {
                    "seed": seed,
                    "size": n,
                    "set": k,
                    "top": bool(e.argmax() == 0),
                    "spread": e.max() - e.min(),
                    "log_max": log_a.max(),
                    "log_min": log_a.min(),
                    "entropy": h + 0.002 * (k - 1.5) + 0.001 * seed,
                }
                target = np.exp(log_a[0])
                rows.append({"norm": "softmax", **common, "target": target})
                rows.append({"norm": "adaptive", **common, "target": ratio * target})
    return pd.DataFrame(rows)


def argmax_accuracy(sizes: list[int], gain: float) -> pd.DataFrame:
    """An ``argmax_accuracy``-shaped table: :func:`softmax_accuracy`'s with the other arm
    named argmax (``gain``: argmax − softmax), accuracy and ``agree`` = 1."""
    acc = softmax_accuracy(sizes, gain).replace({"norm": {"adaptive": "argmax"}})
    hits = [unpack_hits([h], m)[0] for h, m in zip(acc["hits"], acc["n_sets"], strict=True)]
    return acc.assign(accuracy=[h.mean() for h in hits], agree=1.0)


def softmax_not_enough_tables(
    adaptive_gain: float,
    spread_over: bool = False,
    entropy: tuple[float, ...] | None = None,
    argmax_gain: float = -0.1,
) -> dict[str, pd.DataFrame]:
    sizes = [16, 64, 256]
    prof = pd.DataFrame(
        {"norm": "softmax", "size": sizes, "rank": 0, "attention": [0.9, 0.5, 0.125]}
    )
    rows = []
    for s in sizes:
        rows.append({"norm": "softmax", "size": s, "mean": 0.5, "se": 0.01, "ci_low": 0.48,
                     "ci_high": 0.52, "n_sets": 100, "t": np.nan, "p_ttest": np.nan,
                     "diff": np.nan, "diff_low": np.nan, "diff_high": np.nan,
                     "p_value": np.nan})  # fmt: skip
        rows.append({"norm": "adaptive", "size": s, "mean": 0.5 + adaptive_gain, "se": 0.01,
                     "ci_low": 0.48 + adaptive_gain, "ci_high": 0.52 + adaptive_gain,
                     "n_sets": 100, "t": 3.0 if adaptive_gain > 0 else -3.0, "p_ttest": 0.001,
                     "diff": adaptive_gain, "diff_low": adaptive_gain - 0.01,
                     "diff_high": adaptive_gain + 0.01, "p_value": 0.01})  # fmt: skip
    bounds = [3.0, 1.5 if spread_over else 4.5]  # spread_over: past the bound, and shrinking
    log = pd.DataFrame({"step": [100, 200], "seed": 0, "spread": [1.0, 2.0], "bound": bounds})
    return {
        "accuracy": softmax_accuracy(sizes, adaptive_gain),
        "attention_profile": prof,
        "set_attention": _set_attention(sizes, 1.2 if adaptive_gain > 0 else 0.8, entropy),
        "argmax_accuracy": argmax_accuracy(sizes, argmax_gain),
        "summary": pd.DataFrame(rows),
        "entropy_vs_temperature": entropy_vs_temperature((1.0,), n=8),
        "training_log": log,
    }


def paired_argmax(
    diff: float, sizes: tuple[int, ...] = (16, 64, 256), seeds: int = 4, sets: int = 400
) -> pd.DataFrame:
    """An argmax_accuracy table with per-set hits (so argmax and softmax pair by set): softmax
    hits at rate 0.6, argmax at 0.6 + ``diff``."""
    rng = np.random.default_rng(1)
    rows = []
    for n in sizes:
        for norm, p in (("softmax", 0.6), ("argmax", 0.6 + diff)):
            for s in range(seeds):
                hits = rng.random(sets) < p
                rows.append(
                    {"norm": norm, "seed": s, "size": n, "n_sets": sets, "correct": int(hits.sum()),
                     "accuracy": hits.mean(), "hits": pack_hits(hits)[0], "agree": 1.0}
                )  # fmt: skip
    return pd.DataFrame(rows)
