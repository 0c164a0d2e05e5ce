"""Loading errors: a bad device, a missing model folder, an unknown hub id offline — each one
line, each before any download or retry (issue 11, items 1 and 8); weights that do not fit
their model, refused by name (issue 43, class 6); caches keyed by content (issue 43, class 5)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from attnlimits.capture import (
    IncompleteWeightsError,
    ModelUnavailableError,
    _content,
    check_device,
    load_model,
)
from attnlimits.capture._files import CorruptModelFileError
from tiny_models import LLAMA_GGUF_TENSORS, tiny_llama_gguf, tiny_model_dir


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


@pytest.mark.parametrize("name", ["cpu", "cpu:0", torch.device("cpu")])
def test_cpu_is_always_accepted(name):
    assert check_device(name).type == "cpu"


@pytest.mark.parametrize(
    ("name", "start"),
    [
        ("tpu", "unknown device 'tpu'"),
        ("CUDA", "unknown device 'CUDA'"),
        ("", "unknown device ''"),
        ("cuda", "device 'cuda' is not available here (torch"),
        ("cuda:1", "device 'cuda:1' is not available here (torch"),
        ("meta", "device 'meta' is not available here"),
    ],
)
def test_a_device_this_machine_lacks_is_one_line_naming_what_it_has(no_cuda, name, start):
    with pytest.raises(ValueError) as err:
        check_device(name)
    message = str(err.value)
    assert message.startswith(start) and "\n" not in message
    assert message.endswith("cpu")  # ... available: cpu


def test_load_model_checks_the_device_before_anything_else(no_cuda):
    with pytest.raises(ValueError, match="device 'cuda' is not available"):
        load_model("./gone", device="cuda")  # the device, not the missing folder


@pytest.mark.parametrize(
    "name", ["./gone", "~/no-such-attnlimits-model", "/no/such/model", "a/b/c"]
)
def test_a_path_that_does_not_exist_is_named_as_a_folder(name):
    with pytest.raises(ModelUnavailableError, match=f"^model folder {name} does not exist$"):
        load_model(name)


def test_a_name_under_an_existing_folder_is_a_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    with pytest.raises(ModelUnavailableError, match=r"^model folder models/gpt does not exist$"):
        load_model("models/gpt")


@pytest.fixture
def unreachable_hub(monkeypatch, tmp_path):
    """No HF_HUB_OFFLINE, an empty HF cache, and a network on which every connection fails;
    returns the list of connection attempts."""
    import huggingface_hub.constants as hub_constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    attempts: list[object] = []

    def refuse(address, *args, **kwargs):
        attempts.append(address)
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


def test_an_unknown_hub_id_offline_fails_after_one_probe(unreachable_hub):
    with pytest.raises(ModelUnavailableError) as err:
        load_model("no-such-org/no-such-model")
    message = str(err.value)
    assert "\n" not in message and "'no-such-org/no-such-model'" in message
    assert "unreachable" in message and "pass its folder" in message
    assert "smollm2-135m" in message and "minilm-l6" in message
    # our probe, plus at most huggingface_hub's one user-agent registry fetch (cached per
    # process); before, transformers retried the download 5 times over ~24 s (>= 6 attempts)
    assert 1 <= len(unreachable_hub) <= 2


def test_a_hub_id_beside_no_such_folder_is_a_hub_id(unreachable_hub, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no local "org" folder: "org/name" is looked up on the hub
    with pytest.raises(ModelUnavailableError, match="not a local folder nor in the local"):
        load_model("org/name")


def test_offline_mode_says_how_to_leave_it(unreachable_hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailableError, match="HF_HUB_OFFLINE=0") as err:
        load_model("no-such-org/no-such-model")
    assert "HF_HUB_OFFLINE is set" in str(err.value)
    assert unreachable_hub == []  # the flag alone decides: no connection tried


@pytest.mark.parametrize("cache", ["a file", "a folder under a file"])
def test_a_cache_that_cannot_take_a_gguf_is_refused_before_it_is_read(tmp_path, monkeypatch, cache):
    """A GGUF is dequantised into the cache (minutes for a real model): a cache folder that is
    a file is refused in one line before transformers reads the GGUF, not after."""
    import transformers

    from tiny_models import tiny_gguf

    gguf = tmp_path / "tiny.gguf"
    tiny_gguf(gguf)
    blocker = tmp_path / "cache"
    blocker.write_text("")
    where = blocker if cache == "a file" else blocker / "sub"
    monkeypatch.setenv("ATTNLIMITS_CACHE_DIR", str(where))
    read: list[str] = []

    def reading(*args, **kwargs):
        read.append(str(args[0]))
        raise AssertionError("the GGUF was read before the cache was checked")

    for auto in (transformers.AutoTokenizer, transformers.AutoModelForCausalLM):
        monkeypatch.setattr(auto, "from_pretrained", reading)
    with pytest.raises(ValueError, match=f"cache folder {blocker}.* is a file, not a folder"):
        load_model(str(gguf))
    assert read == []


# ---- caches keyed by content, not by name, size and mtime (issue 43, class 5) -------------------


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty user cache (the GGUF dequantisation cache and the remembered hashes)."""
    monkeypatch.setenv("ATTNLIMITS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _embedding(seed: int) -> torch.Tensor:
    """The token embedding tiny_llama_gguf(seed=seed) writes (its first tensor)."""
    return torch.from_numpy(np.random.default_rng(seed).standard_normal((16, 32)).astype("f4"))


def _same_mtime(path: Path, like: Path) -> None:
    st = like.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.name, path.stat().st_size, path.stat().st_mtime_ns) == (
        like.name,
        st.st_size,
        st.st_mtime_ns,
    )


