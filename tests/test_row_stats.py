"""kernels.attention_row_stats against the materialised definitions; capture_qkv against capture."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlimits import metrics
from attnlimits.capture import capture, capture_qkv
from attnlimits.kernels import attention_row_stats


def _dense(q, k, mask, causal, offsets):
    """The naive reference: materialise softmax(scale·q·kᵀ) and read every statistic off it."""
    B, Hq, Lq, d = q.shape
    Lk = k.shape[2]
    s = q @ k.repeat_interleave(Hq // k.shape[1], 1).transpose(-1, -2) * d**-0.5
    keep = torch.ones(B, Hq, Lq, Lk, dtype=torch.bool)
    if mask is not None:
        keep = keep & mask
    if causal:
        keep = keep & torch.ones(Lq, Lk, dtype=torch.bool).tril(Lk - Lq)
    w = torch.softmax(s.masked_fill(~keep, -math.inf), -1).nan_to_num(0.0)
    pos = torch.arange(Lq) + Lk - Lq
    at = []
    for o in offsets:  # a handful of offsets, each one gather
        idx = pos - o
        ok = (idx >= 0) & (idx < Lk)
        got = w.gather(-1, idx.clamp(0, Lk - 1)[None, None, :, None].expand(B, Hq, Lq, 1))[..., 0]
        at.append(torch.where(ok, got, 0.0))
    return {
        "entropy": metrics.attention_entropy(w, mask=keep),
        "max_weight": metrics.max_weight(w, mask=keep),
        "logit_spread": metrics.logit_spread(s, mask=keep),
        "sink_mass": torch.where(keep.any(-1), w[..., 0], math.nan),
        "n_keys": keep.sum(-1),
        "offset_weights": torch.stack(at, -1) if at else torch.zeros(B, Hq, Lq, 0),
    }


@settings(max_examples=25, deadline=None)
@given(
    lq=st.integers(1, 40),
    extra=st.integers(0, 20),
    group=st.sampled_from([1, 2, 3]),
    block=st.integers(1, 17),
    causal=st.booleans(),
    masked=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_matches_the_materialised_definitions(lq, extra, group, block, causal, masked, seed):
    gen = torch.Generator().manual_seed(seed)
    lk = lq + extra
    q = torch.randn(2, 2 * group, lq, 5, generator=gen, dtype=torch.float64) * 3
    k = torch.randn(2, 2, lk, 5, generator=gen, dtype=torch.float64) * 3
    mask = torch.rand(2, 1, lq, lk, generator=gen) > 0.3 if masked else None
    offsets = (0, 1, 3)
    got = attention_row_stats(
        q, k, mask=mask, causal=causal, offsets=offsets, block_size=block
    )._asdict()
    want = _dense(q, k, mask, causal, offsets)
    for name, ref in want.items():
        if name == "n_keys":
            assert torch.equal(got[name], ref)
            continue
        assert torch.equal(got[name].isnan(), ref.isnan()), name
        torch.testing.assert_close(got[name].nan_to_num(0), ref.nan_to_num(0), atol=1e-10,
                                   rtol=1e-9, msg=name)  # fmt: skip


def test_rows_without_keys_are_nan_with_zero_count():
    q, k = torch.randn(1, 2, 4, 3), torch.randn(1, 2, 6, 3)
    mask = torch.ones(1, 1, 4, 6, dtype=torch.bool)
    mask[..., 2, :] = False
    r = attention_row_stats(q, k, mask=mask, offsets=(0,))
    assert (r.n_keys[..., 2] == 0).all() and r.entropy[..., 2].isnan().all()
    assert not r.entropy[..., [0, 1, 3]].isnan().any()
    assert (r.offset_weights[..., 2, :] == 0).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_gives_finite_float32_stats(dtype):
    q, k = (torch.randn(1, 4, 300, 16) * 4).to(dtype), (torch.randn(1, 2, 300, 16) * 4).to(dtype)
    r = attention_row_stats(q, k, causal=True, block_size=64)
    for t in (r.entropy, r.max_weight, r.sink_mass, r.logit_spread):
        assert t.dtype == torch.float32 and torch.isfinite(t).all()
    ref = _dense(q.double(), k.double(), None, True, ())
    torch.testing.assert_close(r.entropy.double(), ref["entropy"], atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"q": torch.randn(2, 3, 4)}, r"q must be \[batch, head, pos, d\]"),
        ({"k": torch.randn(1, 3, 5, 4)}, "multiple of key/value heads"),
        ({"q": torch.full((1, 2, 4, 4), math.nan)}, "q"),
        ({"block_size": 0}, "block_size"),
        ({"scale": -1.0}, "scale"),
        ({"mask": torch.ones(1, 1, 4, 5)}, "mask"),
    ],
)
def test_bad_input_is_refused(kwargs, message):
    args = {"q": torch.randn(1, 2, 4, 4), "k": torch.randn(1, 2, 5, 4)} | kwargs
    q, k = args.pop("q"), args.pop("k")
    with pytest.raises(ValueError, match=message):
        attention_row_stats(q, k, **args)


@pytest.fixture(scope="module")
def tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=100,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    return LlamaForCausalLM(cfg).eval()


def test_capture_qkv_hands_over_what_capture_does(tiny_llama):
    """Same q/k/v as the eager capture, and the streamed entropy equals the captured map's."""
    ids = torch.randint(0, 100, (1, 33), generator=torch.Generator().manual_seed(0))

    def streamed(c):
        r = attention_row_stats(c.q, c.k, mask=c.mask, causal=c.causal, scale=c.scaling)
        return c.q, c.k, c.v, r.entropy

    def eager(c):
        return c.q, c.k, c.v, metrics.attention_entropy(c.weights.float(), mask=c.mask)

    a = capture_qkv(tiny_llama, ids, on_layer=streamed)
    b = capture(tiny_llama, ids, on_layer=eager)
    assert sorted(a) == sorted(b)
    for layer in a:
        for x, y in zip(a[layer], b[layer], strict=True):
            torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-5)
