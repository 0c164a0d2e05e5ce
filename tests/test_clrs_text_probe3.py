"""CLRS-Text probe 3 (issue 57): the stop rule's floor, teacher-forced exact match, and the
probe's decision rule (benchmarks/clrs_text_probe3.py), each with known answers."""

from __future__ import annotations

import importlib
import importlib.util
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from attnlimits.experiments.clrs_text.model import (
    ModelSize,
    build_model,
    greedy_answers,
    teacher_forced_correct,
    train_model,
)

_PROBE = Path(__file__).resolve().parents[1] / "benchmarks" / "clrs_text_probe3.py"


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("clrs_text_probe3", _PROBE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _train(scores: list[float], patience: int, floor: float = -math.inf, steps: int = 16):
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
        stop_at=0.99,
        patience=patience,
        floor=floor,
    )


def test_the_convergence_stop_waits_while_the_score_is_at_or_below_the_floor():
    """Scores on the trivial answer's plateau (0.2, the floor) never stop a model, however
    long without a gain; once above the floor, K checks without a gain stop it. Without a
    floor the same scores stop it at the 4th check."""
    plateau = [0.2, 0.1, 0.2, 0.15, 0.2, 0.2, 0.2, 0.2]
    r = _train(plateau, patience=3)
    assert (r.steps, r.stopped) == (8, "converged")
    r = _train(plateau, patience=3, floor=0.2)
    assert (r.steps, r.stopped) == (16, "cap")
    r = _train([0.2, 0.1, 0.5, 0.3, 0.4, 0.3, 0.2, 0.2], patience=3, floor=0.2)
    assert (r.steps, r.stopped) == (12, "converged")  # best at check 3, 3 more above 0.2
    r = _train([0.2, 0.1, 0.5, 0.3, 0.4, 0.2, 0.3, 0.3], patience=3, floor=0.2)
    assert (r.steps, r.stopped) == (14, "converged")  # check 6 sits on the floor: waits


def test_teacher_forced_exact_match_is_greedy_decodings():
    """On a random model: the model's own greedy continuation, taken as the answer, is right
    under teacher forcing for every question; changing one token of it makes it wrong; and
    per question the teacher-forced verdict equals greedy decoding's exact match."""
    torch.manual_seed(0)
    model, tok = build_model(ModelSize(2, 32, 4, 64, 128), "attnlimits_adaptive", seed=3)
    questions = ["abc:", "xyzw:", "hello:", "0, 1 |", "q:"]
    own = greedy_answers(model, tok, questions, 6)
    q, a = tok.encode(questions), tok.encode(own)
    assert teacher_forced_correct(model, q, a) == [True] * len(q)
    flipped = [[*x[:2], 33 if x[2] != 33 else 34, *x[3:]] for x in a]  # one token changed
    assert teacher_forced_correct(model, q, flipped) == [False] * len(q)
    mixed = [a[0], flipped[1], a[2], flipped[3], a[4]]
    greedy_right = [g == t for g, t in zip(own, tok_decode(tok, mixed), strict=True)]
    assert teacher_forced_correct(model, q, mixed) == greedy_right


def tok_decode(tok, ids: list[list[int]]) -> list[str]:
    return [tok.decode(x) for x in ids]


def test_trivial_score_is_the_most_common_answer_per_cell(probe):
    val = pd.DataFrame(
        {
            "algorithm": ["m"] * 6 + ["s"] * 2,
            "length": [4, 4, 4, 5, 5, 5, 4, 4],
            "answer": ["a", "a", "b", "c", "d", "e", "x", "y"],
        }
    )
    # m: (2 + 1) / 6 pooled over its lengths; s: 1 / 2; the score is the mean over algorithms
    assert probe.trivial_score(val) == pytest.approx((3 / 6 + 1 / 2) / 2)


