"""The Triton kernel (kernels/triton_attention.py) against the float64 materialised definition.

Without a GPU the kernel runs in Triton's interpreter, which must be switched on
(``TRITON_INTERPRET=1``) before triton is first imported: it changes what ``triton.jit``
returns, for triton's own library functions too. So the interpreter cases run in one spawned
child process per test worker, started with that variable set, and this process keeps compiled
triton: the CUDA tests at the end (skipped without a GPU) run the real kernel, and no other test
in the worker sees the variable. In between, the kernel is compiled for sm_90 (Hopper) ahead of
time, which needs no GPU and checks what the interpreter does not.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import torch

pytest.importorskip("triton")

from attnlimits.kernels import AttentionStats, naive_attention, streaming_attention
from float_tolerance import assert_float32_close

pytestmark = pytest.mark.filterwarnings("ignore:TRITON_DEFAULT_FP_FUSION")

PARAMS: dict[str, dict[str, Any]] = {
    "softmax": {"temperature": 0.7},
    "ssmax": {"s": 0.8},
    "adaptive": {},
}
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
TOL = {"float32": 1e-5, "float16": 1e-2, "bfloat16": 2e-2}  # half: output rounding only


def make_inputs(c: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q [B, Hq, Lq, d], k [B, Hkv, Lk, d], v [B, Hkv, Lk, dv]; rows' spread sets their entropy."""
    gen = torch.Generator().manual_seed(c.get("seed", 0))
    B, Hq, Hkv, Lq, Lk, d, dv = (c[n] for n in ("B", "Hq", "Hkv", "Lq", "Lk", "d", "dv"))
    spread = torch.as_tensor(c.get("spread", 3.0), dtype=torch.float32)  # scalar or (Lq,)
    q = torch.randn(B, Hq, Lq, d, generator=gen) * spread.reshape(-1, 1)
    k = torch.randn(B, Hkv, Lk, d, generator=gen)
    v = torch.randn(B, Hkv, Lk, dv, generator=gen)
    dt = DTYPES[c.get("dtype", "float32")]
    q, k, v = q.to(dt), k.to(dt), v.to(dt)
    if c.get("bshd"):  # transformers' memory layout [B, pos, head, d], viewed as [B, head, pos, d]
        q, k, v = (x.transpose(1, 2).contiguous().transpose(1, 2) for x in (q, k, v))
    return q, k, v


def key_mask(c: dict[str, Any]) -> torch.Tensor | None:
    """The case's key-padding keep-mask [B, 1, 1, Lk], or None: ``key_pad`` gives per batch
    either the kept range (lo, hi) or "random" (each key kept with probability 0.6)."""
    pads = c.get("key_pad")
    if pads is None:
        return None
    gen = torch.Generator().manual_seed(c.get("seed", 0) + 1)
    keep = torch.zeros(c["B"], 1, 1, c["Lk"], dtype=torch.bool)
    for b, pad in enumerate(pads):
        if pad == "random":
            keep[b, 0, 0] = torch.rand(c["Lk"], generator=gen) < 0.6
        else:
            keep[b, 0, 0, pad[0] : pad[1]] = True
    return keep


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def check_case(c: dict[str, Any]) -> dict[str, Any]:
    """Run one case through the Triton kernel and compare every AttentionStats field with
    naive_attention in float64 (runs in the interpreter child, or on CUDA in this process)."""
    from attnlimits.kernels.triton_attention import triton_attention

    torch.set_num_threads(1)
    q, k, v = make_inputs(c)
    device = c.get("device", "cpu")
    q, k, v = q.to(device), k.to(device), v.to(device)
    norm, causal = c["normalizer"], c.get("causal", False)
    params = c.get("params", PARAMS[norm])
    mask = key_mask(c)
    mask = None if mask is None else mask.to(device)
    if c.get("tiles"):
        got = triton_attention(
            q, k, v, norm, mask=mask, causal=causal, return_stats=True, tiles=c["tiles"], **params
        )
    else:  # the public dispatch, default tiles
        got = streaming_attention(
            q, k, v, norm, mask=mask, causal=causal, return_stats=True, backend="triton", **params
        )
    ref = naive_attention(
        q.double(), k.double(), v.double(), norm, mask=mask, causal=causal, return_stats=True,
        **params,
    )  # fmt: skip
    assert isinstance(got, AttentionStats)
    assert got.output.dtype == q.dtype and got.output.shape == ref.output.shape
    assert got.output.device == q.device
    tol = TOL[c.get("dtype", "float32")]
    ref32 = None  # float32: the tolerance is float32 torch arithmetic's own error (float_tolerance)
    if q.dtype == torch.float32:
        ref32 = naive_attention(
            q, k, v, norm, mask=mask, causal=causal, return_stats=True, **params
        )
    for name in AttentionStats._fields:
        a, b = getattr(got, name), getattr(ref, name)
        assert a.shape == b.shape, name
        assert torch.isfinite(a.double()).all(), name
        # the half-precision error is in the output's rounding; the statistics stay fp32-exact
        t = tol if name == "output" else max(1e-5, tol / 100)
        assert rel_err(a, b) <= t, (name, rel_err(a, b))
        if ref32 is not None:
            assert_float32_close(a, b, getattr(ref32, name), name)
        else:
            torch.testing.assert_close(
                a.double(), b.double(), rtol=t, atol=t, msg=lambda m, name=name: f"{name}: {m}"
            )
    return {
        "beta": got.beta.cpu(),
        "n_keys": got.n_keys.cpu(),
        "output": got.output.cpu().float(),
    }


