"""Max retrieval (paper B §4.1, App. A): data, model, training, evaluation, tables."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import ttest_rel

from attnlimits.experiments.softmax_not_enough import (
    EvalConfig,
    MaxRetrievalModel,
    ModelConfig,
    TrainConfig,
    checkpoint_path,
    evaluate,
    lr_factor,
    make_batch,
    make_seed_batches,
    paired_table,
    summary_table,
    train,
)
from attnlimits.theory import binomial_standard_error as accuracy_se

TRAINABLE = ("softmax", "adaptive", "ssmax", "sparsemax", "entmax15", "topk", "sigmoid",
             "stick_breaking")  # fmt: skip


def small(normalizer: str = "softmax", width: int = 32) -> ModelConfig:
    return ModelConfig(width=width, normalizer=normalizer)


# ---- data --------------------------------------------------------------------------------


def test_batch_shapes_and_target(gen: torch.Generator) -> None:
    items, query, target = make_batch(64, 9, generator=gen)
    assert items.shape == (64, 9, 11) and query.shape == (64, 11) and target.shape == (64,)
    assert target.dtype == torch.long
    prio, onehot = items[..., 0], items[..., 1:]
    assert torch.all(onehot.sum(-1) == 1) and torch.all((prio >= 0) & (prio < 1))
    best = prio.argmax(1)
    assert torch.equal(target, onehot[torch.arange(64), best].argmax(-1))


def test_batch_is_seeded() -> None:
    a = make_batch(8, 5, generator=torch.Generator().manual_seed(3))
    b = make_batch(8, 5, generator=torch.Generator().manual_seed(3))
    c = make_batch(8, 5, generator=torch.Generator().manual_seed(4))
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not torch.equal(a[0], c[0])


def test_query_is_uninformative(gen: torch.Generator) -> None:
    _, query, target = make_batch(20_000, 4, generator=gen)
    assert 0 <= float(query.min()) and float(query.max()) < 1
    assert abs(float(query.mean()) - 0.5) < 0.01
    # the target is a function of the items alone: no query coordinate correlates with it
    onehot = torch.nn.functional.one_hot(target, 10).double()
    corr = np.corrcoef(query.double().T.numpy(), onehot.T.numpy())[:11, 11:]
    assert np.abs(corr).max() < 0.05


def test_classes_uniform(gen: torch.Generator) -> None:
    _, _, target = make_batch(50_000, 3, generator=gen)
    freq = torch.bincount(target, minlength=10).double() / 50_000
    assert torch.allclose(freq, torch.full((10,), 0.1, dtype=torch.float64), atol=0.01)


# ---- model -------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["listing", "ours"])
def test_forward_shapes_and_reference(variant: str, gen: torch.Generator) -> None:
    model = MaxRetrievalModel(ModelConfig(variant=variant), seeds=(0, 5)).double()
    items, query, _ = make_batch(5, 7, generator=gen)
    logits, a, e = model(items.double(), query.double(), return_attention=True)
    assert logits.shape == (2, 5, 10) and a.shape == e.shape == (2, 5, 7)
    assert torch.allclose(a.sum(-1), torch.ones(2, 5, dtype=torch.float64))
    ref_logits, ref_e = model.reference_forward(items.double(), query.double())
    assert torch.allclose(logits, ref_logits, atol=1e-10)
    assert torch.allclose(e, ref_e, atol=1e-10)
    # per-seed inputs [S, B, n, d] give each seed its own rows
    per_seed = make_seed_batches([gen, gen], 3, 4)
    logits = model(per_seed[0].double(), per_seed[1].double())
    ref = model.reference_forward(per_seed[0].double(), per_seed[1].double())[0]
    assert torch.allclose(logits, ref, atol=1e-10)


def test_listing_model_is_the_flax_listing() -> None:
    """Biases everywhere, zero at init; LeCun-normal weights; output projection; tanh GELU."""
    listing = MaxRetrievalModel(ModelConfig(), seeds=(0,))
    ours = MaxRetrievalModel(ModelConfig(variant="ours"), seeds=(0,))
    layers = dict(listing.dense.items())
    assert "w_o" in layers and "w_o" not in dict(ours.dense.items())
    for name, layer in layers.items():
        assert layer.bias is not None and torch.all(layer.bias == 0), name
        fan_in = layer.weight.shape[-1]
        std = float(
            layer.weight.detach().std()
        )  # truncated N(0, 1/fan_in), rescaled: std = 1/√fan_in
        assert std == pytest.approx(fan_in**-0.5, rel=0.15), name
        assert float(layer.weight.detach().abs().max()) <= 2 * fan_in**-0.5 / 0.8796 + 1e-6
    for name in ("w_q", "w_k", "w_v"):
        assert dict(ours.dense.items())[name].bias is None
    x = torch.linspace(-3, 3, 7)
    assert torch.allclose(listing.act(x), torch.nn.functional.gelu(x, approximate="tanh"))
    assert torch.allclose(ours.act(x), torch.nn.functional.gelu(x))


def test_seed_slices_are_independent_models(gen: torch.Generator) -> None:
    """Slice s of a stacked model is the model of seed s alone, inputs and outputs alike."""
    stacked = MaxRetrievalModel(ModelConfig(width=16), seeds=(3, 1, 7))
    alone = MaxRetrievalModel(ModelConfig(width=16), seeds=(1,))
    for p, q in zip(stacked.parameters(), alone.parameters(), strict=True):
        assert torch.equal(p[1:2], q)
    items, query, _ = make_batch(4, 9, generator=gen)
    assert torch.allclose(stacked(items, query)[1], alone(items, query)[0], atol=1e-6)


@pytest.mark.parametrize("norm", ["sigmoid", "stick_breaking"])
@pytest.mark.parametrize("variant", ["listing", "ours"])
def test_reassociation_holds_for_unnormalised_rows(
    norm: str, variant: str, gen: torch.Generator
) -> None:
    model = MaxRetrievalModel(ModelConfig(width=32, normalizer=norm, variant=variant)).double()
    items, query, _ = make_batch(4, 6, generator=gen)
    logits = model(items.double(), query.double())
    assert torch.allclose(logits, model.reference_forward(items.double(), query.double())[0])


def test_inference_swap_changes_only_normaliser(gen: torch.Generator) -> None:
    model = MaxRetrievalModel(small(), seeds=(0, 1))
    items, query, _ = make_batch(4, 50, generator=gen)
    multi = model.forward_multi(items, query, [("softmax", {}), ("topk", {"k": 1})])
    assert torch.allclose(multi[0], model(items, query))
    assert torch.allclose(multi[1], model(items, query, norm=("topk", {"k": 1})))


@pytest.mark.parametrize("variant", ["listing", "ours"])
def test_spread_bound_holds(variant: str, gen: torch.Generator) -> None:
    model = MaxRetrievalModel(ModelConfig(width=32, variant=variant), seeds=(0, 1, 2))
    torch.nn.init.normal_(model.dense["w_q"].weight, std=1.0)  # large, varied logits
    spread, bound = model.spread_bound(*make_batch(16, 12, generator=gen)[:2])
    assert spread.shape == bound.shape == (3,)
    assert torch.all(spread > 0) and torch.all(spread <= bound)


def test_bad_inputs_raise(gen: torch.Generator) -> None:
    model = MaxRetrievalModel(small(), seeds=(0, 1))
    items, query, _ = make_batch(2, 3, generator=gen)
    with pytest.raises(ValueError, match="seed axis"):
        model(items.unsqueeze(0).expand(3, -1, -1, -1), query.unsqueeze(0).expand(3, -1, -1))
    with pytest.raises(ValueError, match="features"):
        model(items[..., :5], query)
    with pytest.raises(ValueError, match="distinct"):
        MaxRetrievalModel(small(), seeds=(1, 1))


# ---- training ----------------------------------------------------------------------------


@pytest.mark.parametrize("norm", TRAINABLE)
def test_every_normaliser_trains_without_nan(norm: str) -> None:
    model, log = train(small(norm, 16), TrainConfig(steps=4, batch=8, log_every=1), seeds=(0, 1))
    assert len(log) == 8 and np.isfinite(log[["loss", "spread", "bound"]].to_numpy()).all()
    assert all(torch.isfinite(p).all() for p in model.parameters())


@pytest.mark.parametrize("variant", ["listing", "ours"])
def test_short_training_beats_chance(variant: str) -> None:
    # Sets of 1..4 items and a constant rate: small sets teach fast
    cfg = TrainConfig(steps=200, batch=64, max_size=4, log_every=100, schedule="constant")
    model, _ = train(ModelConfig(variant=variant), cfg, seeds=(0, 3))
    acc = evaluate(model, EvalConfig(sizes=(16,), n_sets=1000))
    assert (acc["accuracy"] > 0.5).all()  # chance is 0.1


@pytest.mark.parametrize("regularizer", ["coupled", "decoupled"])
def test_batched_seeds_equal_sequential_runs(regularizer: str) -> None:
    """Seed k of one batched run is the run of seed k alone: same data, same updates.

    Tolerance: 1e-5 relative on every weight after 30 steps in float32 (batched and single
    GEMMs may round differently; the observed difference is ~1e-7).
    """
    mcfg = ModelConfig(width=16)
    tcfg = TrainConfig(steps=30, batch=8, max_size=6, log_every=10, regularizer=regularizer)
    batched, blog = train(mcfg, tcfg, seeds=(4, 2, 9))
    for k, seed in enumerate((4, 2, 9)):
        alone, log = train(mcfg, tcfg, seeds=seed)
        for (name, p), q in zip(batched.named_parameters(), alone.parameters(), strict=True):
            torch.testing.assert_close(p[k : k + 1], q, rtol=1e-5, atol=1e-6, msg=name)
        mine = blog[blog["seed"] == seed].reset_index(drop=True)
        pd.testing.assert_frame_equal(mine[["step", "size", "lr"]], log[["step", "size", "lr"]])
        np.testing.assert_allclose(mine["loss"], log["loss"], rtol=1e-5)


def test_regularizers_differ_as_the_paper_reads() -> None:
    """Coupled: Adam with the L2 gradient λθ (L2 term in the loss); decoupled: AdamW."""
    mcfg = ModelConfig(width=8)
    runs = {
        r: train(mcfg, TrainConfig(steps=5, batch=4, weight_decay=0.1, regularizer=r), seeds=0)[0]
        for r in ("coupled", "decoupled")
    }
    a, b = (torch.cat([p.flatten() for p in m.parameters()]) for m in runs.values())
    assert not torch.allclose(a, b)


def test_cosine_schedule() -> None:
    f = [lr_factor(s, steps=100, warmup=0, schedule="cosine") for s in range(101)]
    assert f[0] == 1.0 and f[50] == pytest.approx(0.5) and f[100] == pytest.approx(0.0)
    assert all(x >= y for x, y in itertools.pairwise(f))  # decays monotonically
    w = [lr_factor(s, steps=100, warmup=10, schedule="cosine") for s in range(12)]
    assert w[0] == pytest.approx(0.1) and w[9] == 1.0 and w[10] == 1.0 and w[11] < 1.0
    assert lr_factor(70, steps=100, warmup=0, schedule="constant") == 1.0
    _, log = train(small(width=8), TrainConfig(steps=20, batch=4, log_every=1), seeds=0)
    assert log["lr"].iloc[0] == pytest.approx(1e-3) and log["lr"].is_monotonic_decreasing


def test_resume_gives_identical_weights(tmp_path) -> None:  # type: ignore[no-untyped-def]
    mcfg, tcfg = small(width=16), TrainConfig(steps=30, batch=8, ckpt_every=10, log_every=5)
    full, full_log = train(mcfg, tcfg, seeds=(2, 3))
    ckpt = checkpoint_path(tmp_path, mcfg, tcfg, seeds=(2, 3))
    train(mcfg, tcfg, seeds=(2, 3), ckpt=ckpt, stop_after=17)  # "interrupted" after step 17
    assert ckpt.exists()
    resumed, resumed_log = train(mcfg, tcfg, seeds=(2, 3), ckpt=ckpt)
    for (name, p), q in zip(full.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.equal(p, q), name
    pd.testing.assert_frame_equal(full_log, resumed_log)


# ---- evaluation and tables ---------------------------------------------------------------


def test_evaluate_table(gen: torch.Generator) -> None:
    model = MaxRetrievalModel(small(), seeds=(0, 1, 2))
    cfg = EvalConfig(sizes=(4, 32), n_sets=300, chunk_items=1000, target_se=None)
    df = evaluate(model, cfg, {"s": ("softmax", {}), "a": ("adaptive", {})})
    assert list(df.columns) == ["norm", "seed", "size", "n_sets", "correct", "accuracy", "se"]
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
    table = paired_table(acc, id_size=16)
    assert list(table.columns) == ["model", "16 (ID)", "32", "64"]
    assert list(table["model"]) == ["softmax", "adaptive", "p-value"]
    x = acc[(acc.norm == "adaptive") & (acc["size"] == 32)].sort_values("seed")["accuracy"]
    b = acc[(acc.norm == "softmax") & (acc["size"] == 32)].sort_values("seed")["accuracy"]
    assert table.loc[2, "32"] == f"{ttest_rel(x.to_numpy(), b.to_numpy()).pvalue:.1e}"
    assert table.loc[0, "32"] == f"{100 * b.mean():.1f} ± {100 * b.std():.1f}"
    s = summary_table(acc)
    assert s.loc[s.norm == "softmax", "p_value"].isna().all()
    assert (s.loc[s.norm == "adaptive", "p_value"] < 0.01).all()


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
