"""One provenance table per experiment (issue 55): every config field in exactly one row, the
docs' tables the generated ones, labels pinned against the papers' text (issue 56, paper B
item 5), and a changed default flowing into every table."""

from __future__ import annotations

import inspect
import json
import re
import shutil
from dataclasses import asdict, fields, replace
from pathlib import Path

import pandas as pd
import pytest

from attnlimits.experiments import provenance
from attnlimits.experiments.clrs_text import provenance as clrs
from attnlimits.experiments.clrs_text.config import Config as ClrsConfig
from attnlimits.experiments.limitations import provenance as limitations
from attnlimits.experiments.limitations.config import Config as LimitationsConfig
from attnlimits.experiments.provenance import LOST, OURS, PAPER, Setting
from attnlimits.experiments.report import block
from attnlimits.experiments.softmax_not_enough import config as snae_config
from attnlimits.experiments.softmax_not_enough import provenance as snae
from attnlimits.experiments.softmax_not_enough.config import (
    Config,
    EvalConfig,
    MaxRetrievalConfig,
    ModelConfig,
    TemperatureFitConfig,
    TrainConfig,
)

ROOT = Path(__file__).parents[1]
PAPERS = ROOT.parent / "shared" / "papers"


def _fields(cls: type, prefix: str = "") -> set[str]:
    return {f"{prefix}{f.name}" for f in fields(cls)}


def _snae_fields() -> set[str]:
    every = set()
    for prefix, cls in (
        ("model.", ModelConfig),
        ("train.", TrainConfig),
        ("eval.", EvalConfig),
        ("fit.", TemperatureFitConfig),
        ("run.", Config),
    ):
        every |= _fields(cls, prefix)
    bench = _fields(MaxRetrievalConfig, "bench.") - {"bench.model", "bench.train", "bench.eval"}
    return (every | bench) - set(snae.ALIASES)


@pytest.mark.parametrize(
    ("settings", "every"),
    [
        (limitations.SETTINGS, _fields(LimitationsConfig)),
        (clrs.SETTINGS, _fields(ClrsConfig)),
        (snae.SETTINGS, _snae_fields()),
    ],
    ids=["limitations", "clrs_text", "softmax_not_enough"],
)
def test_every_config_field_has_exactly_one_row(settings, every):
    covered = provenance.covered(settings)
    twice = sorted({f for f in covered if covered.count(f) > 1})
    assert twice == [], f"fields in two rows: {twice}"
    assert set(covered) == every, (sorted(every - set(covered)), sorted(set(covered) - every))


def test_an_alias_names_a_field_with_a_row():
    covered = set(provenance.covered(snae.SETTINGS))
    assert set(snae.ALIASES.values()) <= covered
    run = _fields(Config, "run.")
    assert set(snae.ALIASES) <= run


@pytest.mark.parametrize(("doc", "name", "module"), provenance.DOCS)
def test_each_doc_holds_the_generated_table(doc, name, module):
    """The docs' set-up tables are the defaults' (``python -m attnlimits.experiments.provenance``
    refills them)."""
    assert block((ROOT / doc).read_text(encoding="utf-8"), name) == provenance.markdown(module)


def test_main_refills_a_stale_block(tmp_path):
    for doc, _, _ in provenance.DOCS:
        (tmp_path / doc).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / doc, tmp_path / doc)
    stale = tmp_path / "docs" / "max_retrieval.md"
    text = stale.read_text(encoding="utf-8")
    stale.write_text(text.replace("| steps | train.steps |", "| steps | train.stepz |"))
    assert block(stale.read_text(encoding="utf-8"), "provenance") != block(text, "provenance")
    provenance.main([str(tmp_path)])
    assert stale.read_text(encoding="utf-8") == text


