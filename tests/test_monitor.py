"""attnlimits.monitor.AttentionMonitor: the recorded statistics against a dense reference built
from eager attention weights, the Trainer and hand-written-loop paths, the warnings, the cost of
unrecorded steps, and bad input."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch
import transformers
from torch import nn
from transformers import GPT2Config, PreTrainedModel, TrainerCallback

from attnlimits.monitor import COLUMNS, STATS, TABLE_NAME, AttentionHeadWarning, AttentionMonitor
from monitor_models import SEQ, VOCAB, Tokens, WordTokenizer, batch, tiny


def dense_reference(weights: torch.Tensor, keep: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-head row means of the four statistics from a materialised map ``[B, H, Lq, Lk]``."""
    w = weights.double()
    p = torch.where(keep, w, torch.zeros_like(w))
    logp = torch.log(torch.where(keep, w, torch.ones_like(w)))
    entropy = -(p * logp).sum(-1)
    spread = logp.masked_fill(~keep, -math.inf).amax(-1) - logp.masked_fill(~keep, math.inf).amin(
        -1
    )
    rows = {"entropy": entropy, "max_weight": p.amax(-1), "sink_mass": p[..., 0]}
    rows["logit_spread"] = spread
    return {k: v.mean((0, 2)) for k, v in rows.items()}


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_recorded_stats_equal_a_dense_reference(family: str, impl: str) -> None:
    model = tiny(family, impl).eval()  # no dropout on the reference weights
    ids, mask = batch()
    with torch.no_grad():
        plain = model(ids, attention_mask=mask).logits
    with AttentionMonitor(every=1).watch(model) as mon, torch.no_grad():
        assert model.config._attn_implementation == f"attnlimits_monitor_{impl}"
        watched = model(ids, attention_mask=mask).logits
        summaries = mon.step()
    assert model.config._attn_implementation == impl
    assert torch.equal(watched, plain)  # the original attention ran, unchanged
    table = mon.table()
    model.set_attn_implementation("eager")
    with torch.no_grad():
        attns = model(ids, attention_mask=mask, output_attentions=True).attentions
    causal = torch.ones(SEQ, SEQ, dtype=torch.bool).tril()
    keep = causal[None, None] & mask.bool()[:, None, None, :]  # [B, 1, Lq, Lk]
    n_heads = attns[0].shape[1]
    assert len(table) == len(attns) * n_heads
    for layer, weights in enumerate(attns):
        ref = dense_reference(weights, keep)
        got = table[table.layer == layer].sort_values("head")
        for stat in STATS:
            torch.testing.assert_close(
                torch.tensor(got[stat].to_numpy()), ref[stat], atol=1e-5, rtol=1e-5
            )
        assert (got["n_rows"] == 2 * SEQ).all() and (got["length"] == SEQ).all()
        assert summaries is not None
        assert summaries[f"attn/entropy/layer_{layer}"] == pytest.approx(
            float(ref["entropy"].mean()), abs=1e-5
        )
    assert ref["entropy"].std() > 0.01  # the heads differ: the comparison discriminates


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_token_rows_are_the_eager_maps_rows_of_the_first_sequence(impl: str) -> None:
    """With a tokenizer, a recorded step keeps, per layer and head, 4 rows of the first
    sequence's band [L/2, L): every weight equal to the eager map's, the tokens its text."""
    import numpy as np

    from attnlimits.capture.token_rows import TOKEN_ROWS

    model = tiny("llama", impl).eval()
    ids, mask = batch()
    with AttentionMonitor(every=2, tokenizer=WordTokenizer()).watch(model) as mon, torch.no_grad():
        for _ in range(3):  # steps 1, 2, 3: step 2 recorded
            model(ids, attention_mask=mask)
            mon.step()
    rows, tokens = mon.token_rows()
    assert set(rows["step"]) == {2} and set(tokens["step"]) == {2}
    assert tokens["text"].tolist() == [f" t{i}" for i in ids[0].tolist()]
    model.set_attn_implementation("eager")
    with torch.no_grad():
        attns = model(ids, attention_mask=mask, output_attentions=True).attentions
    assert rows.groupby(["layer", "head"])["row"].nunique().eq(TOKEN_ROWS).all()
    assert sorted(rows["layer"].unique()) == list(range(len(attns)))
    for (layer, head, row), at in rows.groupby(["layer", "head", "row"]):
        assert SEQ // 2 <= row < SEQ and at["key"].tolist() == list(range(row + 1))
        want = attns[layer][0, head, row, : row + 1].numpy()
        np.testing.assert_allclose(at["weight"], want, atol=1e-5)
    assert not any(h for h in model._forward_pre_hooks.values())  # the hook went with close()


