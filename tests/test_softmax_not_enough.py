"""``attnlimits reproduce softmax-not-enough``: config checks, the Fig. 5 analogue, the claims."""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

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
from attnlimits.experiments.softmax_not_enough.config import TemperatureFitConfig
from attnlimits.experiments.softmax_not_enough.provenance import provenance_table
from made_up_tables import softmax_accuracy as _accuracy
from made_up_tables import softmax_not_enough_tables as _tables


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
        ({"ablation_steps": ()}, "ablation_steps"),
        ({"ablation_steps": (100, 100)}, "ablation_steps"),
        ({"ablation_steps": (0,)}, "ablation_steps"),
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


def test_claims_follow_the_numbers():
    meta = {"benchmark": {"train": {"max_size": 16}}}
    good = claims(_tables(0.1), meta)
    appf = good["claim"].str.startswith("(F")  # App. F's rows: no App. F points here, n/a
    # not run, numbers lost, no App. F sets here, true by construction (referee point 19)
    # (3.c), a second λ, is n/a in any one run, so (3) reads partly (round 4, point 10)
    # round 6's points 2 and 9: (1.e) … (1.h) and (2.i) … (2.k), n/a with their reasons
    unjudged = good["claim"].str.match(r"\((1\.[ce-h]|2\.[d-f]|2\.[i-k]|3\.c|3\.d)\)")
    three = good["claim"].str.startswith("(3) ")
    assert good.loc[three, "verdict"].tolist() == ["partly"]
    assert "left out: (3.c) n/a" in good.loc[three, "measured"].iloc[0]
    # round 4's point 19 on accuracies flat at 50 %: no stable baseline; round 5's point 8:
    # Corollary B.1 on argmax − softmax (−10 points here: no errors beyond the argmax's), (2.h)
    # on adaptive's entropy (rising here: reproduced)
    flat_acc = good["claim"].str.match(r"\(1\.d\)|dispersion induces")
    assert (good.loc[flat_acc, "verdict"] == "not reproduced").all() and flat_acc.sum() == 2
    assert (good.loc[~appf & ~unjudged & ~flat_acc & ~three, "verdict"] == "reproduced").all()
    assert (good.loc[appf | unjudged, "verdict"] == "n/a").all() and appf.sum() == 2
    assert unjudged.sum() == 13
    finding, head, support, check = "finding", "headline", "supporting", "check"
    assert good["role"].tolist() == [
        *[finding, head, head, *[support] * 6],
        *[finding, head, *[support] * 8],
        *[finding, head, head, head, support],
        *[finding, head, finding, head],
        *[check] * 5,
    ]
    # temperature zero better than softmax: §3's (4) not reproduced
    up = claims(_tables(0.1, argmax_gain=0.1), meta).set_index("claim")["verdict"]
    assert up.filter(like="our test: temperature zero").tolist() == ["not reproduced"] * 2
    assert up.filter(like="Corollary B.1").tolist() == ["reproduced"]  # softmax below argmax
    bad = claims(_tables(-0.1, spread_over=True), meta).set_index("claim")["verdict"]
    assert bad.filter(like="larger inputs").tolist() == ["not reproduced"] * 2
    assert bad.filter(like="Prop. 3.1").tolist() == ["not reproduced"]
    assert bad.filter(like="(3.b)").tolist() == ["not reproduced"]  # the bound shrank
    # no gain: the pooled interval straddles 0 → partly; without hits → n/a
    flat = claims(_tables(0.0), meta).set_index("claim")["verdict"]
    assert flat["(2) adaptive temperature helps on larger inputs"] == "partly"
    no_hits = {k: v for k, v in _tables(0.1).items() if k != "accuracy"}
    assert claims(no_hits, meta).set_index("claim")["verdict"].filter(like="larger").tolist() == [
        "n/a",
        "n/a",
    ]


