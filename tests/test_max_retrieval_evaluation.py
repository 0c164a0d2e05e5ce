"""Max retrieval (paper B §4.1, App. A): evaluation and tables, the intervals over seeds and
test sets, bad configs, and issue 40's few-seed correction, steps rule and pooled headline."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import ttest_rel

from attnlimits.claims.statistics import paired_seeds_questions
from attnlimits.experiments.softmax_not_enough import (
    EvalConfig,
    MaxRetrievalModel,
    ModelConfig,
    TrainConfig,
    evaluate,
    make_batch,
    paired_table,
    summary_table,
    uncertainty,
)
from attnlimits.experiments.softmax_not_enough.evaluate import P_BOOT_ROW, P_TTEST_ROW
from attnlimits.experiments.softmax_not_enough.uncertainty import (
    pack_hits,
    unpack_hits,
)
from attnlimits.theory import binomial_standard_error as accuracy_se
from max_retrieval_models import small

# the module, which the package's ``train`` (the function) hides
train_module = importlib.import_module("attnlimits.experiments.softmax_not_enough.train")


# ---- evaluation and tables ---------------------------------------------------------------


def test_evaluate_table(gen: torch.Generator) -> None:
    model = MaxRetrievalModel(small(), seeds=(0, 1, 2))
    cfg = EvalConfig(sizes=(4, 32), n_sets=300, chunk_items=1000, target_se=None)
    df = evaluate(model, cfg, {"s": ("softmax", {}), "a": ("adaptive", {})})
    assert list(df.columns) == [
        "norm", "seed", "size", "n_sets", "correct", "accuracy", "se", "hits"
    ]  # fmt: skip
    for row in df.itertuples():  # the packed per-set outcomes add up to the counts
        assert unpack_hits([row.hits], row.n_sets).sum() == row.correct
    assert (df["n_sets"] == 300).all() and len(df) == 12 and set(df["seed"]) == {0, 1, 2}
    # seed 1's rows are those of the seed-1 model evaluated alone
    alone = evaluate(MaxRetrievalModel(small(), seeds=(1,)), cfg, {"s": ("softmax", {})})
    mine = df[(df["norm"] == "s") & (df["seed"] == 1)].reset_index(drop=True)
    assert mine["correct"].tolist() == alone["correct"].tolist()
    assert np.allclose(df["se"], np.sqrt(df["accuracy"] * (1 - df["accuracy"]) / 300))
    pd.testing.assert_frame_equal(
        df, evaluate(model, cfg, {"s": ("softmax", {}), "a": ("adaptive", {})})
    )


def test_evaluate_stops_at_target_se() -> None:
    model = MaxRetrievalModel(small())  # untrained: accuracy near chance, p(1 - p) ≈ 0.09
    cfg = EvalConfig(sizes=(8,), n_sets=5000, target_se=0.02, min_sets=100, chunk_items=80)
    df = evaluate(model, cfg)
    n, p = int(df["n_sets"].iloc[0]), float(df["accuracy"].iloc[0])
    assert 100 <= n < 5000 and df["se"].iloc[0] <= 0.02
    assert accuracy_se(p, n - 10) > 0.02  # the previous chunk had not reached the target
    full = evaluate(model, EvalConfig(sizes=(8,), n_sets=300, target_se=None, chunk_items=80))
    assert int(full["n_sets"].iloc[0]) == 300


def test_evaluate_caps_items_per_size() -> None:
    cfg = EvalConfig(sizes=(4, 64), n_sets=100, max_items=640, target_se=None)
    assert cfg.sets_at(4) == 100 and cfg.sets_at(64) == 10 and cfg.sets_at(10_000) == 1
    df = evaluate(MaxRetrievalModel(small()), cfg)
    assert df.set_index("size")["n_sets"].to_dict() == {4: 100, 64: 10}


def _fake_acc() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for seed in range(5):
        for size in (16, 32, 64):
            base = 0.9 - size / 200 + rng.normal(0, 0.01)
            rows.append({"norm": "softmax", "seed": seed, "size": size, "accuracy": base})
            rows.append(
                {
                    "norm": "adaptive",
                    "seed": seed,
                    "size": size,
                    "accuracy": base + 0.02 + rng.normal(0, 0.005),
                }
            )
    return pd.DataFrame(rows)


def test_paired_table_layout() -> None:
    acc = _fake_acc()
    s = summary_table(acc)
    table = paired_table(s, id_size=16)
    assert list(table.columns) == ["model", "16 (ID)", "32", "64"]
    assert list(table["model"]) == ["softmax", "adaptive", P_TTEST_ROW, P_BOOT_ROW]
    x = acc[(acc.norm == "adaptive") & (acc["size"] == 32)].sort_values("seed")["accuracy"]
    b = acc[(acc.norm == "softmax") & (acc["size"] == 32)].sort_values("seed")["accuracy"]
    assert table.loc[2, "32"] == f"{ttest_rel(x.to_numpy(), b.to_numpy()).pvalue:.1e}"
    assert table.loc[0, "32"] == f"{100 * b.mean():.1f} ± {100 * b.std():.1f}"
    assert s.loc[s.norm == "softmax", "p_ttest"].isna().all()
    assert (s.loc[s.norm == "adaptive", "p_ttest"] < 0.01).all()
    assert s["p_value"].isna().all() and table.loc[3, "32"] == "nan"  # no per-set hits


# ---- intervals over seeds and test sets ----------------------------------------------------
# (the interval itself is tested in tests/test_statistics.py; here: the cells, their sets and
# the pairing with the baseline)


def test_seeds_by_sets_is_the_one_interval_per_cell_and_pair() -> None:
    rng = np.random.default_rng(2)
    hits = rng.random((3, 10, 64)) < np.array([0.4, 0.6, 0.5])[:, None, None]
    r = uncertainty.seeds_by_sets(hits, baseline=0)
    for c in range(3):
        own = paired_seeds_questions(hits[c].astype(float))
        assert (r.mean[c], r.low[c], r.high[c]) == pytest.approx(
            (float(own.estimate), float(own.low), float(own.high)), rel=1e-12
        )
    pair = paired_seeds_questions(hits[2].astype(float), hits[0].astype(float))
    assert (r.diff[2], r.diff_low[2], r.p_value[2]) == pytest.approx(
        (float(pair.estimate), float(pair.low), float(pair.p_value)), rel=1e-12
    )
    assert np.isnan(r.diff[0]) and np.isnan(r.p_value[0])
    assert np.isnan(uncertainty.seeds_by_sets(hits).diff).all()  # no baseline, no pairs


def test_seeds_by_sets_uses_each_cells_own_sets() -> None:
    """A cell that drew fewer sets is judged on those alone, and paired on the common ones."""
    hits = np.zeros((2, 3, 100))
    hits[0, :, :50] = 1.0  # baseline: 50 sets all correct ...
    hits[0, :, 50:] = 7.0  # ... and garbage past its n_sets
    hits[1, :, :] = 1.0
    r = uncertainty.seeds_by_sets(hits, n_sets=np.array([50, 100]), baseline=0)
    assert r.mean.tolist() == [1.0, 1.0] and r.diff[1] == 0.0
    assert r.low[0] == r.high[0] == 1.0 and r.p_value[1] == 1.0
    with pytest.raises(ValueError, match="n_sets"):
        uncertainty.seeds_by_sets(hits, n_sets=np.array([0, 100]))
    with pytest.raises(ValueError, match="baseline"):
        uncertainty.seeds_by_sets(hits, baseline=2)


def test_hits_pack_round_trip() -> None:
    rng = np.random.default_rng(3)
    for m in (1, 7, 8, 9, 1000):
        h = rng.random((4, m)) < 0.5
        assert np.array_equal(unpack_hits(pack_hits(h), m), h)


def test_summary_interval_columns_from_evaluate() -> None:
    model = MaxRetrievalModel(small(), seeds=(0, 1, 2))
    cfg = EvalConfig(sizes=(4, 16), n_sets=200, target_se=None)
    acc = evaluate(model, cfg, {"softmax": ("softmax", {}), "topk": ("topk", {"k": 1})})
    s = summary_table(acc).set_index(["norm", "size"])
    for (norm, size), row in s.iterrows():
        cell = acc[(acc["norm"] == norm) & (acc["size"] == size)]
        assert row["mean"] == pytest.approx(cell["accuracy"].mean())
        assert row["ci_low"] <= row["mean"] <= row["ci_high"] and row["n_sets"] == 200
        assert row["se_seeds_sets"] > row["se"] / 3  # both levels: at least the seeds' share
    hits = np.stack([unpack_hits(acc[(acc["norm"] == n) & (acc["size"] == 16)]["hits"], 200)
                     for n in ("softmax", "topk")])  # fmt: skip
    direct = uncertainty.seeds_by_sets(hits, baseline=0)
    assert s.loc[("topk", 16), "p_value"] == direct.p_value[1]
    assert s.loc[("topk", 16), "diff_low"] == direct.diff_low[1]


@pytest.mark.parametrize(
    "make",
    [
        lambda: EvalConfig(sizes=()),
        lambda: EvalConfig(sizes=(0, 4)),
        lambda: EvalConfig(n_sets=0),
        lambda: EvalConfig(target_se=0.0),
        lambda: TrainConfig(min_size=0),
        lambda: TrainConfig(min_size=5, max_size=4),
        lambda: TrainConfig(lr=0.0),
        lambda: TrainConfig(batch=0),
        lambda: ModelConfig(n_classes=1),
        lambda: ModelConfig(width=0),
        lambda: ModelConfig(variant="flax"),
        lambda: TrainConfig(regularizer="l1"),
        lambda: TrainConfig(schedule="linear"),
        lambda: TrainConfig(steps=10, warmup=11),
        lambda: EvalConfig(max_items=0),
    ],
)
def test_bad_config_raises(make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        make()


def test_unknown_normaliser_raises(gen: torch.Generator) -> None:
    model = MaxRetrievalModel(small("no_such_normaliser"))
    with pytest.raises(ValueError):
        model(*make_batch(2, 3, generator=gen)[:2])


# ---- issue 40: the steps rule, the pooled headline ---------------------------------------


def _crossed(rng: np.random.Generator, seeds: int, m: int, sd: tuple[float, float, float]):
    """Seed effect + set effect + interaction, true mean 0: ``[seeds, m]``."""
    return (sd[0] * rng.normal(size=(seeds, 1)) + sd[1] * rng.normal(size=(1, m))
            + sd[2] * rng.normal(size=(seeds, m)))  # fmt: skip


def test_steps_rule_follows_the_longer_length_only_when_the_headline_moved():
    rng = np.random.default_rng(0)
    base = _crossed(rng, 10, 200, (0.02, 0.05, 0.1)) + 0.05
    same = base + 0.002 * rng.normal(size=base.shape)
    stay = uncertainty.steps_rule(base, same, (5000, 20000))
    assert not stay.moved and stay.follow == 5000 and stay.low < 0 < stay.high
    moved = uncertainty.steps_rule(base, base - 0.03, (5000, 20000))
    assert moved.moved and moved.follow == 20000
    assert moved.change == pytest.approx(-0.03) and moved.high < 0
    with pytest.raises(ValueError, match="one shape"):
        uncertainty.steps_rule(base, base[:3], (1, 2))


def test_gain_matrix_counts_every_size_once():
    from attnlimits.experiments.softmax_not_enough.evaluate import gain_matrix, pooled_gain

    rows = []
    for n, m, gain_sets in ((32, 10, 5), (64, 40, 4)):  # size 32: gain 0.5; 64: gain 0.1
        soft = np.zeros((2, m), bool)
        adap = soft.copy()
        adap[:, :gain_sets] = True
        for norm, hits in (("softmax", soft), ("adaptive", adap)):
            rows.append(pd.DataFrame({"norm": norm, "seed": [0, 1], "size": n, "n_sets": m,
                                      "hits": uncertainty.pack_hits(hits)}))  # fmt: skip
    acc = pd.concat(rows, ignore_index=True)
    g = gain_matrix(acc, [32, 64])
    assert g.shape == (2, 50) and g.mean() == pytest.approx(0.3)  # (0.5 + 0.1) / 2
    assert gain_matrix(acc, [64], n_sets={64: 8}).mean() == pytest.approx(0.5)
    mean, low, high = pooled_gain(acc, [32, 64])
    assert mean == pytest.approx(0.3) and low <= mean <= high


def test_fold_fits_fit_each_half_of_the_seeds_alone():
    from attnlimits.experiments.softmax_not_enough.config import TemperatureFitConfig
    from attnlimits.experiments.softmax_not_enough.fits import fold_fits

    H = np.tile(np.linspace(0.6, 4.0, 30), 4)
    seed = np.repeat([0, 1, 2, 3], 30)
    beta = np.where(seed < 2, 2.0 + H, 5.0)  # seeds 0, 1: β = 2 + H; seeds 2, 3: β = 5
    folds = fold_fits(pd.DataFrame({"seed": seed, "entropy": H, "beta_star": beta}),
                      TemperatureFitConfig()).set_index(["fold", "fit"])  # fmt: skip
    np.testing.assert_allclose(folds.loc[(0, "refit"), "coeffs"], [0, 0, 0, 1, 2], atol=1e-6)
    np.testing.assert_allclose(folds.loc[(1, "refit_median"), "coeffs"], [0, 0, 0, 0, 5], atol=1e-6)
    assert folds.loc[(0, "refit"), "held_out"] == [2, 3]
    assert folds.loc[(1, "refit"), "fit_seeds"] == [2, 3]


def _fold_acc(in_sample: float, held_out: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ten seeds, two sizes above 16: each fold's refit beats the published rule by
    ``in_sample`` (share of sets flipped right) on its own seeds and ``held_out`` on the others."""
    rng = np.random.default_rng(3)
    seeds, m = np.arange(10), 200
    halves = [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    folds = pd.DataFrame({"fold": [0, 1], "fit": "refit", "fit_seeds": halves,
                          "held_out": halves[::-1]})  # fmt: skip
    rows = []
    for n in (64, 256):
        base = rng.random((10, m)) < 0.4
        rows.append(pd.DataFrame({"norm": "adaptive", "seed": seeds, "size": n, "n_sets": m,
                                  "hits": uncertainty.pack_hits(base)}))  # fmt: skip
        for k in (0, 1):
            own = np.isin(seeds, folds.loc[k, "fit_seeds"])[:, None]
            share = np.where(own, in_sample, held_out)
            hits = base | (rng.random((10, m)) < share)
            rows.append(pd.DataFrame({"norm": f"adaptive (refit, fold {k})", "seed": seeds,
                                      "size": n, "n_sets": m,
                                      "hits": uncertainty.pack_hits(hits)}))  # fmt: skip
    return pd.concat(rows, ignore_index=True), folds


def test_a_refit_is_judged_better_only_on_seeds_it_was_not_fitted_on():
    from attnlimits.experiments.softmax_not_enough.claims import held_out_refits

    overfit = held_out_refits(*_fold_acc(0.3, 0.0), 16)
    assert overfit["outcome"].tolist() == ["inconclusive"] * 3
    assert overfit["evaluated on seeds"].tolist()[:2] == ["[5, 6, 7, 8, 9]", "[0, 1, 2, 3, 4]"]
    general = held_out_refits(*_fold_acc(0.3, 0.3), 16)
    assert general["outcome"].tolist() == ["better"] * 3


def test_the_ablation_report_states_the_length_the_steps_rule_picks():
    from attnlimits.experiments.softmax_not_enough.sections import steps_decision

    def ablation(drop: float) -> pd.DataFrame:
        rng = np.random.default_rng(5)
        rows = []
        for n in (16, 64, 256):
            soft = rng.random((10, 300)) < 0.4
            for steps, share in ((5000, 0.4), (20000, 0.4 - drop)):
                adap = soft | (rng.random((10, 300)) < share)
                for norm, hits in (("softmax", soft), ("adaptive", adap)):
                    rows.append(pd.DataFrame({"norm": norm, "seed": np.arange(10), "size": n,
                                              "n_sets": 300, "steps": steps,
                                              "hits": uncertainty.pack_hits(hits)}))  # fmt: skip
        return pd.concat(rows, ignore_index=True)

    assert "**20,000 steps**" in steps_decision(ablation(0.3), 16)[0]
    assert "**5,000 steps**" in steps_decision(ablation(0.0), 16)[0]