def _units(**passes_cpu):
    rows = []
    for cand, (soft, adap) in passes_cpu.items():
        for arm, (ok, cpu) in (("softmax", soft), ("adaptive", adap)):
            rows.append(
                {"candidate": cand, "arm": arm, "seed": 0, "passes": ok, "unit_cpu_seconds": cpu}
            )
    return pd.DataFrame(rows)


def test_the_winner_is_the_cheaper_eligible_candidate(probe):
    # both pass, b64 cheaper: b64 (5 * 1,000 s / 2 / 60 = 41.7 min)
    assert (
        probe.winner(_units(b32=((True, 600), (True, 800)), b64=((True, 400), (True, 600))))
        == "b64"
    )
    # a tie goes to b32
    assert probe.winner(_units(b32=((True, 500), (True, 500)), b64=((True, 500), (True, 500)))) == (
        "b32"
    )
    # one arm failing makes a candidate ineligible
    assert (
        probe.winner(_units(b32=((True, 600), (False, 800)), b64=((True, 900), (True, 900))))
        == "b64"
    )
    # over 90 minutes projected: ineligible (5 * 2,200 / 2 / 60 = 91.7)
    assert (
        probe.winner(_units(b32=((True, 1100), (True, 1100)), b64=((False, 1), (True, 1)))) is None
    )
    assert probe.winner(_units(b32=((True, 1000), (True, 1160)))) == "b32"  # 90.0: fits


def test_the_per_seed_gate_and_the_arm_gate(probe):
    log = pd.DataFrame({"stopped": ["converged"], "validation_decoded": [0.9]})
    assert probe.seed_passes(log)
    assert probe.seed_passes(log.assign(stopped="target"))
    assert not probe.seed_passes(log.assign(stopped="cap"))
    assert not probe.seed_passes(log.assign(stopped="deadline"))
    assert not probe.seed_passes(log.assign(validation_decoded=0.899))
    units = pd.DataFrame({"seed": [0, 1, 2], "passes": [True, True, True]})
    assert probe.arm_passes(units, 0.9)
    assert not probe.arm_passes(units, 0.899)
    assert not probe.arm_passes(units.iloc[:2], 0.95)
    assert not probe.arm_passes(units.assign(passes=[True, False, True]), 0.95)


def test_the_products_trivial_score_is_the_probes(probe):
    from attnlimits.experiments.clrs_text.compute import trivial_validation_score

    val = pd.DataFrame(
        {
            "algorithm": ["m"] * 6 + ["s"] * 2,
            "length": [4, 4, 4, 5, 5, 5, 4, 4],
            "answer": ["a", "a", "b", "c", "d", "e", "x", "y"],
        }
    )
    assert trivial_validation_score(val) == pytest.approx(probe.trivial_score(val))
    assert trivial_validation_score(val) == pytest.approx((3 / 6 + 1 / 2) / 2)


@pytest.mark.parametrize("patience", [0, 2])
def test_a_run_with_the_convergence_stop_gives_training_the_trivial_floor(monkeypatch, patience):
    """compute hands train_model the trivial answer's validation score as the floor when the
    convergence stop is on, and no floor when it is off."""
    from attnlimits.experiments.clrs_text.config import Config

    compute = importlib.import_module("attnlimits.experiments.clrs_text.compute")

    fixture = str(Path(__file__).parent / "data" / "clrs_text_fixture.parquet")
    cfg = Config(dataset=fixture, seeds=2, steps=3, width=16, heads=2, layers=1, patience=patience)
    data, _ = compute.load_dataset(cfg)
    seen = {}

    def fake(*args, **kw):
        seen.update(kw)
        raise RuntimeError("stop here")

    monkeypatch.setattr(compute, "train_model", fake)
    with pytest.raises(RuntimeError, match="stop here"):
        compute.run_arm_seed(cfg, data, "softmax", 1e-3, 0)
    val = data[data["split"] == "validation"]
    want = compute.trivial_validation_score(val) if patience else -math.inf
    assert seen["floor"] == want and 0 < compute.trivial_validation_score(val) < 1