def test_rows_for_statements_that_had_none():
    """Referee points 19, 22, 17: §3's wrong-item share judged on App. F's sets, (3)'s rows
    naming both medians, and Lemma 2.1's upper end called vacuous where it allows any α_max."""
    meta = {"benchmark": {"train": {"max_size": 16}}}
    tables = _tables(0.1)
    share = [0.005, 0.004, 0.05]
    tables["temperature_fit_sizes"] = pd.DataFrame({"size": [16, 32, 64], "kept_frac": share})
    got = claims(tables, meta).set_index("claim")
    wrong = got.filter(like="(2.e)", axis=0).iloc[0]
    assert wrong["verdict"] == "reproduced" and "(× 10)" in wrong["measured"]
    tables["temperature_fit_sizes"] = tables["temperature_fit_sizes"].assign(kept_frac=[0.1] * 3)
    flat = claims(tables, meta).set_index("claim").filter(like="(2.e)", axis=0).iloc[0]
    assert flat["verdict"] == "not reproduced"
    spread = got.filter(like="(3.a)", axis=0).iloc[0]["measured"]
    assert "median of the per-seed ratios" in spread and "λ = 1e-3 was chosen" in spread
    assert "activations" in got.filter(like="(3.b)", axis=0).iloc[0]["measured"]
    if "set_attention" in tables:
        lemma = got.filter(like="two-sided", axis=0).iloc[0]["measured"]
        assert "vacuous" in lemma and "above float32's smallest number (1.4e-45) on " in lemma


def test_dispersion_finding_is_section_2s_observations_and_the_theorem_a_check():
    """§2: sharp at the training sizes (the max item's attention at n = 16), then falling
    towards uniform; Lemma 2.1 / Thm 2.2 is a check and never decides the finding."""
    meta = {"benchmark": {"train": {"max_size": 16}}}

    def judged(attention: list[float], entropy: tuple[float, ...] | None = None) -> pd.Series:
        tables = _tables(0.1, entropy=entropy)
        tables["attention_profile"] = tables["attention_profile"].assign(attention=attention)
        return claims(tables, meta).set_index("claim")["verdict"]

    def one(got: pd.Series, prefix: str) -> str:
        return got[[c for c in got.index if c.startswith(prefix)]].item()

    got = judged([0.95, 0.5, 0.125])  # entropy rising at each step (the tables' default)
    assert one(got, "(1) ") == "reproduced"
    got = judged([0.95, 0.5, 0.2], entropy=(0.1, 0.4, 0.4))  # rises, then flat: partly
    assert one(got, "(1.b)") == "partly" and one(got, "dispersion is") == "reproduced"
    got = judged([0.6, 0.5, 0.125])  # holds most of the mass only: partly
    assert one(got, "(1.a)") == "partly" and one(got, "(1) ") == "partly"
    got = judged([0.3, 0.2, 0.05])  # never sharp: not reproduced, though it disperses
    assert one(got, "(1.a)") == "not reproduced" and one(got, "(1.b)") == "reproduced"
    assert one(got, "(1) ") == "not reproduced" and one(got, "dispersion is") == "reproduced"
    # the α_max slope is a reading only: it no longer decides (1.b) (referee point 10)
    got = judged([0.95, 0.97, 0.5])  # up, then down: the check fails; the entropy rises
    assert one(got, "(1.b)") == "reproduced" and one(got, "dispersion is") == "not reproduced"
    got = judged([0.95, 0.97, 0.99], entropy=(0.5, 0.4, 0.3))  # entropy falls
    assert one(got, "(1.b)") == "not reproduced" and one(got, "(1) ") == "not reproduced"


def test_the_adaptive_headline_is_pooled_over_larger_sizes_not_per_size():
    """One size below 0, the others well above: the pooled headline is reproduced and the
    per-size detail (ours) shows the disagreement beside it, never as a paper row."""
    meta = {"benchmark": {"train": {"max_size": 16}}}
    tables = _tables(0.1)
    acc = tables["accuracy"]
    worse = _accuracy([256], -0.02)
    tables["accuracy"] = pd.concat([acc[acc["size"] != 256], worse], ignore_index=True)
    table = claims(tables, meta)
    head = table[table["role"] == "headline"].set_index("claim").filter(like="larger", axis=0)
    assert head["verdict"].tolist() == ["reproduced"]
    assert "2 sizes" in head["measured"].iloc[0] and "n = 64…256" in head["measured"].iloc[0]
    assert "paper" not in size_table(tables["summary"], 16).columns


