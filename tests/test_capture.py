"""Capture on tiny random GPT-2, Llama (GQA + rotary) and BERT: the numbers are the model's."""

from __future__ import annotations

import gc
import re
import weakref

import pytest
import torch
from transformers import (
    BertConfig,
    BertModel,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
)
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from attnlimits.capture import (
    CAPTURE_IMPL,
    NAMED_MODELS,
    TENSOR_KEYS,
    LayerCapture,
    ModelUnavailableError,
    capture,
    capture_all,
    capture_keys,
    capturing,
    check_device,
    load_model,
    model_info,
)

FAMILIES = ("gpt2", "llama", "bert")
# Input of the projection that mixes heads back: the concatenated per-head outputs.
OUT_PROJ = {"gpt2": "attn.c_proj", "llama": "self_attn.o_proj", "bert": "attention.output.dense"}


def _tiny(family: str) -> torch.nn.Module:
    torch.manual_seed(0)
    if family == "gpt2":
        cfg = GPT2Config(n_layer=2, n_head=4, n_embd=32, vocab_size=100, n_positions=64)
        cfg.bos_token_id = cfg.eos_token_id = 0
        model = GPT2LMHeadModel(cfg)
    elif family == "llama":
        cfg = LlamaConfig(
            vocab_size=100,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=64,
            bos_token_id=0,
            eos_token_id=0,
        )
        model = LlamaForCausalLM(cfg)
    else:
        cfg = BertConfig(
            vocab_size=100,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=64,
        )
        model = BertModel(cfg, add_pooling_layer=False)
    model.set_attn_implementation("eager")
    return model.eval()


@pytest.fixture(scope="module", params=FAMILIES)
def family_model(request: pytest.FixtureRequest) -> tuple[str, torch.nn.Module]:
    return request.param, _tiny(request.param)


@pytest.fixture
def ids() -> torch.Tensor:
    return torch.randint(0, 100, (2, 12), generator=torch.Generator().manual_seed(1))


def _output(out: object) -> torch.Tensor:
    return out.logits if hasattr(out, "logits") else out.last_hidden_state  # type: ignore[attr-defined]


def test_softmax_of_scores_under_mask_is_weights(family_model, ids):
    _, model = family_model
    for cap in capture_all(model, ids).values():
        expected = torch.softmax(cap.scores.masked_fill(~cap.mask, float("-inf")), dim=-1)
        torch.testing.assert_close(cap.weights, expected, rtol=1e-6, atol=1e-7)
        assert (cap.weights[~cap.mask.expand_as(cap.weights)] == 0).all()
        torch.testing.assert_close(cap.weights.sum(-1), torch.ones_like(cap.weights[..., 0]))


def test_scores_are_scaled_q_dot_k(family_model, ids):
    _, model = family_model
    for cap in capture_all(model, ids).values():
        k = cap.k[:, cap.kv_head_of]  # [b, head, pos, d]
        torch.testing.assert_close(cap.scores, cap.q @ k.transpose(-1, -2) * cap.scaling)
        assert cap.scaling == pytest.approx(cap.q.shape[-1] ** -0.5)


def test_weights_times_v_is_the_models_head_output(family_model, ids):
    family, model = family_model
    seen: dict[int, torch.Tensor] = {}
    info = model_info(model)
    hooks = [
        model.get_submodule(f"{block}.{OUT_PROJ[family]}").register_forward_pre_hook(
            lambda _m, args, i=i: seen.__setitem__(i, args[0].detach())
        )
        for i, block in enumerate(info.blocks)
    ]
    caps: dict[int, LayerCapture] = {}
    try:
        with torch.no_grad(), capturing(model, lambda c: caps.__setitem__(c.layer, c)):
            model(ids)
    finally:
        for h in hooks:
            h.remove()
    for i, cap in caps.items():
        z = cap.weights @ cap.v[:, cap.kv_head_of]  # [b, head, pos, d]
        z = z.transpose(1, 2).reshape(*ids.shape, -1)  # [b, pos, head * d]
        torch.testing.assert_close(z, seen[i], rtol=1e-5, atol=1e-6)


def test_capture_forward_is_bit_identical_to_eager(family_model, ids):
    _, model = family_model
    with torch.no_grad():
        reference = _output(model(ids))
        with capturing(model, lambda c: None) as results:
            captured = _output(model(ids))
    assert torch.equal(reference, captured)
    assert sorted(results) == [0, 1]
    assert model.config._attn_implementation == "eager"  # restored


def test_mask_semantics(family_model, ids):
    family, model = family_model
    n = ids.shape[1]
    cap = capture_all(model, ids, layers=[0])[0]
    assert cap.mask.dtype == torch.bool and cap.mask.shape == (2, 1, n, n)
    if family == "bert":
        assert cap.mask.all() and not cap.causal
        assert (cap.weights.triu(1) > 0).any()
    else:
        tril = torch.ones(n, n, dtype=torch.bool).tril()
        assert torch.equal(cap.mask, tril.expand(2, 1, n, n)) and cap.causal
        assert (cap.weights.triu(1) == 0).all()