def test_a_changed_default_flows_into_the_table(monkeypatch):
    """Values are read from the config, never retyped: a new default is the table's value."""
    before = snae.defaults().set_index("setting")
    assert before.loc["steps", "this run"] == f"{TrainConfig().steps:,}"
    base = Config().benchmark()  # the benchmark a new TrainConfig.steps default would give
    new = replace(base, train=replace(base.train, steps=12_345))
    monkeypatch.setattr(Config, "benchmark", lambda self: new)
    after = snae.defaults().set_index("setting")
    assert after.loc["steps", "this run"] == "12,345"
    assert after.loc["schedule", "this run"].startswith("cosine decay to 0 over 12,345 steps")
    lim = limitations.provenance_table(asdict(LimitationsConfig(windows=3)))
    assert "3 window(s)" in lim.set_index("setting").loc["text and windows", "this run"]


#: What paper B's text or listing states (§4.1, App. A, App. F), field by field, independent of
#: the code; every other field is lost in our copy or ours.
PAPER_FIELDS = {
    "model.n_classes",  # the listing's n_classes: int = 10
    "model.width",  # the listing's n_feats: int = 128
    "model.variant",
    "model.normalizer",
    "model.normalizer_params",
    "bench.seeds",
    "bench.adaptive_params",
    "fit.degree",
    "fit.threshold",
}
#: Settings the paper has but whose values our copy lost: "initial learning rate of .",
#: "sampled uniformly from .", "regularisation with hyperparameter ." (the regulariser's form
#: and weight), "for gradient steps", "a batch of input sets", the query's "uniformly-sampled
#: value, .", the evaluation sizes and App. F's grid. Not here, because our copy names none
#: where its words survive (so they are ours): the schedule, the number of evaluation sets,
#: App. F's inputs.
LOST_FIELDS = {
    "model.query_dim",
    "train.lr",
    "train.steps",
    "train.min_size",
    "train.max_size",
    "train.regularizer",
    "train.batch",
    "train.weight_decay",
    "eval.sizes",
    "fit.theta_min",
    "fit.theta_max",
    "fit.theta_step",
}


def _labels(table: pd.DataFrame) -> dict[str, str]:
    """Config field (or, for a row with none, the setting's name) -> its row's label."""
    out: dict[str, str] = {}
    for setting, fields_, label in zip(
        table["setting"], table["config"], table["label"], strict=True
    ):
        for f in fields_.split(", ") if fields_ != "—" else [setting]:
            out[f] = label
    return out


def test_paper_b_labels_as_the_paper_states_them():
    labels = _labels(snae.defaults())
    for field in _snae_fields():
        expected = PAPER if field in PAPER_FIELDS else LOST if field in LOST_FIELDS else OURS
        assert labels[field] == expected, field
    # issue 56, paper B item 5: each decided from our copy's words
    assert labels["train.regularizer"] == LOST  # "regularisation with hyperparameter ."
    assert labels["train.schedule"] == OURS  # our copy names no schedule
    assert labels["priorities ρ"] == LOST  # "from a uniform distribution; ." lost the bounds
    assert labels["a fresh query per set"] == OURS  # the paper does not say
    assert labels["task"] == PAPER
    task = snae.defaults().set_index("setting").loc["task", "this run"]
    assert "U(0, 1)" not in task  # the bounds are not credited to the paper


def test_the_other_arm_of_each_choice_is_ours():
    def bench(**kw):
        return json.loads(json.dumps(asdict(Config(**kw).benchmark())))

    other = _labels(
        snae.provenance_table(
            bench(model_variant="ours", regularizer="decoupled", schedule="constant")
        )
    )
    assert {other[f] for f in ("model.variant", "train.regularizer", "train.schedule")} == {OURS}
    assert _labels(snae.provenance_table(bench(seeds=3)))["bench.seeds"] == OURS
    run = _labels(limitations.provenance_table(asdict(LimitationsConfig(n_alg1=4))))
    assert run["n_alg1"] == OURS and run["ks_alpha"] == PAPER
    gpt2 = _labels(limitations.provenance_table(asdict(LimitationsConfig(model="gpt2"))))
    assert gpt2["model"] == PAPER