def test_ggufs_of_one_name_size_and_mtime_load_their_own_weights(tmp_path, cache):
    a = tiny_llama_gguf(tmp_path / "a" / "model.gguf", seed=0)
    b = tiny_llama_gguf(tmp_path / "b" / "model.gguf", seed=1)
    _same_mtime(b, like=a)
    for path, seed in ((a, 0), (b, 1)):
        embedding = load_model(str(path)).model.get_input_embeddings().weight
        assert torch.equal(embedding, _embedding(seed)), f"{path} loaded another file's weights"
    before = a.stat()
    tiny_llama_gguf(a, seed=2)  # rewritten in place: the same name, size and mtime again
    os.utime(a, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert torch.equal(load_model(str(a)).model.get_input_embeddings().weight, _embedding(2))
    assert len(list((cache / "models").iterdir())) == 3


def test_a_files_hash_is_remembered_but_never_for_a_rewritten_file(tmp_path, cache, monkeypatch):
    path = tmp_path / "w.bin"
    path.write_bytes(b"a" * 1000)
    monkeypatch.setattr(_content, "_SETTLED_NS", -(10**12))  # as if written long ago
    opened: list[str] = []
    real_open = open

    def counting_open(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    import attnlimits.corpus.text as text_module  # where the file's bytes are read

    monkeypatch.setattr(text_module, "open", counting_open, raising=False)
    first = _content.file_sha256(path)
    assert _content.file_sha256(path) == first == hashlib.sha256(b"a" * 1000).hexdigest()
    assert opened.count(str(path)) == 1, "the second call read the file again"
    before = path.stat()
    path.write_bytes(b"b" * 1000)  # same name and size; the same mtime set back
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert _content.file_sha256(path) == hashlib.sha256(b"b" * 1000).hexdigest()


# ---- weights that do not fit their model (issue 43, class 6) -------------------------------------

TEXT = "the cat sat on the mat and the dog sat on the log " * 20
DOWN, UP = "model.layers.0.mlp.down_proj.weight", "model.layers.0.mlp.up_proj.weight"


def _missing(t: dict) -> None:
    del t[DOWN]


def _unexpected(t: dict) -> None:
    t["model.layers.0.extra.weight"] = torch.zeros(2)


def _reshaped(t: dict) -> None:
    t[UP] = torch.zeros(3, 3)


def _many_missing(t: dict) -> None:
    for name in [k for k in t if ".mlp." in k]:
        del t[name]


@pytest.mark.parametrize(
    ("damage", "kind", "named"),
    [
        (_missing, "missing", f"1 missing ({DOWN})"),
        (_unexpected, "unexpected", "1 unexpected (model.layers.0.extra.weight)"),
        (_reshaped, "of another shape", f"1 of another shape ({UP}: [3, 3] in the file, [64, 32]"),
        (_many_missing, "missing", "6 missing (model.layers.0.mlp.down_proj.weight, "
         "model.layers.0.mlp.gate_proj.weight, model.layers.0.mlp.up_proj.weight and 3 more)"),
    ],
)  # fmt: skip
def test_a_folder_whose_weights_do_not_fit_is_refused_naming_them(
    tmp_path, cache, capfd, damage, kind, named
):
    folder = tiny_model_dir(tmp_path, "llama", TEXT)
    weights = load_file(folder / "model.safetensors")
    damage(weights)
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(IncompleteWeightsError) as err:
        load_model(str(folder))
    message = str(err.value)
    assert message.startswith(f"model {folder}'s weights do not fit LlamaForCausalLM: {named}")
    assert "\n" not in message and message.endswith("(allow_incomplete_weights=True)")
    assert "LOAD REPORT" not in capfd.readouterr().err  # transformers' table: not shown
    loaded = load_model(str(folder), allow_incomplete_weights=True)
    assert list(loaded.incomplete) == [kind]


def test_a_gguf_lacking_a_tensor_is_refused_and_its_allowed_entry_remembers(tmp_path, cache):
    gguf = tiny_llama_gguf(tmp_path / "tiny.gguf", drop=("blk.0.ffn_down.weight",))
    with pytest.raises(IncompleteWeightsError) as err:
        load_model(str(gguf))
    assert str(err.value).startswith(
        f"GGUF file {gguf.resolve()}'s weights do not fit LlamaForCausalLM: 1 missing ({DOWN})"
    )
    assert not (cache / "models").exists() or not any((cache / "models").iterdir())
    assert load_model(str(gguf), allow_incomplete_weights=True).incomplete == {"missing": [DOWN]}
    with pytest.raises(IncompleteWeightsError, match=r"^model .*tiny\.gguf's weights .*1 missing"):
        load_model(str(gguf))  # its cache entry is complete on disk, but notes what it lacked


def test_a_hub_id_whose_weights_do_not_fit_is_refused(tmp_path, cache, monkeypatch):
    import huggingface_hub.constants as hub_constants

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--org--tiny"
    folder = tiny_model_dir(tmp_path, "llama", TEXT)
    weights = load_file(folder / "model.safetensors")
    _missing(weights)
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    shutil.copytree(folder, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(IncompleteWeightsError, match=rf"^model org/tiny's weights .* \({DOWN}\)"):
        load_model("org/tiny")
    assert load_model("org/tiny", allow_incomplete_weights=True).content is not None


def test_a_bare_encoder_from_a_task_checkpoint_loads_without_the_flag(tmp_path, cache):
    """BertForMaskedLM's files loaded as BertModel: its head is unused and the bare model's
    pooler (which no measurement reads) is new; that is a model's ordinary state."""
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(vocab_size=32, hidden_size=32, intermediate_size=64,
                        num_hidden_layers=2, num_attention_heads=4)  # fmt: skip
    BertForMaskedLM(config).save_pretrained(tmp_path / "mlm")
    tiny_model_dir(tmp_path / "tok", "bert", TEXT)  # a tokenizer for the folder
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tmp_path / "tok" / "bert" / name, tmp_path / "mlm" / name)
    loaded = load_model(str(tmp_path / "mlm"))
    assert type(loaded.model).__name__ == "BertModel" and loaded.incomplete == {}


# ---- issue 58: a run's files in the model's folder, malformed model files, a full cache -------


def test_a_runs_files_in_the_model_folder_leave_its_content_as_it_was(tmp_path, cache):
    """Item 3: ``scan FOLDER --out FOLDER`` wrote run.json and report.* beside the weights, the
    folder's hash read them, and every rerun recomputed. The hash reads the model's weight,
    config and tokenizer files only; a change to any of those still changes it."""
    folder = tiny_model_dir(tmp_path, "llama", TEXT)
    before = _content.folder_sha256(folder)
    for name in ("run.json", "report.md", "report.html", ".attnlimits-files", ".attnlimits.lock"):
        (folder / name).write_text("{}")  # what a run writes at the top of its --out
    for name in ("README.md", ".gitattributes", "notes.pdf"):
        (folder / name).write_text("about the model")  # a hub snapshot's extras
    (folder / "tables").mkdir()
    (folder / "tables" / "heads.parquet").write_text("")
    assert _content.folder_sha256(folder) == before
    assert "run.json" not in {p.name for p in _content.model_files(folder)}
    for name in ("tokenizer.json", "config.json", "model.safetensors"):
        path = folder / name
        kept = path.read_bytes()
        path.write_bytes(kept + b" ")
        assert _content.folder_sha256(folder) != before, f"a change to {name} went unseen"
        path.write_bytes(kept)
    (folder / "added_tokens.json").write_text("{}")  # a tokenizer file that was not there
    assert _content.folder_sha256(folder) != before


def _numpy_in(weights: dict) -> dict:
    return {**weights, "extra": np.arange(3)}  # not a tensor: weights_only refuses it


def _pickled(folder: Path, how: str) -> str:
    """Replace the folder's safetensors by a pickled .bin of one kind; the file to name."""
    import pickle

    weights = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    target = folder / "pytorch_model.bin"
    if how == "zip":
        torch.save(_numpy_in(weights), target)
    elif how == "legacy":
        torch.save(_numpy_in(weights), target, _use_new_zipfile_serialization=False)
    elif how == "plain pickle":
        with open(target, "wb") as f:
            pickle.dump({k: v.numpy() for k, v in weights.items()}, f)
    else:  # sharded: the second shard holds the array
        keys = sorted(weights)
        names = [f"pytorch_model-0000{i}-of-00002.bin" for i in (1, 2)]
        torch.save({k: weights[k] for k in keys[:10]}, folder / names[0])
        torch.save(_numpy_in({k: weights[k] for k in keys[10:]}), folder / names[1])
        index = {"metadata": {}, "weight_map": {k: names[i >= 10] for i, k in enumerate(keys)}}
        (folder / "pytorch_model.bin.index.json").write_text(__import__("json").dumps(index))
        target = folder / names[1]
    return str(target)


@pytest.mark.parametrize("how", ["zip", "legacy", "plain pickle", "sharded"])
def test_a_pickled_bin_of_more_than_tensors_is_one_line_without_unsafe_advice(
    tmp_path, cache, capfd, how
):
    """Item 5: a 67-69-line UnpicklingError advising ``weights_only=False``; now one line
    naming the file, and the file is still never unpickled beyond plain tensors."""
    folder = tiny_model_dir(tmp_path, "llama", TEXT)
    named = _pickled(folder, how)
    with pytest.raises(ModelUnavailableError) as err:
        load_model(str(folder))
    message = str(err.value)
    assert message.startswith(f"model file {named} holds more than plain tensors"), message
    assert "\n" not in message and "weights_only" not in message
    assert "weights_only" not in capfd.readouterr().err


def test_a_pickled_bin_of_plain_tensors_loads(tmp_path, cache):
    folder = tiny_model_dir(tmp_path, "llama", TEXT)
    weights = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    torch.save(weights, folder / "pytorch_model.bin")
    embedding = load_model(str(folder)).model.get_input_embeddings().weight
    assert torch.equal(embedding, weights["model.embed_tokens.weight"])


def _edit_json(path: Path, edit) -> None:
    import json

    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("file", "edit", "words"),
    [
        ("tokenizer.json", lambda d: d.pop("added_tokens"), "has no 'added_tokens' field"),
        ("tokenizer.json", lambda d: d.pop("model"), "has no 'model' field"),
        ("config.json", lambda d: d.update(num_attention_heads=0), "num_attention_heads must be"),
        ("config.json", lambda d: d.update(num_attention_heads="4"), "got '4'"),
        ("config.json", lambda d: d.update(num_hidden_layers=-1), "num_hidden_layers must be"),
        ("config.json", lambda d: d.update(hidden_size=32.0), "hidden_size must be"),
    ],
)
def test_a_malformed_config_or_tokenizer_is_one_line_naming_the_file_and_field(
    tmp_path, cache, file, edit, words
):
    """Item 6: a KeyError, a ZeroDivisionError, a validation error, each a traceback."""
    folder = tiny_model_dir(tmp_path, "llama", TEXT)
    _edit_json(folder / file, edit)
    with pytest.raises(CorruptModelFileError) as err:
        load_model(str(folder))
    message = str(err.value)
    assert message.startswith(f"model file {folder / file}") and words in message, message
    assert "\n" not in message


@pytest.mark.parametrize("file", ["tokenizer.json", "config.json"])
@pytest.mark.parametrize("text", ['{"version": nope}', "[1, 2]", ""])
def test_a_model_json_file_that_is_not_a_json_object_is_named(tmp_path, cache, file, text):
    """Item 6: "Expecting value: line 1 column 13", no file named."""
    folder = tiny_model_dir(tmp_path, "llama", TEXT)
    (folder / file).write_text(text)
    with pytest.raises(
        CorruptModelFileError,
        match=rf"^model file {folder / file} is not (valid JSON|a JSON object)",
    ):
        load_model(str(folder))


def test_a_gguf_without_tensors_is_one_line(tmp_path, cache, capfd):
    """Item 10: six lines, transformers' "This checkpoint seem corrupted" among them."""
    gguf = tiny_llama_gguf(tmp_path / "empty.gguf", drop=LLAMA_GGUF_TENSORS)
    with pytest.raises(OSError, match=r"empty\.gguf is corrupt: it holds no tensors"):
        load_model(str(gguf))
    assert "seem corrupted" not in capfd.readouterr().err


def test_the_gguf_cache_on_a_full_disk_names_the_entry(tmp_path, cache, monkeypatch):
    """Item 7: safetensors' own error (``SafetensorError ... os error 28``), not an OSError,
    came through as a traceback; now the cache entry is named and the errno kept."""
    import transformers.modeling_utils as modeling_utils
    from safetensors import SafetensorError

    def full(*args, **kwargs):
        raise SafetensorError(
            'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No '
            'space left on device" })'
        )

    monkeypatch.setattr(modeling_utils, "safe_save_file", full)
    gguf = tiny_llama_gguf(tmp_path / "tiny.gguf")
    with pytest.raises(OSError) as err:
        load_model(str(gguf))
    assert err.value.errno == 28
    assert re.match(rf"cannot write {cache}/models/tiny-\w+: disk full", str(err.value))
    assert not [p for p in (cache / "models").iterdir() if p.name.startswith(".tiny")]


@pytest.mark.slow  # 41 s beside a load of 20 on 2 cores; the hash itself is tested above
def test_a_scan_whose_out_is_its_model_folder_resumes(tmp_path, cache, book_path):
    """Item 3, end to end: ``scan FOLDER --out FOLDER`` twice; the second run finds the
    model's content unchanged and recomputes nothing (every rerun had added a set of parts)."""
    import json

    from typer.testing import CliRunner

    from attnlimits.cli import app

    folder = tiny_model_dir(tmp_path, "llama", book_path.read_text()[:200_000])
    argv = ["scan", str(folder), "--text", str(book_path), "--lengths", "64", "--windows", "1"]
    runs = []
    for _ in range(2):
        res = CliRunner().invoke(app, [*argv, "--out", str(folder)])
        assert res.exit_code == 0, res.output
        content = json.loads((folder / "run.json").read_text())["model"]["content"]
        runs.append((content, sorted(p.name for p in (folder / "parts").iterdir())))
    assert runs[0] == runs[1]
