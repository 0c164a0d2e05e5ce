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

Pass 1 streams the keys for each row's entropy and log-sum-exp, pass 2 is the online softmax
of ``c·l`` applied to ``v`` (:mod:`attnlimits.kernels._passes`). When autograd needs a gradient
(and no statistics are asked for), the passes run inside :class:`~._backward.StreamedAttention`,
which keeps O(L) per-row statistics and recomputes each block's weights in its backward, so
training never holds a ``[query, key]`` map either (``docs/kernels.md``, "Backward at O(L)
memory").

On CUDA, calls without a mask (or with a key-padding mask) run the fused Triton kernel of
:mod:`attnlimits.kernels.triton_attention` instead (``backend="auto"``).
"""

from __future__ import annotations

from typing import Any, Literal, overload

import torch
from torch import Tensor

from attnlimits.kernels._backward import StreamedAttention
from attnlimits.kernels._passes import Problem, forward_blocks
from attnlimits.kernels.spec import (
    NORMALIZERS,
    AttentionStats,
    check_inputs,
    logit_cap,
    resolve_params,
    sink_logits,
)

__all__ = ["NORMALIZERS", "AttentionStats", "Backend", "streaming_attention"]

Backend = Literal["auto", "torch", "triton"]
#: Normalisers the fused Triton kernel implements.
_TRITON = ("softmax", "ssmax", "adaptive")


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
    q: Tensor,
    k: Tensor,
    v: Tensor,
    normalizer: str = ...,
    *,
    mask: Tensor | None = ...,
    causal: bool = ...,
    scale: float | None = ...,
    block_size: int = ...,
    return_stats: Literal[False] = ...,
    backend: Backend = ...,
    **params: Any,
) -> Tensor: ...
@overload
def streaming_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    normalizer: str = ...,
    *,
    mask: Tensor | None = ...,
    causal: bool = ...,
    scale: float | None = ...,
    block_size: int = ...,
    return_stats: Literal[True],
    backend: Backend = ...,
    **params: Any,
) -> AttentionStats: ...
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

    Under autograd (an input requires grad, ``return_stats=False``) the backward recomputes each
    block's weights from the saved per-row log-sum-exp: O(L·d) memory, adaptive's gradient
    flowing through β(H) as in the listing (``docs/kernels.md``, "Backward at O(L) memory").
    With ``return_stats=True`` autograd goes through the block ops instead (O(L²) memory).
    """
    opts = resolve_params(normalizer, params)
    scale, mask = check_inputs(q, k, v, mask, scale, block_size)
    if normalizer not in _TRITON and backend == "triton":
        raise ValueError(f"backend='triton' runs {', '.join(_TRITON)} only, not {normalizer!r}")
    if normalizer in _TRITON and _use_triton(backend, q, k, v, mask):
        from attnlimits.kernels import triton_attention

        return triton_attention._forward(
            q,
            k,
            v,
            normalizer,
            opts,
            causal=causal,
            scale=scale,
            return_stats=return_stats,
            mask=mask,
        )
    B, Hq, Lq, _ = q.shape
    Hkv, Lk, dv = k.shape[1], k.shape[2], v.shape[-1]
    G = Hq // Hkv
    acc = torch.float64 if q.dtype == torch.float64 else torch.float32
    p = Problem(
        q5=q.unflatten(1, (Hkv, G)),  # (B, Hkv, G, Lq, d), a view
        k=k,
        v=v,
        mask5=None if mask is None else mask.unflatten(1, (Hkv, G)),  # (B, Hkv, G, Lq, Lk), a view
        causal=causal,
        offset=Lk - Lq,
        scale=scale,
        block=block_size,
        acc=acc,
        cap=logit_cap(normalizer, opts),
        sink=_sinks(normalizer, opts, Hkv, G, q.device),
    )
    wants_grad = torch.is_grad_enabled() and any(x.requires_grad for x in (q, k, v))
    if wants_grad and not return_stats:
        out: Tensor = StreamedAttention.apply(q, k, v, p, normalizer, opts)
        return out
    f = forward_blocks(p, normalizer, opts, stats=return_stats, grad=False)
    out4 = f.out.view(B, Hq, Lq, dv)
    if not return_stats:
        return out4
    assert f.entropy is not None and f.out_entropy is not None and f.n_keys is not None
    H, c, H_out, n = (x.view(B, Hq, Lq) for x in (f.entropy, f.beta, f.out_entropy, f.n_keys))
    return AttentionStats(out4, H, c, H_out, n)
