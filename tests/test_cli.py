"""Bad input at the command line: exit code 2, one line naming the problem, nothing left on disk.

Every case here is also a row of docs/reliability.md; ``test_reliability_doc_is_current`` renders
the table from what the commands print now and fails (showing the new table) when the two drift.
Each case runs once (``results``), in an empty working folder, with its own cache folder; after
it, ``--out``, the working folder, the cache and every scratch file must be as they were.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner

from attnlimits.cli import app
from attnlimits.experiments import budget
from cli_cases import Result, error_message
from conftest import REPO
from tiny_models import LLAMA_GGUF_TENSORS, tiny_gguf, tiny_llama_gguf, tiny_model_dir

runner = CliRunner()
DOC = REPO / "docs" / "reliability.md"

LIM = ["reproduce", "limitations"]
SNE = ["reproduce", "softmax-not-enough"]
LC = ["demo", "long-context"]
SCAN = ["scan"]
CMP = ["compare"]

# (what a user tried, argv with {MODEL} {DIGITS} {BERT} {BOOK} {OUT} {TMP} placeholders, setup)
CASES: list[tuple[str, list[str], str | None]] = [
    ("an unknown device", [*LIM, "--device", "tpu", "--out", "{OUT}"], None),
    ("CUDA on a machine without it", [*LIM, "--device", "cuda", "--out", "{OUT}"], "no_cuda"),
    ("a temperature that is NaN", [*LIM, "--temperatures", "nan,1", "--out", "{OUT}"], None),
    ("a temperature that is infinite", [*LIM, "--temperatures", "inf", "--out", "{OUT}"], None),
    ("a temperature ≤ 0", [*LIM, "--temperatures", "0,1", "--out", "{OUT}"], None),
    ("N = 0", [*LIM, "--n", "0", "--out", "{OUT}"], None),
    ("N not below every L", [*LIM, "--n", "64", "--lengths", "32,64", "--out", "{OUT}"], None),
    ("lengths that are not numbers", [*LIM, "--lengths", "a,b", "--out", "{OUT}"], None),
    ("a length that is not a whole number", [*LIM, "--lengths", "64.5", "--out", "{OUT}"], None),
    ("a length of 1", [*LIM, "--lengths", "1", "--n", "1", "--out", "{OUT}"], None),
    ("an empty list of lengths", [*LIM, "--lengths", ",", "--out", "{OUT}"], None),
    ("zero windows", [*LIM, "--windows", "0", "--out", "{OUT}"], None),
    ("an unknown x source", [*LIM, "--x-source", "queries", "--out", "{OUT}"], None),
    ("an unknown window placement", [*LIM, "--placement", "middle", "--out", "{OUT}"], None),
    ("one Monte Carlo draw per row", [*LIM, "--mc-samples", "1", "--out", "{OUT}"], None),
    ("two models, the second a folder that does not exist", [*LIM, "--model", "{MODEL}", "--model", "{TMP}/no-model", "--out", "{OUT}"], None),
    ("two models, the second a truncated GGUF (before either runs)", [*LIM, "--model", "{MODEL}", "--model", "{TMP}/data-cut.gguf", "--out", "{OUT}"], None),
    ("two models, the first with L beyond its context", [*LIM, "--model", "{MODEL}", "--model", "no-org/no-model", "--text", "{BOOK}", "--out", "{OUT}"], None),
    ("two models and a device that is not there (before either is named)", [*LIM, "--model", "{MODEL}", "--model", "{BERT}", "--device", "tpu", "--out", "{OUT}"], None),
    ("a model folder that does not exist", [*LIM, "--model", "{TMP}/no-model", "--out", "{OUT}"], None),
    ("an empty model name", [*LIM, "--model", "", "--out", "{OUT}"], None),
    ("an unknown hub id, offline", [*LIM, "--model", "no-org/no-model", "--out", "{OUT}"], "offline"),
    ("a misspelt named model, offline", [*LIM, "--model", "smollm2", "--out", "{OUT}"], "offline"),
    ("a model folder whose safetensors header is garbage", [*LIM, "--model", "{TMP}/bad-header", "--quick", "--out", "{OUT}"], None),
    ("a text file that does not exist", [*LIM, "--model", "{MODEL}", "--text", "{TMP}/none.txt", "--quick", "--out", "{OUT}"], None),
    ("a text file that is not UTF-8", [*LIM, "--model", "{MODEL}", "--text", "{TMP}/latin1.txt", "--quick", "--out", "{OUT}"], None),
    ("a text too short for the windows", [*LIM, "--model", "{MODEL}", "--text", "{TMP}/short.txt", "--quick", "--out", "{OUT}"], None),
    ("a folder as the text", [*LIM, "--model", "{MODEL}", "--text", "{TMP}", "--quick", "--out", "{OUT}"], None),
    ("an empty --text", [*LIM, "--text", "", "--out", "{OUT}"], None),
    ("L beyond the model's context", [*LIM, "--model", "{MODEL}", "--text", "{BOOK}", "--lengths", "512", "--out", "{OUT}"], None),
    ("an output folder that cannot be written", [*LIM, "--model", "{MODEL}", "--quick", "--out", "{TMP}/file/sub"], None),
    ("a temperature given twice", [*LIM, "--temperatures", "1,1", "--out", "{OUT}"], None),
    ("an x source given twice", [*LIM, "--x-source", "values", "--x-source", "values", "--out", "{OUT}"], None),
    ("one model given twice", [*LIM, "--model", "{MODEL}", "--model", "{MODEL}", "--out", "{OUT}"], None),
    ("one length written two ways", [*LIM, "--lengths", "32,032", "--out", "{OUT}"], None),
    ("a count that is not a number", [*LIM, "--windows", "abc", "--out", "{OUT}"], None),
    ("N given as nan", [*LIM, "--n", "nan", "--out", "{OUT}"], None),
    ("an option without its value", [*LIM, "--out", "{OUT}", "--windows"], None),
    ("a value without its option", [*LIM, "4", "--out", "{OUT}"], None),
    ("a flag given a value", [*LIM, "--quick=3", "--out", "{OUT}"], None),
    ("one seed for a paired t-test", [*SNE, "--seeds", "1", "--out", "{OUT}"], None),
    ("seeds as a word", [*SNE, "--seeds", "two", "--out", "{OUT}"], None),
    ("an unknown normaliser", [*SNE, "--normalizers", "softmax,bogus", "--out", "{OUT}"], None),
    ("a normaliser given twice", [*SNE, "--normalizers", "softmax,softmax", "--out", "{OUT}"], None),
    ("'all' with other names", [*SNE, "--normalizers", "all,softmax", "--out", "{OUT}"], None),
    ("normalisers without the softmax baseline", [*SNE, "--normalizers", "adaptive", "--out", "{OUT}"], None),
    ("an empty list of normalisers", [*SNE, "--normalizers", "", "--out", "{OUT}"], None),
    ("an unknown model variant", [*SNE, "--model-variant", "flax", "--out", "{OUT}"], None),
    ("an unknown LR schedule", [*SNE, "--schedule", "linear", "--out", "{OUT}"], None),
    ("an unknown regulariser", [*SNE, "--regularizer", "l1", "--out", "{OUT}"], None),
    ("a device name in capitals", [*SNE, "--device", "CPU", "--out", "{OUT}"], None),
    ("zero training steps", [*SNE, "--steps", "0", "--out", "{OUT}"], None),
    ("training steps as a fraction", [*SNE, "--steps", "1.5", "--out", "{OUT}"], None),
    ("zero prompts", [*LC, "--prompts", "0", "--out", "{OUT}"], None),
    ("prompts as a fraction", [*LC, "--prompts", "1.5", "--out", "{OUT}"], None),
    ("an empty model name (demo)", [*LC, "--model", "", "--out", "{OUT}"], None),
    ("demo: a model folder that does not exist", [*LC, "--model", "{TMP}/no-model", "--quick", "--out", "{OUT}"], None),
    ("demo: an encoder, which cannot generate", [*LC, "--model", "{BERT}", "--quick", "--out", "{OUT}"], None),
    ("scan: no MODEL", [*SCAN, "--out", "{OUT}"], None),
    ("scan: two MODELs", [*SCAN, "{MODEL}", "{MODEL}", "--out", "{OUT}"], None),
    ("scan: an empty MODEL", [*SCAN, "", "--out", "{OUT}"], None),
    ("scan: an unknown option (no far-fetched suggestion)", [*SCAN, "{MODEL}", "--bogus", "--out", "{OUT}"], None),
    ("scan: an empty number", [*SCAN, "{MODEL}", "--rows", "", "--out", "{OUT}"], None),
    ("scan: lengths below 4", [*SCAN, "{MODEL}", "--lengths", "2,8", "--out", "{OUT}"], None),
    ("scan: a length given twice (was dropped silently)", [*SCAN, "{MODEL}", "--lengths", "64,64", "--out", "{OUT}"], None),
    ("scan: one sampled row", [*SCAN, "{MODEL}", "--rows", "1", "--out", "{OUT}"], None),
    ("scan: negative windows", [*SCAN, "{MODEL}", "--windows", "-1", "--out", "{OUT}"], None),
    ("scan: an unknown device", [*SCAN, "{MODEL}", "--device", "tpu", "--out", "{OUT}"], None),
    ("scan: a model folder that does not exist", [*SCAN, "{TMP}/no-model", "--out", "{OUT}"], None),
    ("scan: a failed run with the default --out (leaves no results/ behind)", [*SCAN, "{TMP}/not-a-model"], None),
    ("scan: a folder that is not a model", [*SCAN, "{TMP}/not-a-model", "--out", "{OUT}"], None),
    ("scan: a text file as the model", [*SCAN, "{TMP}/short.txt", "--out", "{OUT}"], None),
    ("scan: a model folder with a truncated model.safetensors", [*SCAN, "{TMP}/cut-weights", "--text", "{BOOK}", "--lengths", "64", "--out", "{OUT}"], None),
    ("scan: a model folder whose config.json is not JSON", [*SCAN, "{TMP}/bad-config", "--text", "{BOOK}", "--lengths", "64", "--out", "{OUT}"], None),
    ("scan: a GGUF cut inside its header", [*SCAN, "{TMP}/head-cut.gguf", "--out", "{OUT}"], None),
    ("scan: a GGUF cut inside its tensor data", [*SCAN, "{TMP}/data-cut.gguf", "--out", "{OUT}"], None),
    ("scan: a text file named .gguf", [*SCAN, "{TMP}/text.gguf", "--out", "{OUT}"], None),
    ("scan: a model folder missing a tensor (was filled at random, exit 0)", [*SCAN, "{TMP}/missing-tensor", "--text", "{BOOK}", "--lengths", "64", "--out", "{OUT}"], None),
    ("scan: a model folder with a tensor of another shape", [*SCAN, "{TMP}/reshaped-tensor", "--text", "{BOOK}", "--lengths", "64", "--out", "{OUT}"], None),
    ("scan: a GGUF lacking a tensor", [*SCAN, "{TMP}/lacking.gguf", "--text", "{BOOK}", "--lengths", "32", "--out", "{OUT}"], None),
    ("compare: a model folder with a tensor it does not use", [*CMP, "--model", "{TMP}/unexpected-tensor", "--text", "{BOOK}", "--lengths", "64", "--out", "{OUT}"], None),
    ("scan: a pytorch_model.bin holding more than tensors (was a 67-line traceback advising weights_only=False)", [*SCAN, "{TMP}/pickled", "--text", "{BOOK}", "--lengths", "64", "--out", "{OUT}"], None),
    ("scan: a tokenizer.json without added_tokens (was a KeyError traceback)", [*SCAN, "{TMP}/no-added-tokens", "--text", "{BOOK}", "--lengths", "64", "--out", "{OUT}"], None),
    ("scan: a tokenizer.json that is not JSON (named no file)", [*SCAN, "{TMP}/bad-tokenizer", "--text", "{BOOK}", "--lengths", "64", "--out", "{OUT}"], None),
    ("scan: num_attention_heads 0 (was a ZeroDivisionError traceback)", [*SCAN, "{TMP}/zero-heads", "--text", "{BOOK}", "--lengths", "64", "--out", "{OUT}"], None),
    ("scan: num_attention_heads \"4\", a string (was a validation traceback)", [*SCAN, "{TMP}/string-heads", "--text", "{BOOK}", "--lengths", "64", "--out", "{OUT}"], None),
    ("scan: a GGUF with no tensors (was 6 lines)", [*SCAN, "{TMP}/no-tensors.gguf", "--out", "{OUT}"], None),
    ("scan: a 2 GB text (was killed for memory at 20 GB after 4 min)", [*SCAN, "{MODEL}", "--text", "{TMP}/huge.txt", "--out", "{OUT}"], None),
    ("scan: a UTF-16 text (was told iconv -f latin1)", [*SCAN, "{MODEL}", "--text", "{TMP}/utf16.txt", "--lengths", "64", "--out", "{OUT}"], None),
    ("scan: a text of 30 MB of spaces and a few words", [*SCAN, "{MODEL}", "--text", "{TMP}/spaces.txt", "--lengths", "64", "--windows", "2", "--out", "{OUT}"], None),
    ("scan: a text too short for the windows (before the model loads)", [*SCAN, "{TMP}/no-model", "--text", "{TMP}/short.txt", "--out", "{OUT}"], None),
    ("scan: a FIFO as the text (would block)", [*SCAN, "{MODEL}", "--text", "{TMP}/fifo", "--out", "{OUT}"], None),
    ("scan: an empty text file", [*SCAN, "{MODEL}", "--text", "{TMP}/empty.txt", "--out", "{OUT}"], None),
    ("scan: L beyond the model's context", [*SCAN, "{MODEL}", "--text", "{BOOK}", "--lengths", "512", "--out", "{OUT}"], None),
    ("compare: an unknown normaliser", [*CMP, "--normalizers", "softmax,bogus", "--out", "{OUT}"], None),
    ("compare: a parameter the normaliser refuses", [*CMP, "--normalizers", "topk:k=0", "--out", "{OUT}"], None),
    ("compare: a parameter without a value", [*CMP, "--normalizers", "topk:k", "--out", "{OUT}"], None),
    ("compare: a parameter that is NaN", [*CMP, "--normalizers", "ssmax:s=nan", "--out", "{OUT}"], None),
    ("compare: a parameter that is not a number", [*CMP, "--normalizers", "ssmax:s=abc", "--out", "{OUT}"], None),
    ("compare: a parameter too small (echoed as typed)", [*CMP, "--normalizers", "logn:train_length=0", "--out", "{OUT}"], None),
    ("compare: a fractional parameter that must be whole", [*CMP, "--normalizers", "topk:k=2.5", "--out", "{OUT}"], None),
    ("compare: a parameter the normaliser does not have", [*CMP, "--normalizers", "topk:bogus=1", "--out", "{OUT}"], None),
    ("compare: a parameter on a normaliser without any", [*CMP, "--normalizers", "softmax1:x=1", "--out", "{OUT}"], None),
    ("compare: a parameter given twice", [*CMP, "--normalizers", "topk:k=4;k=5", "--out", "{OUT}"], None),
    ("compare: a spec without a name", [*CMP, "--normalizers", ":k=4", "--out", "{OUT}"], None),
    ("compare: a temperature on the baseline", [*CMP, "--normalizers", "softmax:temperature=2", "--out", "{OUT}"], None),
    ("compare: only commas as normalisers", [*CMP, "--normalizers", ",", "--out", "{OUT}"], None),
    ("compare: a normaliser given twice", [*CMP, "--normalizers", "adaptive,adaptive", "--out", "{OUT}"], None),
    ("compare: one spec written two ways", [*CMP, "--normalizers", "topk:k=4,topk: k=4", "--out", "{OUT}"], None),
    ("compare: one sink per head, for the wrong number of heads (before any forward)", [*CMP, "--model", "{DIGITS}", "--text", "{BOOK}", "--lengths", "64", "--probes-per-length", "1", "--normalizers", "sink_softmax:sink=[1,2,3]", "--out", "{OUT}"], None),
    ("compare: a misspelt option", [*CMP, "--sequence", "3", "--out", "{OUT}"], None),
    ("compare: a fractional count", [*CMP, "--sequences", "2.5", "--out", "{OUT}"], None),
    ("compare: zero sequences", [*CMP, "--sequences", "0", "--out", "{OUT}"], None),
    ("compare: no retrieval probes (the tables need them)", [*CMP, "--probes-per-length", "0", "--out", "{OUT}"], None),
    ("compare: a train length of 1", [*CMP, "--train-length", "1", "--out", "{OUT}"], None),
    ("compare: a length below 16", [*CMP, "--lengths", "8", "--out", "{OUT}"], None),
    ("compare: an encoder model", [*CMP, "--model", "{BERT}", "--text", "{BOOK}", "--lengths", "64", "--probes-per-length", "1", "--out", "{OUT}"], None),
    ("compare: a .gguf file that is not GGUF", [*CMP, "--model", "{TMP}/text.gguf", "--out", "{OUT}"], None),
    ("compare: a device as the text", [*CMP, "--model", "{MODEL}", "--text", "/dev/zero", "--out", "{OUT}"], None),
    ("compare: L beyond the model's context", [*CMP, "--model", "{DIGITS}", "--text", "{BOOK}", "--lengths", "512", "--out", "{OUT}"], None),
    ("compare: lengths too short for the probes", [*CMP, "--model", "{DIGITS}", "--text", "{BOOK}", "--lengths", "32,64", "--out", "{OUT}"], None),
    ("compare: a tokenizer that does not split numbers (before the weights load)", [*CMP, "--model", "{MODEL}", "--text", "{BOOK}", "--lengths", "64", "--probes-per-length", "1", "--out", "{OUT}"], None),
    ("scan: a cache folder that is a file (before the GGUF is read)", [*SCAN, "{TMP}/tiny.gguf", "--out", "{OUT}"], "cache_is_file"),
    ("scan: $ATTNLIMITS_TEXT a one-byte file (not called War and Peace)", [*SCAN, "{MODEL}", "--out", "{OUT}"], "one_byte_text"),
    ("a report of a folder without a run", ["report", "{TMP}"], None),
    ("report: no FOLDER", ["report"], None),
    ("sweep: no SPEC", ["sweep", "--out", "{OUT}"], None),
    ("sweep: a spec file that does not exist", ["sweep", "{TMP}/none.toml", "--out", "{OUT}"], None),
    ("sweep: an unknown backend", ["sweep", "{TMP}/none.toml", "--backend", "dask", "--out", "{OUT}"], None),
    ("sweep: a folder as the spec", ["sweep", "{TMP}", "--out", "{OUT}"], None),
    ("sweep: a FIFO as the spec (would block)", ["sweep", "{TMP}/fifo", "--out", "{OUT}"], None),
    ("sweep: a spec that is not TOML", ["sweep", "{TMP}/broken.toml", "--out", "{OUT}"], None),
    ("sweep: an unknown experiment", ["sweep", "{TMP}/unknown.toml", "--out", "{OUT}"], None),
    ("sweep: an unknown setting", ["sweep", "{TMP}/bogus-setting.toml", "--out", "{OUT}"], None),
    ("sweep: an axis that repeats a value", ["sweep", "{TMP}/axis-twice.toml", "--out", "{OUT}"], None),
    ("sweep: a list setting that repeats a value", ["sweep", "{TMP}/length-twice.toml", "--out", "{OUT}"], None),
    ("sweep: a YAML spec with a key given twice (the later one won)", ["sweep", "{TMP}/key-twice.yaml", "--out", "{OUT}"], None),
    ("sweep: a TOML spec with a key given twice", ["sweep", "{TMP}/key-twice.toml", "--out", "{OUT}"], None),
    ("sweep: a recursive YAML alias (was a RecursionError)", ["sweep", "{TMP}/recursive.yaml", "--out", "{OUT}"], None),
    ("sweep: lists nested 5,000 deep (was a RecursionError)", ["sweep", "{TMP}/deep.toml", "--out", "{OUT}"], None),
    ("sweep: a 500-byte \"billion laughs\" YAML (hung, memory growing)", ["sweep", "{TMP}/laughs.yaml", "--out", "{OUT}"], None),
    ("sweep: a grid of 1,000 × 1,000 cells, even with --yes (hung building them)", ["sweep", "{TMP}/million.toml", "--yes", "--out", "{OUT}"], None),
    ("--fresh into a folder of the user's files", [*LIM, "--fresh", "--out", "{OUT}"], "users_files"),
    ("an empty --out", [*LIM, "--out", ""], None),
    ("report of a run whose tables/ is empty", ["report", "{OUT}"], "empty_tables"),
    ("report of a run whose run.json is cut short", ["report", "{OUT}"], "cut_run_json"),
    ("a billion windows (16 GB free)", [*LIM, "--windows", "1000000000", "--quick", "--out", "{OUT}"], None),
    ("a million seeds (16 GB free)", [*SNE, "--seeds", "1000000", "--quick", "--out", "{OUT}"], None),
    ("a billion sampled rows (16 GB free)", [*SCAN, "smollm2-135m", "--rows", "1000000000", "--quick", "--out", "{OUT}"], None),
    ("a billion Monte Carlo draws (16 GB free)", [*LIM, "--mc-samples", "1000000000", "--quick", "--out", "{OUT}"], None),
    ("a billion prompts (16 GB free)", [*LC, "--prompts", "1000000000", "--quick", "--out", "{OUT}"], None),
    ("a billion probes per length (16 GB free)", [*CMP, "--probes-per-length", "1000000000", "--quick", "--out", "{OUT}"], None),
    ("lengths of a million tokens (16 GB free)", [*SCAN, "smollm2-135m", "--lengths", "1000000", "--beyond-context", "--quick", "--out", "{OUT}"], None),
    ("2,000 quick windows, over an hour, without --yes", [*LIM, "--model", "smollm2-135m", "--windows", "2000", "--quick", "--out", "{OUT}"], None),
    ("sweep: 10,000 cells without --yes", ["sweep", "{TMP}/ten-thousand.toml", "--out", "{OUT}"], None),
    ("sweep: --address with the serial backend (was ignored)", ["sweep", "{TMP}/ten-thousand.toml", "--address", "ray://head:10001", "--out", "{OUT}"], None),
    ("an unknown command", ["bogus"], None),
    ("reproduce without an experiment", ["reproduce"], None),
    ("an unknown experiment", ["reproduce", "bogus"], None),
    ("demo without a demo", ["demo"], None),
]  # fmt: skip

SPECS = {
    "broken.toml": 'experiment = "scan"\n[fixed\n',
    "unknown.toml": 'experiment = "scann"\n',
    "bogus-setting.toml": 'experiment = "scan"\n[fixed]\nbogus = 1\n',
    "axis-twice.toml": 'experiment = "scan"\n[axes]\nwindows = [1, 1]\n',
    "length-twice.toml": 'experiment = "scan"\n[fixed]\nlengths = [64, 64]\n',
    "ten-thousand.toml": 'experiment = "scan"\nquick = true\n[axes]\n'
    f"seed = {list(range(100))}\nrows = {list(range(2, 102))}\n",
    "key-twice.yaml": "experiment: compare\nquick: true\nexperiment: scan\n",
    "key-twice.toml": 'experiment = "scan"\n[fixed]\nwindows = 1\nwindows = 2\n',
    "recursive.yaml": "experiment: scan\naxes: &axes {seed: *axes}\n",
    "deep.toml": 'experiment = "scan"\n[axes]\nseed = ' + "[" * 5000 + "]" * 5000 + "\n",
    "laughs.yaml": "experiment: scan\nfixed:\n  l0: &l0 ["
    + ",".join(["lol"] * 9)
    + "]\n"
    + "".join(f"  l{k}: &l{k} [{','.join([f'*l{k - 1}'] * 9)}]\n" for k in range(1, 10)),
    "million.toml": 'experiment = "scan"\nquick = true\n[axes]\n'
    f"seed = {list(range(1000))}\nrows = {list(range(2, 1002))}\n",
}

#: Model folders whose weights do not fit the model: folder name -> edit of its tensors.
TENSORS = {
    "missing-tensor": lambda w: w.pop("model.layers.1.self_attn.k_proj.weight"),
    "reshaped-tensor": lambda w: w.update({"model.layers.0.mlp.up_proj.weight": torch.zeros(3, 3)}),
    "unexpected-tensor": lambda w: w.update({"model.layers.0.adapter.weight": torch.zeros(2)}),
}

#: What a case's ``setup`` puts into its --out before it runs (and must find there after).
OUT_FILES = {
    "users_files": {"report.md": "my notes\n", "figures/thesis.png": "my figure"},
    # a run folder keeps its lock file (report takes the lock)
    "empty_tables": {
        "run.json": '{"experiment": "limitations", "params": {}}',
        "tables/": "",
        ".attnlimits.lock": "",
    },
    "cut_run_json": {"run.json": "{\n", "tables/values.parquet": "", ".attnlimits.lock": ""},
}


@pytest.fixture(scope="module")
def env(tmp_path_factory, book_path) -> dict[str, str]:
    root = tmp_path_factory.mktemp("cli")
    text = book_path.read_text(encoding="utf-8")
    model = tiny_model_dir(root, "llama", text[:200_000], max_positions=256)
    bert = tiny_model_dir(root, "bert", text[:200_000], max_positions=256)
    digits = tiny_model_dir(root / "digits", "llama", text[:200_000], digits=True)
    (root / "latin1.txt").write_bytes("Pierre said: « déjà vu »\n".encode("latin-1") * 50)
    (root / "short.txt").write_text("BOOK ONE: 1805\n\n" + "the war " * 20)
    (root / "empty.txt").write_text("")
    (root / "file").write_text("")
    (root / "not-a-model").mkdir()
    os.mkfifo(root / "fifo")
    for name in ("cut-weights", "bad-header", "bad-config", *TENSORS):
        shutil.copytree(model, root / name)
    for name, change in TENSORS.items():  # weights that do not fit the model
        weights = load_file(root / name / "model.safetensors")
        change(weights)
        save_file(weights, root / name / "model.safetensors", metadata={"format": "pt"})
    _malformed_models(root, model)
    tiny_llama_gguf(root / "lacking.gguf", drop=("blk.1.attn_k.weight",))
    weights = root / "cut-weights" / "model.safetensors"
    os.truncate(weights, weights.stat().st_size // 2)
    (root / "bad-header" / "model.safetensors").write_bytes(struct.pack("<Q", 5) + b"{oops")
    (root / "bad-config" / "config.json").write_text("{not json")
    full = tiny_gguf(root / "head-cut.gguf", cut=30)
    tiny_gguf(root / "data-cut.gguf", cut=full - 10)
    (root / "text.gguf").write_text("not a GGUF file\n")
    tiny_gguf(root / "tiny.gguf")
    (root / "one-byte.txt").write_text("x")
    for name, spec in SPECS.items():
        (root / name).write_text(spec)
    return {"MODEL": str(model), "BERT": str(bert), "DIGITS": str(digits),
            "BOOK": str(book_path), "TMP": str(root)}  # fmt: skip


def _malformed_models(root: Path, model: Path) -> None:
    """Model folders whose files are malformed, a GGUF without tensors, and texts a scan
    refuses by their size or encoding (issue 58, items 4-6 and 10)."""
    import json

    import numpy as np

    edits = {
        "no-added-tokens": ("tokenizer.json", lambda d: d.pop("added_tokens")),
        "zero-heads": ("config.json", lambda d: d.update(num_attention_heads=0)),
        "string-heads": ("config.json", lambda d: d.update(num_attention_heads="4")),
    }
    for name, (file, edit) in edits.items():
        shutil.copytree(model, root / name)
        data = json.loads((root / name / file).read_text())
        edit(data)
        (root / name / file).write_text(json.dumps(data))
    shutil.copytree(model, root / "bad-tokenizer")
    (root / "bad-tokenizer" / "tokenizer.json").write_text('{"version": nope}')
    shutil.copytree(model, root / "pickled")
    weights = load_file(root / "pickled" / "model.safetensors")
    (root / "pickled" / "model.safetensors").unlink()
    torch.save({**weights, "extra": np.arange(3)}, root / "pickled" / "pytorch_model.bin")
    tiny_llama_gguf(root / "no-tensors.gguf", drop=LLAMA_GGUF_TENSORS)
    with open(root / "huge.txt", "wb") as f:  # sparse: 2 GB of NUL bytes, none on disk
        f.truncate(2 * 2**30)
    (root / "utf16.txt").write_bytes("Pierre said hello.\n".encode("utf-16") * 200)
    (root / "spaces.txt").write_text("word\n" + " " * 30_000_000 + "\nword\n")


def _argv(args: list[str], env: dict[str, str], out: Path) -> list[str]:
    subs = {**env, "OUT": str(out)}
    return [re.sub(r"\{(\w+)\}", lambda m: subs[m.group(1)], a) for a in args]


def _snapshot(*roots: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``roots``: a file with its size and modification time, a folder as
    there (its time moves when something was made in it and removed again: that is fine)."""
    found = {}
    for root in roots:
        for p in [root, *root.rglob("*")] if root.exists() else []:
            st = p.lstat()
            found[str(p)] = (-1, -1) if p.is_dir() else (st.st_size, st.st_mtime_ns)
    return found