def test_paper_b_claims_quote_its_text():
    from attnlimits.claims.verdicts import missing_quotes
    from attnlimits.experiments.softmax_not_enough.appf_match import Q_FIT
    from attnlimits.experiments.softmax_not_enough.claims import QUOTES
    from attnlimits.experiments.softmax_not_enough.unstated import QUOTES as UNSTATED

    if not PAPER_B.exists():
        pytest.skip(f"{PAPER_B} is absent (a clone outside this workplace)")
    meta = {"benchmark": {"train": {"max_size": 16}}}
    quoted = set(claims(_tables(0.1), meta)["paper"])
    assert quoted <= {*QUOTES, *UNSTATED, Q_FIT}
    assert missing_quotes(quoted, [PAPER_B.read_text()]) == []


def test_size_table_verdicts_follow_the_bootstrap_not_the_t_test():
    summary = _tables(0.1)["summary"]
    table = size_table(summary, id_size=16).set_index("size")
    assert table.loc[64, "adaptive vs softmax (ours)"] == "better"
    assert table.loc[64, "sets"] == 100
    assert table.loc[64, "softmax (%)"] == "50.0 [48.0, 52.0]"
    assert table.loc[64, "difference (pts)"] == "10.0 [9.0, 11.0]"
    assert "table" not in table.loc[16, "likely reason"]
    # the seeds' t-test says p = 0.001, the bootstrap over seeds and sets p = 0.2: not significant
    wide = summary.assign(p_value=np.where(summary["norm"] == "adaptive", 0.2, np.nan))
    row = size_table(wide, id_size=16).set_index("size").loc[256]
    assert row["adaptive vs softmax (ours)"] == "inconclusive"
    assert row["p (t-test, seeds only)"] == "1.0e-03" and row["p"] == "2.0e-01"
    assert "interval" in row["likely reason"]
    # near chance, no significant difference is explained by dispersion
    near = wide.assign(mean=0.1)
    row = size_table(near, id_size=16).set_index("size").loc[256]
    assert "chance" in row["likely reason"]
    # near 100 % (the round-4 referee's point 16: not "few sets" where there are many) …
    high = wide.assign(mean=0.99)
    assert "near 100 %" in size_table(high, 16).set_index("size").loc[256, "likely reason"]
    # … and few sets named with their count
    few = wide.assign(n_sets=32)
    assert "few test sets (32" in size_table(few, 16).set_index("size").loc[256, "likely reason"]
    assert "few" not in row["likely reason"]
    # a significant loss is called one
    loss = summary.assign(diff=np.where(summary["norm"] == "adaptive", -0.1, np.nan))
    assert size_table(loss, 16).set_index("size").loc[64, "adaptive vs softmax (ours)"] == "worse"


def _bench(**kw) -> dict:  # type: ignore[no-untyped-def]
    return json.loads(json.dumps(asdict(SoftmaxNotEnoughConfig(**kw).benchmark())))


def test_run_json_and_docs_carry_the_labels():
    table = provenance_table(_bench(), json.loads(json.dumps(asdict(TemperatureFitConfig()))))
    docs = (Path(__file__).parents[1] / "docs" / "max_retrieval.md").read_text()
    for r in table.itertuples():
        assert f"| {r.setting} | {r.config} | {r._3} | {r.label} |" in docs, r.setting


#: Phrases that give the paper a setting our copy of it lost.
ATTRIBUTIONS = (
    "as the paper sets it up", "what the paper's", "the paper's 'initial learning rate' implies",
    "consistent with the paper's table", "paper, value lost", "as the paper does it",
)  # fmt: skip
LOST_WORDS = (
    "cosine",
    "learning rate",
    "5,000 steps",
    "20,000 steps",
    "1..16",
    "weight decay",
    "batch of 128",
)


