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
