"""Streaming attention kernels against the float64 materialised definition (reference.py)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlimits import normalizers as nz
from attnlimits.kernels import AttentionStats, naive_attention, streaming_attention
from attnlimits.kernels.spec import NORMALIZERS
from attnlimits.normalizers.adaptive import ENTROPY_EPS
from float_tolerance import assert_float32_close
from kernel_inputs import PARAMS, inputs, rel_err

STREAMED = sorted(NORMALIZERS)


def test_params_cover_every_streamed_normalizer():
    assert set(PARAMS) == set(NORMALIZERS)


def make_mask(kind, gen, B, Hq, Lq, Lk):
    if kind is None:
        return None
    if kind == "padding":  # key padding, shared by heads and queries
        m = torch.ones(B, 1, 1, Lk, dtype=torch.bool)
        m[0, ..., : Lk // 3] = False
        return m
    m = torch.rand(B, Hq, Lq, Lk, generator=gen) > 0.4  # per head and query
    m[0, 0, 1] = False  # one all-masked row
    return m


def check_against_naive(q, k, v, normalizer, *, mask=None, causal=False, block_size=7, tol=1e-5):
    got = streaming_attention(
        q, k, v, normalizer, mask=mask, causal=causal, block_size=block_size, return_stats=True,
        **PARAMS[normalizer],
    )  # fmt: skip
    ref = naive_attention(
        q.double(), k.double(), v.double(), normalizer, mask=mask, causal=causal,
        return_stats=True, **PARAMS[normalizer],
    )  # fmt: skip
    assert isinstance(got, AttentionStats)
    assert got.output.dtype == q.dtype and got.output.shape == ref.output.shape
    ref32 = None  # float32: the tolerance is float32 torch arithmetic's own error (float_tolerance)
    if q.dtype == torch.float32:
        ref32 = naive_attention(
            q, k, v, normalizer, mask=mask, causal=causal, return_stats=True, **PARAMS[normalizer]
        )
    for name in AttentionStats._fields:
        a, b = getattr(got, name), getattr(ref, name)
        assert torch.isfinite(a.double()).all(), name
        assert rel_err(a, b) <= tol, (name, rel_err(a, b))
        if ref32 is not None:
            assert_float32_close(a, b, getattr(ref32, name), name)
        else:
            torch.testing.assert_close(
                a.double(), b.double(), rtol=tol, atol=tol, msg=lambda m, name=name: f"{name}: {m}"
            )
    return got


@pytest.mark.parametrize("normalizer", STREAMED)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("mask_kind", [None, "padding", "full"])
def test_matches_float64_naive(gen, normalizer, causal, mask_kind):
    q, k, v = inputs(gen)  # Lq < Lk: causal rows sit at Lk − Lq + i; block 7 divides neither
    mask = make_mask(mask_kind, gen, 2, 4, 19, 29)
    check_against_naive(q, k, v, normalizer, mask=mask, causal=causal)


@pytest.mark.parametrize("normalizer", STREAMED)
def test_float64_inputs_are_exact(gen, normalizer):
    q, k, v = (x.double() for x in inputs(gen))
    mask = make_mask("full", gen, 2, 4, 19, 29)
    check_against_naive(q, k, v, normalizer, mask=mask, causal=True, tol=1e-10)


@settings(max_examples=25, deadline=None)
@given(
    B=st.integers(1, 2), Hkv=st.integers(1, 3), G=st.integers(1, 3), Lq=st.integers(1, 17),
    extra=st.integers(0, 17), d=st.integers(1, 9), block=st.integers(1, 20),
    normalizer=st.sampled_from(STREAMED), causal=st.booleans(),
    masked=st.booleans(), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_random_shapes(B, Hkv, G, Lq, extra, d, block, normalizer, causal, masked, seed):
    gen = torch.Generator().manual_seed(seed)
    Lk = Lq + extra
    q, k, v = inputs(gen, B, Hkv * G, Hkv, Lq, Lk, d, dv=3)
    mask = torch.rand(B, 1, Lq, Lk, generator=gen) > 0.3 if masked else None
    check_against_naive(q, k, v, normalizer, mask=mask, causal=causal, block_size=block)


def test_block_size_invariance(gen):
    q, k, v = inputs(gen, Lq=33, Lk=33)
    outs = [
        streaming_attention(q, k, v, "adaptive", causal=True, block_size=b) for b in (1, 5, 16, 64)
    ]
    for o in outs[1:]:
        torch.testing.assert_close(o, outs[0], rtol=1e-5, atol=1e-6)


def test_gqa_equals_repeated_heads(gen):
    q, k, v = inputs(gen, Hq=6, Hkv=2)
    got = streaming_attention(q, k, v, "adaptive", causal=True, block_size=5)
    rep = streaming_attention(
        q, k.repeat_interleave(3, 1), v.repeat_interleave(3, 1), "adaptive", causal=True
    )
    torch.testing.assert_close(got, rep, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("normalizer", STREAMED)
def test_decode_step_equals_last_row(gen, normalizer):
    """One query against the whole KV cache is the last row of the full causal computation."""
    q, k, v = inputs(gen, Lq=23, Lk=23)
    full = streaming_attention(q, k, v, normalizer, causal=True, block_size=4, **PARAMS[normalizer])
    step = streaming_attention(
        q[:, :, -1:], k, v, normalizer, causal=True, block_size=4, **PARAMS[normalizer]
    )
    torch.testing.assert_close(step, full[:, :, -1:], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("normalizer", STREAMED)
def test_all_masked_rows_are_zero(gen, normalizer):
    q, k, v = inputs(gen)
    mask = torch.zeros(2, 4, 19, 29, dtype=torch.bool)
    mask[1] = True
    kw = PARAMS[normalizer]
    res = streaming_attention(q, k, v, normalizer, mask=mask, return_stats=True, **kw)
    assert not torch.isnan(res.output).any()
    assert (res.output[0] == 0).all() and (res.entropy[0] == 0).all()
    assert (res.out_entropy[0] == 0).all() and (res.n_keys[0] == 0).all()
    if normalizer == "adaptive":
        assert (res.beta[0] == 1).all()
    # causal with more queries than keys: the first Lq − Lk rows see no key
    res = streaming_attention(
        q[:, :, :10], k[:, :, :4], v[:, :, :4], normalizer, causal=True, **PARAMS[normalizer]
    )
    assert (res[:, :, :6] == 0).all() and (res[:, :, 6:].abs().sum(-1) > 0).all()


def test_softmax_t1_equals_sdpa(gen):
    q, k, v = inputs(gen, Hq=2, Hkv=2, Lq=31, Lk=31)
    mask = torch.rand(2, 1, 31, 31, generator=gen) > 0.2
    mask[..., 0] = True  # sdpa gives NaN on all-masked rows
    for kw in ({"is_causal": True}, {"attn_mask": mask}):
        ref = F.scaled_dot_product_attention(q, k, v, **kw)  # type: ignore[arg-type]
        got = streaming_attention(
            q, k, v, causal="is_causal" in kw, mask=kw.get("attn_mask"), block_size=8
        )
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)


def test_ssmax_uses_kept_key_count(gen):
    q, k, v = inputs(gen)
    mask = make_mask("padding", gen, 2, 4, 19, 29)
    res = streaming_attention(q, k, v, "ssmax", mask=mask, causal=True, s=0.5, return_stats=True)
    n = res.n_keys.double()
    assert int(res.n_keys[1, 0, -1]) == 29 and int(res.n_keys[0, 0, -1]) == 29 - 29 // 3
    torch.testing.assert_close(res.beta.double(), 0.5 * torch.log(n.clamp_min(1)))


def test_entropy_differs_from_listing_eps_by_at_most_n_eps(gen):
    """Paper B's −Σ p log(p + 1e-9) is below the exact H by at most n·1e-9 (docs/kernels.md)."""
    q, k, v = (x.double() for x in inputs(gen, Lq=8, Lk=500, spread=6.0))
    res = naive_attention(q, k, v, "adaptive", return_stats=True)
    p = torch.softmax((q @ k.repeat_interleave(2, 1).transpose(-1, -2)) / 8**0.5, -1)
    H_eps = -(p * torch.log(p + ENTROPY_EPS)).sum(-1)
    gap = res.entropy - H_eps
    assert (gap >= 0).all() and (gap <= 500 * ENTROPY_EPS).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("normalizer", STREAMED)