def test_readme_and_docs_give_no_lost_setting_to_the_paper():
    """No attribution phrase anywhere in paper B's docs or README row, and no sentence naming
    a lost setting beside the paper without saying it is lost or ours."""
    root = Path(__file__).parents[1]
    readme = [line for line in (root / "README.md").read_text().splitlines()
              if "softmax-not-enough" in line or "Softmax is not" in line]  # fmt: skip
    text = "\n".join([(root / "docs" / "max_retrieval.md").read_text(), *readme])
    for phrase in ATTRIBUTIONS:
        assert phrase not in text.lower(), phrase
    for sentence in re.split(r"(?<=[.;])\s", text):
        low = sentence.lower()
        if "paper" in low and any(w in low for w in LOST_WORDS):
            assert any(w in low for w in ("lost", "our choice", "ours")), sentence


#: Our copy of paper B (../shared/papers beside the repository; absent in other clones).
PAPERS = Path(__file__).resolve().parents[1].parent / "shared" / "papers"
PAPER_B = PAPERS / "paper-b-softmax-not-enough.txt"
#: A phrase in '…', "…" or “…” (an apostrophe inside a word, as in paper's, opens none).
QUOTED = re.compile(r'"([^"]+)"|“([^”]+)”|(?<!\w)\'([^\']+?)\'(?!\w)')


def _quoted(text: str) -> list[str]:
    """Every quoted phrase in ``text``, ``code`` spans left out."""
    text = re.sub(r"``.*?``|`[^`]*`", "", text, flags=re.S)
    return [next(g for g in m.groups() if g) for m in QUOTED.finditer(text)]


def _missing_from_paper_b(phrases: list[str]) -> list[str]:
    """The phrases (or parts between '…') not in our copy of paper B, up to whitespace."""
    if not PAPER_B.exists():
        pytest.skip(f"{PAPER_B} is absent (a clone outside this workplace)")
    paper = " ".join(PAPER_B.read_text().split())
    return [p for p in phrases for part in re.split(r"…|\.\.\.", p)
            if part.strip() and " ".join(part.split()) not in paper]  # fmt: skip


def test_every_phrase_quoted_from_paper_b_is_in_its_text():
    """A quoted phrase in the set-up table (every row and arm: its quotes are the paper's), in
    the config modules' docstrings, or after "paper" in docs/max_retrieval.md and the README's
    row, appears word for word (up to whitespace) in our copy of paper B."""
    import inspect

    from attnlimits.experiments.softmax_not_enough import config

    fit = json.loads(json.dumps(asdict(TemperatureFitConfig())))
    arms = [{}, {"model_variant": "ours", "regularizer": "decoupled", "schedule": "constant"}]
    params = json.loads(json.dumps(asdict(SoftmaxNotEnoughConfig(ablation=True))))
    phrases = [q for kw in arms for why in provenance_table(_bench(**kw), fit, params)["why"]
               for q in _quoted(why)]  # fmt: skip
    for mod in (config,):
        owned = [
            o for _, o in inspect.getmembers(mod) if getattr(o, "__module__", "") == mod.__name__
        ]
        phrases += [q for o in [mod, *owned] for q in _quoted(inspect.getdoc(o) or "")]
    root = Path(__file__).parents[1]
    readme = [line for line in (root / "README.md").read_text().splitlines()
              if "softmax-not-enough" in line]  # fmt: skip
    text = "\n".join([(root / "docs" / "max_retrieval.md").read_text(), *readme])
    text = re.sub(r"`[^`]*`", "", text)
    phrases += [next(g for g in m.groups() if g) for m in QUOTED.finditer(text)
                if "paper" in text[max(0, m.start() - 40) : m.start()].lower()]  # fmt: skip
    assert len(phrases) >= 5, phrases  # the search finds the quotes at all
    assert not _missing_from_paper_b(phrases)


