"""The SDPA reformulations (:mod:`attnlimits.kernels.sdpa`) against the materialised reference:
values (float64 tight, float32, half precision), masks, GQA, decode, gradients (gradcheck and
agreement at L = 2,048), dropout, the fallback, and whole tiny models on both paths."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import LlamaConfig, LlamaForCausalLM

import attnlimits.kernels as K
import attnlimits.kernels.sdpa as S
from attnlimits import normalizers as nz
from attnlimits.kernels import naive_attention, sdpa_attention, streaming_attention
from float_tolerance import assert_float32_close
from hf_models import VOCAB, batch, logits, tiny_llama

#: Parameters that move each normaliser off its trivial regime at these short lengths.
PARAMS: dict[str, dict] = {
    "softmax": {"temperature": 0.7},
    "ssmax": {"s": 0.8},
    "logn": {"train_length": 3},
    "yarn": {"factor": 8.0},
    "llama4_temperature": {"attn_scale": 0.5, "floor_scale": 2},
    "ssmax_trained": {"train_length": 4},
    "softmax1": {},
    "sink_softmax": {"sink": [0.5, -1.0, 2.0, 0.0, 1.0, 3.0]},
    "adaptive": {},
}
NAMES = sorted(PARAMS)
assert set(NAMES) == set(S.SDPA_NORMALIZERS)
#: (Lq, Lk, causal, masked): square causal, bidirectional, decode, chunked prefill, masks
LAYOUTS = [
    (9, 9, True, False),
    (9, 9, False, False),
    (1, 9, True, False),
    (4, 9, True, False),
    (9, 9, False, True),
    (9, 9, True, True),
    (1, 9, False, True),
]


def qkv(Lq=9, Lk=9, Hq=6, Hkv=2, d=8, dv=8, seed=0, dtype=torch.float64, grad=False):
    g = torch.Generator().manual_seed(seed)
    q = 2 * torch.randn(2, Hq, Lq, d, generator=g, dtype=dtype)
    k = 2 * torch.randn(2, Hkv, Lk, d, generator=g, dtype=dtype)
    v = torch.randn(2, Hkv, Lk, dv, generator=g, dtype=dtype)
    return tuple(x.requires_grad_(grad) for x in (q, k, v))


def keep_mask(Lq, Lk, seed=0):
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(2, 1, Lq, Lk, generator=g) > 0.3
    mask[0, 0, 0] = False  # a row without any key: zeros, not NaN
    return mask


def both(name, q, k, v, **kw):
    """(SDPA path, materialised reference) for the same call."""
    kw = {**PARAMS[name], **kw}
    return sdpa_attention(q, k, v, name, **kw), naive_attention(q, k, v, name, **kw)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_float64_equals_the_reference(name, layout):
    Lq, Lk, causal, masked = layout
    q, k, v = qkv(Lq, Lk)
    mask = keep_mask(Lq, Lk) if masked else None
    got, want = both(name, q, k, v, mask=mask, causal=causal)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", S.SINKS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_extra_key_form_of_the_sinks(name, layout, monkeypatch):
    """The public-API form (other devices, dropout): one extra key and a dummy query row."""
    monkeypatch.setattr(S, "_has_lse", lambda q: False)
    Lq, Lk, causal, masked = layout
    q, k, v = qkv(Lq, Lk, dv=5)
    mask = keep_mask(Lq, Lk) if masked else None
    got, want = both(name, q, k, v, mask=mask, causal=causal)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", NAMES)
def test_value_width_and_smollm2_grouping(name):
    """9 query heads on 3 key/value heads (SmolLM2), a value width other than the key width."""
    q, k, v = qkv(Lq=7, Lk=7, Hq=9, Hkv=3, d=8, dv=5)
    params = {"sink": 1.5} if name == "sink_softmax" else {}
    got = sdpa_attention(q, k, v, name, causal=True, **params)
    want = naive_attention(q, k, v, name, causal=True, **params)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    ("dtype", "tol"), [(torch.float32, None), (torch.bfloat16, 0.1), (torch.float16, 0.02)]
)
def test_lower_precision_is_close_and_finite(name, dtype, tol):
    """float32 within a few times float32 torch arithmetic's own error (float_tolerance), half
    precision within its output rounding."""
    q, k, v = qkv(Lq=16, Lk=16)
    mask = keep_mask(16, 16)
    low = [x.to(dtype) for x in (q, k, v)]
    got = sdpa_attention(*low, name, mask=mask, **PARAMS[name])
    want = naive_attention(q, k, v, name, mask=mask, **PARAMS[name])
    assert got.dtype == dtype and torch.isfinite(got).all()
    if tol is None:
        ref32 = naive_attention(*low, name, mask=mask, **PARAMS[name])
        assert_float32_close(got, want, ref32, name)
    else:
        torch.testing.assert_close(got.double(), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("layout", [(5, 5, True, False), (5, 5, False, True), (1, 5, True, False)])
def test_gradcheck(name, layout):
    Lq, Lk, causal, masked = layout
    q, k, v = qkv(Lq, Lk, Hq=4, d=4, dv=4, grad=True)
    mask = keep_mask(Lq, Lk) if masked else None
    params = {**PARAMS[name], "sink": [0.5, -1.0, 2.0, 0.0]} if name == "sink_softmax" else {}
    params = params or PARAMS[name]

    def f(q, k, v):
        return sdpa_attention(q, k, v, name, mask=mask, causal=causal, **params)

    assert torch.autograd.gradcheck(f, (q, k, v))


def test_adaptive_gradient_flows_through_beta():
    """The listing differentiates through β(H): the gradient is the reference's, and differs
    from the gradient at fixed β (so the test sees the β term)."""
    q, k, v = qkv(Lq=8, Lk=8, Hq=2, Hkv=1, grad=True)
    g = torch.randn(2, 2, 8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    stats = naive_attention(q, k, v, "adaptive", return_stats=True)
    assert (stats.beta > 1.05).float().mean() > 0.3  # β varies: the regime under test
    got = torch.autograd.grad(sdpa_attention(q, k, v, "adaptive"), (q, k, v), g)
    want = torch.autograd.grad(stats.output, (q, k, v), g)
    scores = 8**-0.5 * q @ k.transpose(-1, -2)
    fixed = nz.adaptive_softmax(scores, detach_beta=True) @ v
    fixed_q = torch.autograd.grad(fixed, q, g)[0]
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)
    assert (fixed_q - want[0]).abs().max() > 1e-3


@pytest.mark.parametrize("name", ["adaptive", "sink_softmax", "logn"])
def test_gradients_agree_with_the_materialised_path_at_2048(name):
    L = 2048
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, L, 16, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 1, L, 16, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(1, 1, L, 16, generator=g, dtype=torch.float64, requires_grad=True)
    dout = torch.randn(1, 2, L, 16, generator=g, dtype=torch.float64)
    params = {"sink": [1.0, -0.5]} if name == "sink_softmax" else {"train_length": 256}
    params = {} if name == "adaptive" else params
    got = torch.autograd.grad(sdpa_attention(q, k, v, name, causal=True, **params), (q, k, v), dout)
    ref = naive_attention(q, k, v, name, causal=True, **params)
    want = torch.autograd.grad(ref, (q, k, v), dout)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-9)


@given(
    name=st.sampled_from(NAMES),
    Lq=st.integers(1, 12),
    extra=st.integers(0, 4),
    groups=st.sampled_from([(1, 1), (2, 1), (3, 3), (6, 2)]),
    causal=st.booleans(),
    density=st.sampled_from([None, 0.2, 0.7, 1.0]),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=60, deadline=None)
def test_any_shape_equals_the_reference(name, Lq, extra, groups, causal, density, seed):
    Lk = Lq + extra
    g = torch.Generator().manual_seed(seed)
    Hq, Hkv = groups
    q = 3 * torch.randn(1, Hq, Lq, 4, generator=g, dtype=torch.float64)
    k = 3 * torch.randn(1, Hkv, Lk, 4, generator=g, dtype=torch.float64)
    v = torch.randn(1, Hkv, Lk, 4, generator=g, dtype=torch.float64)
    mask = None if density is None else torch.rand(1, Hq, Lq, Lk, generator=g) < density
    params = {"sink": 0.7} if name == "sink_softmax" else PARAMS[name]
    got = sdpa_attention(q, k, v, name, mask=mask, causal=causal, **params)
    want = naive_attention(q, k, v, name, mask=mask, causal=causal, **params)
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9)


def test_fallback_to_the_streaming_kernel_with_a_reason():
    q, k, v = qkv()
    got = sdpa_attention(q, k, v, "softcap", causal=True, cap=2.0)
    torch.testing.assert_close(got, streaming_attention(q, k, v, "softcap", causal=True, cap=2.0))
    assert "q·k" in S.sdpa_unsupported("softcap", q)
    assert S.sdpa_unsupported("adaptive", q) is None
    with pytest.raises(ValueError, match="no SDPA form"):
        sdpa_attention(q, k, v, "softcap", fallback=False)
    with pytest.raises(ValueError, match=r"model\.eval\(\)"):
        sdpa_attention(q, k, v, "softcap", dropout_p=0.1)
    with pytest.raises(ValueError, match="dropout_p"):
        sdpa_attention(q, k, v, "softmax", dropout_p=1.0)
    with pytest.raises(ValueError, match="unknown normalizer"):
        sdpa_attention(q, k, v, "softermax", fallback=False)
    with pytest.raises(ValueError, match="must be"):
        sdpa_attention(q[0], k, v, "softmax")


@pytest.mark.parametrize("name", ["softmax", "logn", "softmax1", "sink_softmax", "adaptive"])
def test_dropout_is_unbiased(name):
    """Inverted dropout on the applied weights: each draw differs, their mean is the output."""
    q, k, v = qkv(Lq=6, Lk=6, Hq=2, Hkv=1)
    params = {"sink": 0.5} if name == "sink_softmax" else PARAMS[name]
    want = naive_attention(q, k, v, name, causal=True, **params)
    torch.manual_seed(0)
    draws = torch.stack(
        [sdpa_attention(q, k, v, name, causal=True, dropout_p=0.3, **params) for _ in range(400)]
    )
    assert (draws[0] - want).abs().max() > 1e-3
    assert (draws.mean(0) - want).abs().max() < 0.15 * want.abs().max()


def test_every_registry_name_runs_as_an_attn_implementation():
    """``attnlimits_<name>`` for each name of ``normalizers.available()`` (softmax included)."""
    ids, am = batch()
    for name in nz.available():
        model = tiny_llama()
        model.set_attn_implementation(f"attnlimits_{name}")
        assert torch.isfinite(logits(model, ids, am)).all(), name


@pytest.mark.parametrize("name", sorted(K.NORMALIZERS))
def test_tiny_llama_gives_the_same_logits_on_both_paths(name):
    ids, am = batch()
    model = tiny_llama()
    with K.patch(model, name):
        fast = logits(model, ids, am)
    with K.patch(model, name, kernel="streaming"):
        ref = logits(model, ids, am)
    torch.testing.assert_close(fast, ref, rtol=1e-5, atol=1e-5)


def test_attention_dropout_trains_on_the_sdpa_path():
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        attention_dropout=0.2, attn_implementation="attnlimits_adaptive",
    )  # fmt: skip
    model = LlamaForCausalLM(cfg).train()
    ids, _ = batch()
    model(ids, labels=ids).loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    with (
        pytest.raises(ValueError, match=r"model\.eval\(\)"),
        K.patch(model, "adaptive", kernel="streaming"),
    ):
        model(ids)
    with (
        pytest.raises(ValueError, match="kernel must be one of"),
        K.patch(model, "adaptive", kernel="fast"),
    ):
        model(ids)
