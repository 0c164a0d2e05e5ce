"""Max retrieval runners: tables and resumption in a ResultStore (tiny configs)."""

from __future__ import annotations

import numpy as np
import pytest

from attnlimits.experiments.softmax_not_enough import (
    CrossConfig,
    EvalConfig,
    MaxRetrievalConfig,
    ModelConfig,
    TrainConfig,
    run_ablation,
    run_cross_normalizers,
    run_max_retrieval,
)
from attnlimits.experiments.store import ResultStore


def tiny(**kw) -> MaxRetrievalConfig:  # type: ignore[no-untyped-def]
    kw = {"seeds": (0, 1), **kw}
    return MaxRetrievalConfig(
        model=ModelConfig(width=16),
        train=TrainConfig(steps=12, batch=8, log_every=4, ckpt_every=6, max_size=4),
        eval=EvalConfig(sizes=(4, 8), n_sets=40),
        profile_sizes=(4, 8),
        **kw,
    )


def test_run_max_retrieval_returns_every_table(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = ResultStore(tmp_path)
    out = run_max_retrieval(tiny(), store)
    acc = out["accuracy"]
    assert set(acc["norm"]) == {"softmax", "adaptive"} and set(acc["seed"]) == {0, 1}
    assert list(out["paired"]["model"]) == ["softmax", "adaptive", "p-value"]
    assert list(out["paired"].columns) == ["model", "4 (ID)", "8"]
    assert set(out) == {"accuracy", "summary", "paired", "training_log", "attention_profile"}
    assert "max_retrieval.train_eval" in store.meta["wall_time_s"]
    assert len(list((tmp_path / "checkpoints").glob("*.pt"))) == 1  # both seeds, one model
    # a rerun loads checkpoints and parts and gives the same table
    again = run_max_retrieval(tiny(), ResultStore(tmp_path))
    assert again["accuracy"]["correct"].tolist() == acc["correct"].tolist()


def test_run_cross_normalizers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = CrossConfig(
        base=tiny(),
        trained={"softmax": ("softmax", {}), "sparsemax": ("sparsemax", {})},
        swaps={"adaptive": ("adaptive", {}), "topk": ("topk", {"k": 1})},
    )
    out = run_cross_normalizers(cfg, ResultStore(tmp_path))
    acc = out["cross_accuracy"]
    assert set(zip(acc["norm"], acc["mode"], strict=True)) == {
        ("softmax", "train"), ("sparsemax", "train"),
        ("adaptive", "inference-swap"), ("topk", "inference-swap"),
    }  # fmt: skip
    s = out["cross_summary"]
    assert {"norm", "mode", "size", "mean", "std", "p_value"} <= set(s.columns)


def test_run_ablation(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = ResultStore(tmp_path)
    run_max_retrieval(tiny(), store)
    out = run_ablation(tiny(), store)
    s = out["ablation_summary"]
    combos = set(zip(s["schedule"], s["regularizer"], s["variant"], strict=True))
    assert len(combos) == 8 and set(s["norm"]) == {"softmax", "adaptive"}
    assert np.allclose(s["se"], s["std"] / np.sqrt(s["n_seeds"]))
    # the default combination is the main run's model, trained once
    assert len(list((tmp_path / "checkpoints").glob("*.pt"))) == 8
    acc = out["ablation_accuracy"]
    default = (acc.schedule == "cosine") & (acc.regularizer == "coupled")
    main = acc[default & (acc.variant == "listing")]
    first = run_max_retrieval(tiny(), store)["accuracy"]
    assert sorted(main["correct"]) == sorted(first["correct"])


@pytest.mark.parametrize("kw", [{"seeds": ()}, {"seeds": (1, 1)}])
def test_bad_run_config(kw) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        tiny(**kw)


def test_cross_needs_softmax() -> None:
    with pytest.raises(ValueError):
        CrossConfig(trained={"sparsemax": ("sparsemax", {})})