def _invoke(args, setup, env, out: Path, scratch: Path) -> Result:
    """Run one case in an empty working folder with its own cache; say what changed on disk."""
    cwd, cache = scratch / "cwd", scratch / "cache"
    cwd.mkdir()
    for name, content in OUT_FILES.get(setup or "", {}).items():
        (out / name.rstrip("/") if name.endswith("/") else (out / name).parent).mkdir(
            parents=True, exist_ok=True
        )
        if not name.endswith("/"):
            (out / name).write_text(content)
    roots = (Path(env["TMP"]), cwd, cache, out)
    before = _snapshot(*roots)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(cwd)
        mp.setenv("ATTNLIMITS_CACHE_DIR", str(cache))
        mp.delenv("ATTNLIMITS_TRACEBACK", raising=False)  # the table shows the one line
        # the memory refusals name the machine's memory: the table shows a 16 GB machine
        mp.setattr(budget, "available_memory", lambda device="cpu": 16e9)
        if setup == "cache_is_file":
            mp.setenv("ATTNLIMITS_CACHE_DIR", str(Path(env["TMP"]) / "file"))
        if setup == "one_byte_text":
            mp.setenv("ATTNLIMITS_TEXT", str(Path(env["TMP"]) / "one-byte.txt"))
        if setup == "no_cuda":
            import torch

            mp.setattr(torch.cuda, "is_available", lambda: False)
        if setup == "offline":
            import huggingface_hub.constants as hf

            mp.setenv("HF_HUB_OFFLINE", "1")
            mp.setattr(hf, "HF_HUB_OFFLINE", True)
        res = runner.invoke(app, _argv(args, env, out))
    after = _snapshot(*roots)
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    return Result(res.exit_code, res.output, changed, out)


