"""``attnlimits reproduce softmax-not-enough``: config checks, the Fig. 5 analogue, the claims."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from attnlimits.cli import app
from attnlimits.experiments import skeleton
from attnlimits.experiments.softmax_not_enough import (
    SoftmaxNotEnoughConfig,
    claims,
    entropy_vs_temperature,
)
from attnlimits.experiments.softmax_not_enough.claims import size_table
from attnlimits.experiments.softmax_not_enough.setup import setup_table


def test_entropy_rises_with_temperature_and_is_capped_by_log_n():
    df = entropy_vs_temperature((1.0, 8.0), n=32)
    for _, g in df.groupby("spread"):
        h = g.sort_values("T")["entropy"].to_numpy()
        assert (np.diff(h) >= -1e-9).all() and h.max() <= np.log(32) + 1e-12
    # a wider spread is sharper at the same temperature
    at_one = df[np.isclose(df["T"], 1.0)].set_index("spread")["entropy"]
    assert at_one[8.0] < at_one[1.0]


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"seeds": 1}, "seeds"),
        ({"normalizers": ("nope",)}, "unknown"),
        ({"normalizers": ("ssmax",)}, "softmax"),
        ({"normalizers": ("softmax", "all")}, "stands alone"),
        ({"model_variant": "flax"}, "variant"),
        ({"schedule": "linear"}, "schedule"),
        ({"regularizer": "l1"}, "regularizer"),
    ],
)
def test_bad_config_is_a_clear_error(kw, match):
    with pytest.raises(ValueError, match=match):
        SoftmaxNotEnoughConfig(**kw)  # type: ignore[arg-type]


def test_cross_table_takes_any_registry_normaliser_or_all():
    from attnlimits.normalizers import available

    every = SoftmaxNotEnoughConfig(normalizers=("all",)).normalizers
    assert every[0] == "softmax" and sorted(every) == sorted(available())
    # outside the documented eight; a repeated name is refused, as in every list setting
    cfg = SoftmaxNotEnoughConfig(normalizers=("softmax", "softpick", "relu2"))
    assert cfg.normalizers == ("softmax", "softpick", "relu2")
    with pytest.raises(ValueError, match="normalizers repeats softpick"):
        SoftmaxNotEnoughConfig(normalizers=("softmax", "softpick", "relu2", "softpick"))


def _tables(adaptive_gain: float, spread_over: bool = False) -> dict[str, pd.DataFrame]:
    sizes = [16, 64, 256]
    prof = pd.DataFrame({"norm": "softmax", "size": sizes, "rank": 0, "attention": [0.9, 0.5, 0.2]})
    rows = []
    for s in sizes:
        rows.append({"norm": "softmax", "size": s, "mean": 0.5, "se": 0.01, "t": np.nan,
                     "p_value": np.nan})  # fmt: skip
        rows.append({"norm": "adaptive", "size": s, "mean": 0.5 + adaptive_gain, "se": 0.01,
                     "t": 3.0 if adaptive_gain > 0 else -3.0, "p_value": 0.01})  # fmt: skip
    log = pd.DataFrame({"spread": [1.0, 2.0], "bound": [3.0, 1.5 if spread_over else 3.0]})
    return {
        "attention_profile": prof,
        "summary": pd.DataFrame(rows),
        "entropy_vs_temperature": entropy_vs_temperature((1.0,), n=8),
        "training_log": log,
    }


def test_claims_follow_the_numbers():
    meta = {"benchmark": {"train": {"max_size": 16}}}
    good = claims(_tables(0.1), meta).set_index("claim")["verdict"]
    assert (good == "reproduced").all()
    bad = claims(_tables(-0.1, spread_over=True), meta)["verdict"].tolist()
    assert bad[1] == "not reproduced" and bad[3] == "not reproduced"


def test_size_table_verdicts_and_reasons():
    summary = _tables(0.1)["summary"]
    table = size_table(summary, id_size=16).set_index("size")
    assert table.loc[64, "verdict"] == "adaptive significantly better" and table.loc[64, "agrees"]
    # in distribution the paper expects no difference: a significant gain is flagged, explained
    assert not table.loc[16, "agrees"] and "distribution" in table.loc[16, "likely reason"]
    assert table.loc[64, "softmax (%)"] == "50.0 ± 1.0"
    # near chance, no significant difference is explained by dispersion
    near = summary.assign(mean=0.1, p_value=np.where(summary["norm"] == "adaptive", 0.4, np.nan))
    row = size_table(near, id_size=16).set_index("size").loc[256]
    assert row["verdict"] == "no significant difference" and "chance" in row["likely reason"]


def test_setup_table_labels_every_setting_and_docs_show_it():
    bench = json.loads(json.dumps(asdict(SoftmaxNotEnoughConfig().benchmark())))
    table = setup_table(bench)
    assert set(table["label"]) <= {"paper", "paper, value lost in our copy", "ours"}
    assert {"model", "optimiser", "schedule", "steps", "seeds"} <= set(table["setting"])
    row = table.set_index("setting")
    assert row.loc["optimiser", "label"] == "paper" and "Adam" in row.loc["optimiser", "this run"]
    assert "cosine" in row.loc["schedule", "this run"]
    ours = setup_table(
        json.loads(
            json.dumps(
                asdict(
                    SoftmaxNotEnoughConfig(
                        model_variant="ours", regularizer="decoupled", schedule="constant"
                    ).benchmark()
                )
            )
        )
    )
    assert (ours.set_index("setting").loc[["model", "optimiser", "schedule"], "label"]
            == "ours").all()  # fmt: skip
    docs = (Path(__file__).parents[1] / "docs" / "max_retrieval.md").read_text()
    for r in table.itertuples():
        assert f"| {r.setting} | {r._2} | {r.label} |" in docs, r.setting


def test_cli_rejects_bad_input(tmp_path):
    res = CliRunner().invoke(
        app, ["reproduce", "softmax-not-enough", "--seeds", "1", "--out", str(tmp_path)]
    )
    assert res.exit_code == 2 and "seeds" in res.output and "Traceback" not in res.output


@pytest.mark.slow
def test_quick_run_writes_the_report(tmp_path):
    """The --quick smoke run (about 1.5 min on 2 cores); CI runs it in the slow job."""
    res = CliRunner().invoke(
        app, ["reproduce", "softmax-not-enough", "--quick", "--out", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    text = (tmp_path / "report.md").read_text()
    assert "## Claims" in text and "Adaptive temperature refit" in text
    assert len(pd.read_parquet(tmp_path / "tables" / "claims.parquet")) == 4
    redrawn = skeleton.redraw(tmp_path).read_text()  # attnlimits report DIR
    assert redrawn.split("## Run")[0] == text.split("## Run")[0]


def test_quick_lets_explicit_values_win():
    cfg = SoftmaxNotEnoughConfig.quick(seeds=3)
    assert cfg.preset == "quick" and cfg.seeds == 3
    assert SoftmaxNotEnoughConfig.quick().seeds == 2 and SoftmaxNotEnoughConfig().seeds == 10
    assert cfg.benchmark().train.steps < SoftmaxNotEnoughConfig().benchmark().train.steps