def test_cli_rejects_bad_input(tmp_path):
    res = CliRunner().invoke(
        app, ["reproduce", "softmax-not-enough", "--seeds", "1", "--out", str(tmp_path)]
    )
    assert res.exit_code == 2 and "seeds" in res.output and "Traceback" not in res.output


def test_cli_steps_sets_the_training_length_and_ablation_help_names_the_steps_axis(
    tmp_path, monkeypatch
):
    """``--steps N`` reaches ``TrainConfig.steps`` (with and without --quick; the ablation
    trains it too), a bad N is one line, and --ablation's help names the lengths it trains."""
    import typer

    seen = []

    def fake_run(experiment, config, out, **kw):  # type: ignore[no-untyped-def]
        seen.append(config)
        return out / "report.md"

    monkeypatch.setattr(skeleton, "run", fake_run)
    for extra, steps in (
        ([], 20000),
        (["--steps", "1234"], 1234),
        (["--quick", "--steps", "7"], 7),
    ):
        res = CliRunner().invoke(app, ["reproduce", "softmax-not-enough", *extra,
                                       "--out", str(tmp_path / "r")])  # fmt: skip
        assert res.exit_code == 0, res.output
        assert seen[-1].benchmark().train.steps == steps
    res = CliRunner().invoke(app, ["reproduce", "softmax-not-enough", "--steps", "0",
                                   "--out", str(tmp_path / "r")])  # fmt: skip
    assert res.exit_code == 2 and res.output.strip() == "error: --steps must be an int >= 1, got 0"
    group: Any = typer.main.get_command(app)  # typer's click group (its own click copy)
    command = group.commands["reproduce"].commands["softmax-not-enough"]
    helps = {p.name: getattr(p, "help", None) or "" for p in command.params}
    assert all(n in helps["ablation"] for n in ("5,000", "10,000", "20,000", "--steps"))
    cfg = SoftmaxNotEnoughConfig(steps=300, ablation=True)
    assert (
        cfg.benchmark().train.steps == 300
        and SoftmaxNotEnoughConfig().benchmark().train.steps == 20000
    )


@pytest.mark.slow
def test_quick_run_writes_the_report(tmp_path):
    """The --quick smoke run (about 1.5 min on 2 cores); CI runs it in the slow job."""
    res = CliRunner().invoke(
        app, ["reproduce", "softmax-not-enough", "--quick", "--out", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    text = (tmp_path / "report.md").read_text()
    assert "## Claims" in text and "Adaptive temperature refit" in text
    assert "[low, high] over seeds and test sets" in text and "lost in our copy" in text
    # (1), (1.a) … (1.h), (2), (2.a), (2.b), (2.d), (2.e), (2.f), (2.h) … (2.k), (3),
    # (3.a) … (3.d), (4), (4.a), (F), (F.a) and five checks ((2.g) is the docs' only: the
    # ablation's); (1.e) … (1.h) and (2.i) … (2.k) since round 6
    assert len(pd.read_parquet(tmp_path / "tables" / "claims.parquet")) == 33
    redrawn = skeleton.redraw(tmp_path).read_text()  # attnlimits report DIR
    assert redrawn.split("## Run")[0] == text.split("## Run")[0]


def test_quick_lets_explicit_values_win():
    cfg = SoftmaxNotEnoughConfig.quick(seeds=3)
    assert cfg.preset == "quick" and cfg.seeds == 3
    assert SoftmaxNotEnoughConfig.quick().seeds == 2 and SoftmaxNotEnoughConfig().seeds == 10
    assert cfg.benchmark().train.steps < SoftmaxNotEnoughConfig().benchmark().train.steps
    assert SoftmaxNotEnoughConfig().ablation_steps == (5000, 10000, 20000)
    assert cfg.ablation_steps == (600, 1200, 2400)
    assert SoftmaxNotEnoughConfig.quick(ablation_steps=(5,)).ablation_steps == (5,)
