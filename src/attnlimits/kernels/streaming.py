"""Blockwise streaming attention: softmax with temperature, Scalable-Softmax, adaptive temperature.

Queries are processed in blocks of ``block_size`` rows and keys in blocks of ``block_size``
columns, so no ``[query, key]`` matrix larger than one block is ever held; the extra memory is
O(L·d + block²) (times batch and heads), never O(L²). Every normaliser is a softmax of the
scaled logits ``l = scale·q·k`` times a per-row inverse temperature ``c``:

- ``"softmax"``: c = 1/T (paper A, Eq. 2), one pass;
- ``"ssmax"``: c = s·log n, n the row's kept keys (Nakanishi 2025, Scalable-Softmax), one pass,
  plus a counting pass when a boolean mask is given;
- ``"adaptive"``: c = β(H), H the entropy of softmax(l) (paper B, Figure 4 listing and
  Appendix G), two passes.
- the length scalings ``"logn"``, ``"yarn"``, ``"llama4_temperature"``: c = c(n) of
  :mod:`attnlimits.normalizers.length_scaling`, one pass (as ssmax);
- ``"softcap"``: c = 1 on capped logits cap·tanh(l/cap) (Gemma 2), one pass;
- ``"softmax1"``, ``"sink_softmax"``: c = 1 and one more logit (0, or a sink per query head)
  that takes weight but has no value: the online state starts from it, one pass.

Pass 1 (:func:`_stats_pass`) streams the keys keeping per row the running maximum ``m``,
``Z = Σ exp(l − m)`` and ``U = Σ exp(l − m)·(l − m)``; when ``m`` grows to ``m'`` both are
rescaled flash-style: ``Z ← e^{m−m'} Z``, ``U ← e^{m−m'} (U + (m − m')·Z)``. At the end
``H = log Z − U/Z`` is exactly ``−Σ p log p`` with ``p = softmax(l)``. Pass 2
(:func:`_output_pass`) is the online softmax of ``c·l`` applied to ``v``.

On CUDA, calls without a mask (or with a key-padding mask) run the fused Triton kernel of
:mod:`attnlimits.kernels.triton_attention` instead (``backend="auto"``).
"""

from __future__ import annotations

import math
from typing import Any, Literal, NamedTuple, overload

import torch
from torch import Tensor

from attnlimits.kernels.spec import (
    NORMALIZERS,
    UNIT_TEMPERATURE,
    AttentionStats,
    check_inputs,
    inverse_temperature,
    logit_cap,
    resolve_params,
    sink_logits,
    visible_keys,
)
from attnlimits.normalizers.adaptive import adaptive_beta

__all__ = ["NORMALIZERS", "AttentionStats", "Backend", "streaming_attention"]

Backend = Literal["auto", "torch", "triton"]
#: Normalisers the fused Triton kernel implements.
_TRITON = ("softmax", "ssmax", "adaptive")


# exp(-1000) is exactly 0 in float32 and float64 (float64's smallest subnormal is e^-744.4):
# clamping the shifted logits there turns −inf (masked) into a finite number of weight exactly 0,
# so the entropy term 0·(l − m) is 0 rather than NaN.
_NEG_CLAMP = -1000.0


class _Problem(NamedTuple):
    q5: Tensor  # [B, Hkv, G, Lq, d]
    k: Tensor  # [B, Hkv, Lk, d]
    v: Tensor  # [B, Hkv, Lk, dv]
    mask5: Tensor | None  # [B, Hkv, G, Lq, Lk], an expanded view of the caller's mask
    causal: bool
    offset: int  # query i sits at key position offset + i
    scale: float
    block: int
    acc: torch.dtype  # float32, or float64 for float64 inputs
    cap: float | None  # softcap: logits l -> cap·tanh(l/cap) before anything else
    sink: Tensor | None  # [Hkv, G] sink logit per query head (softmax1, sink_softmax)


def _key_range(p: _Problem, i0: int, i1: int) -> range:
    """Key-block starts that query rows [i0, i1) can see (all of them unless causal)."""
    Lk = p.k.shape[2]
    stop = Lk if not p.causal else max(0, min(Lk, p.offset + i1))
    return range(0, stop, p.block)


