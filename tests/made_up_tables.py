"""Made-up tables of each kind of run, for the tests of claims and pages (tests/test_view*.py,
tests/test_long_context.py): numbers chosen so that each verdict and each plot has something to
show; none is a measurement."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnlimits.experiments.long_context import summarize

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
        # pending: the softmax-not-enough tables move here once its claims tests settle
        from test_softmax_not_enough import _tables as softmax_tables

        tables = softmax_tables(0.1)
        tables["training_log"] = tables["training_log"].assign(step=[1, 2], norm="softmax")
        return tables, {"benchmark": {"train": {"max_size": 16}}}
    if name == "long-context":
        meta = {"params": {"model": "m", "prompts": 2, "low": LOW, "high": HIGH}}
        return long_context_tables(("softmax", "adaptive"), (2, 3)), meta
    if name == "limitations":
        # pending: the limitations tables move here when test_limitations_claims.py is split
        from test_limitations_claims import META, tables

        return tables(), META
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
                           "edge": np.where(h > 3.8, "top", "")})  # fmt: skip
    bins = pd.DataFrame({"entropy_median": [1.0, 3.0], "beta_median": [2.0, 4.0],
                         "beta_q25": [1.8, 3.5], "beta_q75": [2.2, 4.4]})  # fmt: skip
    coeffs = pd.DataFrame({"fit": ["paper", "refit", "refit"],
                           "coeffs": [[0.1, 1.0, 1.0], [1.0, 1.0], [2.0, 0.5]],
                           "inverse": [False, False, False], "theta_min": [0.01, 0.01, 0.1],
                           "mae_beta": [0.3, 0.1, 0.2]})  # fmt: skip
    return {"temperature_fit_points": points, "temperature_fit_bins": bins,
            "temperature_fit_coeffs": coeffs}  # fmt: skip


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
    from test_limitations_claims import META, tables  # pending, as in kind_tables

    out = tables()
    for name in ("alg1", "alg2", "alg3", "alg4"):
        df = out[name]
        other = df.assign(x_source="hidden")
        if name == "alg3":
            other["critical_n"] = np.where(df["critical_n"] > 0, df["critical_n"] + 7, -1)
        out[name] = pd.concat([df, other], ignore_index=True)
    return out, {**META, "experiment": "limitations"}
