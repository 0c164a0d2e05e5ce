"""The streamed kernel's recomputing backward (kernels/_backward.py) against autograd through the
materialised definition (reference.py), and its O(L) memory."""

from __future__ import annotations

import pytest
import torch

from attnlimits.kernels import naive_attention, streaming_attention
from attnlimits.kernels._backward import beta_slope
from attnlimits.kernels.spec import NORMALIZERS
from attnlimits.normalizers.adaptive import POLY_COEFFS, adaptive_beta
from kernel_inputs import PARAMS, inputs, rel_err

STREAMED = sorted(NORMALIZERS)
SLOW_2048 = ("softmax", "logn", "softmax1", "sink_softmax")


def grads(fn, q, k, v, normalizer, dout, **kw):
    """(output, dq, dk, dv) of ``fn`` at (q, k, v) against the cotangent ``dout``."""
    q, k, v = (x.detach().clone().requires_grad_() for x in (q, k, v))
    out = fn(q, k, v, normalizer, **kw, **PARAMS[normalizer])
    out.backward(dout)
    return out, q.grad, k.grad, v.grad


@pytest.mark.parametrize("normalizer", STREAMED)
def test_gradcheck_every_normalizer(gen, normalizer):
    """float64 gradcheck through the recomputing backward: GQA, a mask with an all-masked row,
    causal with a decode offset, blocks that do not divide the lengths."""
    q, k, v = (x.double().requires_grad_() for x in inputs(gen, B=1, Lq=5, Lk=7, d=3, dv=2))
    mask = torch.rand(1, 1, 5, 7, generator=gen) > 0.3
    mask[..., 0, :] = False  # one all-masked row: zero gradient, not NaN

    def f(q, k, v):
        return streaming_attention(
            q, k, v, normalizer, mask=mask, causal=True, block_size=3, **PARAMS[normalizer]
        )

    out = f(q, k, v)
    assert type(out.grad_fn).__name__ == "StreamedAttentionBackward"
    assert torch.autograd.gradcheck(f, (q, k, v), fast_mode=normalizer != "adaptive")


def test_adaptive_gradient_flows_through_the_entropy(gen):
    """Where β > 1 the gradient includes β′(H)·∂H/∂l (the listing has no stop_gradient): it
    matches autograd through the materialised listing, and differs from the fixed-β gradient."""
    q, k, v = (x.double() for x in inputs(gen, Lq=12, Lk=40, spread=0.4))
    ref = naive_attention(q, k, v, "adaptive", return_stats=True)
    assert bool((ref.beta > 1.05).any())  # the test would not see β′ otherwise
    dout = torch.randn(ref.output.shape, generator=gen, dtype=torch.float64)
    got = grads(streaming_attention, q, k, v, "adaptive", dout, block_size=16)
    want = grads(naive_attention, q, k, v, "adaptive", dout)
    for a, b in zip(got[1:], want[1:], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10)
    qd = q.clone().requires_grad_()
    fixed = torch.softmax(
        ref.beta.detach()[..., None] * (qd @ k.repeat_interleave(2, 1).transpose(-1, -2)) / 8**0.5,
        -1,
    ) @ v.repeat_interleave(2, 1)
    fixed.backward(dout)
    assert rel_err(got[1], qd.grad) > 1e-3


def test_beta_slope_is_the_derivative_of_adaptive_beta():
    H = torch.linspace(0.0, 4.0, 401, dtype=torch.float64).requires_grad_()
    adaptive_beta(H, POLY_COEFFS, 0.5).sum().backward()
    torch.testing.assert_close(beta_slope(H.detach(), POLY_COEFFS, 0.5), H.grad)
    assert bool((H.grad != 0).any()) and bool((H.grad == 0).any())


@pytest.mark.parametrize(
    "normalizer",
    ["adaptive", "softcap", *(pytest.param(n, marks=pytest.mark.slow) for n in SLOW_2048)],
)
def test_agrees_with_materialised_gradients_at_2048(gen, normalizer):
    """float32 streamed gradients against float64 autograd through the O(L²) definition."""
    q, k, v = inputs(gen, B=1, Hq=2, Hkv=1, Lq=2048, Lk=2048, d=16, dv=16, spread=1.0)
    dout = torch.randn(1, 2, 2048, 16, generator=gen)
    got = grads(streaming_attention, q, k, v, normalizer, dout, causal=True, block_size=256)
    want = grads(
        naive_attention, q.double(), k.double(), v.double(), normalizer, dout.double(),
        causal=True,
    )  # fmt: skip
    for name, a, b in zip(("out", "dq", "dk", "dv"), got, want, strict=True):
        assert a.dtype == torch.float32
        assert rel_err(a.detach(), b.detach()) < 1e-5, (name, rel_err(a.detach(), b.detach()))


@pytest.mark.parametrize("normalizer", ["adaptive", "softcap"])
def test_autograd_keeps_no_map(gen, normalizer):
    """Everything saved for the backward is O(L·d): at L = 512 no saved tensor reaches L² / 4
    elements and all of them total under 64·L·d (autograd through the block loop kept every
    block's intermediates: 1.7–3.0 million elements here, 6–11·L²)."""
    L = 512
    q, k, v = (x.requires_grad_() for x in inputs(gen, B=1, Hq=2, Hkv=1, Lq=L, Lk=L, d=8, dv=8))
    sizes: list[int] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        sizes.append(t.numel())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = streaming_attention(q, k, v, normalizer, causal=True, block_size=64)
    out.sum().backward()
    assert sizes and max(sizes) < L * L // 4
    assert sum(sizes) < 64 * L * 8


def test_half_precision_gradients_keep_dtypes(gen):
    q, k, v = (x.bfloat16().requires_grad_() for x in inputs(gen, Lq=9, Lk=9))
    out = streaming_attention(q, k, v, "softcap", causal=True, block_size=4, cap=2.0)
    out.float().sum().backward()
    for x in (q, k, v):
        assert x.grad is not None and x.grad.dtype == torch.bfloat16
        assert bool(torch.isfinite(x.grad.float()).all())


def test_stats_with_grad_keep_autograd_through_the_blocks(gen):
    """return_stats=True under autograd still differentiates (through the block ops)."""
    q, k, v = (x.double().requires_grad_() for x in inputs(gen, B=1, Lq=4, Lk=6, d=3, dv=2))
    st = streaming_attention(q, k, v, "adaptive", block_size=2, return_stats=True)
    st.output.sum().backward()
    assert q.grad is not None


@pytest.mark.parametrize("cap", [2.0, 50.0, 200.0])
def test_softcap_forward_without_running_max(gen, cap):
    """The forward's fixed-shift softcap path (caps up to ~86 in float32) and its online
    fallback both match the float64 definition, with logits far beyond ±cap (spread 30)."""
    from attnlimits.kernels._passes import Problem, unshifted_cap

    q, k, v = inputs(gen, Lq=40, Lk=50, spread=30.0)
    got = streaming_attention(q, k, v, "softcap", causal=True, block_size=16, cap=cap)
    want = naive_attention(q.double(), k.double(), v.double(), "softcap", causal=True, cap=cap)
    assert rel_err(got, want) < 2e-6
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)
    p = Problem(q, k, v, None, True, 10, 1.0, 16, torch.float32, cap, None)
    assert unshifted_cap(p) == (cap < 86.0)