def _keep(p: _Problem, i0: int, i1: int, j0: int, j1: int) -> Tensor | None:
    """Boolean keep-mask of one block, broadcastable to [B, Hkv, G, bq, bk]; None = keep all."""
    keep = None if p.mask5 is None else p.mask5[:, :, :, i0:i1, j0:j1]
    if p.causal and j1 - 1 > p.offset + i0:  # the block reaches above the diagonal
        qpos = torch.arange(i0, i1, device=p.k.device) + p.offset
        kpos = torch.arange(j0, j1, device=p.k.device)
        tri = kpos[None, :] <= qpos[:, None]  # (bq, bk)
        keep = tri if keep is None else keep & tri
    return keep


def _scores(
    p: _Problem, qf: Tensor, i0: int, i1: int, j0: int, j1: int
) -> tuple[Tensor, Tensor | None]:
    """Scaled logits of one block, masked entries −inf: ([B, Hkv, G·bq, bk], keep)."""
    B, Hkv, G = p.q5.shape[:3]
    kb = p.k[:, :, j0:j1].to(p.acc)  # (B, Hkv, bk, d)
    s = qf @ kb.transpose(-1, -2)  # (B, Hkv, G·bq, bk)
    if p.cap is not None:
        s = torch.tanh(s / p.cap) * p.cap
    keep = _keep(p, i0, i1, j0, j1)
    if keep is not None:
        s.view(B, Hkv, G, i1 - i0, j1 - j0).masked_fill_(~keep, -math.inf)
    return s, keep