@pytest.fixture(scope="module")
def results(env, tmp_path_factory) -> dict[str, Result]:
    """Every case, run once."""
    ran = {}
    for what, args, setup in CASES:
        scratch = tmp_path_factory.mktemp("case")
        ran[what] = _invoke(args, setup, env, scratch / "out", scratch)
    return ran


def test_cases_are_distinct():
    assert len({c[0] for c in CASES}) == len(CASES)
    assert len({(tuple(c[1]), c[2]) for c in CASES}) == len(CASES)


@pytest.mark.parametrize("what", [c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2_and_leaves_nothing(what, results):
    res = results[what]
    assert res.code == 2, (what, res.output)
    assert "Traceback" not in res.output
    lines = res.output.strip().splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("error:")]
    assert len(errors) == 1, res.output
    after = lines[errors[0] + 1 :]  # at most a usage line
    assert after == [] or (len(after) == 1 and after[0].startswith("usage: attnlimits")), after
    assert not res.changed, f"{what}: a run that never started changed {res.changed}"


def test_reliability_doc_is_current(env, results):
    rows = ["| what was tried | command | exit | message |", "|---|---|---|---|"]
    for what, args, _ in CASES:
        res = results[what]
        cmd = " ".join(["attnlimits", *(a if a else "''" for a in args)]).replace("|", "\\|")
        msg = error_message(res, env).replace("|", "\\|")
        rows.append(f"| {what} | `{cmd}` | {res.code} | `{msg}` |")
    table = "\n".join(rows)
    doc = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    if os.environ.get("ATTNLIMITS_WRITE_DOCS"):
        start, end = "<!-- cases: start -->", "<!-- cases: end -->"
        head, _, rest = doc.partition(start)
        _, _, tail = rest.partition(end)
        DOC.write_text(f"{head}{start}\n{table}\n{end}{tail}", encoding="utf-8")
        doc = DOC.read_text(encoding="utf-8")
    stale = "docs/reliability.md is stale; rerun with ATTNLIMITS_WRITE_DOCS=1:\n"
    assert table in doc, stale + table


def test_quick_with_short_lengths_runs(env, tmp_path):
    """--quick fills its own N grids first; the user's --lengths win and the grids follow."""
    out = tmp_path / "out"
    argv = [*LIM, "--model", env["MODEL"], "--text", env["BOOK"], "--quick", "--lengths", "32,64"]
    res = runner.invoke(app, [*argv, "--x-source", "values", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert (out / "report.md").is_file()


def test_ctrl_c_says_what_was_saved(env, tmp_path, monkeypatch):
    from attnlimits.experiments import skeleton
    from attnlimits.experiments.store import ResultStore

    out = tmp_path / "out"

    def interrupted(experiment, config, folder, **kw):
        ResultStore(folder).save_part("x", {}, "k", __import__("pandas").DataFrame({"a": [1]}))
        raise KeyboardInterrupt

    monkeypatch.setattr(skeleton, "run", interrupted)
    res = runner.invoke(app, [*LIM, "--model", env["MODEL"], "--out", str(out)])
    assert res.exit_code == 130
    assert f"interrupted: 1 part(s) saved in {out}; rerun the command to resume" in res.output


def test_ctrl_c_after_the_first_checkpoint_says_it_was_saved(env, tmp_path, monkeypatch):
    """A training run's first save is a checkpoint, not a part: Ctrl-C then must not say that
    nothing was saved (the checkpoint is kept and the rerun resumes from it)."""
    from attnlimits.experiments import skeleton
    from attnlimits.experiments.store import ResultStore, atomic_write_bytes

    out = tmp_path / "out"

    def interrupted(experiment, config, folder, **kw):
        store = ResultStore(folder)
        with store.lock():  # as the runner holds it: the checkpoint is listed, so it is kept
            atomic_write_bytes(folder / "checkpoints" / "softmax-a-1seeds-0.pt", b"state")
        raise KeyboardInterrupt

    monkeypatch.setattr(skeleton, "run", interrupted)
    res = runner.invoke(app, [*SNE, "--quick", "--out", str(out)])
    assert res.exit_code == 130
    assert f"interrupted: 1 checkpoint(s) saved in {out}; rerun the command to resume" in (
        res.output
    )


def test_a_resumed_run_with_other_settings_is_refused(env, tmp_path):
    out = tmp_path / "out"
    base = [*LIM, "--model", env["MODEL"], "--text", env["BOOK"], "--quick", "--x-source", "values"]
    assert runner.invoke(app, [*base, "--out", str(out)]).exit_code == 0
    res = runner.invoke(app, [*base, "--windows", "2", "--out", str(out)])
    assert (
        res.exit_code == 2 and "other settings (windows)" in res.output and "--fresh" in res.output
    )
    assert (
        runner.invoke(app, [*base, "--windows", "2", "--fresh", "--out", str(out)]).exit_code == 0
    )
