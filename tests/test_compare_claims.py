"""The comparison's claims on the shared verdicts: known answers for each rule at both sides of
every threshold, each verdict through ``claims(tables, meta)``, the quotes in the papers' text,
and the effects table that keeps every normaliser (claimed or not) in the report."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from attnlimits.claims import verdicts
from attnlimits.experiments.compare import rules
from attnlimits.experiments.compare.claims import claims, sections
from attnlimits.experiments.compare.statements import ALL

R, P, N, NT, NA = "reproduced", "partly", "not reproduced", "not testable", "n/a"
E9 = 1e-9
NAN = math.nan

CASES = [
    # (rule, args, verdict)
    (rules.more_performant, (["helps", "helps"],), R),
    (rules.more_performant, (["helps", "neutral"],), P),
    (rules.more_performant, (["hurts", "neutral"],), N),
    (rules.more_performant, ([],), NA),
    (rules.sharper, ([1.0], [1.0 + E9]), R),
    (rules.sharper, ([1.0], [1.0]), N),  # equal is not sharper
    (rules.sharper, ([1.0, 2.0], [1.5, 1.5]), P),
    (rules.sharper, ([NAN], [1.0]), NA),
    (rules.roughly_constant, (1.25, 0.5), R),
    (rules.roughly_constant, (0.8, 0.5), R),
    (rules.roughly_constant, (1.25 + E9, 0.5), P),  # out of ×1.25, nearer 1 than softmax's
    (rules.roughly_constant, (0.8 - E9, 0.5), P),
    (rules.roughly_constant, (0.5, 0.5 - E9), P),
    (rules.roughly_constant, (0.5, 0.5), N),  # moves as much as softmax's
    (rules.roughly_constant, (2.0, 0.5), N),
    (rules.roughly_constant, (NAN, 0.5), NA),
    (rules.roughly_constant, (1.0, 0.0), NA),
    (rules.preferred, (["helps"], ["neutral"]), R),
    (rules.preferred, (["neutral"], ["helps"]), R),
    (rules.preferred, (["helps"], ["hurts"]), N),  # a help that hurts elsewhere is not better
    (rules.preferred, (["untested"], ["neutral"]), N),
    (rules.preferred, (["helps", "neutral"], ["neutral", "neutral"]), P),
    (rules.preferred, ([], []), NA),
]


@pytest.mark.parametrize(("rule", "args", "verdict"), CASES)
def test_rule_known_answers(rule, args, verdict):
    assert rule(*args) == verdict


def test_every_rule_has_every_verdict_it_can_return():
    for rule in (rules.more_performant, rules.sharper, rules.roughly_constant, rules.preferred):
        assert {v for r, _, v in CASES if r is rule} == {R, P, N, NA}, rule.__name__


def _row(spec, length, *, ppl=0.0, acc=0.5, entropy=2.0, max_weight=0.5):
    return {
        "normalizer": spec, "length": length, "delta_nll": ppl, "delta_nll_sd": 0.01,
        "sequences": 4, "perplexity_change": math.expm1(ppl), "perplexity": 10.0,
        "accuracy": acc, "accuracy_se": 0.02, "head_entropy_median": entropy,
        "head_mass_mean": 1.0, "head_max_weight_median": max_weight, "time_vs_softmax": 1.0,
        "seconds_per_forward": 0.1,
    }  # fmt: skip


SPECS = {"softmax": "softmax", "adaptive": "adaptive", "ssmax": "ssmax", "topk:k=4": "topk",
         "topk:k=8": "topk", "softcap": "softcap"}  # fmt: skip


def summary(adaptive_acc=0.9, ssmax_weight=0.45):
    rows = [
        _row("softmax", 32), _row("softmax", 64, max_weight=0.25),
        _row("adaptive", 32), _row("adaptive", 64, acc=adaptive_acc, entropy=1.0),
        _row("ssmax", 32), _row("ssmax", 64, max_weight=ssmax_weight),
        _row("topk:k=4", 32), _row("topk:k=4", 64, ppl=-0.1),
        _row("topk:k=8", 32), _row("topk:k=8", 64, ppl=-0.1),
        _row("softcap", 32), _row("softcap", 64, ppl=0.1),
    ]  # fmt: skip
    return {"summary": pd.DataFrame(rows)}


def meta(train_length=32):
    return {
        "model": {"id": "m", "max_context": 64},
        "params": {"train_length": train_length},
        "normalizers": {
            s: {"name": n, "params": {"k": int(s[-1])} if n == "topk" else {}}
            for s, n in SPECS.items()
        },
    }


def test_claims_on_tables():
    got = claims(summary(), meta()).set_index("claim")
    v = {
        c.split(" swapped")[0] + " " + role: x
        for c, role, x in zip(got.index, got["role"], got["verdict"], strict=True)
    }
    assert v == {"adaptive headline": R, "adaptive supporting": R, "ssmax headline": R,
                 "topk:k=4 headline": R, "topk:k=8 headline": NT}  # fmt: skip
    assert not any(c.startswith("softcap") for c in got.index)  # no paper claims about it
    worse = claims(summary(adaptive_acc=0.5, ssmax_weight=0.3), meta())
    assert worse["verdict"].tolist()[:3] == [N, R, P]
    beyond = claims(summary(), meta(train_length=None))  # the model's context: 64, no L past it
    assert beyond["verdict"].tolist()[:2] == [NT, NT]
    assert "no L past the training length 64" in beyond.loc[0, "measured"]
    assert claims(summary(), meta() | {"model": {"id": "m"}, "params": {}}).loc[0, "verdict"] == NT


def test_effects_table_keeps_every_normaliser():
    text = "\n".join(sections(summary(), meta()))
    assert "## Effects per normaliser" in text
    for spec in SPECS:
        if spec != "softmax":
            assert f"| {spec} |" in text, spec


def test_columns_are_the_reproductions():
    row = verdicts.Statement("x", verdicts.HEADLINE, "q").judged("", "", NA)
    assert list(claims(summary(), meta()).columns) == list(row)
    only = summary()["summary"].query("normalizer == 'softmax'")
    assert list(claims({"summary": only}, meta()).columns) == list(row)


PAPERS = Path(__file__).resolve().parents[1].parent / "shared" / "papers"


@pytest.mark.skipif(not PAPERS.is_dir(), reason="../shared/papers is absent")
def test_every_quote_of_the_comparison_is_the_papers_words():
    texts = [p.read_text(encoding="utf-8") for p in sorted(PAPERS.glob("paper-*.txt"))]
    assert len(texts) == 3
    quotes = {s.quote for s in ALL}
    assert verdicts.missing_quotes(quotes, texts) == []
    assert set(claims(summary(), meta())["paper"]) == quotes
    assert verdicts.missing_quotes(["s·log n keeps attention sharp as n grows"], texts)
