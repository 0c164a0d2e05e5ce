"""Max-finding with a real LM (experiments.long_context): prompts, recording, the pipeline."""

from __future__ import annotations

import importlib
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from attnlimits import hf_bridge
from attnlimits.capture import capture_all, load_model
from attnlimits.claims import verdicts
from attnlimits.experiments import long_context as lc
from attnlimits.experiments import skeleton
from attnlimits.experiments.long_context import statements as lc_statements
from attnlimits.experiments.long_context import summarize
from attnlimits.experiments.long_context.claims import COLUMNS
from attnlimits.kernels import patch
from attnlimits.metrics import attention_entropy
from made_up_tables import HIGH, LOW, long_context_tables
from tiny_models import tiny_model_dir

compute_module = importlib.import_module("attnlimits.experiments.long_context.compute")

TEXT = " ".join([lc.QUESTION, lc.ANSWER_PREFIX] + [str(x) for x in range(LOW, HIGH + 1)] * 3)


class _ChatTok:
    chat_template = "x"

    def apply_chat_template(self, turns, add_generation_prompt, tokenize):
        assert add_generation_prompt and not tokenize
        return f"<user>{turns[0]['content']}</user><assistant>"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory):
    root = tiny_model_dir(tmp_path_factory.mktemp("lc"), "llama", TEXT)
    return load_model(str(root))


def _cfg(**fields) -> lc.LongContextConfig:
    base = {"ns": (2, 3), "prompts": 3, "low": LOW, "high": HIGH, "spread_length": 0}
    return lc.LongContextConfig(**{**base, **fields})


# ---- prompts -----------------------------------------------------------------------------------


def test_prompts_seeded_and_correct() -> None:
    a = lc.build_prompts(16, 6, seed=1)
    assert [p.numbers for p in a] == [p.numbers for p in lc.build_prompts(16, 6, seed=1)]
    assert [p.numbers for p in a] != [p.numbers for p in lc.build_prompts(16, 6, seed=2)]
    assert [p.numbers for p in lc.build_prompts(16, 3, seed=1)] == [p.numbers for p in a[:3]]
    for p in a:
        assert len(p.numbers) == len(set(p.numbers)) == p.n == 16
        assert p.target == max(p.numbers) and p.target in p.numbers
        assert all(100 <= x <= 999 for x in p.numbers)
        lines = p.text.split("\n")
        assert lines[0] == lc.QUESTION and lines[-1] == lc.ANSWER_PREFIX
        assert [int(x) for x in lines[1:-1]] == list(p.numbers)
    # the max sits anywhere, not always last
    assert len({p.numbers.index(p.target) for p in a}) > 1


def test_prompt_chat_template_and_plain() -> None:
    text = lc.format_prompt([12, 34], _ChatTok())
    assert text == f"<user>{lc.QUESTION}\n12\n34</user><assistant>{lc.ANSWER_PREFIX}"
    assert lc.format_prompt([12, 34], _ChatTok(), chat=False).startswith(lc.QUESTION)
    assert lc.format_prompt([5], None).endswith("\n5\n" + lc.ANSWER_PREFIX)


def test_parse_answer_and_sampling() -> None:
    assert lc.parse_answer("523.") == 523
    assert lc.parse_answer(" 87 and") == 87
    assert lc.parse_answer("The answer") is None
    with pytest.raises(ValueError):
        lc.sample_numbers(5, np.random.default_rng(0), 1, 3)
    with pytest.raises(ValueError):
        lc.LongContextConfig(ns=(1000,))
    with pytest.raises(ValueError):
        lc.LongContextConfig(modes=("sparsemax",))


def test_quick_preset_and_explicit_values_win() -> None:
    quick = lc.Config.quick()
    assert quick.ns == (4, 8, 16, 32) and quick.prompts == 5 and quick.spread_length == 256
    given = lc.Config.quick(prompts=2, ns=(4,), spread_length=0, seed=3)
    assert (given.prompts, given.ns, given.spread_length, given.seed) == (2, (4,), 0, 3)
    with pytest.raises(TypeError):
        lc.Config.quick(promts=2)