def test_bert_padding_mask_is_padding_only(ids):
    model = _tiny("bert")
    pad = torch.ones_like(ids)
    pad[1, -3:] = 0
    cap = capture_all(model, ids, layers=[1], attention_mask=pad)[1]
    keep = pad.bool()[:, None, None, :].expand(2, 1, ids.shape[1], ids.shape[1])
    assert torch.equal(cap.mask, keep)  # every query sees every real token, in both directions
    assert (cap.weights[1, :, :, -3:] == 0).all()


def test_llama_q_k_are_rotated_and_hidden_in_is_the_block_input(ids):
    model = _tiny("llama")
    cap = capture_all(model, ids, layers=[1])[1]
    block = model.model.layers[1]
    h = block.input_layernorm(cap.hidden_in)
    b, n, _ = h.shape
    q = block.self_attn.q_proj(h).view(b, n, -1, 8).transpose(1, 2)
    k = block.self_attn.k_proj(h).view(b, n, -1, 8).transpose(1, 2)
    cos, sin = model.model.rotary_emb(h, torch.arange(n)[None])
    q_rot, k_rot = apply_rotary_pos_emb(q, k, cos, sin)
    torch.testing.assert_close(cap.q, q_rot)
    torch.testing.assert_close(cap.k, k_rot)
    assert not torch.allclose(cap.q, q)  # rotation did something
    assert cap.kv_head_of.tolist() == [0, 0, 1, 1]
    assert cap.k.shape == cap.v.shape == (2, 2, 12, 8)


PINNED = {
    "gpt2": ("transformer.h.{i}", "transformer.h.{i}.attn"),
    "llama": ("model.layers.{i}", "model.layers.{i}.self_attn"),
    "bert": ("encoder.layer.{i}", "encoder.layer.{i}.attention.self"),
}


def test_capture_keys_are_pinned(family_model, ids):
    family, model = family_model
    assert TENSOR_KEYS == ("hidden_in", "q", "k", "v", "scores", "mask", "weights")
    block, attn = PINNED[family]
    expected = [
        name.format(i=i)
        for i in range(2)
        for name in [
            f"{block}.hidden_in",
            f"{attn}.q",
            f"{attn}.k",
            f"{attn}.v",
            f"{attn}.scores",
            f"{attn}.mask",
            f"{attn}.weights",
        ]
    ]
    assert capture_keys(model) == expected
    caps = capture_all(model, ids)
    assert [k for i in sorted(caps) for k in caps[i].named()] == expected


def test_model_info_facts(family_model):
    family, model = family_model
    info = model_info(model)
    assert (info.n_layers, info.n_heads, info.head_dim, info.d_model) == (2, 4, 8, 32)
    assert info.n_kv_heads == (2 if family == "llama" else 4)
    assert info.max_context == 64
    assert info.causal is (family != "bert")
    assert info.family == family


def test_layers_subset_calls_back_once(family_model, ids):
    _, model = family_model
    calls: list[int] = []
    out = capture(model, ids, layers=[1], on_layer=lambda c: calls.append(c.layer) or c.layer)
    assert calls == [1] and out == {1: 1}
    with pytest.raises(ValueError, match="out of range"):
        capture(model, ids, layers=[2], on_layer=lambda c: None)


def test_streaming_keeps_only_the_callbacks_result(ids):
    model = _tiny("llama")
    refs: list[weakref.ref[torch.Tensor]] = []
    alive_at: dict[int, list[bool]] = {}

    def on_layer(c: LayerCapture) -> float:
        gc.collect()
        alive_at[c.layer] = [r() is not None for r in refs]
        refs.extend(weakref.ref(t) for t in (c.scores, c.weights, c.q, c.k, c.v, c.hidden_in))
        return float(c.weights.max())

    out = capture(model, ids, on_layer=on_layer)
    assert alive_at == {0: [], 1: [False] * 6}  # layer 0's tensors were freed before layer 1
    assert set(out) == {0, 1} and all(isinstance(v, float) for v in out.values())


def test_failing_callback_restores_the_model(ids):
    model = _tiny("gpt2")

    def boom(c: LayerCapture) -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        capture(model, ids, on_layer=boom)
    assert model.config._attn_implementation == "eager"
    capture(model, ids, on_layer=lambda c: None)  # no stale session left behind
    assert model.config._attn_implementation != CAPTURE_IMPL


def test_unknown_model_offline_names_the_alternatives(monkeypatch, tmp_path):
    import huggingface_hub.constants as hub_constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(ModelUnavailableError) as err:
        load_model("no-such-org/no-such-model")
    message = str(err.value)
    for name in NAMED_MODELS:  # the ones that ship in PyPI packages, i.e. work offline
        assert (name in message) == (name != "gpt2"), name
    assert "no-such-org/no-such-model" in message and "HF_HUB_OFFLINE" in message


def test_missing_model_folder_is_named_as_a_folder(tmp_path):
    for name in (str(tmp_path / "gone"), "./gone", "a/b/c"):
        with pytest.raises(ModelUnavailableError, match=re.escape(f"model folder {name} does not")):
            load_model(name)
    with pytest.raises(ModelUnavailableError, match=r"has no config\.json"):
        load_model(str(tmp_path))


@pytest.mark.parametrize(
    ("device", "match"),
    [("tpu", "unknown device 'tpu'; available here: cpu"), ("cuda:7", "not available here")],
)
def test_check_device(monkeypatch, device, match):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=match):
        check_device(device)
    assert check_device("cpu") == torch.device("cpu")