def test_labels_are_the_claims_engines_and_a_lost_reason_says_our_choice():
    from attnlimits.claims import thresholds

    assert (PAPER, LOST, OURS) == (thresholds.PAPER, thresholds.LOST, thresholds.OURS)
    for table in (limitations.defaults(), clrs.defaults(), snae.defaults()):
        assert set(table["label"]) <= set(thresholds.PROVENANCES)
        lost = table[table["label"] == LOST]
        assert lost["why"].str.startswith(provenance.LOST_PREFIX).all()
    assert LOST not in set(limitations.defaults()["label"]), (
        "paper A's copies keep their numbers: a setting the paper does not state is ours"
    )


def test_a_setting_refuses_an_unknown_label_and_a_lost_value_without_its_reason():
    with pytest.raises(ValueError, match="none of"):
        Setting("x", ("x",), "1", "the paper's", "why").row({"x": 1})
    with pytest.raises(ValueError, match="our choice, because"):
        Setting("x", ("x",), "1", LOST, "because").row({"x": 1})
    with pytest.raises(ValueError, match="needs its reason"):
        Setting("x", ("x",), "1", OURS, " ").row({"x": 1})
    shown = provenance.table([Setting("x", ("x",), "1", PAPER, "")], {}, ["setting"])
    assert shown.empty  # a run without the field has no row


#: Italic labels in a docstring: the config docstrings point to the provenance modules instead,
#: so they cannot disagree with them.
_LABEL = re.compile(r"\*(paper|lost in our copy|ours)\*")


def test_config_docstrings_carry_no_labels_of_their_own():
    from attnlimits.experiments.clrs_text import config as clrs_config
    from attnlimits.experiments.limitations import config as lim_config

    for mod in (snae_config, clrs_config, lim_config):
        owned = [
            o for _, o in inspect.getmembers(mod) if getattr(o, "__module__", "") == mod.__name__
        ]
        for obj in [mod, *owned]:
            assert not _LABEL.search(inspect.getdoc(obj) or ""), (mod.__name__, obj)
    assert "provenance" in (snae_config.__doc__ or "") and "provenance" in (
        clrs_config.__doc__ or ""
    )
    assert TemperatureFitConfig.degree == 4  # read, not retyped, by the table


def _quotes(texts: list[str], pattern: str) -> list[str]:
    return [q for t in texts for q in re.findall(pattern, t)]


def _missing(phrases: list[str], paper: str) -> list[str]:
    text = " ".join((PAPERS / paper).read_text(encoding="utf-8").split())
    parts = [part for p in phrases for part in re.split(r"…", p) if part.strip()]
    return [part for part in parts if " ".join(part.split()) not in text]


@pytest.mark.skipif(not PAPERS.is_dir(), reason="../shared/papers is absent")
def test_every_quoted_phrase_is_the_papers_words():
    """Paper B's rows quote in single quotes (softmax-not-enough) or double quotes (CLRS-Text),
    paper A's in double quotes: each phrase is in our copy, word for word up to whitespace."""
    fit = json.loads(json.dumps(asdict(TemperatureFitConfig())))
    arms = [{}, {"model_variant": "ours", "regularizer": "decoupled", "schedule": "constant"}]
    whys = [
        w
        for kw in arms
        for w in snae.provenance_table(
            json.loads(json.dumps(asdict(Config(**kw).benchmark()))), fit
        )["why"]
    ]
    single = _quotes(whys, r"(?<!\w)'([^']+?)'(?!\w)")
    assert len(single) >= 10 and _missing(single, "paper-b-softmax-not-enough.txt") == []
    clrs_whys = [
        w
        for kw in ({}, {"lengths": "paper"}, {"format": "answer"})
        for w in clrs.provenance_table({"params": asdict(ClrsConfig(**kw))})["why"]
    ]
    double = _quotes(clrs_whys, r'"([^"]+)"')
    assert len(double) >= 4 and _missing(double, "paper-b-softmax-not-enough.txt") == []
    lim = limitations.defaults()
    paper_a = _quotes([*lim["why"], *lim["paper"]], r'"([^"]+)"')
    assert _missing(paper_a, "paper-a-limitations-arxiv-v3.txt") == []