def _rescale(m: Tensor, s: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Online-softmax step: new max m', e = exp(s − m'), alpha = e^{m−m'}, d = s − m'."""
    m_new = torch.maximum(m, s.amax(-1))
    m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # all-masked so far
    alpha = torch.exp(m - m_safe)
    if s.requires_grad:  # autograd needs s (for amax) untouched
        d = (s - m_safe[..., None]).clamp_min(_NEG_CLAMP)
    else:  # in place: s is not needed afterwards
        d = s.sub_(m_safe[..., None]).clamp_min_(_NEG_CLAMP)
    return m_new, torch.exp(d), alpha, d


def _entropy(Z: Tensor, U: Tensor) -> Tensor:
    """H = log Z − U/Z, with U = Σ e^{l−m}(l − m); 0 where Z = 0 (all keys masked)."""
    pos = Z > 0
    Zs = torch.where(pos, Z, torch.ones_like(Z))
    return torch.where(pos, torch.log(Zs) - U / Zs, torch.zeros_like(Z)).clamp_min_(0.0)


def _stats_pass(p: _Problem, qf: Tensor, i0: int, i1: int) -> tuple[Tensor, Tensor | None]:
    """Pass 1 over the keys for query rows [i0, i1): (H of softmax(l), kept-key counts or None).

    Returns per-row tensors of shape [B, Hkv, G·bq]; counts only when a mask is given (otherwise
    they follow from the shapes, see :func:`_analytic_counts`).
    """
    B, Hkv, G = p.q5.shape[:3]
    bq = i1 - i0
    m = torch.full((B, Hkv, G * bq), -math.inf, dtype=p.acc, device=qf.device)
    Z = torch.zeros_like(m)
    U = torch.zeros_like(m)
    n = (
        torch.zeros((B, Hkv, G, bq), dtype=torch.int64, device=qf.device)
        if p.mask5 is not None
        else None
    )
    for j0 in _key_range(p, i0, i1):
        j1 = min(j0 + p.block, p.k.shape[2])
        s, keep = _scores(p, qf, i0, i1, j0, j1)
        m_new, e, alpha, d = _rescale(m, s)
        delta = torch.where(Z > 0, m - m_new, torch.zeros_like(m))  # e^{m−m'}·(m − m')·Z term
        U = alpha * (U + delta * Z) + (e * d).sum(-1)
        Z = alpha * Z + e.sum(-1)
        m = m_new
        if n is not None:
            n = n + (keep.sum(-1) if keep is not None else j1 - j0)
    return _entropy(Z, U), None if n is None else n.reshape(B, Hkv, G * bq)


def _output_pass(
    p: _Problem, qf: Tensor, coef: Tensor, i0: int, i1: int, want_entropy: bool
) -> tuple[Tensor, Tensor | None]:
    """Pass 2: online softmax(coef·l) @ v for query rows [i0, i1); coef is [B, Hkv, G·bq].

    Returns (output [B, Hkv, G·bq, dv] in the accumulation dtype, H of the applied weights or None).
    A sink (softmax1, sink_softmax) is one more logit of value 0: the running state starts at
    m = sink, Z = 1, acc = 0, so it enters the denominator only (and H, as one more outcome).
    """
    B, Hkv, G = p.q5.shape[:3]
    bq = i1 - i0
    m = torch.full((B, Hkv, G * bq), -math.inf, dtype=p.acc, device=qf.device)
    Z = torch.zeros_like(m)
    if p.sink is not None:
        m = p.sink.to(p.acc)[None, :, :, None].expand(B, Hkv, G, bq).reshape(B, Hkv, G * bq)
        Z = torch.ones_like(m)
    U = torch.zeros_like(m)
    acc = torch.zeros((B, Hkv, G * bq, p.v.shape[-1]), dtype=p.acc, device=qf.device)
    qc = qf * coef[..., None]  # fold the per-row inverse temperature into the queries
    for j0 in _key_range(p, i0, i1):
        j1 = min(j0 + p.block, p.k.shape[2])
        s, _ = _scores(p, qc, i0, i1, j0, j1)
        m_new, e, alpha, d = _rescale(m, s)
        if want_entropy:
            delta = torch.where(Z > 0, m - m_new, torch.zeros_like(m))
            U = alpha * (U + delta * Z) + (e * d).sum(-1)
        Z = alpha * Z + e.sum(-1)
        acc = acc * alpha[..., None] + e @ p.v[:, :, j0:j1].to(p.acc)  # (B, Hkv, G·bq, dv)
        m = m_new
    Zs = torch.where(Z > 0, Z, torch.ones_like(Z))  # all-masked rows: acc = 0 -> output 0
    return acc / Zs[..., None], _entropy(Z, U) if want_entropy else None


def _analytic_counts(p: _Problem, i0: int, i1: int) -> Tensor:
    """Kept keys per row without a mask: Lk, or under causal the query position + 1 (clipped)."""
    B, Hkv, G = p.q5.shape[:3]
    Lk = p.k.shape[2]
    n = visible_keys(torch.arange(i0, i1, device=p.k.device) + p.offset, Lk, p.causal)
    return n.expand(B, Hkv, G, i1 - i0).reshape(B, Hkv, G * (i1 - i0))  # (B, Hkv, G·bq)


def _sinks(normalizer: str, opts: dict[str, Any], Hkv: int, G: int, device: Any) -> Tensor | None:
    """The sink logits as [Hkv, G] (query head h = kv head h // G, member h % G), or None."""
    sink = sink_logits(normalizer, opts, Hkv * G)
    return None if sink is None else sink.view(Hkv, G).to(device)


def _use_triton(backend: str, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> bool:
    """Whether this call runs the Triton kernel; "auto" never imports triton for CPU inputs."""
    if backend == "torch" or (backend == "auto" and q.device.type != "cuda"):
        return False
    if backend not in ("auto", "triton"):
        raise ValueError(f"backend must be 'auto', 'torch' or 'triton', got {backend!r}")
    from attnlimits.kernels.triton_attention import unsupported

    reason = unsupported(q, k, v, mask)
    if reason is not None and backend == "triton":
        raise ValueError(f"backend='triton' cannot run this call: {reason}")
    return reason is None


@overload
def streaming_attention(
    q: Tensor, k: Tensor, v: Tensor, normalizer: str = ..., *, mask: Tensor | None = ...,
    causal: bool = ..., scale: float | None = ..., block_size: int = ...,
    return_stats: Literal[False] = ..., backend: Backend = ..., **params: Any,
) -> Tensor: ...  # fmt: skip
@overload
def streaming_attention(
    q: Tensor, k: Tensor, v: Tensor, normalizer: str = ..., *, mask: Tensor | None = ...,
    causal: bool = ..., scale: float | None = ..., block_size: int = ...,
    return_stats: Literal[True], backend: Backend = ..., **params: Any,
) -> AttentionStats: ...  # fmt: skip
def streaming_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    normalizer: str = "softmax",
    *,
    mask: Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
    block_size: int = 256,
    return_stats: bool = False,
    backend: Backend = "auto",
    **params: Any,
) -> Tensor | AttentionStats:
    r"""Attention ``softmax(c·l) @ v`` streamed over key blocks, with ``l = scale·q·kᵀ``.

    The per-row inverse temperature ``c`` depends on ``normalizer``:

    - ``"softmax"`` (``temperature=T``): :math:`c = 1/T` (paper A, Eq. 2, on top of ``scale``);
    - ``"ssmax"`` (``s``): :math:`c = s \log n`, ``n`` the row's kept keys (Nakanishi 2025);
    - ``"adaptive"`` (``coeffs``, ``threshold``): :math:`c = β(H)` of paper B's Figure 4 listing,
      :math:`β = \max(\mathrm{poly}(H), 1)` if :math:`H >` ``threshold`` else 1, with
      :math:`H = -\sum_j p_j \log p_j`, :math:`p = \mathrm{softmax}(l)` streamed as in paper B,
      Appendix G (see :func:`attnlimits.normalizers.adaptive.adaptive_beta`).
    - ``"logn"``, ``"yarn"``, ``"llama4_temperature"``: :math:`c = c(n)` (their parameters in
      :mod:`attnlimits.normalizers.length_scaling`);
    - ``"softcap"`` (``cap``): :math:`c = 1` on :math:`\mathrm{cap}\tanh(l/\mathrm{cap})`;
      ``entropy`` is then that of the capped logits;
    - ``"softmax1"``, ``"sink_softmax"`` (``sink``: one number, or one per query head):
      :math:`e^{l_n} / (e^{s} + \sum_j e^{l_j})` with ``s = 0`` for softmax1; ``out_entropy``
      counts the sink as one more outcome.

    Parameters
    ----------
    q : Tensor
        Queries ``[B, Hq, Lq, d]``.
    k, v : Tensor
        Keys ``[B, Hkv, Lk, d]`` and values ``[B, Hkv, Lk, dv]``; ``Hq`` a multiple of ``Hkv``
        (grouped-query attention: query head ``h`` reads key/value head ``h // (Hq // Hkv)``).
    normalizer : str
        One of :data:`NORMALIZERS` (above); its parameters go in ``**params``.
    mask : Tensor, optional
        Boolean keep-mask (True = attend) broadcastable to ``[B, Hq, Lq, Lk]``; read block by block.
    causal : bool
        Query ``i`` sits at key position ``Lk − Lq + i`` (bottom-right aligned, as in KV-cache
        decoding) and sees keys ``j ≤ Lk − Lq + i``. Combined with ``mask`` by logical and.
    scale : float, optional
        Logit scale, default ``1/√d``.
    block_size : int
        Rows and columns per block of the PyTorch path; need not divide ``Lq`` or ``Lk``. The
        Triton kernel picks its own tiles (autotuned; see ``docs/kernels.md``).
    return_stats : bool
        Return an :class:`AttentionStats` (output, entropy, beta, out_entropy, n_keys).
    backend : {"auto", "torch", "triton"}
        ``"auto"``: the fused Triton kernel (:mod:`attnlimits.kernels.triton_attention`) for CUDA
        inputs it supports (no mask or a key-padding mask ``[B, 1, 1, Lk]``; fp32/fp16/bf16; no
        grad required), else this PyTorch path.
        ``"triton"`` raises ``ValueError`` where the kernel cannot run (CPU tensors only under
        ``TRITON_INTERPRET=1``, for tests); ``"torch"`` always takes the PyTorch path.

    Returns
    -------
    Tensor or AttentionStats
        ``[B, Hq, Lq, dv]`` in the input dtype (accumulated in float32; float64 for float64
        input). A row with no kept key gives zeros, entropy 0 and β = 1, never NaN.

    Notes
    -----
    The listing's entropy is :math:`-\sum p \log(p + 10^{-9})`; the streamed one is the exact
    :math:`-\sum p \log p`. They differ by :math:`\sum p \log(1 + 10^{-9}/p) \in [0, n·10^{-9}]`
    and β(H) is continuous (β = 1 up to H ≈ 0.849, past the 0.5 threshold), so β moves by
    at most about :math:`3 n · 10^{-9}`.
    """
    opts = resolve_params(normalizer, params)
    scale, mask = check_inputs(q, k, v, mask, scale, block_size)
    if normalizer not in _TRITON and backend == "triton":
        raise ValueError(f"backend='triton' runs {', '.join(_TRITON)} only, not {normalizer!r}")
    if normalizer in _TRITON and _use_triton(backend, q, k, v, mask):
        from attnlimits.kernels import triton_attention

        return triton_attention._forward(
            q, k, v, normalizer, opts, causal=causal, scale=scale, return_stats=return_stats,
            mask=mask,
        )  # fmt: skip
    B, Hq, Lq, _ = q.shape
    Hkv, Lk, dv = k.shape[1], k.shape[2], v.shape[-1]
    G = Hq // Hkv
    acc = torch.float64 if q.dtype == torch.float64 else torch.float32
    p = _Problem(
        q5=q.unflatten(1, (Hkv, G)),  # (B, Hkv, G, Lq, d), a view
        k=k, v=v,
        mask5=None if mask is None else mask.unflatten(1, (Hkv, G)),  # (B, Hkv, G, Lq, Lk), a view
        causal=causal, offset=Lk - Lq, scale=scale, block=block_size, acc=acc,
        cap=logit_cap(normalizer, opts), sink=_sinks(normalizer, opts, Hkv, G, q.device),
    )  # fmt: skip
    out = torch.empty((B, Hkv, G, Lq, dv), dtype=q.dtype, device=q.device)
    stats = [torch.zeros((B, Hkv, G, Lq), dtype=acc, device=q.device) for _ in range(3)]
    counts = torch.zeros((B, Hkv, G, Lq), dtype=torch.int64, device=q.device)
    for i0 in range(0, Lq, block_size):
        i1 = min(i0 + block_size, Lq)
        bq = i1 - i0
        qf = (p.q5[:, :, :, i0:i1].to(acc) * scale).reshape(B, Hkv, G * bq, -1)  # (B, Hkv, G·bq, d)
        length_scaled = normalizer not in ("softmax", "adaptive", *UNIT_TEMPERATURE)
        need_pass1 = (
            normalizer == "adaptive" or return_stats or (length_scaled and mask is not None)
        )
        H, n = _stats_pass(p, qf, i0, i1) if need_pass1 else (None, None)
        if n is None:
            n = _analytic_counts(p, i0, i1)
        if normalizer == "softmax":
            c = torch.full_like(qf[..., 0], 1.0 / float(opts["temperature"]))
        elif normalizer in UNIT_TEMPERATURE:
            c = torch.ones_like(qf[..., 0])
        elif length_scaled:  # ssmax, logn, yarn, llama4_temperature; n = 0: row masked anyway
            c = inverse_temperature(normalizer, opts, n.to(acc))
        else:
            assert H is not None
            c = adaptive_beta(H, opts["coeffs"], opts["threshold"])
        o, H_out = _output_pass(p, qf, c, i0, i1, want_entropy=return_stats)
        out[:, :, :, i0:i1] = o.view(B, Hkv, G, bq, dv)
        if return_stats:
            for dst, src in zip(stats, (H, c, H_out), strict=True):
                dst[:, :, :, i0:i1] = src.view(B, Hkv, G, bq)  # type: ignore[union-attr]
            counts[:, :, :, i0:i1] = n.view(B, Hkv, G, bq)
    out4 = out.view(B, Hq, Lq, dv)
    if not return_stats:
        return out4
    H_all, c_all, Hout_all = (x.view(B, Hq, Lq) for x in stats)
    return AttentionStats(out4, H_all, c_all, Hout_all, counts.view(B, Hq, Lq))