def test_half_precision_finite_and_close(gen, dtype, normalizer):
    q, k, v = inputs(gen, Lq=40, Lk=40)
    mask = make_mask("full", gen, 2, 4, 40, 40)
    res = streaming_attention(
        q.to(dtype), k.to(dtype), v.to(dtype), normalizer, mask=mask, causal=True, block_size=16,
        return_stats=True, **PARAMS[normalizer],
    )  # fmt: skip
    ref = naive_attention(
        *(x.to(dtype).double() for x in (q, k, v)), normalizer, mask=mask, causal=True,
        return_stats=True, **PARAMS[normalizer],
    )  # fmt: skip
    assert res.output.dtype == dtype and torch.isfinite(res.output).all()
    tol = 1e-2 if dtype == torch.float16 else 2e-2  # output rounding only: fp32 accumulation
    torch.testing.assert_close(res.output.double(), ref.output, rtol=tol, atol=tol)
    torch.testing.assert_close(res.entropy.double(), ref.entropy, rtol=1e-4, atol=1e-4)


def test_bad_input_raises(gen):
    q, k, v = inputs(gen)
    with pytest.raises(ValueError, match="multiple"):
        streaming_attention(q[:, :3], k, v)  # 3 query heads, 2 kv heads
    with pytest.raises(ValueError, match="shape mismatch"):
        streaming_attention(q, k[..., :5], v)
    with pytest.raises(ValueError, match="shape mismatch"):
        streaming_attention(q, k, v[:, :, :4])
    with pytest.raises(ValueError, match="batch, head"):
        streaming_attention(q[0], k, v)
    with pytest.raises(ValueError, match="block_size"):
        streaming_attention(q, k, v, block_size=0)
    with pytest.raises(ValueError, match="temperature"):
        streaming_attention(q, k, v, "softmax", temperature=0.0)
    with pytest.raises(ValueError, match="temperature"):
        streaming_attention(q, k, v, "softmax", temperature=-1.0)
    with pytest.raises(ValueError, match=r"\bs\b"):
        streaming_attention(q, k, v, "ssmax", s=0.0)
    with pytest.raises(ValueError, match="unknown"):
        streaming_attention(q, k, v, "adaptive", temperature=2.0)  # not silently ignored
    with pytest.raises(ValueError, match="normalizer"):
        streaming_attention(q, k, v, "sparsemax")
    with pytest.raises(ValueError, match="boolean"):
        streaming_attention(q, k, v, mask=torch.ones(29))
    with pytest.raises(ValueError, match="broadcast"):
        streaming_attention(q, k, v, mask=torch.ones(28, dtype=torch.bool))
    with pytest.raises(ValueError, match="NaN"):
        streaming_attention(q.clone().fill_(float("nan")), k, v)
    with pytest.raises(ValueError, match="dtype"):
        streaming_attention(q.double(), k, v)


