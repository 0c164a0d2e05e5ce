"""attnlimits compare: specs, the probe, one swapped forward against the model itself and eager
attention maps, the single-forward band property, the effects rule, the run end to end."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

import attnlimits.kernels  # noqa: F401  (registers the attnlimits_* implementations)
from attnlimits.capture import load_model
from attnlimits.cli import app
from attnlimits.corpus import load_text, word_tokenizer
from attnlimits.experiments import skeleton
from attnlimits.experiments.compare import (
    EXPERIMENT,
    Config,
    build_probes,
    effects,
    parse_normalizer,
    score_probes,
)
from attnlimits.experiments.compare.forward import band_rows, run_forward
from attnlimits.experiments.compare.probe import query_tokens
from attnlimits.kernels.hf import patch
from tiny_models import tiny_model_dir

compare_compute = importlib.import_module("attnlimits.experiments.compare.compute")
LENGTHS = (64, 128)


@pytest.fixture(scope="module")
def text(book_path):
    return load_text(book_path)


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory, text):
    root = tmp_path_factory.mktemp("compare_models")
    return {
        f: tiny_model_dir(root, f, text[:100_000], max_positions=128, digits=True)
        for f in ("llama", "bert")
    }


@pytest.fixture(scope="module")
def llama(model_dirs):
    return load_model(str(model_dirs["llama"]))


# ---- specs and config --------------------------------------------------------------------------


def test_specs_parse_and_bad_ones_name_the_spec():
    assert parse_normalizer("softmax") == ("softmax", {})
    assert parse_normalizer("topk:k=64") == ("topk", {"k": 64})
    assert parse_normalizer(" logn:train_length=2048 ") == ("logn", {"train_length": 2048})
    assert parse_normalizer("sink_softmax:sink=[0.5,1]")[1] == {"sink": [0.5, 1]}
    assert parse_normalizer("llama4_temperature:attn_scale=0.2;floor_scale=64")[1] == {
        "attn_scale": 0.2,
        "floor_scale": 64,
    }
    for bad, match in (
        ("nosuch", "unknown normalizer 'nosuch'"),
        ("topk:k=0", "k must be"),
        ("topk:k", "name=value"),
        ("topk:kk=3", "topk:kk=3"),
        ("softmax:temperature=2", "baseline"),
        ("", "non-empty"),
    ):
        with pytest.raises(ValueError, match=match):
            parse_normalizer(bad)


def test_config_adds_the_baseline_and_fills_train_length():
    cfg = Config(normalizers=("logn", "topk:k=8"), lengths=(1024, 512))
    assert cfg.normalizers == ("softmax", "logn", "topk:k=8") and cfg.lengths == (512, 1024)
    assert cfg.specs(4096)["logn"] == ("logn", {"train_length": 4096})
    assert Config(normalizers=("logn",), train_length=256).specs(4096)["logn"][1] == {
        "train_length": 256
    }
    assert Config(normalizers=("logn:train_length=99",)).specs(4096)["logn:train_length=99"] == (
        "logn",
        {"train_length": 99},
    )
    assert Config.quick().lengths == (128, 256) and Config.quick(sequences=2).sequences == 2
    for bad in (
        {"normalizers": ("softmax", "softmax")},
        {"normalizers": ()},
        {"lengths": (8,)},
        {"sequences": 0},
        {"rows": 0},
        {"train_length": 1},
        {"model": " "},
    ):
        with pytest.raises(ValueError):
            Config(**bad)
    with pytest.raises(TypeError, match="unknown compare setting"):
        Config.preset(lenghts=(64,))


# ---- the probe ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def digit_tokenizer(text):
    return word_tokenizer(text[:100_000], digits=True)


def test_probes_sit_in_their_bands_and_ask_for_their_needles(digit_tokenizer):
    tok = digit_tokenizer
    book = torch.randint(2, 300, (3, 256), generator=torch.Generator().manual_seed(0))
    probes = build_probes(tok, book, (128, 256), per_length=2, seed=5)
    t = probes.table
    assert len(t) == 3 * 2 * 2 and t.groupby("sequence")["word"].nunique().eq(4).all()
    assert ((t["query_start"] >= t["length"] // 2) & (t["answer_start"] < t["length"])).all()
    assert (t["needle_start"] < t["query_start"]).all() and t["depth"].between(0, 1).all()
    for r in t.itertuples():
        ids = probes.ids[r.sequence]
        answer = tok.decode(ids[r.answer_start : r.answer_start + r.answer_tokens].tolist())
        needle = tok.decode(ids[r.needle_start : r.answer_start].tolist())
        assert "".join(answer.split()) == r.number and r.number in "".join(needle.split())
    written = (~probes.book).sum(1)
    assert torch.equal(probes.ids[probes.book], book[probes.book])  # the rest is the book
    assert (written > 0).all() and (written <= 4 * 2 * query_tokens(tok)).all()
    again = build_probes(tok, book, (128, 256), per_length=2, seed=5)
    assert torch.equal(again.ids, probes.ids) and again.table.equals(t)
    other = build_probes(tok, book, (128, 256), per_length=2, seed=6)
    assert not other.table["number"].equals(t["number"])
    with pytest.raises(ValueError, match="no room"):
        build_probes(tok, book[:, :64], (40, 64), per_length=2, seed=0)


def test_scoring_counts_a_probe_right_only_when_every_digit_is(digit_tokenizer):
    book = torch.randint(2, 300, (1, 128), generator=torch.Generator().manual_seed(1))
    probes = build_probes(digit_tokenizer, book, (128,), per_length=2, seed=0)
    ids = probes.ids[0]
    vocab = len(digit_tokenizer)

    def perfect(pos):
        return torch.nn.functional.one_hot(ids[pos], vocab).float() * 50

    t = score_probes(probes.table, ids, perfect)
    assert t["correct"].all() and t["first_digit"].all() and (t["answer_nll"] < 1e-6).all()
    last = int(probes.table["answer_start"].iloc[0] + probes.table["answer_tokens"].iloc[0] - 1)

    def one_wrong(pos):
        out = perfect(pos)
        out[pos == last] = out[pos == last].roll(1, -1)  # the last digit of the first probe
        return out

    t = score_probes(probes.table, ids, one_wrong)
    assert list(t["correct"]) == [False, True] and t["first_digit"].all()
    assert t["answer_nll"].iloc[0] > 40


def test_band_rows_lie_in_the_band():
    rows = band_rows((64, 128), 8)
    assert all(n // 2 <= r.min() and r.max() < n and len(r) == 8 for n, r in rows.items())
    assert len(band_rows((16,), 100)[16]) == 8


# ---- one forward ---------------------------------------------------------------------------------


def _ids(llama, text, n=128):
    return llama.tokenizer(text[5000:20000], return_tensors="pt").input_ids[:, :n]


def test_baseline_forward_is_the_model_and_its_entropy_the_eager_maps(llama, text):
    model, ids = llama.model, _ids(llama, text)
    res = run_forward(model, ids, "softmax", {}, LENGTHS, rows=4)
    with torch.no_grad():
        out = model(ids, output_attentions=True)
    want = torch.nn.functional.cross_entropy(out.logits[0, :-1], ids[0, 1:], reduction="none")
    torch.testing.assert_close(res.nll, want, rtol=1e-5, atol=1e-5)
    pos = torch.tensor([10, 100])
    torch.testing.assert_close(res.logits_at(pos), out.logits[0, pos - 1])
    rows = band_rows(LENGTHS, 4)
    for (layer, length), df in res.heads.groupby(["layer", "length"]):
        w = out.attentions[layer][0][:, rows[length]]  # eager softmax maps (H, R, L)
        H = -torch.special.xlogy(w, w).sum(-1).mean(-1)
        np.testing.assert_allclose(df.sort_values("head")["entropy"], H.numpy(), atol=1e-4)
        np.testing.assert_allclose(df["mass"], 1.0, atol=1e-5)
    assert model.config._attn_implementation == "eager"  # restored


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("logn", {"train_length": 16}),
        ("topk", {"k": 4}),
        ("softmax1", {}),
        ("sink_softmax", {"sink": [0.5, -1.0, 2.0, 0.0]}),  # one per query head
    ],
)
def test_swapped_forward_is_the_patched_model_and_one_forward_serves_every_length(
    llama, text, name, params
):
    model, ids = llama.model, _ids(llama, text)
    res = run_forward(model, ids, name, params, LENGTHS, rows=4)
    with torch.no_grad(), patch(model, name, **params):
        logits = model(ids).logits[0]
    want = torch.nn.functional.cross_entropy(logits[:-1], ids[0, 1:], reduction="none")
    torch.testing.assert_close(res.nll, want, rtol=1e-4, atol=1e-4)
    short = run_forward(model, ids[:, :64], name, params, (64,), rows=4)
    torch.testing.assert_close(short.nll, res.nll[:63], rtol=1e-4, atol=1e-4)  # causal
    both = res.heads[res.heads["length"] == 64].reset_index(drop=True)
    pd.testing.assert_frame_equal(both, short.heads, atol=1e-4)
    if name in ("softmax1", "sink_softmax"):
        assert (res.heads["mass"] < 1).all()


def test_token_rows_are_the_weights_each_normaliser_applies_to_the_sampled_rows(llama, text):
    """The token view's rows: under softmax every weight of each sampled row is the eager map's
    (whole rows at L <= 256); under topk:k=4 each row keeps its 4 nonzero weights among its
    top 8; one forward of 128 tokens gives L = 64 the rows a 64-token forward gives it."""
    from attnlimits.capture.token_rows import TOKEN_ROWS
    from attnlimits.capture.token_rows import band_rows as token_band

    model, ids = llama.model, _ids(llama, text)
    res = run_forward(model, ids, "softmax", {}, LENGTHS, rows=4, token_rows=True)
    with torch.no_grad():
        maps = model(ids, output_attentions=True).attentions
    rows = res.rows
    assert set(rows.groupby(["layer", "head", "length"])["row"].nunique()) == {TOKEN_ROWS}
    for (layer, length, head, row), at in rows.groupby(["layer", "length", "head", "row"]):
        assert row in token_band(length // 2, length).tolist()
        want = maps[layer][0, head, row, : row + 1].numpy()  # a causal row: keys 0 … row
        assert at["key"].tolist() == list(range(row + 1))
        np.testing.assert_allclose(at["weight"], want, atol=1e-5)
        assert at["rank"].min() == 1 and (at["keys"] == row + 1).all()
    short = run_forward(model, ids[:, :64], "softmax", {}, (64,), rows=4, token_rows=True)
    pd.testing.assert_frame_equal(
        rows[rows["length"] == 64].reset_index(drop=True), short.rows, atol=1e-5
    )
    top = run_forward(model, ids, "topk", {"k": 4}, LENGTHS, rows=4, token_rows=True).rows
    nonzero = top[top["weight"] > 0].groupby(["layer", "head", "length", "row"])
    assert set(nonzero.size()) == {4} and (nonzero["rank"].max() <= 4).all()
    assert run_forward(model, ids, "softmax", {}, LENGTHS, rows=4).rows.empty  # not asked


# ---- effects, end to end -----------------------------------------------------------------------


def test_effects_rule():
    base = {"normalizer": "softmax", "delta_nll": 0.0, "delta_nll_sd": 0.0, "accuracy": 0.5,
            "accuracy_se": 0.1, "perplexity_change": 0.0, "sequences": 4}  # fmt: skip
    rows = [
        base | {"length": 1},
        base | {"length": 2},
        base | {"normalizer": "a", "length": 1, "delta_nll": -0.1, "delta_nll_sd": 0.02,
                "perplexity_change": np.expm1(-0.1), "accuracy": 0.95, "accuracy_se": 0.05},
        base | {"normalizer": "a", "length": 2, "delta_nll": 0.1, "delta_nll_sd": 0.5,
                "perplexity_change": np.expm1(0.1), "accuracy": 0.1, "accuracy_se": 0.05},
        base | {"normalizer": "b", "length": 1, "delta_nll": 0.1, "delta_nll_sd": float("nan"),
                "perplexity_change": 0.1, "sequences": 1},
    ]  # fmt: skip
    e = effects(pd.DataFrame(rows)).set_index(["normalizer", "length"])
    assert e.loc[("a", 1), "ppl_effect"] == "better"
    assert e.loc[("a", 1), "retrieval_effect"] == "better"
    assert e.loc[("a", 2), "ppl_effect"] == "inconclusive"
    assert e.loc[("a", 2), "retrieval_effect"] == "worse"
    assert e.loc[("b", 1), "ppl_effect"] == "not testable"


def test_compare_runs_end_to_end_resumes_and_redraws(model_dirs, tmp_path, monkeypatch):
    cfg = Config(
        model=str(model_dirs["llama"]), normalizers=("adaptive", "topk:k=8"), lengths=LENGTHS,
        sequences=2, probes_per_length=1, rows=4,
    )  # fmt: skip
    out = tmp_path / "run"
    skeleton.run(EXPERIMENT, cfg, out, progress=False)
    summary = pd.read_parquet(out / "tables" / "summary.parquet")
    assert list(summary["normalizer"].unique()) == ["softmax", "adaptive", "topk:k=8"]
    assert len(summary) == 3 * 2 and (summary["sequences"] == 2).all()
    assert (summary.loc[summary["normalizer"] == "softmax", "perplexity_change"] == 0).all()
    assert summary["probes"].eq(2).all() and summary["accuracy"].between(0, 1).all()
    heads = pd.read_parquet(out / "tables" / "heads.parquet")
    assert len(heads) == 3 * 2 * 4 * 2  # normalisers × layers × heads × lengths
    report = (out / "report.md").read_text()
    assert "adaptive swapped into" in report and "## Differences" in report
    assert "## Effects per normaliser" in report and "| topk:k=8 |" in report
    for name in ("perplexity", "retrieval", "entropy", "cost"):
        assert (out / "figures" / f"{name}.png").stat().st_size > 0
    rows = pd.read_parquet(out / "tables" / "attention_rows.parquet")  # the token view's
    tokens = pd.read_parquet(out / "tables" / "tokens.parquet")
    assert list(rows["normalizer"].unique()) == ["softmax", "adaptive", "topk:k=8"]
    assert rows.groupby(["normalizer", "layer", "head", "length"])["row"].nunique().eq(4).all()
    assert (rows["sequence"] == 0).all() and len(tokens) == max(LENGTHS)
    assert "COMPARE_TOKENS" in (out / "report.html").read_text(encoding="utf-8")

    def boom(*args, **kwargs):
        raise AssertionError("a resumed run recomputes nothing")

    monkeypatch.setattr(compare_compute, "run_forward", boom)
    skeleton.run(EXPERIMENT, cfg, out, progress=False)
    again = pd.read_parquet(out / "tables" / "summary.parquet")
    pd.testing.assert_frame_equal(summary.drop(columns="seconds_per_forward"),
                                  again.drop(columns="seconds_per_forward"))  # fmt: skip
    skeleton.redraw(out)


def test_encoders_and_short_lengths_are_refused_before_work(model_dirs, tmp_path):
    cfg = Config(model=str(model_dirs["bert"]), lengths=LENGTHS, sequences=1)
    with pytest.raises(ValueError, match="not a causal language model"):
        skeleton.run(EXPERIMENT, cfg, tmp_path / "bert", progress=False)
    assert not (tmp_path / "bert").exists()
    cfg = Config(model=str(model_dirs["llama"]), lengths=(32, 64), probes_per_length=2)
    with pytest.raises(ValueError, match="too short for 2 retrieval probe"):
        skeleton.run(EXPERIMENT, cfg, tmp_path / "short", progress=False)
    with pytest.raises(ValueError, match="exceeds"):
        skeleton.run(
            EXPERIMENT, Config(model=str(model_dirs["llama"]), lengths=(256,), sequences=1),
            tmp_path / "long", progress=False,
        )  # fmt: skip


def test_a_tokenizer_that_cannot_write_numbers_is_refused_before_the_weights_load(
    tmp_path, text, monkeypatch
):
    """The probe's answer is a 5-digit number: a tokenizer that maps numbers to [UNK] is
    refused in one line saying what the probe needs, before the model's weights load (it
    was "the tokenizer does not end '...' with the number and a period", after loading)."""
    import transformers

    words = tiny_model_dir(tmp_path, "llama", text[:100_000], max_positions=128)  # no digits
    loaded: list[str] = []

    def weights(*args, **kwargs):
        loaded.append(str(args[0]))
        raise AssertionError("the weights loaded before the tokenizer was checked")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", weights)
    cfg = Config(model=str(words), lengths=LENGTHS, sequences=1, probes_per_length=1)
    with pytest.raises(ValueError) as err:
        skeleton.run(EXPERIMENT, cfg, tmp_path / "run", progress=False)
    message = str(err.value)
    assert message.startswith(f"{words}: the tokenizer does not write the number ")
    assert "needs a tokenizer that splits numbers into digits" in message
    assert "\n" not in message and loaded == []
    assert not (tmp_path / "run").exists()


def test_query_fits_the_quick_lengths(digit_tokenizer):
    assert 2 * 2 * query_tokens(digit_tokenizer) <= min(Config.quick().lengths)


def test_cli_refuses_bad_specs_in_one_line(tmp_path):
    runner = CliRunner()
    for spec, words in (("nosuch", "unknown normalizer"), ("topk:k=0", "k must be")):
        res = runner.invoke(app, ["compare", "--normalizers", spec, "--out", str(tmp_path / "x")])
        assert res.exit_code == 2 and words in res.output, res.output
        assert not (tmp_path / "x").exists()


def test_cli_compares_past_the_context_with_a_one_line_warning(model_dirs, tmp_path, book_path):
    out = tmp_path / "beyond"
    args = ["compare", "--model", str(model_dirs["llama"]), "--text", str(book_path),
            "--normalizers", "logn:train_length=64", "--lengths", "64,256", "--sequences", "1",
            "--probes-per-length", "1", "--beyond-context", "--out", str(out)]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    warning = [line for line in res.output.splitlines() if line.startswith("warning:")]
    assert warning == [
        f"warning: L = 256 exceeds {model_dirs['llama']}'s context of 128 tokens: going past "
        "it as asked (--beyond-context)"
    ]
    assert "UserWarning" not in res.output and (out / "report.md").is_file()
