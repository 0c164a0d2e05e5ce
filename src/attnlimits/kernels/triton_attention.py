"""Triton forward kernel for :func:`~attnlimits.kernels.streaming_attention` (CUDA; forward only).

One flash-attention style kernel, :func:`_attn_fwd`, computes for a tile of ``BLOCK_M`` query
rows of one query head, streaming ``BLOCK_N`` keys at a time (log2 domain, ``x = l·log2 e``):

- the output ``softmax(c·l) @ v`` by the online softmax: running maximum ``m`` of ``y = c·x``,
  ``Z ← α·Z + Σ 2^{y − m'}``, ``acc ← α·acc + 2^{y − m'} @ v`` with ``α = 2^{m − m'}``;
- optionally ``U = Σ 2^{y − m}·(y − m)``, rescaled as ``U ← α·(U + (m − m')·Z) + Σ_blk …``, so
  that the entropy of the applied weights is ``H = ln 2·(log₂ Z − U/Z)`` (paper B, *Softmax is
  not Enough*, Appendix G: ``H = log Z − U/Z`` with ``Z``, ``U`` accumulated blockwise with
  flash-attention rescaling; here kept relative to the running maximum, in base 2);
- optionally the same ``(m, Z, U)`` for ``l`` itself when ``c ≠ 1`` (the entropy of
  ``softmax(l)``, reported as ``AttentionStats.entropy``).

How the three normalisers use it (``c`` is a per-row inverse temperature):

- ``"softmax"``: ``c = 1/T``, one launch;
- ``"ssmax"``: ``c = s·log n`` with ``n`` the row's kept keys (``Lk``, or its causal position
  + 1), computed on the host and read per row, one launch;
- ``"adaptive"``: launch 1 with ``c = 1`` gives, fused, ``H`` of ``softmax(l)`` **and** the
  β = 1 output; ``β = adaptive_beta(H)`` (torch, the library's function); launch 2 recomputes
  ``softmax(β·l) @ v`` only in query tiles holding a row with β ≠ 1 (the others exit at once and
  keep launch 1's output), so low-entropy tiles cost one pass.

Supported: no mask or ``causal`` (bottom-right aligned: query ``i`` at key position
``Lk − Lq + i``), grouped-query attention (query head ``h`` reads key/value head
``h // (Hq // Hkv)``, no copy), fp32/fp16/bf16 inputs with fp32 accumulation (fp32 dots in IEEE
precision, not TF32), head dims up to 256 (padded to a power of two ≥ 16), any ``Lq``/``Lk``.
Boolean masks, float64, and inputs that require grad are not supported:
:func:`unsupported` names the reason, and ``streaming_attention(backend="auto")`` then takes
the PyTorch path.

On CPU tensors the same kernel source runs in Triton's interpreter (numpy) when
``TRITON_INTERPRET=1`` was set before triton was first imported; that is how the tests check it
on machines without a GPU (``tests/test_kernels_triton.py``). It is slow and meant for tests.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import torch
from torch import Tensor

from attnlimits.kernels.spec import AttentionStats, check_inputs, resolve_params
from attnlimits.normalizers.adaptive import adaptive_beta

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs: streaming_attention keeps its PyTorch path
    triton = None
    tl = None

__all__ = ["HAS_TRITON", "interpreting", "triton_attention", "unsupported"]

HAS_TRITON = triton is not None
_LOG2E = 1.4426950408889634
_MAX_HEAD_DIM = 256
_MAX_GRID_Y = 65535  # CUDA's limit on the second grid axis, which holds batch × query heads
_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _attn_fwd(
    Q, K, V, O, C, HL, HY,
    s_qb, s_qh, s_qm, s_qd,
    s_kb, s_kh, s_kn, s_kd,
    s_vb, s_vh, s_vn, s_vd,
    s_ob, s_oh, s_om, s_od,
    s_cbh,
    Hq, G, Lq, Lk, d, dv,
    qk_scale, c0,
    L_BUCKET,
    CAUSAL: tl.constexpr,  # keep keys j ≤ Lk − Lq + i
    ROW_C: tl.constexpr,  # c per row from C[bh·s_cbh + i]; else c = c0 for every row
    SKIP_UNIT: tl.constexpr,  # with ROW_C: tiles whose rows all have c == 1 exit, storing nothing
    U_Y: tl.constexpr,  # track U of y = c·x: entropy of the applied weights
    HY_OUT: tl.constexpr,  # store that entropy to HY
    HL_FROM_Y: tl.constexpr,  # c ≡ 1: store it to HL as well
    SEP_L: tl.constexpr,  # c ≠ 1: track (m, Z, U) of x too and store its entropy to HL
    DOT_PRECISION: tl.constexpr,  # "ieee" for fp32 inputs
    UPCAST: tl.constexpr,  # interpreter only: dot in fp32 (numpy has no bf16 matmul)
    EVEN_D: tl.constexpr,  # d == BLOCK_D and dv == BLOCK_DV: unmasked loads in full key tiles
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
):  # fmt: skip
    # the kernel source: wrapped by triton.jit (GPU) or the interpreter (CPU), see _kernel()
    pid_m = tl.program_id(0)
    if CAUSAL:  # heaviest (last) query tiles first: less tail imbalance
        pid_m = tl.num_programs(0) - 1 - pid_m
    bh = tl.program_id(1)
    b = bh // Hq
    h = bh % Hq
    hk = h // G  # grouped-query attention: the key/value head of query head h
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    row_ok = offs_m < Lq
    dk_ok = offs_d[:, None] < d  # (D, 1)
    dv_ok = offs_dv[None, :] < dv  # (1, DV)
    qpos = offs_m + (Lk - Lq)  # key position of each query row
    b64 = b.to(tl.int64)
    q_ptrs = (
        Q + b64 * s_qb + h.to(tl.int64) * s_qh + offs_m[:, None] * s_qm + offs_d[None, :] * s_qd
    )
    q = tl.load(q_ptrs, mask=row_ok[:, None] & (offs_d[None, :] < d), other=0.0)  # (M, D)
    if UPCAST:
        q = q.to(tl.float32)
    k_base = K + b64 * s_kb + hk.to(tl.int64) * s_kh
    v_base = V + b64 * s_vb + hk.to(tl.int64) * s_vh

    if ROW_C:
        c = tl.load(C + bh.to(tl.int64) * s_cbh + offs_m, mask=row_ok, other=1.0)
    else:
        c = tl.zeros([BLOCK_M], dtype=tl.float32) + c0
    cs = c * qk_scale  # y = cs·(q·k) = c·l·log2(e)

    # key tiles [0, full) are kept for every row of the tile; [full, hi) need the mask
    if CAUSAL:
        hi = tl.minimum(tl.maximum(Lk - Lq + (pid_m + 1) * BLOCK_M, 0), Lk)
        full = tl.minimum(tl.maximum(Lk - Lq + pid_m * BLOCK_M + 1, 0), Lk) // BLOCK_N * BLOCK_N
    else:
        hi = Lk
        full = Lk // BLOCK_N * BLOCK_N
    store_ok = row_ok
    if SKIP_UNIT:
        need = tl.max((c != 1.0).to(tl.int32), axis=0)  # 0: every row keeps launch 1's result
        hi = hi * need
        full = full * need
        store_ok = offs_m < Lq * need

    m_y = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    z_y = tl.zeros([BLOCK_M], dtype=tl.float32)
    u_y = tl.zeros([BLOCK_M], dtype=tl.float32)
    m_x = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    z_x = tl.zeros([BLOCK_M], dtype=tl.float32)
    u_x = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], dtype=tl.float32)
    for stage in tl.static_range(2):
        if stage == 0:
            lo = 0
            top = full
        else:
            lo = full
            top = hi
        for start_n in range(lo, top, BLOCK_N):
            cols = start_n + offs_n
            col_ok = cols < Lk
            k_ptrs = k_base + cols[None, :] * s_kn + offs_d[:, None] * s_kd  # (D, N)
            v_ptrs = v_base + cols[:, None] * s_vn + offs_dv[None, :] * s_vd  # (N, DV)
            if stage == 0 and EVEN_D:
                k = tl.load(k_ptrs)
            else:
                k = tl.load(k_ptrs, mask=col_ok[None, :] & dk_ok, other=0.0)
            if UPCAST:
                k = k.to(tl.float32)
            qk = tl.dot(q, k, input_precision=DOT_PRECISION)  # (M, N) fp32
            y = qk * cs[:, None]
            if stage == 1:
                keep = col_ok[None, :]
                if CAUSAL:
                    keep = keep & (cols[None, :] <= qpos[:, None])
                y = tl.where(keep, y, float("-inf"))
            # online softmax of y; m_use = 0 while a row has seen no kept key (avoids inf − inf)
            m_new = tl.maximum(m_y, tl.max(y, 1))
            m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
            alpha = tl.exp2(m_y - m_use)
            dy = y - m_use[:, None]
            p = tl.exp2(dy)
            if U_Y:
                if stage == 1:  # masked: 2^-1000 is 0 in fp32, and 0·(-1000) is 0, not NaN
                    dy = tl.maximum(dy, -1000.0)
                shift = tl.where(z_y > 0, m_y - m_use, 0.0)
                u_y = alpha * (u_y + shift * z_y) + tl.sum(p * dy, 1)
            z_y = alpha * z_y + tl.sum(p, 1)
            if stage == 0 and EVEN_D:
                v = tl.load(v_ptrs)
            else:
                v = tl.load(v_ptrs, mask=col_ok[:, None] & dv_ok, other=0.0)
            acc = acc * alpha[:, None]
            if UPCAST:  # round p as the GPU does before its half-precision dot
                acc = tl.dot(p.to(V.dtype.element_ty).to(tl.float32), v.to(tl.float32), acc)
            else:
                acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)
            m_y = m_new
            if SEP_L:  # the same statistics for x = l·log2(e), i.e. c = 1
                x = qk * qk_scale
                if stage == 1:
                    x = tl.where(keep, x, float("-inf"))
                mx_new = tl.maximum(m_x, tl.max(x, 1))
                mx_use = tl.where(mx_new == float("-inf"), 0.0, mx_new)
                alpha_x = tl.exp2(m_x - mx_use)
                dx = x - mx_use[:, None]
                px = tl.exp2(dx)
                if stage == 1:
                    dx = tl.maximum(dx, -1000.0)
                shift_x = tl.where(z_x > 0, m_x - mx_use, 0.0)
                u_x = alpha_x * (u_x + shift_x * z_x) + tl.sum(px * dx, 1)
                z_x = alpha_x * z_x + tl.sum(px, 1)
                m_x = mx_new

    z_safe = tl.where(z_y > 0, z_y, 1.0)  # a row with no kept key: acc = 0, output 0
    o_ptrs = (
        O + b64 * s_ob + h.to(tl.int64) * s_oh + offs_m[:, None] * s_om + offs_dv[None, :] * s_od
    )
    out = acc / z_safe[:, None]
    tl.store(o_ptrs, out.to(O.dtype.element_ty), mask=store_ok[:, None] & dv_ok)
    rows = bh.to(tl.int64) * Lq + offs_m  # per-row statistics are [B, Hq, Lq], contiguous
    if U_Y:  # H = ln 2·(log2 Z − U/Z) nats; 0 where no key is kept
        h_y = tl.where(z_y > 0, 0.6931471805599453 * (tl.log2(z_safe) - u_y / z_safe), 0.0)
        h_y = tl.maximum(h_y, 0.0)
        if HY_OUT:
            tl.store(HY + rows, h_y, mask=store_ok)
        if HL_FROM_Y:
            tl.store(HL + rows, h_y, mask=store_ok)
    if SEP_L:
        zx_safe = tl.where(z_x > 0, z_x, 1.0)
        h_x = tl.where(z_x > 0, 0.6931471805599453 * (tl.log2(zx_safe) - u_x / zx_safe), 0.0)
        tl.store(HL + rows, tl.maximum(h_x, 0.0), mask=store_ok)


# (BLOCK_M, BLOCK_N, num_warps, num_stages) the autotuner tries on a GPU when Lq > _SMALL_LQ.
# Half: Triton's Hopper fused-attention tiles. fp32 (IEEE dots, no tensor cores): small tiles,
# chosen (like the half ones) by compiling for sm_90 here and keeping those that spill least.
_HALF_CONFIGS = (
    (128, 64, 8, 3),
    (128, 32, 8, 3),
    (128, 128, 8, 3),
    (128, 64, 8, 4),
    (64, 64, 4, 3),
)
_FP32_CONFIGS = ((64, 32, 8, 2), (32, 32, 4, 2), (32, 32, 8, 2), (16, 32, 4, 2), (16, 64, 4, 2))
_TUNE_KEY = [
    "L_BUCKET", "BLOCK_D", "BLOCK_DV", "CAUSAL", "ROW_C", "SKIP_UNIT", "U_Y", "SEP_L",
    "DOT_PRECISION",
]  # fmt: skip
_SMALL_LQ = 16  # at or below (decode steps): one 16-row tile, no tuning
_INTERPRET_TILE = 32  # CPU interpreter default tile


@cache
def _kernel(configs: tuple[tuple[int, int, int, int], ...] = ()) -> Any:
    """The launchable kernel: compiled, autotuned over ``configs`` if any; interpreted instead
    when triton was imported with ``TRITON_INTERPRET=1``."""
    assert triton is not None
    jit = triton.jit(_attn_fwd, do_not_specialize=["L_BUCKET"])
    if not configs:
        return jit
    tries = [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
        for bm, bn, w, s in configs
    ]
    return triton.autotune(configs=tries, key=_TUNE_KEY)(jit)


def interpreting() -> bool:
    """True when triton runs kernels in its CPU interpreter: ``TRITON_INTERPRET=1`` was set before
    triton was first imported (its own library functions are then interpreted too)."""
    return triton is not None and not isinstance(tl.zeros, triton.runtime.JITFunction)


def unsupported(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> str | None:
    """Why the Triton kernel cannot run these inputs, or None if it can.

    Device, dtype, grad and size checks only; shapes and values are checked by
    :func:`~attnlimits.kernels.streaming_attention`.
    """
    if triton is None:
        return "triton is not installed"
    if mask is not None:
        return "boolean masks are not supported by the Triton kernel (the PyTorch path takes them)"
    if q.dtype not in _DTYPES:
        return f"dtype {q.dtype} is not supported (float32, float16, bfloat16)"
    if torch.is_grad_enabled() and any(x.requires_grad for x in (q, k, v)):
        return "the Triton kernel is forward only and the inputs require grad"
    if max(q.shape[-1], v.shape[-1]) > _MAX_HEAD_DIM:
        return f"head dims above {_MAX_HEAD_DIM} are not supported"
    if q.shape[0] * q.shape[1] > _MAX_GRID_Y:
        return f"batch × query heads above {_MAX_GRID_Y} is not supported"
    if q.device.type not in ("cuda", "cpu"):
        return f"device {q.device} is not supported (CUDA; CPU through the interpreter)"
    if q.device.type == "cpu" and not interpreting():
        return "CPU tensors run only in the Triton interpreter (TRITON_INTERPRET=1 before import)"
    return None


def _pow2(n: int) -> int:
    return max(16, 1 << max(0, n - 1).bit_length())  # tl.dot needs every side ≥ 16


def _launch(
    q: Tensor, k: Tensor, v: Tensor, out: Tensor, hl: Tensor, hy: Tensor, *,
    c_rows: Tensor | None, s_cbh: int, c0: float, causal: bool, scale: float,
    skip_unit: bool = False, hy_out: bool = False, hl_from_y: bool = False, sep_l: bool = False,
    tiles: tuple[int, int] | None = None,
) -> None:  # fmt: skip
    """One launch of :func:`_attn_fwd` over grid (query tiles, batch × query heads)."""
    B, Hq, Lq, d = q.shape
    Hkv, Lk, dv = k.shape[1], k.shape[2], v.shape[-1]
    if B * Hq * Lq == 0:
        return
    meta: dict[str, Any] = {
        "CAUSAL": causal, "ROW_C": c_rows is not None, "SKIP_UNIT": skip_unit,
        "U_Y": hy_out or hl_from_y, "HY_OUT": hy_out, "HL_FROM_Y": hl_from_y, "SEP_L": sep_l,
        "DOT_PRECISION": "ieee" if q.dtype == torch.float32 else "tf32",
        "UPCAST": q.device.type == "cpu" and q.dtype == torch.bfloat16,
        "EVEN_D": d == _pow2(d) and dv == _pow2(dv), "BLOCK_D": _pow2(d), "BLOCK_DV": _pow2(dv),
    }  # fmt: skip
    args = (
        q, k, v, out, hl if c_rows is None else c_rows, hl, hy,
        *q.stride(), *k.stride(), *v.stride(), *out.stride(), s_cbh,
        Hq, Hq // Hkv, Lq, Lk, d, dv, scale * _LOG2E, c0,
        max(Lq, Lk).bit_length(),  # autotuning key: a new tuning per power-of-two length only
    )  # fmt: skip

    def grid(m: dict[str, Any]) -> tuple[int, int]:
        return (triton.cdiv(Lq, m["BLOCK_M"]), B * Hq)

    if q.device.type == "cpu":
        bm, bn = tiles or (_INTERPRET_TILE, _INTERPRET_TILE)
        _kernel()[grid](*args, **meta, BLOCK_M=bm, BLOCK_N=bn)
        return
    fp32 = q.dtype == torch.float32
    with torch.cuda.device(q.device):
        if tiles is None and Lq > _SMALL_LQ:
            _kernel(_FP32_CONFIGS if fp32 else _HALF_CONFIGS)[grid](*args, **meta)
            return
        bm, bn = tiles or (16, 32 if fp32 or d > 64 else 64)
        warps = 8 if bm * bn >= 128 * 64 else 4
        stages = 2 if fp32 else 3
        _kernel()[grid](*args, **meta, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages)


def _forward(
    q: Tensor, k: Tensor, v: Tensor, normalizer: str, opts: dict[str, Any], *, causal: bool,
    scale: float, return_stats: bool, tiles: tuple[int, int] | None = None,
) -> Tensor | AttentionStats:  # fmt: skip
    """The Triton path of :func:`streaming_attention` on validated inputs (see module docstring)."""
    B, Hq, Lq, _ = q.shape
    Lk, dv = k.shape[2], v.shape[-1]
    f32: dict[str, Any] = {"dtype": torch.float32, "device": q.device}
    out = torch.empty((B, Hq, Lq, dv), dtype=q.dtype, device=q.device)
    H = torch.zeros((B, Hq, Lq), **f32)  # entropy of softmax(l)
    Hy = torch.zeros((B, Hq, Lq), **f32)  # entropy of the applied softmax(c·l)
    pos = torch.arange(Lq, device=q.device) + (Lk - Lq)
    n = (pos + 1).clamp(0, Lk) if causal else torch.full_like(pos, Lk)  # kept keys per row (Lq,)

    def launch(c_rows: Tensor | None, s_cbh: int, c0: float, **flags: bool) -> None:
        _launch(
            q, k, v, out, H, Hy, c_rows=c_rows, s_cbh=s_cbh, c0=c0, causal=causal, scale=scale,
            tiles=tiles, hy_out=return_stats, **flags,
        )  # fmt: skip

    if normalizer == "softmax":
        c = 1.0 / float(opts["temperature"])
        one = c == 1.0
        launch(None, 0, c, hl_from_y=return_stats and one, sep_l=return_stats and not one)
        beta = torch.full((B, Hq, Lq), c, **f32)
    elif normalizer == "ssmax":
        c_rows = float(opts["s"]) * torch.log(n.clamp_min(1).float())  # (Lq,), same for every head
        launch(c_rows, 0, 1.0, sep_l=return_stats)
        beta = c_rows.expand(B, Hq, Lq)
    else:  # adaptive: fused entropy + β = 1 output, then softmax(β·l) @ v where β ≠ 1
        launch(None, 0, 1.0, hl_from_y=True)
        beta = adaptive_beta(H, opts["coeffs"], opts["threshold"]).contiguous()  # (B, Hq, Lq)
        launch(beta, Lq, 1.0, skip_unit=True)
    if not return_stats:
        return out
    return AttentionStats(out, H, beta, Hy, n.expand(B, Hq, Lq).clone())


def triton_attention(
    q: Tensor, k: Tensor, v: Tensor, normalizer: str = "softmax", *, causal: bool = False,
    scale: float | None = None, return_stats: bool = False,
    tiles: tuple[int, int] | None = None, **params: Any,
) -> Tensor | AttentionStats:  # fmt: skip
    """``streaming_attention(..., backend="triton")`` with explicit tile sizes, for tests.

    ``tiles = (BLOCK_M, BLOCK_N)``, powers of two ≥ 16; None lets the kernel choose (autotuned
    on a GPU). Raises ``ValueError`` where :func:`unsupported` gives a reason.
    """
    opts = resolve_params(normalizer, params)
    scale, _ = check_inputs(q, k, v, None, scale, 1)
    reason = unsupported(q, k, v)
    if reason is not None:
        raise ValueError(f"Triton kernel unavailable: {reason}")
    if tiles is not None and any(t < 16 or t & (t - 1) for t in tiles):
        raise ValueError(f"tiles must be powers of two >= 16, got {tiles}")
    return _forward(
        q, k, v, normalizer, opts, causal=causal, scale=scale, return_stats=return_stats,
        tiles=tiles,
    )  # fmt: skip
