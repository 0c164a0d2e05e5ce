"""Triton forward kernel for :func:`~attnlimits.kernels.streaming_attention` (CUDA; forward only).

One flash-attention style kernel (:func:`~attnlimits.kernels._triton_kernel.attn_fwd`, the
online softmax with paper B's streamed entropy, Appendix G) over tiles of ``BLOCK_M`` query rows
of one query head, streaming ``BLOCK_N`` keys at a time.

How the three normalisers use it (``c`` is a per-row inverse temperature):

- ``"softmax"``: ``c = 1/T``, one launch;
- ``"ssmax"``: ``c = s·log n`` with ``n`` the row's kept keys (``Lk``, or its causal position
  + 1), computed on the host and read per row, one launch;
- ``"adaptive"``: launch 1 with ``c = 1`` gives, fused, ``H`` of ``softmax(l)`` **and** the
  β = 1 output; ``β = adaptive_beta(H)`` (torch, the library's function); launch 2 recomputes
  ``softmax(β·l) @ v`` only in query tiles holding a row with β ≠ 1 (the others exit at once and
  keep launch 1's output), so low-entropy tiles cost one pass.

Supported: no mask or ``causal`` (bottom-right aligned: query ``i`` at key position
``Lk − Lq + i``), and/or a key-padding mask (one keep-flag per batch and key, ``[B, 1, 1, Lk]``,
read per key tile; ssmax's ``n`` then counts the kept keys), grouped-query attention (query head
``h`` reads key/value head ``h // (Hq // Hkv)``, no copy), fp32/fp16/bf16 inputs with fp32
accumulation (fp32 dots in IEEE precision, not TF32), head dims up to 256 (padded to a power of
two ≥ 16), any ``Lq``/``Lk``. Other boolean masks (that differ between heads or query rows),
float64, and inputs that require grad are not supported:
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

from attnlimits.kernels._triton_kernel import attn_fwd
from attnlimits.kernels.spec import AttentionStats, check_inputs, resolve_params, visible_keys
from attnlimits.normalizers.adaptive import adaptive_beta

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs: streaming_attention keeps its PyTorch path
    triton = None
    tl = None

__all__ = ["HAS_TRITON", "interpreting", "key_padding", "triton_attention", "unsupported"]

HAS_TRITON = triton is not None
_LOG2E = 1.4426950408889634
_MAX_HEAD_DIM = 256
_MAX_GRID_Y = 65535  # CUDA's limit on the second grid axis, which holds batch × query heads
_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


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
    "L_BUCKET",
    "BLOCK_D",
    "BLOCK_DV",
    "CAUSAL",
    "KEY_MASK",
    "ROW_C",
    "SKIP_UNIT",
    "U_Y",
    "SEP_L",
    "DOT_PRECISION",
]
_SMALL_LQ = 16  # at or below (decode steps): one 16-row tile, no tuning
_INTERPRET_TILE = 32  # CPU interpreter default tile


@cache
def _kernel(configs: tuple[tuple[int, int, int, int], ...] = ()) -> Any:
    """The launchable kernel: compiled, autotuned over ``configs`` if any; interpreted instead
    when triton was imported with ``TRITON_INTERPRET=1``."""
    assert triton is not None
    jit = triton.jit(attn_fwd, do_not_specialize=["L_BUCKET"])
    if not configs:
        return jit
    tries = [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
        for bm, bn, w, s in configs
    ]
    return triton.autotune(configs=tries, key=_TUNE_KEY)(jit)


def tuned_kernels() -> list[Any]:
    """The two autotuned kernels (fp16/bf16 tiles, fp32 tiles); each one's ``.cache`` maps a
    tuning key (``_TUNE_KEY``'s values, then the argument dtypes) to the ``triton.Config`` chosen
    (benchmarks/bench_triton.py prints them)."""
    return [_kernel(_HALF_CONFIGS), _kernel(_FP32_CONFIGS)]


def interpreting() -> bool:
    """True when triton runs kernels in its CPU interpreter: ``TRITON_INTERPRET=1`` was set before
    triton was first imported (its own library functions are then interpreted too)."""
    return triton is not None and not isinstance(tl.zeros, triton.runtime.JITFunction)


def key_padding(mask: Tensor) -> Tensor | None:
    """The ``[B, Lk]`` key mask of a keep-mask broadcast to ``[B, Hq, Lq, Lk]`` whose heads and
    query rows all read the same keys (stride 0 or size 1 there, as ``mask.expand`` makes from
    ``[B, 1, 1, Lk]`` or ``[Lk]``); None for any other mask."""
    if mask.ndim != 4:
        return None
    if any(mask.shape[i] != 1 and mask.stride(i) != 0 for i in (1, 2)):
        return None
    return mask[:, 0, 0, :]


def unsupported(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> str | None:
    """Why the Triton kernel cannot run these inputs, or None if it can.

    Device, dtype, grad, mask-form and size checks only; shapes and values are checked by
    :func:`~attnlimits.kernels.streaming_attention` (``mask`` already broadcast to
    ``[B, Hq, Lq, Lk]`` there).
    """
    if triton is None:
        return "triton is not installed"
    if mask is not None and key_padding(mask) is None:
        return (
            "the Triton kernel takes key-padding masks only (broadcast over heads and queries, "
            "e.g. [B, 1, 1, Lk]); the PyTorch path takes other boolean masks"
        )
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
    q: Tensor,
    k: Tensor,
    v: Tensor,
    out: Tensor,
    hl: Tensor,
    hy: Tensor,
    *,
    c_rows: Tensor | None,
    s_cbh: int,
    c0: float,
    causal: bool,
    scale: float,
    keys: Tensor | None = None,
    skip_unit: bool = False,
    hy_out: bool = False,
    hl_from_y: bool = False,
    sep_l: bool = False,
    tiles: tuple[int, int] | None = None,
) -> None:
    """One launch of the kernel over grid (query tiles, batch × query heads)."""
    B, Hq, Lq, d = q.shape
    Hkv, Lk, dv = k.shape[1], k.shape[2], v.shape[-1]
    if B * Hq * Lq == 0:
        return
    meta: dict[str, Any] = {
        "CAUSAL": causal,
        "KEY_MASK": keys is not None,
        "ROW_C": c_rows is not None,
        "SKIP_UNIT": skip_unit,
        "U_Y": hy_out or hl_from_y,
        "HY_OUT": hy_out,
        "HL_FROM_Y": hl_from_y,
        "SEP_L": sep_l,
        "DOT_PRECISION": "ieee" if q.dtype == torch.float32 else "tf32",
        "UPCAST": q.device.type == "cpu" and q.dtype == torch.bfloat16,
        "EVEN_D": d == _pow2(d) and dv == _pow2(dv),
        "BLOCK_D": _pow2(d),
        "BLOCK_DV": _pow2(dv),
    }
    args = (
        q,
        k,
        v,
        out,
        hl if c_rows is None else c_rows,
        hl,
        hy,
        hl if keys is None else keys,
        *q.stride(),
        *k.stride(),
        *v.stride(),
        *out.stride(),
        s_cbh,
        0 if keys is None else keys.stride(0),
        Hq,
        Hq // Hkv,
        Lq,
        Lk,
        d,
        dv,
        scale * _LOG2E,
        c0,
        max(Lq, Lk).bit_length(),  # autotuning key: a new tuning per power-of-two length only
    )

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


def _kept_keys(B: int, Lq: int, Lk: int, causal: bool, keys: Tensor | None, device: Any) -> Tensor:
    """Kept keys per row, ``[B, Lq]``: ``Lk``, or under causal the query position + 1 (clipped);
    with a key mask, the kept keys among those."""
    pos = torch.arange(Lq, device=device) + (Lk - Lq)  # key position of each query row
    if keys is None or Lk == 0:
        return visible_keys(pos, Lk, causal).expand(B, Lq)
    upto = keys.cumsum(-1)  # (B, Lk): kept keys among 0..j
    if not causal:
        return upto[:, -1:].expand(B, Lq)
    idx = pos.clamp(-1, Lk - 1)  # −1: a row that sees no key
    return torch.where(idx >= 0, upto[:, idx.clamp_min(0)], torch.zeros_like(upto[:, :1]))


def _forward(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    normalizer: str,
    opts: dict[str, Any],
    *,
    causal: bool,
    scale: float,
    return_stats: bool,
    tiles: tuple[int, int] | None = None,
    mask: Tensor | None = None,
) -> Tensor | AttentionStats:
    """The Triton path of :func:`streaming_attention` on validated inputs (see module docstring);
    ``mask``, if given, is a keep-mask broadcast to ``[B, Hq, Lq, Lk]`` that
    :func:`key_padding` accepts."""
    B, Hq, Lq, _ = q.shape
    Lk, dv = k.shape[2], v.shape[-1]
    f32: dict[str, Any] = {"dtype": torch.float32, "device": q.device}
    out = torch.empty((B, Hq, Lq, dv), dtype=q.dtype, device=q.device)
    H = torch.zeros((B, Hq, Lq), **f32)  # entropy of softmax(l)
    Hy = torch.zeros((B, Hq, Lq), **f32)  # entropy of the applied softmax(c·l)
    keys = None
    if mask is not None:
        key_mask = key_padding(mask)
        if key_mask is None:
            raise ValueError("the Triton kernel takes key-padding masks only ([B, 1, 1, Lk])")
        keys = key_mask.expand(B, Lk).to(torch.int8).contiguous()  # (B, Lk), 1 = keep
    n = _kept_keys(B, Lq, Lk, causal, keys, q.device)  # (B, Lq)

    def launch(c_rows: Tensor | None, s_cbh: int, c0: float, **flags: bool) -> None:
        _launch(
            q,
            k,
            v,
            out,
            H,
            Hy,
            c_rows=c_rows,
            s_cbh=s_cbh,
            c0=c0,
            causal=causal,
            scale=scale,
            keys=keys,
            tiles=tiles,
            hy_out=return_stats,
            **flags,
        )

    if normalizer == "softmax":
        c = 1.0 / float(opts["temperature"])
        one = c == 1.0
        launch(None, 0, c, hl_from_y=return_stats and one, sep_l=return_stats and not one)
        beta = torch.full((B, Hq, Lq), c, **f32)
    elif normalizer == "ssmax":
        c_n = float(opts["s"]) * torch.log(n.clamp_min(1).float())  # (B, Lq), same for every head
        if keys is None:  # one row of c for every batch and head
            launch(c_n[0].contiguous(), 0, 1.0, sep_l=return_stats)
            beta = c_n[:, None].expand(B, Hq, Lq)
        else:  # per batch: c as [B, Hq, Lq], row stride Lq
            beta = c_n[:, None].expand(B, Hq, Lq).contiguous()
            launch(beta, Lq, 1.0, sep_l=return_stats)
    else:  # adaptive: fused entropy + β = 1 output, then softmax(β·l) @ v where β ≠ 1
        launch(None, 0, 1.0, hl_from_y=True)
        beta = adaptive_beta(H, opts["coeffs"], opts["threshold"]).contiguous()  # (B, Hq, Lq)
        launch(beta, Lq, 1.0, skip_unit=True)
    if not return_stats:
        return out
    return AttentionStats(out, H, beta, Hy, n[:, None].expand(B, Hq, Lq).clone())


def triton_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    normalizer: str = "softmax",
    *,
    mask: Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
    return_stats: bool = False,
    tiles: tuple[int, int] | None = None,
    **params: Any,
) -> Tensor | AttentionStats:
    """``streaming_attention(..., backend="triton")`` with explicit tile sizes, for tests.

    ``tiles = (BLOCK_M, BLOCK_N)``, powers of two ≥ 16; None lets the kernel choose (autotuned
    on a GPU). ``mask``: a key-padding keep-mask (``[B, 1, 1, Lk]`` or ``[Lk]``). Raises
    ``ValueError`` where :func:`unsupported` gives a reason.
    """
    opts = resolve_params(normalizer, params)
    scale, mask = check_inputs(q, k, v, mask, scale, 1)
    reason = unsupported(q, k, v, mask)
    if reason is not None:
        raise ValueError(f"Triton kernel unavailable: {reason}")
    if tiles is not None and any(t < 16 or t & (t - 1) for t in tiles):
        raise ValueError(f"tiles must be powers of two >= 16, got {tiles}")
    return _forward(
        q,
        k,
        v,
        normalizer,
        opts,
        causal=causal,
        scale=scale,
        return_stats=return_stats,
        tiles=tiles,
        mask=mask,
    )