@pytest.mark.parametrize(
    "fields",
    [
        {"prompts": 2.5}, {"prompts": 0}, {"seed": -1}, {"max_new_tokens": True},
        {"batch_size": "4"}, {"spread_length": math.nan}, {"spread_length": -1},
        {"spread_windows": 0}, {"block_size": 0}, {"low": 1.5}, {"low": 500, "high": 500},
        {"ns": (2.7,)}, {"ns": ()}, {"ns": 5}, {"ns": (0, 4)}, {"model": ""}, {"device": 3},
        {"text": 5}, {"chat": "yes"}, {"modes": ()}, {"softmax_backend": "eager"},
        {"adaptive_params": None}, {"adaptive_params": {"bogus": 1}},
        {"adaptive_params": {"threshold": math.inf}},
    ],
)  # fmt: skip
def test_config_refuses_every_bad_field(fields) -> None:
    with pytest.raises(ValueError, match=next(iter(fields)).split("_")[0]):
        lc.Config(**fields)


def test_config_accepts_numpy_ints_and_text_strings(tmp_path) -> None:
    cfg = lc.Config(ns=[np.int64(4), 8], text=str(tmp_path), adaptive_params={"threshold": 0.5})
    assert cfg.ns == (4, 8) and all(type(n) is int for n in cfg.ns)
    assert cfg.text == tmp_path


# ---- recording and modes -----------------------------------------------------------------------