@pytest.mark.parametrize("normalizer", STREAMED)
def test_agrees_with_materialised_normalizers(gen, normalizer):
    """Same numbers as the registry's normaliser applied to the scaled logits, then @ v."""
    fn = nz.get(normalizer)
    q, k, v = (x.double() for x in inputs(gen))
    mask = make_mask("full", gen, 2, 4, 19, 29)
    logits = q @ k.repeat_interleave(2, 1).transpose(-1, -2) / 8**0.5  # (B, Hq, Lq, Lk)
    ref = fn(logits, mask=mask, **PARAMS[normalizer]) @ v.repeat_interleave(2, 1)
    got = streaming_attention(q, k, v, normalizer, mask=mask, block_size=6, **PARAMS[normalizer])
    # adaptive: the listing's log(p + 1e-9) moves β by at most ~3·n·1e-9 (docs/kernels.md)
    torch.testing.assert_close(got, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("normalizer", ["softmax", "adaptive", "softcap", "sink_softmax"])
def test_gradcheck(gen, normalizer):
    """Autograd through the block loop is correct (memory then grows as O(L²): inference first)."""
    q, k, v = (x.double().requires_grad_() for x in inputs(gen, B=1, Lq=5, Lk=7, d=3, dv=2))
    mask = torch.rand(1, 1, 5, 7, generator=gen) > 0.3

    def f(q, k, v):
        return streaming_attention(
            q, k, v, normalizer, mask=mask, causal=True, block_size=3, **PARAMS[normalizer]
        )

    assert torch.autograd.gradcheck(f, (q, k, v))


def test_sinks_per_query_head_follow_gqa(gen):
    """One sink logit per query head; query head h reads kv head h // G (here G = 2)."""
    q, k, v = (x.double() for x in inputs(gen))
    sinks = [0.5, -1.0, 2.0, 0.0]
    got = streaming_attention(q, k, v, "sink_softmax", causal=True, block_size=5, sink=sinks)
    logits = q @ k.repeat_interleave(2, 1).transpose(-1, -2) / 8**0.5
    causal = torch.ones(19, 29, dtype=torch.bool).tril(29 - 19)
    w = nz.sink_softmax(logits, mask=causal, sink=torch.tensor(sinks)[:, None, None].double())
    torch.testing.assert_close(got, w @ v.repeat_interleave(2, 1))
    plain = streaming_attention(q, k, v, "softmax1", causal=True, block_size=5)
    torch.testing.assert_close(got[:, 3], plain[:, 3])  # sink 0 is softmax1
    assert all(not torch.allclose(got[:, h], plain[:, h]) for h in range(3))
    with pytest.raises(ValueError, match="3 values for 4 query heads"):
        streaming_attention(q, k, v, "sink_softmax", sink=[0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        streaming_attention(q, k, v, "sink_softmax", sink=float("nan"))
    with pytest.raises(ValueError, match="cap"):
        streaming_attention(q, k, v, "softcap", cap=0.0)


# ---- query blocks side by side (one Python thread per torch thread) ---------------------------


def _with_threads(threads, fn):
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return fn()
    finally:
        torch.set_num_threads(old)


@pytest.mark.parametrize("normalizer", ["softcap", "adaptive", "logn", "sink_softmax"])
@pytest.mark.parametrize("mask_kind", [None, "random"])
def test_blocks_side_by_side_give_the_serial_bits(normalizer, mask_kind, monkeypatch):
    """With 2 torch threads the query blocks run in 2 Python threads of one intra-op thread
    each (kernels/_passes.py ``_side_by_side``); every block's arithmetic is the serial loop's
    at 1 thread, so outputs and statistics are bit-identical, causal or not."""
    from attnlimits.kernels import _passes

    pools = []
    real = _passes.ThreadPoolExecutor
    monkeypatch.setattr(
        _passes, "ThreadPoolExecutor", lambda *a, **kw: pools.append(1) or real(*a, **kw)
    )
    gen = torch.Generator().manual_seed(3)
    q, k, v = inputs(gen, Lq=45, Lk=45)
    mask = make_mask(mask_kind, gen, 2, 4, 45, 45)
    for causal in (False, True):

        def run(causal=causal):
            return streaming_attention(
                q, k, v, normalizer, mask=mask, causal=causal, block_size=8,
                return_stats=True, **PARAMS[normalizer],
            )  # fmt: skip

        serial = _with_threads(1, run)
        assert not pools  # one thread: the serial loop
        side = _with_threads(2, run)
        assert pools  # two threads: the blocks side by side
        pools.clear()
        for a, b in zip(serial, side, strict=True):
            assert torch.equal(a, b)


def test_blocks_side_by_side_leave_the_thread_settings_and_modes_as_they_were():
    """After the side-by-side blocks the caller's thread count holds, in its thread and in
    threads started later (ATen keeps one process-wide default the workers set to 1);
    inference mode (inference tensors are written in place) and grad mode carry over."""
    import threading

    gen = torch.Generator().manual_seed(4)
    q, k, v = inputs(gen, Lq=40, Lk=40)
    seen = []

    def check():
        with torch.inference_mode():
            out = streaming_attention(q, k, v, "softcap", causal=True, block_size=8, cap=2.0)
        assert out.is_inference()
        with torch.no_grad():
            streaming_attention(q, k, v, "adaptive", causal=True, block_size=8)
        seen.append(torch.get_num_threads())
        later = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
        later.start()
        later.join()

    _with_threads(2, check)
    assert seen == [2, 2]


def test_a_worker_error_reaches_the_caller_and_the_threads_are_restored(monkeypatch):
    from attnlimits.kernels import _passes

    def broken(*args, **kwargs):
        raise RuntimeError("block failed")

    monkeypatch.setattr(_passes, "output_pass", broken)
    gen = torch.Generator().manual_seed(5)
    q, k, v = inputs(gen, Lq=40, Lk=40)

    def run():
        with pytest.raises(RuntimeError, match="block failed"):
            streaming_attention(q, k, v, "softmax", block_size=8)
        return torch.get_num_threads()

    assert _with_threads(2, run) == 2


def test_blocks_under_autograd_stay_serial_and_differentiate(monkeypatch):
    """``return_stats`` under grad records the block ops: no side-by-side threads there (a
    pool would raise), and the gradient matches the one-thread run."""
    from attnlimits.kernels import _passes

    def no_pool(*args, **kwargs):
        raise AssertionError("the autograd path must not start threads")

    monkeypatch.setattr(_passes, "ThreadPoolExecutor", no_pool)
    gen = torch.Generator().manual_seed(6)
    q, k, v = (t.double().requires_grad_() for t in inputs(gen, Lq=24, Lk=24))

    def grads():
        st = streaming_attention(q, k, v, "adaptive", causal=True, block_size=8, return_stats=True)
        return torch.autograd.grad(st.output.sum(), (q, k, v))

    for a, b in zip(_with_threads(1, grads), _with_threads(2, grads), strict=True):
        assert torch.equal(a, b)