@pytest.fixture(scope="module")
def interp() -> Iterator[Any]:
    """A one-process pool whose child imported triton with TRITON_INTERPRET=1."""
    old = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        pool = mp.get_context("spawn").Pool(1)  # the child inherits the variable now
    finally:
        if old is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = old
    yield pool
    pool.terminate()
    pool.join()


BASE = {"B": 2, "Hq": 4, "Hkv": 2, "Lq": 19, "Lk": 37, "d": 8, "dv": 6, "tiles": (16, 16)}


@pytest.mark.parametrize("normalizer", ["softmax", "ssmax", "adaptive"])
@pytest.mark.parametrize("causal", [False, True])
def test_interpreter_matches_float64_naive(interp, normalizer, causal):
    """GQA (2 query heads per kv head), Lq < Lk (decode offset), 16-tiles dividing neither."""
    interp.apply(check_case, ({**BASE, "normalizer": normalizer, "causal": causal},))


SHAPES = {
    # more queries than keys under causal: the first Lq − Lk rows see no key (zeros, H = 0, β = 1)
    "causal_rows_without_keys": {"Lq": 40, "Lk": 12, "causal": True},
    "decode_one_query": {"B": 1, "Lq": 1, "Lk": 50, "causal": True},
    "head_dim_64_square": {"B": 1, "Hq": 2, "Hkv": 1, "Lq": 33, "Lk": 33, "d": 64, "dv": 64},
    "tiles_divide_lengths": {"Lq": 32, "Lk": 48, "causal": True, "tiles": (16, 32)},
    "wide_query_tile_gqa3": {"Hq": 3, "Hkv": 1, "Lq": 21, "Lk": 45, "tiles": (32, 16)},
    "public_dispatch_default_tiles": {"Lq": 40, "Lk": 70, "causal": True, "tiles": None},
    "strided_bshd_views": {"Lq": 20, "Lk": 20, "causal": True, "bshd": True},
    # long-context's answer-row statistics pass key[..., :1] as v: dv = 1, a strided view
    "value_dim_1_decode": {"B": 1, "Lq": 1, "Lk": 50, "causal": True, "dv": 1},
}


