"""Max retrieval (paper B §4.1, App. A): data, model, training, evaluation, tables."""

from __future__ import annotations

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
    make_batch,
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


def test_forward_shapes_and_reference(gen: torch.Generator) -> None:
    torch.manual_seed(0)
    model = MaxRetrievalModel(ModelConfig()).double()
    items, query, _ = make_batch(5, 7, generator=gen)
    logits, a, e = model(items.double(), query.double(), return_attention=True)
    assert logits.shape == (5, 10) and a.shape == e.shape == (5, 1, 7)
    assert torch.allclose(a.sum(-1), torch.ones(5, 1, dtype=torch.float64))
    ref_logits, ref_e = model.reference_forward(items.double(), query.double())
    assert torch.allclose(logits, ref_logits, atol=1e-10)
    assert torch.allclose(e, ref_e, atol=1e-10)


@pytest.mark.parametrize("norm", ["sigmoid", "stick_breaking"])
def test_reassociation_holds_for_unnormalised_rows(norm: str, gen: torch.Generator) -> None:
    torch.manual_seed(1)
    model = MaxRetrievalModel(small(norm)).double()
    items, query, _ = make_batch(4, 6, generator=gen)
    logits = model(items.double(), query.double())
    assert torch.allclose(logits, model.reference_forward(items.double(), query.double())[0])


def test_inference_swap_changes_only_normaliser(gen: torch.Generator) -> None:
    torch.manual_seed(0)
    model = MaxRetrievalModel(small())
    items, query, _ = make_batch(4, 50, generator=gen)
    multi = model.forward_multi(items, query, [("softmax", {}), ("topk", {"k": 1})])
    assert torch.allclose(multi[0], model(items, query))
    assert torch.allclose(multi[1], model(items, query, norm=("topk", {"k": 1})))


def test_spread_bound_holds(gen: torch.Generator) -> None:
    torch.manual_seed(0)
    model = MaxRetrievalModel(small())
    spread, bound = model.spread_bound(*make_batch(16, 12, generator=gen)[:2])
    assert 0 < spread <= bound


# ---- training ----------------------------------------------------------------------------


@pytest.mark.parametrize("norm", TRAINABLE)
def test_every_normaliser_trains_without_nan(norm: str) -> None:
    model, log = train(small(norm, 16), TrainConfig(steps=4, batch=8, log_every=1), seed=0)
    assert len(log) == 4 and np.isfinite(log[["loss", "spread", "bound"]].to_numpy()).all()
    assert all(torch.isfinite(p).all() for p in model.parameters())


@pytest.mark.parametrize("seed", [0, 3])
def test_short_training_beats_chance(seed: int) -> None:
    # Sets of 1..4 items: with sizes up to 16 from the start, some seeds sit on a
    # near-chance plateau for 1000+ steps (docs/max_retrieval.md); small sets teach fast.
    cfg = TrainConfig(steps=200, batch=64, max_size=4, log_every=100)
    model, _ = train(ModelConfig(), cfg, seed=seed)
    acc = evaluate(model, EvalConfig(sizes=(16,), n_sets=1000))
    assert float(acc["accuracy"].iloc[0]) > 0.5  # chance is 0.1


def test_resume_gives_identical_weights(tmp_path) -> None:  # type: ignore[no-untyped-def]
    mcfg, tcfg = small(width=16), TrainConfig(steps=30, batch=8, ckpt_every=10, log_every=5)
    full, full_log = train(mcfg, tcfg, seed=2)
    ckpt = checkpoint_path(tmp_path, mcfg, tcfg, seed=2)
    train(mcfg, tcfg, seed=2, ckpt=ckpt, stop_after=17)  # "interrupted" after step 17
    assert ckpt.exists()
    resumed, resumed_log = train(mcfg, tcfg, seed=2, ckpt=ckpt)
    for (name, p), q in zip(full.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.equal(p, q), name
    pd.testing.assert_frame_equal(full_log, resumed_log)


# ---- evaluation and tables ---------------------------------------------------------------


def test_evaluate_table(gen: torch.Generator) -> None:
    torch.manual_seed(0)
    model = MaxRetrievalModel(small())
    cfg = EvalConfig(sizes=(4, 32), n_sets=300, chunk_items=1000, target_se=None)
    df = evaluate(model, cfg, {"s": ("softmax", {}), "a": ("adaptive", {})})
    assert list(df.columns) == ["norm", "size", "n_sets", "correct", "accuracy", "se"]
    assert (df["n_sets"] == 300).all() and len(df) == 4
    assert np.allclose(df["se"], np.sqrt(df["accuracy"] * (1 - df["accuracy"]) / 300))
    pd.testing.assert_frame_equal(
        df, evaluate(model, cfg, {"s": ("softmax", {}), "a": ("adaptive", {})})
    )


def test_evaluate_stops_at_target_se() -> None:
    torch.manual_seed(0)
    model = MaxRetrievalModel(small())  # untrained: accuracy near chance, p(1 - p) ≈ 0.09
    cfg = EvalConfig(sizes=(8,), n_sets=5000, target_se=0.02, min_sets=100, chunk_items=80)
    df = evaluate(model, cfg)
    n, p = int(df["n_sets"].iloc[0]), float(df["accuracy"].iloc[0])
    assert 100 <= n < 5000 and df["se"].iloc[0] <= 0.02
    assert accuracy_se(p, n - 10) > 0.02  # the previous chunk had not reached the target
    full = evaluate(model, EvalConfig(sizes=(8,), n_sets=300, target_se=None, chunk_items=80))
    assert int(full["n_sets"].iloc[0]) == 300


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
    ],
)
def test_bad_config_raises(make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        make()


def test_unknown_normaliser_raises(gen: torch.Generator) -> None:
    model = MaxRetrievalModel(small("no_such_normaliser"))
    with pytest.raises(ValueError):
        model(*make_batch(2, 3, generator=gen)[:2])
