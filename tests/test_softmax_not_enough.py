"""``attnlimits reproduce softmax-not-enough``: config checks, the Fig. 5 analogue, the claims."""

from __future__ import annotations

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
    ],
)
def test_bad_config_is_a_clear_error(kw, match):
    with pytest.raises(ValueError, match=match):
        SoftmaxNotEnoughConfig(**kw)  # type: ignore[arg-type]


def _tables(adaptive_gain: float, spread_over: bool = False) -> dict[str, pd.DataFrame]:
    sizes = [16, 64, 256]
    prof = pd.DataFrame({"norm": "softmax", "size": sizes, "rank": 0, "attention": [0.9, 0.5, 0.2]})
    rows = []
    for s in sizes:
        rows.append({"norm": "softmax", "size": s, "mean": 0.5, "p_value": np.nan})
        rows.append({"norm": "adaptive", "size": s, "mean": 0.5 + adaptive_gain, "p_value": 0.01})
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
