"""Results computed on one device never resume into a run on another (issue 54).

Kernels round differently on CPU and CUDA, and their random generators draw other numbers from
the same seed (the limitations experiment's Monte Carlo estimate of exact E), so every
experiment's parts are keyed by the device's kind (:func:`~attnlimits.experiments.store.numerics`)
and a folder holding a run on one device refuses a run on another without ``--fresh``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd
import pytest

from attnlimits.experiments import skeleton
from attnlimits.experiments.softmax_not_enough import checkpoint_path
from attnlimits.experiments.store import ResultStore, jsonable, numerics, params_hash

KEYED = ("limitations", "scan", "compare", "long-context")  # experiments with cache_params


def _key(name: str, config: Any) -> dict[str, Any]:
    if name == "long-context":
        return config.cache_params()  # type: ignore[no-any-return]
    return config.cache_params("model-id", "text-sha")  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", KEYED)
def test_cache_key_holds_the_device_kind_not_its_index(name: str) -> None:
    config = skeleton.get(name).config.quick()
    assert _key(name, config)["device"] == "cpu"
    cpu, cuda, cuda1 = (_key(name, replace(config, device=d)) for d in ("cpu", "cuda", "cuda:1"))
    assert params_hash(cpu) != params_hash(cuda)  # same settings, other device: other key
    assert params_hash(cuda) == params_hash(cuda1)  # cuda:0 and cuda:1 compute alike
    assert {k for k in cpu if cpu[k] != cuda[k]} == {"device"}


def test_numerics_is_the_device_kind() -> None:
    class On:
        def __init__(self, device: str) -> None:
            self.device = device

    assert [numerics(On(d))["device"] for d in ("cpu", "cuda", "cuda:3", "mps")] == [
        "cpu",
        "cuda",
        "cuda",
        "mps",
    ]


def test_max_retrieval_checkpoints_and_parts_are_keyed_by_device(tmp_path: Any) -> None:
    """Paper B's checkpoints and parts hash the training settings, which hold the device."""
    config = skeleton.get("softmax-not-enough").config.quick()
    cpu, cuda = config.benchmark(), replace(config, device="cuda").benchmark()
    assert cuda.train == replace(cpu.train, device="cuda")
    paths = [checkpoint_path(tmp_path, b.model, b.train, b.seeds) for b in (cpu, cuda)]
    assert paths[0] != paths[1]


@pytest.mark.parametrize("name", [*KEYED, "softmax-not-enough", "clrs-text"])
def test_a_run_on_another_device_is_refused_by_name(name: str) -> None:
    """The check a resumed run goes through (``skeleton.run``'s settings check against the
    folder's ``run.json``) names the device."""
    config = skeleton.get(name).config.quick()
    stored = jsonable(config)
    assert skeleton.settings_diff(stored, config) == []
    assert skeleton.settings_diff(stored, replace(config, device="cuda")) == ["device"]


def test_parts_saved_on_one_device_are_recomputed_on_another(tmp_path: Any) -> None:
    config = skeleton.get("limitations").config.quick()
    store = ResultStore(tmp_path)
    calls: list[str] = []

    def compute(device: str) -> pd.DataFrame:
        calls.append(device)
        return pd.DataFrame({"value": [1.0]})

    for device in ("cpu", "cuda", "cpu"):
        params = _key("limitations", replace(config, device=device))
        with store.lock():
            store.part("alg5", params, "w0-l0", lambda d=device: compute(d))
    assert calls == ["cpu", "cuda"]  # the cuda run did not read the cpu part, nor cpu cuda's
