"""Max retrieval runners: tables and resumption in a ResultStore (tiny configs)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ttest_rel

from attnlimits.experiments.softmax_not_enough import (
    CrossConfig,
    EvalConfig,
    MaxRetrievalConfig,
    ModelConfig,
    TrainConfig,
    evaluate,
    run_ablation,
    run_cross_normalizers,
    run_max_retrieval,
    train,
)
from attnlimits.experiments.softmax_not_enough.evaluate import P_BOOT_ROW, P_TTEST_ROW
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
    assert list(out["paired"]["model"]) == ["softmax", "adaptive", P_TTEST_ROW, P_BOOT_ROW]
    assert list(out["paired"].columns) == ["model", "4 (ID)", "8"]
    assert set(out) == {
        "accuracy",
        "summary",
        "paired",
        "training_log",
        "attention_profile",
        "set_attention",
        "argmax_accuracy",
    }
    # the argmax arm: softmax again on the evaluation's sets (its hits as stored) and argmax
    arm = out["argmax_accuracy"]
    assert set(arm["norm"]) == {"softmax", "argmax"} and (arm["agree"] == 1.0).all()
    assert "entropy" in out["set_attention"]
    assert "max_retrieval.train_eval" in store.meta["wall_time_s"]
    assert len(list((tmp_path / "checkpoints").glob("*.pt"))) == 1  # both seeds, one model
    # a rerun loads checkpoints and parts and gives the same table
    again = run_max_retrieval(tiny(), ResultStore(tmp_path))
    assert again["accuracy"]["correct"].tolist() == acc["correct"].tolist()


def test_run_cross_normalizers_rows_are_their_own_models(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Every (norm, mode) row holds the numbers of that normaliser, trained or swapped, and the
    summary is the mean and the paired test against softmax (trained), recomputed here from
    models trained and evaluated directly: a swapped label, a swap applied to the wrong model,
    or a wrong baseline changes a number."""
    base = tiny()
    cfg = CrossConfig(
        base=base,
        trained={"softmax": ("softmax", {}), "sparsemax": ("sparsemax", {})},
        swaps={"top2": ("topk", {"k": 2}), "topk": ("topk", {"k": 1})},
    )
    out = run_cross_normalizers(cfg, ResultStore(tmp_path))
    acc = out["cross_accuracy"].set_index(["norm", "mode", "seed", "size"])["hits"]
    direct = {}
    for name, norms in (
        ("softmax", {"softmax": ("softmax", {}), "top2": ("topk", {"k": 2}),
                     "topk": ("topk", {"k": 1})}),
        ("sparsemax", {"sparsemax": ("sparsemax", {})}),
    ):  # fmt: skip
        model, _ = train(replace(base.model, normalizer=name), base.train, base.seeds)
        direct |= {k: evaluate(model, base.eval, {k: v}) for k, v in norms.items()}
    modes = {"softmax": "train", "sparsemax": "train", "top2": "inference-swap",
             "topk": "inference-swap"}  # fmt: skip
    for label, df in direct.items():  # per-set outcomes, set by set
        mine = acc.xs((label, modes[label]), level=("norm", "mode"))
        assert mine.tolist() == df.set_index(["seed", "size"])["hits"].tolist(), label
    # the four rows differ, so a swapped label would be caught above
    assert len({tuple(v["hits"]) for v in direct.values()}) == 4
    s = out["cross_summary"].set_index(["norm", "mode", "size"])
    soft = direct["softmax"].set_index(["size", "seed"])["accuracy"]
    for label, df in direct.items():
        for size, grp in df.groupby("size"):
            row = s.loc[(label, modes[label], size)]
            x = grp.set_index("seed")["accuracy"]
            assert row["mean"] == pytest.approx(x.mean())
            if label == "softmax":
                assert np.isnan(row["p_ttest"]) and np.isnan(row["diff"])
                continue
            b = soft.xs(size, level="size").reindex(x.index)
            expect = ttest_rel(x, b).pvalue
            assert row["p_ttest"] == pytest.approx(expect, nan_ok=True)
            assert row["diff"] == pytest.approx((x - b).mean())