def test_softmax_modes_equal_eager_and_adaptive_equals_patch(tiny) -> None:
    model, tok = tiny.model, tiny.tokenizer
    text = lc.build_prompts(6, 1, low=LOW, high=HIGH, tokenizer=tok)[0].text
    ids = torch.tensor([tok(text, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        eager = model(ids).logits
        for backend in ("kernel", "sdpa"):
            with lc.recording(model, "softmax", _cfg(softmax_backend=backend)):
                torch.testing.assert_close(model(ids).logits, eager, atol=1e-5, rtol=1e-5)
        with patch(model, "adaptive"):
            ref = model(ids).logits
        with lc.recording(model, "adaptive", _cfg()):
            torch.testing.assert_close(model(ids).logits, ref, atol=1e-5, rtol=1e-5)
    assert hf_bridge.get_attn_implementation(model) == "eager"


def test_recorded_entropy_matches_captured_weights(tiny) -> None:
    model, tok = tiny.model, tiny.tokenizer
    text = lc.build_prompts(5, 1, low=LOW, high=HIGH, tokenizer=tok)[0].text
    ids = torch.tensor([tok(text, add_special_tokens=False)["input_ids"]])
    with lc.recording(model, "softmax", _cfg()) as rec:
        new, rows = lc.generate_answers(model, ids, rec, 3)
    assert new.shape == (1, 3) and sorted(rows) == [0, 1]
    caps = capture_all(tiny, ids)
    for layer, cap in caps.items():
        want = attention_entropy(cap.weights[:, :, -1])  # (1, H)
        torch.testing.assert_close(rows[layer]["entropy"], want, atol=1e-5, rtol=1e-5)
        assert (rows[layer]["n_keys"] == ids.shape[1]).all()
        torch.testing.assert_close(rows[layer]["entropy_base"], rows[layer]["entropy"])
        assert (rows[layer]["beta"] == 1).all()


# ---- the pipeline ------------------------------------------------------------------------------


def _check_tables(
    out: Path, cfg: lc.LongContextConfig, n_layers: int, n_heads: int, figures: bool = True
) -> None:
    acc = pd.read_parquet(out / "tables" / "accuracy.parquet")
    head = pd.read_parquet(out / "tables" / "head_entropy.parquet")
    mean = pd.read_parquet(out / "tables" / "mean_entropy.parquet")
    heads = pd.read_parquet(out / "tables" / "answer_heads.parquet")
    cells = len(cfg.modes) * len(cfg.ns)
    assert len(acc) == len(mean) == cells and (acc["prompts"] == cfg.prompts).all()
    assert len(head) == cells * n_layers * n_heads
    assert len(heads) == cells * cfg.prompts * n_layers * n_heads
    assert ((acc["se"] >= 0) & (acc["accuracy"].between(0, 1))).all()
    assert (heads["entropy"] <= np.log(heads["n_keys"]) + 1e-4).all()
    assert (heads["entropy_base"] <= np.log(heads["n_keys"]) + 1e-4).all()
    assert (heads["entropy"] >= 0).all() and np.isfinite(heads["spread"]).all()
    ada = heads[heads["mode"] == "adaptive"]
    assert (ada["entropy"] <= ada["entropy_base"] + 1e-5).all()  # β ≥ 1 only sharpens
    for name in ("accuracy", "mean_entropy", "head_entropy") if figures else ():
        assert (out / "figures" / f"{name}.png").is_file()
    assert "| softmax |" in (out / "report.md").read_text()


def test_pipeline_tiny_llama_end_to_end_and_resume(tiny, tmp_path, monkeypatch) -> None:
    cfg = _cfg()
    monkeypatch.setattr(compute_module, "load_model", lambda *a, **k: tiny)
    report = skeleton.run(lc.EXPERIMENT, cfg, tmp_path, progress=False)
    assert report == tmp_path / "report.md"
    _check_tables(tmp_path, cfg, n_layers=2, n_heads=4)

    def boom(*args, **kwargs):
        raise AssertionError("a saved cell was recomputed")

    monkeypatch.setattr(compute_module, "_run_cell", boom)
    skeleton.run(lc.EXPERIMENT, cfg, tmp_path, progress=False)
    claims = pd.read_parquet(tmp_path / "tables" / "claims.parquet")
    assert list(claims.columns) == COLUMNS
    shutil.rmtree(tmp_path / "figures")
    (tmp_path / "report.md").unlink()
    (tmp_path / "tables" / "claims.parquet").unlink()
    assert skeleton.redraw(tmp_path) == report  # the report redraws from the tables alone
    _check_tables(tmp_path, cfg, n_layers=2, n_heads=4)
    assert pd.read_parquet(tmp_path / "tables" / "claims.parquet").equals(claims)


def test_summarize_counts_positions() -> None:
    answers = pd.DataFrame(
        {"mode": ["softmax"] * 3, "n": 3, "prompt": [0, 1, 2], "n_tokens": 9,
         "target": [30, 30, 30], "predicted": [30.0, 10.0, math.nan],
         "correct": [True, False, False], "numbers": ["10 30 20", "30 20 10", "10 20 30"]}
    )  # fmt: skip
    heads = pd.DataFrame(
        {"mode": "softmax", "n": 3, "prompt": [0, 1], "layer": 0, "head": 0,
         "entropy": [1.0, 2.0], "entropy_base": [1.0, 2.0], "beta": 1.0, "spread": 3.0,
         "n_keys": 9, "log_keys": math.log(9)}
    )  # fmt: skip
    t = summarize(answers, heads)
    row = t["accuracy"].iloc[0]
    assert row["accuracy"] == pytest.approx(1 / 3) and row["parsed"] == pytest.approx(2 / 3)
    assert row["picked_last"] == pytest.approx(1 / 3) and row["in_list"] == pytest.approx(2 / 3)
    assert row["se"] == pytest.approx(math.sqrt(2 / 27))
    assert t["head_entropy"]["entropy"].item() == 1.5
    assert t["mean_entropy"]["frac_sharpened"].item() == 0.0


@pytest.mark.parametrize(
    ("modes", "ns", "judged"),
    [(("softmax", "adaptive"), (2, 3), 2), (("adaptive",), (2, 3), 0), (("softmax",), (3,), 0)],
)
def test_claims_sections_figures_from_tables(modes, ns, judged) -> None:
    """A run without the softmax mode, or with one n, gets n/a rows instead of an error."""
    tables = long_context_tables(modes, ns)
    meta = {"params": {"model": "m", "prompts": 2, "low": LOW, "high": HIGH}}
    table = lc.claims(tables, meta)
    assert list(table.columns) == COLUMNS
    first_two = table["verdict"].iloc[:2]
    assert int((first_two != "n/a").sum()) == judged
    assert first_two.iloc[1] in ("n/a", "not reproduced")  # equal accuracy at every n
    helps = lc_statements.ADAPTIVE_HELPS.claim
    assert (helps in set(table["claim"])) == (len(modes) == 2)
    assert any(line.startswith("| adaptive |") for line in lc.sections(tables, meta)) == (
        "adaptive" in modes
    )
    assert set(lc.figures(tables, meta)) == {"accuracy", "mean_entropy", "head_entropy"}


@pytest.mark.real_model
def test_smollm2_small_run(tmp_path: Path, book_path: Path) -> None:
    cfg = lc.LongContextConfig(ns=(4, 8), prompts=2, spread_length=64, text=book_path)
    skeleton.run(lc.EXPERIMENT, cfg, tmp_path, progress=False)
    _check_tables(tmp_path, cfg, n_layers=30, n_heads=9)
    spread = pd.read_parquet(tmp_path / "tables" / "spread.parquet")
    assert len(spread) == 30 * 9 and (spread["spread_max"] >= spread["spread_mean"]).all()


def test_cli_demo_rejects_bad_input(tmp_path):
    from typer.testing import CliRunner

    from attnlimits.cli import app

    res = CliRunner().invoke(
        app, ["demo", "long-context", "--prompts", "0", "--quick", "--out", str(tmp_path)]
    )
    assert res.exit_code == 2 and "Traceback" not in res.output


def _judged(tables: dict[str, pd.DataFrame], claim: str) -> str:
    meta = {"params": {"model": "m", "prompts": 2, "low": LOW, "high": HIGH}}
    table = lc.claims(tables, meta).set_index("claim")
    return str(table.loc[claim, "verdict"])


def test_claims_verdicts_known_answers() -> None:
    """Each rule's verdicts in the shared vocabulary, from made-up tables: entropy that rises or
    not, accuracy that falls by more or less than the standard errors' multiple, more or fewer
    prompts right only with adaptive."""
    S = lc_statements
    tables = long_context_tables(("softmax", "adaptive"), (2, 3))
    mean, acc = tables["mean_entropy"], tables["accuracy"]
    soft_hi = (mean["mode"] == "softmax") & (mean["n"] == 3)
    rises = tables | {"mean_entropy": mean.assign(entropy=mean["entropy"] + soft_hi * 0.5)}
    assert _judged(rises, S.DISPERSES.claim) == verdicts.REPRODUCED
    assert _judged(tables, S.DISPERSES.claim) == verdicts.NOT  # equal: it does not rise
    first = (acc["mode"] == "softmax") & (acc["n"] == 2)
    # the drop's 95 % normal interval, SE = √2·se, the other cell at 0.5: above 0 past 1.96 of
    # them (0.137 / 0.0707 = 1.94 is not; 0.140 / 0.0707 = 1.98 is, where 2 SE was not)
    cases = (
        (1.0, 0.01, verdicts.REPRODUCED),
        (0.52, 0.05, verdicts.NOT),
        (0.637, 0.05, verdicts.NOT),
        (0.640, 0.05, verdicts.REPRODUCED),
    )
    for accuracy, se, expected in cases:
        a = acc.assign(accuracy=acc["accuracy"].where(~first, accuracy), se=se)
        got = _judged(tables | {"accuracy": a}, S.ACCURACY_FALLS.claim)
        assert got == expected, (accuracy, se)
    answers = tables["answers"]
    flip = (answers["mode"] == "adaptive") & (answers["prompt"] == 1)
    better = tables | {"answers": answers.assign(correct=answers["correct"] | flip)}
    assert _judged(better, S.ADAPTIVE_HELPS.claim) == verdicts.REPRODUCED
    assert _judged(tables, S.ADAPTIVE_HELPS.claim) == verdicts.NOT  # none either way


def test_statements_quote_paper_b_word_for_word(paper_texts: list[str]) -> None:
    quotes = [s.quote for s in lc_statements.ALL]
    assert verdicts.missing_quotes(quotes, paper_texts) == []
    assert verdicts.missing_quotes(["coefficients fall to O(1/n)"], paper_texts)  # it can fail