def test_token_rows_keep_a_few_steps_and_need_a_tokenizer() -> None:
    model = tiny("gpt2", "sdpa").eval()
    ids, mask = batch()
    with AttentionMonitor(every=1, tokenizer=WordTokenizer()).watch(model) as mon, torch.no_grad():
        for _ in range(10):
            model(ids, attention_mask=mask)
            mon.step()
    steps = sorted(mon.token_rows()[0]["step"].unique())
    assert len(steps) <= 8 and steps[0] == 1 and steps[-1] == 10, steps
    with AttentionMonitor(every=1).watch(model) as mon, torch.no_grad():
        model(ids, attention_mask=mask)
        mon.step()
    assert all(t.empty for t in mon.token_rows())
    assert "no tokenizer" in mon._tokens.why


class Recorder(TrainerCallback):
    """Keeps every ``logs`` dict it is shown, with the step."""

    def __init__(self) -> None:
        self.logs: list[tuple[int, dict[str, float]]] = []

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
        self.logs.append((state.global_step, dict(logs or {})))


class Reporter(Recorder):
    """Placed where ``report_to`` places TensorBoard, W&B, ... (before user callbacks)."""


def _training_args(tmp_path: Path, **given: int) -> transformers.TrainingArguments:
    """The tests' Trainer settings: CPU, batches of 2, no reports, saves or progress bars."""
    return transformers.TrainingArguments(
        output_dir=str(tmp_path), per_device_train_batch_size=2, report_to=[], use_cpu=True,
        save_strategy="no", disable_tqdm=True, **given,
    )  # fmt: skip


def test_trainer_writes_the_table_and_reporters_see_the_summaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reporting = "get_reporting_integration_callbacks"  # report_to's callbacks: put Reporter there
    monkeypatch.setattr(transformers.trainer, reporting, lambda _: [Reporter])
    model = tiny("gpt2", "sdpa")
    args = _training_args(tmp_path, max_steps=6, logging_steps=3)
    recorder = Recorder()
    trainer = transformers.Trainer(model, args, train_dataset=Tokens(), callbacks=[recorder])
    (reporter,) = [cb for cb in trainer.callback_handler.callbacks if isinstance(cb, Reporter)]
    mon = AttentionMonitor(every=2).attach(trainer)
    assert trainer.callback_handler.callbacks[0] is mon
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AttentionHeadWarning)
        trainer.train()
    assert model.config._attn_implementation == "sdpa"
    table = pd.read_parquet(tmp_path / TABLE_NAME)
    assert set(COLUMNS) <= set(table.columns)
    assert sorted(table.step.unique()) == [2, 4, 6]
    assert len(table) == 3 * 2 * 2  # steps x layers x heads
    assert table[list(STATS)].notna().all().all()
    for cb in (reporter, recorder):
        steps = {step for step, logs in cb.logs if "attn/entropy/layer_1" in logs}
        assert steps == {2, 4, 6}, cb.logs
        assert any("loss" in logs for step, logs in cb.logs if step == 3)
    last = [logs for step, logs in reporter.logs if step == 6 and "attn/sink_mass/layer_0" in logs]
    got = table[(table.step == 6) & (table.layer == 0)].sink_mass.mean()
    assert last[0]["attn/sink_mass/layer_0"] == pytest.approx(got)
    assert any("attn/entropy/layer_0" in h for h in trainer.state.log_history)


def test_trainer_hands_the_monitor_its_tokenizer(tmp_path: Path) -> None:
    """The Trainer's processing_class is the monitor's tokenizer: the page shows token rows."""
    model = tiny("gpt2", "sdpa")
    args = _training_args(tmp_path, max_steps=2)
    trainer = transformers.Trainer(
        model, args, train_dataset=Tokens(), processing_class=WordTokenizer()
    )
    mon = AttentionMonitor(every=2).attach(trainer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AttentionHeadWarning)
        trainer.train()
    rows, tokens = mon.token_rows()
    assert set(rows["step"]) == {2} and tokens["text"].str.startswith(" t").all()
    assert "MONITOR_TOKENS" in (tmp_path / "attention_monitor.html").read_text(encoding="utf-8")


def test_trainer_without_attach_warns_and_still_records(tmp_path: Path) -> None:
    model = tiny("gpt2", "eager")
    args = _training_args(tmp_path, max_steps=2)
    trainer = transformers.Trainer(
        model, args, train_dataset=Tokens(), callbacks=[AttentionMonitor(every=1)]
    )
    with pytest.warns(UserWarning, match=r"without attach\(trainer\)"):
        trainer.train()
    assert pd.read_parquet(tmp_path / TABLE_NAME).step.unique().tolist() == [1, 2]
    assert model.config._attn_implementation == "eager"