def test_run_ablation(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = ResultStore(tmp_path)
    run_max_retrieval(tiny(), store)
    out = run_ablation(tiny(), store, steps=(12, 24))
    s = out["ablation_summary"]
    combos = set(zip(s["schedule"], s["regularizer"], s["variant"], s["steps"], strict=True))
    assert len(combos) == 9 and set(s["norm"]) == {"softmax", "adaptive"}
    assert ("cosine", "coupled", "listing", 24) in combos
    assert {c[3] for c in combos if c[:3] != ("cosine", "coupled", "listing")} == {12}
    assert np.allclose(s["se"], s["std"] / np.sqrt(s["n_seeds"]))
    assert (s["ci_low"] <= s["mean"]).all() and (s["mean"] <= s["ci_high"]).all()
    # the default combination is the main run's model, trained once; 24 steps is one more
    assert len(list((tmp_path / "checkpoints").glob("*.pt"))) == 9
    acc = out["ablation_accuracy"]
    default = (acc.schedule == "cosine") & (acc.regularizer == "coupled")
    main = acc[default & (acc.variant == "listing") & (acc.steps == 12)]
    first = run_max_retrieval(tiny(), store)["accuracy"]
    assert sorted(main["correct"]) == sorted(first["correct"])
    # the 24-step run is the model trained 24 steps (its schedule over 24 steps), nothing else
    log = out["ablation_training_log"]
    assert log.groupby("steps")["step"].max().to_dict() == {12: 12, 24: 24}
    longer = replace(tiny().train, steps=24)
    model, direct_log = train(tiny().model, longer, tiny().seeds)
    pd.testing.assert_frame_equal(
        log[log["steps"] == 24].drop(columns="steps").reset_index(drop=True), direct_log
    )
    direct = evaluate(model, tiny().eval, {"softmax": ("softmax", {})})
    mine = acc[default & (acc.variant == "listing") & (acc.steps == 24) & (acc.norm == "softmax")]
    assert mine["correct"].tolist() == direct["correct"].tolist()


@pytest.mark.parametrize("kw", [{"seeds": ()}, {"seeds": (1, 1)}])
def test_bad_run_config(kw) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        tiny(**kw)


def test_cross_needs_softmax() -> None:
    with pytest.raises(ValueError):
        CrossConfig(trained={"sparsemax": ("sparsemax", {})})


def test_accuracy_figure_gives_each_normaliser_one_colour() -> None:
    """Eleven normalisers (more than tab10's colours): a normaliser's trained and swapped
    lines share one colour, no two normalisers do; swaps are dashed; bars are the SE."""
    import pandas as pd
    from matplotlib.colors import to_hex

    from attnlimits.experiments.softmax_not_enough.figures import plot_accuracy

    names = [f"n{i}" for i in range(11)]
    rows = [
        {"norm": n, "mode": m, "size": s, "mean": 0.5, "std": 0.2, "se": 0.01}
        for n in names
        for m in (("train", "inference-swap") if n in ("n0", "n10") else ("train",))
        for s in (16, 64)
    ]
    ax = plot_accuracy(pd.DataFrame(rows)).axes[0]
    bars = {c.get_label(): c for c in ax.containers}  # one ErrorbarContainer per line
    lines = {label: c.lines[0] for label, c in bars.items()}
    colour = {label: to_hex(line.get_color()) for label, line in lines.items()}
    assert colour["n0"] == colour["n0 (inference-swap)"]
    assert colour["n10"] == colour["n10 (inference-swap)"]
    assert len({colour[n] for n in names}) == len(names)
    assert lines["n0"].get_linestyle() == "-"
    assert lines["n0 (inference-swap)"].get_linestyle() == "--"
    segments = [seg for c in bars.values() for col in c.lines[2] for seg in col.get_segments()]
    assert {round(float(seg[1][1] - seg[0][1]), 6) for seg in segments} == {0.02}  # ± SE
