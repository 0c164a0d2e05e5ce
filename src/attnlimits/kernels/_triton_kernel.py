"""The Triton kernel source of :mod:`attnlimits.kernels.triton_attention` (forward only).

One flash-attention style kernel, :func:`attn_fwd`, computes for a tile of ``BLOCK_M`` query
rows of one query head, streaming ``BLOCK_N`` keys at a time (log2 domain, ``x = l·log2 e``):

- the output ``softmax(c·l) @ v`` by the online softmax: running maximum ``m`` of ``y = c·x``,
  ``Z ← α·Z + Σ 2^{y − m'}``, ``acc ← α·acc + 2^{y − m'} @ v`` with ``α = 2^{m − m'}``;
- optionally ``U = Σ 2^{y − m}·(y − m)``, rescaled as ``U ← α·(U + (m − m')·Z) + Σ_blk …``, so
  that the entropy of the applied weights is ``H = ln 2·(log₂ Z − U/Z)`` (paper B, *Softmax is
  not Enough*, Appendix G: ``H = log Z − U/Z`` with ``Z``, ``U`` accumulated blockwise with
  flash-attention rescaling; here kept relative to the running maximum, in base 2);
- optionally the same ``(m, Z, U)`` for ``l`` itself when ``c ≠ 1`` (the entropy of
  ``softmax(l)``, reported as ``AttentionStats.entropy``).

Launch-time flags (``tl.constexpr``) switch the parts on and off: causal masking, a key-padding
mask, a per-row ``c``, the early exit of adaptive's second launch, the entropies. The function
is plain Python until :mod:`~attnlimits.kernels.triton_attention` wraps it with ``triton.jit``
(compiled, autotuned) or the interpreter runs it; ``triton_attention`` holds the launching,
the autotuning space and what each normaliser passes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs: the source is never wrapped or run
    triton = None
    tl = None

__all__ = ["attn_fwd"]


def _jit(fn: Callable[..., Any]) -> Any:
    """``triton.jit`` for the helpers ``attn_fwd`` calls (compiled, or interpreted when triton was
    imported with ``TRITON_INTERPRET=1``, like the kernel); the plain function without triton."""
    return fn if triton is None else triton.jit(fn)


@_jit
def _online_step(m, z, u, t, MASKED: tl.constexpr, TRACK_U: tl.constexpr):
    """One key tile of the online softmax of ``t`` (log2 domain, masked entries −inf): the new
    running maximum ``m'``, ``Z ← α·Z + Σ 2^{t − m'}``, and with ``TRACK_U``
    ``U ← α·(U + (m − m')·Z) + Σ 2^{t − m'}·(t − m')``; returns ``(m', Z, U, p = 2^{t − m'},
    α = 2^{m − m'})``. ``m' = 0`` is used while a row has seen no kept key (avoids inf − inf)."""
    m_new = tl.maximum(m, tl.max(t, 1))
    m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.exp2(m - m_use)
    dt = t - m_use[:, None]
    p = tl.exp2(dt)
    if TRACK_U:
        if MASKED:  # masked: 2^-1000 is 0 in fp32, and 0·(-1000) is 0, not NaN
            dt = tl.maximum(dt, -1000.0)
        shift = tl.where(z > 0, m - m_use, 0.0)
        u = alpha * (u + shift * z) + tl.sum(p * dt, 1)
    z = alpha * z + tl.sum(p, 1)
    return m_new, z, u, p, alpha


@_jit
def _entropy(z, u):
    """``H = ln 2·(log₂ Z − U/Z)`` nats from the running ``(Z, U)``, at least 0; 0 where no key
    is kept (``Z = 0``)."""
    z_safe = tl.where(z > 0, z, 1.0)
    h = tl.where(z > 0, 0.6931471805599453 * (tl.log2(z_safe) - u / z_safe), 0.0)
    return tl.maximum(h, 0.0)


def attn_fwd(
    Q,
    K,
    V,
    O,
    C,
    HL,
    HY,
    KP,
    s_qb,
    s_qh,
    s_qm,
    s_qd,
    s_kb,
    s_kh,
    s_kn,
    s_kd,
    s_vb,
    s_vh,
    s_vn,
    s_vd,
    s_ob,
    s_oh,
    s_om,
    s_od,
    s_cbh,
    s_kpb,
    Hq,
    G,
    Lq,
    Lk,
    d,
    dv,
    qk_scale,
    c0,
    L_BUCKET,
    CAUSAL: tl.constexpr,  # keep keys j ≤ Lk − Lq + i
    KEY_MASK: tl.constexpr,  # keep only keys j with KP[b·s_kpb + j] ≠ 0 (key padding)
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
):
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
    if KEY_MASK:  # every tile may hold padded keys: all take the masked stage
        full = 0
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
                if KEY_MASK:
                    kp = tl.load(KP + b64 * s_kpb + cols, mask=col_ok, other=0)
                    keep = keep & (kp[None, :] != 0)
                if CAUSAL:
                    keep = keep & (cols[None, :] <= qpos[:, None])
                y = tl.where(keep, y, float("-inf"))
            m_y, z_y, u_y, p, alpha = _online_step(m_y, z_y, u_y, y, stage == 1, U_Y)
            if stage == 0 and EVEN_D:
                v = tl.load(v_ptrs)
            else:
                v = tl.load(v_ptrs, mask=col_ok[:, None] & dv_ok, other=0.0)
            acc = acc * alpha[:, None]
            if UPCAST:  # round p as the GPU does before its half-precision dot
                acc = tl.dot(p.to(V.dtype.element_ty).to(tl.float32), v.to(tl.float32), acc)
            else:
                acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)
            if SEP_L:  # the same statistics for x = l·log2(e), i.e. c = 1
                x = qk * qk_scale
                if stage == 1:
                    x = tl.where(keep, x, float("-inf"))
                m_x, z_x, u_x, _, _ = _online_step(m_x, z_x, u_x, x, stage == 1, True)

    z_safe = tl.where(z_y > 0, z_y, 1.0)  # a row with no kept key: acc = 0, output 0
    o_ptrs = (
        O + b64 * s_ob + h.to(tl.int64) * s_oh + offs_m[:, None] * s_om + offs_dv[None, :] * s_od
    )
    out = acc / z_safe[:, None]
    tl.store(o_ptrs, out.to(O.dtype.element_ty), mask=store_ok[:, None] & dv_ok)
    rows = bh.to(tl.int64) * Lq + offs_m  # per-row statistics are [B, Hq, Lq], contiguous
    if U_Y:  # the entropy of the applied weights
        h_y = _entropy(z_y, u_y)
        if HY_OUT:
            tl.store(HY + rows, h_y, mask=store_ok)
        if HL_FROM_Y:
            tl.store(HL + rows, h_y, mask=store_ok)
    if SEP_L:
        tl.store(HL + rows, _entropy(z_x, u_x), mask=store_ok)