@pytest.mark.parametrize("normalizer", ["softmax", "adaptive"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_interpreter_shapes(interp, shape, normalizer):
    res = interp.apply(check_case, ({**BASE, **SHAPES[shape], "normalizer": normalizer},))
    if shape == "causal_rows_without_keys":
        assert (res["n_keys"][..., :28] == 0).all() and (res["output"][..., :28, :] == 0).all()
        if normalizer == "adaptive":
            assert (res["beta"][..., :28] == 1).all()


@pytest.mark.parametrize("causal", [False, True])
def test_interpreter_softmax_t1_one_state(interp, causal):
    """T = 1: the applied weights are softmax(l), so one (m, Z, U) gives both entropies."""
    case = {**BASE, "normalizer": "softmax", "params": {"temperature": 1.0}, "causal": causal}
    interp.apply(check_case, (case,))


def test_interpreter_ssmax_decode_offset(interp):
    """ssmax's c = s·log n with n the causal position + 1 read per row (not Lk)."""
    res = interp.apply(check_case, ({**BASE, "normalizer": "ssmax", "causal": True, "Lq": 5},))
    n = torch.arange(33, 38).double()  # Lk − Lq + i + 1
    torch.testing.assert_close(res["beta"][0, 0].double(), 0.8 * torch.log(n))


def test_interpreter_adaptive_skips_only_unit_beta_tiles(interp):
    """Query tile 0 holds peaked rows only (H small, β = 1: launch 2 exits and launch 1's output
    stays); tile 1 holds flat rows (β > 1: recomputed); tile 2 mixes both."""
    spread = [60.0] * 16 + [0.05] * 16 + [60.0, 0.05] * 4
    case = {**BASE, "Lq": 40, "Lk": 60, "spread": spread, "normalizer": "adaptive"}
    beta = interp.apply(check_case, (case,))["beta"]
    assert (beta[..., :16] == 1).all() and (beta[..., 16:32] > 1).all()
    assert (beta[..., 32:] == 1).any() and (beta[..., 32:] > 1).any()


# per batch: the kept keys (lo, hi) or "random"; BASE has B = 2, Lq = 19, Lk = 37
KEY_PADS = {
    "right_padding": [(0, 37), (0, 23)],
    "left_padding": [(0, 37), (11, 37)],
    "random_holes": ["random", "random"],
    "batch_all_padded": [(0, 30), (0, 0)],
}


@pytest.mark.parametrize("normalizer", ["softmax", "ssmax", "adaptive"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("pads", list(KEY_PADS))
def test_interpreter_key_padding(interp, pads, causal, normalizer):
    """A [B, 1, 1, Lk] keep-mask, alone or with causal; ssmax's n counts the kept keys; a batch
    with every key padded gives zeros (H = 0, β = 1)."""
    case = {**BASE, "normalizer": normalizer, "causal": causal, "key_pad": KEY_PADS[pads]}
    res = interp.apply(check_case, (case,))
    keep = key_mask(case)[:, 0, 0]  # (B, Lk)
    pos = torch.arange(19) + (37 - 19)
    seen = keep[:, None, :].expand(-1, 19, -1)  # (B, Lq, Lk)
    if causal:
        seen = seen & (torch.arange(37) <= pos[:, None])
    assert torch.equal(res["n_keys"][:, 0], seen.sum(-1))  # (B, Lq)
    if pads == "batch_all_padded":
        assert (res["output"][1] == 0).all() and (res["n_keys"][1] == 0).all()


def test_interpreter_key_padding_public_dispatch(interp):
    """streaming_attention(backend="triton") with a [B, 1, 1, Lk] mask and default tiles; then a
    decode step (Lq = 1), where transformers' masks are key masks and so reach the kernel."""
    case = {**BASE, "Lq": 40, "Lk": 70, "causal": True, "tiles": None, "normalizer": "ssmax"}
    interp.apply(check_case, ({**case, "key_pad": [(5, 70), "random"]},))
    decode = {**case, "Lq": 1, "normalizer": "adaptive", "key_pad": [(9, 70), (0, 64)]}
    interp.apply(check_case, (decode,))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("normalizer", ["ssmax", "adaptive"])
def test_interpreter_half_precision(interp, dtype, normalizer):
    """fp32 accumulation: only the output's rounding differs from float64 on the rounded inputs.
    bf16 dots run in fp32 in the interpreter (numpy has no bf16 matmul), with p rounded to bf16
    first as on the GPU."""
    case = {**BASE, "Lq": 33, "Lk": 40, "causal": True, "dtype": dtype, "normalizer": normalizer}
    interp.apply(check_case, (case,))


# --- dispatch and fallbacks (this process: compiled triton, no interpreter) -------------------


def small(gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return make_inputs({**BASE, "seed": int(torch.randint(100, (1,), generator=gen))})


def test_auto_on_cpu_is_the_torch_path(gen):
    q, k, v = small(gen)
    auto = streaming_attention(q, k, v, "adaptive", causal=True)
    torch_path = streaming_attention(q, k, v, "adaptive", causal=True, backend="torch")
    assert torch.equal(auto, torch_path)


def test_triton_backend_refuses_clearly(gen):
    q, k, v = small(gen)
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    if not interpreted:
        with pytest.raises(ValueError, match="interpreter"):
            streaming_attention(q, k, v, backend="triton")  # CPU without the interpreter
    with pytest.raises(ValueError, match="key-padding masks only"):  # differs between rows
        streaming_attention(q, k, v, mask=torch.ones(19, 37, dtype=torch.bool), backend="triton")
    with pytest.raises(ValueError, match="dtype"):
        streaming_attention(q.double(), k.double(), v.double(), backend="triton")
    with pytest.raises(ValueError, match="grad"):
        streaming_attention(q.requires_grad_(), k, v, backend="triton")
    with pytest.raises(ValueError, match="backend"):
        streaming_attention(q, k, v, backend="cuda")


def test_key_padding_detects_masks_shared_by_heads_and_rows():
    from attnlimits.kernels.triton_attention import key_padding

    B, Hq, Lq, Lk = 2, 4, 3, 5
    keep = torch.rand(B, 1, 1, Lk, generator=torch.Generator().manual_seed(0)) < 0.5
    for m in (keep, keep[:, :, :1].clone(), keep[0, 0, 0]):  # [B,1,1,Lk] (a copy), [Lk]
        got = key_padding(m.expand(B, Hq, Lq, Lk))
        assert got is not None and torch.equal(got, m.reshape(-1, Lk).expand(B, Lk))
    assert key_padding(keep[:1]) is not None  # B = Hq = Lq = 1: size 1, any stride
    per_row = torch.rand(B, 1, Lq, Lk) < 0.5
    per_head = torch.rand(B, Hq, 1, Lk) < 0.5
    for m in (per_row, per_head, keep.expand(B, Hq, Lq, Lk).clone()):  # the last: materialised
        assert key_padding(m.expand(B, Hq, Lq, Lk)) is None


def test_package_imports_and_runs_without_triton():
    """With triton unimportable the package imports, "auto" runs, and "triton" says why not."""
    code = (
        "import sys; sys.modules['triton'] = None\n"
        "import torch\n"
        "from attnlimits.kernels import streaming_attention\n"
        "q = torch.randn(1, 2, 5, 4); k = v = torch.randn(1, 1, 7, 4)\n"
        "streaming_attention(q, k, v, 'adaptive', causal=True)\n"
        "try:\n"
        "    streaming_attention(q, k, v, backend='triton')\n"
        "except ValueError as e:\n"
        "    print(e)\n"
    )
    env = {key: val for key, val in os.environ.items() if key != "TRITON_INTERPRET"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "triton is not installed" in out.stdout


# --- compiled for a Hopper GPU (sm_90) ahead of time: no GPU needed ----------------------------
# The interpreter runs the kernel's Python; it does not check what only the compiler does (types
# of loop-carried values, constexpr branches, register and shared-memory fit). Compiling to a
# cubin with triton's bundled ptxas catches those here.

FLAGS = {
    "softmax_T_stats": {"U_Y": True, "HY_OUT": True, "SEP_L": True},
    "adaptive_pass1_stats": {"U_Y": True, "HY_OUT": True, "HL_FROM_Y": True},
    "adaptive_pass2_stats": {"ROW_C": True, "SKIP_UNIT": True, "U_Y": True, "HY_OUT": True},
}


def compile_for_sm90(dtype: str, tiles: tuple[int, int, int, int], d: int, **flags: Any) -> Any:
    import inspect

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from attnlimits.kernels import _triton_kernel
    from attnlimits.kernels import triton_attention as ta

    bm, bn, warps, stages = tiles
    ones = flags.pop("ones", ())
    consts: dict[str, Any] = {
        "CAUSAL": True, "KEY_MASK": False, "ROW_C": False, "SKIP_UNIT": False, "U_Y": False,
        "HY_OUT": False, "HL_FROM_Y": False, "SEP_L": False,
        "DOT_PRECISION": "ieee" if dtype == "fp32" else "tf32",
        "UPCAST": False, "EVEN_D": d >= 16 and d & (d - 1) == 0, "BLOCK_M": bm, "BLOCK_N": bn,
        "BLOCK_D": ta._pow2(d), "BLOCK_DV": ta._pow2(d), **flags, **dict.fromkeys(ones, 1),
    }  # fmt: skip
    names = list(inspect.signature(_triton_kernel.attn_fwd).parameters)
    sig = {}
    for n in names:
        if n in consts:
            sig[n] = "constexpr"
        elif n in ("Q", "K", "V", "O"):
            sig[n] = "*" + dtype
        elif n in ("C", "HL", "HY"):
            sig[n] = "*fp32"
        elif n == "KP":
            sig[n] = "*i8"
        else:
            sig[n] = "fp32" if n in ("qk_scale", "c0") else "i32"
    try:
        src = ASTSource(
            fn=triton.jit(_triton_kernel.attn_fwd), signature=sig,
            constexprs={(names.index(n),): val for n, val in consts.items()},
        )  # fmt: skip
    except TypeError as e:  # ASTSource's arguments changed across triton 3.x
        pytest.skip(f"this triton's ASTSource takes other arguments: {e}")
    opts = {"num_warps": warps, "num_stages": stages}
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=opts)


@pytest.mark.parametrize(
    "dtype, tiles, d, flags",
    [
        ("bf16", (128, 64, 8, 3), 128, FLAGS["adaptive_pass1_stats"]),
        ("bf16", (128, 64, 8, 3), 72, FLAGS["adaptive_pass2_stats"]),  # padded head dim
        ("fp16", (128, 64, 8, 3), 64, {**FLAGS["softmax_T_stats"], "CAUSAL": False}),
        # a decode step: triton turns integer arguments equal to 1 into constants
        ("bf16", (16, 32, 4, 3), 128, {**FLAGS["adaptive_pass2_stats"], "ones": ("Lq", "G", "Hq")}),
        ("fp32", (64, 32, 8, 2), 64, FLAGS["softmax_T_stats"]),
        ("bf16", (128, 64, 8, 3), 128, {**FLAGS["adaptive_pass1_stats"], "KEY_MASK": True}),
        ("fp16", (128, 64, 8, 3), 64, {"ROW_C": True, "KEY_MASK": True, "CAUSAL": False}),
    ],
    ids=[
        "bf16-adaptive1",
        "bf16-adaptive2-d72",
        "fp16-softmaxT",
        "bf16-decode",
        "fp32-softmaxT",
        "bf16-adaptive1-keymask",
        "fp16-ssmax-keymask",
    ],
)
def test_compiles_for_hopper(dtype, tiles, d, flags):
    pytest.importorskip("triton.backends.nvidia")
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("TRITON_INTERPRET=1: triton.jit gives the interpreter here")
    kernel = compile_for_sm90(dtype, tiles, d, **dict(flags))
    assert kernel.asm["cubin"] and kernel.metadata.shared <= 227 * 1024  # H100's per-block limit


# --- the compiled kernel on a GPU ---------------------------------------------------------------

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
GPU_SHAPES = [
    {"B": 2, "Hq": 8, "Hkv": 2, "Lq": 700, "Lk": 1500, "d": 64, "dv": 64},
    {"B": 1, "Hq": 4, "Hkv": 4, "Lq": 1024, "Lk": 1024, "d": 128, "dv": 128},
    {"B": 1, "Hq": 8, "Hkv": 1, "Lq": 1, "Lk": 3000, "d": 128, "dv": 128},  # decode step
    {"B": 3, "Hq": 2, "Hkv": 1, "Lq": 300, "Lk": 200, "d": 32, "dv": 16},  # rows without keys
]


@cuda
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("normalizer", ["softmax", "ssmax", "adaptive"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", range(len(GPU_SHAPES)))
def test_cuda_matches_float64_naive(shape, causal, normalizer, dtype):
    case = {**GPU_SHAPES[shape], "normalizer": normalizer, "causal": causal, "dtype": dtype}
    # autotuned tiles in bf16 (each flag set tunes, compiling every candidate: minutes in fp32)
    check_case({**case, "device": "cuda", "tiles": None if dtype == "bfloat16" else (64, 32)})


@cuda
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("normalizer", ["softmax", "ssmax", "adaptive"])
@pytest.mark.parametrize("causal", [False, True])
def test_cuda_key_padding(causal, normalizer, dtype):
    shape = {"B": 3, "Hq": 8, "Hkv": 2, "Lq": 700, "Lk": 1500, "d": 64, "dv": 64}
    pads = [(0, 1500), (0, 1100), "random"]
    case = {**shape, "normalizer": normalizer, "causal": causal, "dtype": dtype, "key_pad": pads}
    check_case({**case, "device": "cuda", "tiles": None if dtype == "bfloat16" else (64, 32)})


@cuda
@pytest.mark.parametrize("normalizer", ["softmax", "ssmax", "adaptive"])
@pytest.mark.parametrize("L", [16384, 65536])
def test_cuda_long_sequences_first_and_last_rows(L, normalizer):
    """Up to 64K tokens, bf16, d = 128, GQA 4:1, causal: the first 64 rows (keys 0..63) and the
    last 64 rows (all L keys) of the full run against float64 on those rows alone."""
    from attnlimits.kernels.triton_attention import triton_attention

    gen = torch.Generator(device="cuda").manual_seed(L)
    q = torch.randn(1, 4, L, 128, device="cuda", generator=gen).bfloat16()
    k = torch.randn(1, 1, L, 128, device="cuda", generator=gen).bfloat16()
    v = torch.randn(1, 1, L, 128, device="cuda", generator=gen).bfloat16()
    params = PARAMS[normalizer]
    with torch.no_grad():
        got = triton_attention(q, k, v, normalizer, causal=True, return_stats=True, **params)
    for rows, keys in ((slice(0, 64), slice(0, 64)), (slice(L - 64, L), slice(0, L))):
        ref = naive_attention(
            q[:, :, rows].double(), k[:, :, keys].double(), v[:, :, keys].double(), normalizer,
            causal=True, return_stats=True, **params,
        )  # fmt: skip
        for name in AttentionStats._fields:
            a, b = getattr(got, name)[:, :, rows].double(), getattr(ref, name).double()
            t = TOL["bfloat16"] if name == "output" else 1e-4
            assert rel_err(a, b) <= t, (rows, name, rel_err(a, b))


@cuda
def test_cuda_auto_dispatches_to_triton(monkeypatch):
    from attnlimits.kernels import triton_attention

    calls = []
    real = triton_attention._forward

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(triton_attention, "_forward", spy)
    q, k, v = (x.cuda() for x in make_inputs({**BASE, "Lq": 64, "Lk": 64}))
    with torch.no_grad():
        out = streaming_attention(q, k, v, "adaptive", causal=True)
    assert calls == [1]
    ref = streaming_attention(q, k, v, "adaptive", causal=True, backend="torch")
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    mask = torch.ones(64, 64, dtype=torch.bool, device="cuda")
    streaming_attention(q, k, v, "adaptive", mask=mask)  # a per-row mask: the PyTorch path
    streaming_attention(q.requires_grad_(), k, v, "adaptive")  # grad: the PyTorch path
    assert calls == [1]
    with torch.no_grad():  # a key-padding mask: the kernel
        streaming_attention(q, k, v, "adaptive", mask=mask[0])
    assert calls == [1, 1]
