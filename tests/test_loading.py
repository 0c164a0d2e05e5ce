"""Loading errors: a bad device, a missing model folder, an unknown hub id offline — each one
line, each before any download or retry (issue 11, items 1 and 8)."""

from __future__ import annotations

import socket

import pytest
import torch

from attnlimits.capture import ModelUnavailableError, check_device, load_model


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
