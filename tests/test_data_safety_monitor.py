"""``AttentionMonitor`` never replaces a table (issue 43, item 3): a second loop appends to the
monitor's own table; another file of its name is refused in one line; a Trainer from step 0
refuses an earlier training's table."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest
import torch

# ---- issue 43, item 3: AttentionMonitor never replaces a table -------------------------------


def _loop(out_dir: Path, steps: int) -> list[int]:
    """A hand-written loop of ``steps`` steps recording every step; the table's steps after."""
    from attnlimits.monitor import TABLE_NAME, AttentionMonitor
    from monitor_models import batch, tiny

    model = tiny("llama", "sdpa")
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        with AttentionMonitor(every=1, out_dir=out_dir).watch(model) as mon:
            for _ in range(steps):
                model(batch()[0])
                mon.step()
    return sorted(pd.read_parquet(out_dir / TABLE_NAME)["step"].unique().tolist())


def test_a_second_loop_appends_to_the_monitors_table(tmp_path):
    """Steps [1, 2, 3] of a first loop became [1] after a second loop of one step into the
    same out_dir; now the second loop's step is appended, numbered on: [1, 2, 3, 4]."""
    assert _loop(tmp_path / "mon", 3) == [1, 2, 3]
    assert _loop(tmp_path / "mon", 1) == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        ("attention_monitor.parquet", "table", r"is not the monitor's table \(columns a, b\)"),
        ("attention_monitor.parquet", b"not parquet at all", r"is not a Parquet table"),
        (
            "attention_monitor.html",
            b"<p>my page</p>",
            r"is not the monitor's page \(no attention_monitor.parquet beside it\)",
        ),
    ],
    ids=["a user's table", "not Parquet", "a user's page"],
)
def test_the_monitor_refuses_a_file_of_its_name_that_is_not_its_own(tmp_path, name, content, why):
    from attnlimits.monitor import AttentionMonitor

    mine = tmp_path / "mon" / name
    mine.parent.mkdir()
    if content == "table":
        pd.DataFrame({"a": [1], "b": [2]}).to_parquet(mine)
    else:
        mine.write_bytes(content)
    before = mine.read_bytes()
    with pytest.raises(
        ValueError,
        match=rf"^{mine} {why}; the monitor appends only to its own "
        "table: move it away, or pass another out_dir$",
    ):
        AttentionMonitor(out_dir=tmp_path / "mon")
    assert mine.read_bytes() == before


def test_a_trainer_from_step_0_refuses_an_earlier_trainings_table(tmp_path):
    """A second training from scratch into the same output_dir replaced the first's table."""
    import transformers

    from attnlimits.monitor import TABLE_NAME, AttentionMonitor
    from monitor_models import Tokens, tiny

    assert _loop(tmp_path, 2) == [1, 2]
    before = (tmp_path / TABLE_NAME).read_bytes()
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=2, report_to=[],
        use_cpu=True, save_strategy="no", disable_tqdm=True,
    )  # fmt: skip
    trainer = transformers.Trainer(tiny("gpt2", "eager"), args, train_dataset=Tokens())
    AttentionMonitor(every=1).attach(trainer)
    with pytest.raises(ValueError, match=r"holds an earlier training's rows \(steps 1 … 2\); "):
        trainer.train()
    assert (tmp_path / TABLE_NAME).read_bytes() == before