def test_hand_written_loop_records_every_n_steps_and_restores(tmp_path: Path) -> None:
    model = tiny("llama", "sdpa")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    returned = []
    with AttentionMonitor(every=2, out_dir=tmp_path / "mon").watch(model) as mon:
        for step in range(1, 6):
            assert mon.recording == (step % 2 == 0)
            ids = batch(seed=step, pad=0)[0]
            model(ids, labels=ids).loss.backward()
            opt.step()
            opt.zero_grad()
            returned.append(mon.step())
            if step == 2:  # flushed at every record, not only on exit
                assert pd.read_parquet(tmp_path / "mon" / TABLE_NAME).step.tolist() == [2] * 8
    assert [r is not None for r in returned] == [False, True, False, True, False]
    assert model.config._attn_implementation == "sdpa"
    assert not mon.recording
    table = pd.read_parquet(tmp_path / "mon" / TABLE_NAME)
    assert sorted(table.step.unique()) == [2, 4] and len(table) == 2 * 2 * 4
    assert not list((tmp_path / "mon").glob(".*tmp"))  # no temporary left behind
    # the model trains as before once closed: the eager path and a second watch work
    model(batch()[0])
    with AttentionMonitor(every=1).watch(model) as again:
        model(batch()[0])
        assert again.step() is not None


def test_collapse_and_dispersion_warn_once_per_head() -> None:
    model = tiny("gpt2", "eager").eval()
    calm = tiny("gpt2", "eager").eval()
    with torch.no_grad():
        model.transformer.h[0].attn.c_attn.weight[:, :32] *= 1e3  # huge queries: one-hot rows
        model.transformer.h[1].attn.c_attn.weight[:, :32] = 0  # zero queries: uniform rows
        model.transformer.h[1].attn.c_attn.bias[:32] = 0
    ids = batch(pad=0)[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with AttentionMonitor(every=1).watch(model) as mon, torch.no_grad():
            for _ in range(3):
                model(ids)
                mon.step()
        with AttentionMonitor(every=1).watch(calm) as quiet, torch.no_grad():
            calm(ids)
            quiet.step()
    msgs = sorted(str(w.message) for w in caught if w.category is AttentionHeadWarning)
    assert len(msgs) == 4, msgs
    for head in (0, 1):
        assert f"attention head collapsed at step 1: layer 0, head {head} has" in msgs[head]
        assert f"attention head dispersed at step 1: layer 1, head {head} has" in msgs[2 + head]
    table = mon.table()
    assert (table[table.layer == 0].entropy_max < 0.05).all()
    assert (table[table.layer == 1].entropy_ratio_min > 0.999).all()


def test_unrecorded_steps_do_not_compute_statistics(monkeypatch: pytest.MonkeyPatch) -> None:
    from attnlimits.kernels import row_stats

    calls = []
    real = row_stats.attention_row_stats

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(row_stats, "attention_row_stats", counting)
    model = tiny("gpt2", "sdpa")
    counts = []
    with AttentionMonitor(every=3).watch(model) as mon, torch.no_grad():
        for _ in range(6):
            model(batch()[0])
            model(batch(seed=1)[0])  # two forward passes in a step (gradient accumulation)
            mon.step()
            counts.append(len(calls))
    assert counts == [0, 0, 4, 4, 4, 8]  # 2 layers x 2 forward passes, on steps 3 and 6 only
    assert mon.table().n_rows.unique().tolist() == [2 * 2 * SEQ]


class HandAttention(nn.Module):
    """Attention computed by hand, not through transformers' attention interface."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x @ x.transpose(-1, -2), -1) @ x


class HandModel(PreTrainedModel):
    config_class = GPT2Config

    def __init__(self, config: GPT2Config) -> None:
        super().__init__(config)
        self.attn = HandAttention()
        self.post_init()


def test_bad_input_raises_one_clear_error(tmp_path: Path) -> None:
    for every in (0, -3, 1.5, True):
        with pytest.raises(ValueError, match="every"):
            AttentionMonitor(every=every)  # type: ignore[arg-type]
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match=r"out_dir .* is not a writable folder"):
        AttentionMonitor(out_dir=tmp_path / "file" / "sub")
    with pytest.raises(ValueError, match="disperse_ratio"):
        AttentionMonitor(disperse_ratio=1.5)
    with pytest.raises(TypeError, match="PreTrainedModel, got Linear"):
        AttentionMonitor().watch(nn.Linear(2, 2))
    hand = HandModel(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=VOCAB))
    with pytest.raises(TypeError, match="does not go through transformers' attention interface"):
        AttentionMonitor().watch(hand)
    with pytest.raises(ValueError, match="needs a watched model"):
        AttentionMonitor().step()
    with pytest.raises(TypeError, match=r"transformers\.Trainer"):
        AttentionMonitor().attach(object())
    model = tiny("gpt2", "sdpa")
    with AttentionMonitor().watch(model) as mon:
        with pytest.raises(ValueError, match="already watched"):
            AttentionMonitor().watch(model)
        with pytest.raises(ValueError, match="already watches"):
            mon.watch(tiny("gpt2", "sdpa"))
    assert model.config._attn_implementation == "sdpa"


def test_importing_the_module_is_cheap_and_the_monitor_a_trainer_callback() -> None:
    code = "import sys, attnlimits.monitor; assert 'transformers' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert issubclass(AttentionMonitor, TrainerCallback)
