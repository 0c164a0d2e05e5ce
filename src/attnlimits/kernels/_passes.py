"""The block passes of :mod:`attnlimits.kernels.streaming`, shared by its forward and by the
recomputing backward of :mod:`attnlimits.kernels._backward`.

Pass 1 (:func:`stats_pass`) streams the keys keeping per row the running maximum ``m``,
``Z = Σ exp(l − m)`` and ``U = Σ exp(l − m)·(l − m)``; when ``m`` grows to ``m'`` both are
rescaled flash-style: ``Z ← e^{m−m'} Z``, ``U ← e^{m−m'} (U + (m − m')·Z)``. At the end
``H = log Z − U/Z`` is exactly ``−Σ p log p`` with ``p = softmax(l)`` (paper B, App. G), and
``m + log Z`` is the row's log-sum-exp. Pass 2 (:func:`output_pass`) is the online softmax of
``c·l`` applied to ``v``; it also returns the row's log-sum-exp, all the backward keeps of it.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import torch
from torch import Tensor

from attnlimits.kernels.spec import UNIT_TEMPERATURE, inverse_temperature, visible_keys
from attnlimits.normalizers.adaptive import adaptive_beta

__all__ = ["Forward", "Problem", "block_scores", "forward_blocks", "keep_block", "key_range"]

# exp(-1000) is exactly 0 in float32 and float64 (float64's smallest subnormal is e^-744.4):
# clamping the shifted logits there turns −inf (masked) into a finite number of weight exactly 0,
# so the entropy term 0·(l − m) is 0 rather than NaN.
NEG_CLAMP = -1000.0


class Problem(NamedTuple):
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


def key_range(p: Problem, i0: int, i1: int) -> range:
    """Key-block starts that query rows [i0, i1) can see (all of them unless causal)."""
    Lk = p.k.shape[2]
    stop = Lk if not p.causal else max(0, min(Lk, p.offset + i1))
    return range(0, stop, p.block)


def keep_block(p: Problem, i0: int, i1: int, j0: int, j1: int) -> Tensor | None:
    """Boolean keep-mask of one block, broadcastable to [B, Hkv, G, bq, bk]; None = keep all."""
    keep = None if p.mask5 is None else p.mask5[:, :, :, i0:i1, j0:j1]
    if p.causal and j1 - 1 > p.offset + i0:  # the block reaches above the diagonal
        qpos = torch.arange(i0, i1, device=p.k.device) + p.offset
        kpos = torch.arange(j0, j1, device=p.k.device)
        tri = kpos[None, :] <= qpos[:, None]  # (bq, bk)
        keep = tri if keep is None else keep & tri
    return keep


def block_scores(
    p: Problem, qf: Tensor, i0: int, i1: int, j0: int, j1: int, *, want_dcap: bool = False
) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """Logits of one block, masked entries −inf: ([B, Hkv, G·bq, bk], keep, cap′).

    ``qf`` holds the scaled queries of rows [i0, i1) as [B, Hkv, G·bq, d]. ``cap′`` =
    1 − tanh²(l/cap), the softcap's derivative, when ``want_dcap`` and a cap is set (the
    backward's chain rule), else None.
    """
    B, Hkv, G = p.q5.shape[:3]
    kb = p.k[:, :, j0:j1].to(p.acc)  # (B, Hkv, bk, d)
    dcap = None
    if p.cap is None:
        s = qf @ kb.transpose(-1, -2)  # (B, Hkv, G·bq, bk)
    elif torch.is_grad_enabled() and (qf.requires_grad or kb.requires_grad):
        s = torch.tanh((qf / p.cap) @ kb.transpose(-1, -2)) * p.cap
    else:  # 1/cap folded into the queries; tanh and the cap in place on one buffer
        th = ((qf / p.cap) @ kb.transpose(-1, -2)).tanh_()
        if want_dcap:
            dcap = 1.0 - th * th
        s = th.mul_(p.cap)
    keep = keep_block(p, i0, i1, j0, j1)
    if keep is not None:
        s.view(B, Hkv, G, i1 - i0, j1 - j0).masked_fill_(~keep, -math.inf)
    return s, keep, dcap


def _rescale(m: Tensor, s: Tensor, clamp: bool = True) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Online-softmax step: new max m', e = exp(s − m'), alpha = e^{m−m'}, d = s − m'.

    ``clamp``: d ≥ −1000 (finite where masked) for the entropy's d·e terms; without it the
    masked entries keep d = −inf, which exp still sends to 0.
    """
    m_new = torch.maximum(m, s.amax(-1))
    m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # all-masked so far
    alpha = torch.exp(m - m_safe)
    if s.requires_grad:  # autograd needs s (for amax) untouched
        d = (s - m_safe[..., None]).clamp_min(NEG_CLAMP)
    else:  # in place: s is not needed afterwards
        d = s.sub_(m_safe[..., None])
        if clamp:
            d = d.clamp_min_(NEG_CLAMP)
    return m_new, torch.exp(d), alpha, d


def entropy(Z: Tensor, U: Tensor) -> Tensor:
    """H = log Z − U/Z, with U = Σ e^{l−m}(l − m); 0 where Z = 0 (all keys masked)."""
    pos = Z > 0
    Zs = torch.where(pos, Z, torch.ones_like(Z))
    return torch.where(pos, torch.log(Zs) - U / Zs, torch.zeros_like(Z)).clamp_min_(0.0)


def row_lse(m: Tensor, Z: Tensor) -> Tensor:
    """log-sum-exp m + log Z of each row; −inf where Z = 0 (no key, no sink)."""
    return torch.where(Z > 0, m + torch.log(Z.clamp_min(1e-300)), torch.full_like(m, -math.inf))


class Stats(NamedTuple):
    entropy: Tensor  # H of softmax(l), [B, Hkv, G·bq]
    n_keys: Tensor | None  # kept keys per row, only when a mask is given
    lse: Tensor  # log-sum-exp of l per row


def stats_pass(p: Problem, qf: Tensor, i0: int, i1: int) -> Stats:
    """Pass 1 over the keys for query rows [i0, i1): H of softmax(l), kept-key counts (only
    with a mask; otherwise they follow from the shapes) and the log-sum-exp of ``l``.

    Every tensor is per row, [B, Hkv, G·bq].
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
    for j0 in key_range(p, i0, i1):
        j1 = min(j0 + p.block, p.k.shape[2])
        s, keep, _ = block_scores(p, qf, i0, i1, j0, j1)
        m_new, e, alpha, d = _rescale(m, s)
        delta = torch.where(Z > 0, m - m_new, torch.zeros_like(m))  # e^{m−m'}·(m − m')·Z term
        U = alpha * (U + delta * Z) + (e * d).sum(-1)
        Z = alpha * Z + e.sum(-1)
        m = m_new
        if n is not None:
            n = n + (keep.sum(-1) if keep is not None else j1 - j0)
    counts = None if n is None else n.reshape(B, Hkv, G * bq)
    return Stats(entropy(Z, U), counts, row_lse(m, Z))


class Output(NamedTuple):
    out: Tensor  # [B, Hkv, G·bq, dv], accumulation dtype
    entropy: Tensor | None  # H of the applied weights (sink as one more outcome)
    lse: Tensor  # log-sum-exp of c·l (and the sink) per row
    lv: Tensor | None  # Σ_j w_j l_j v_j [B, Hkv, G·bq, dv] (adaptive's backward)
    lbar: Tensor | None  # Σ_j w_j l_j per row


def output_pass(
    p: Problem,
    qf: Tensor,
    coef: Tensor,
    i0: int,
    i1: int,
    want_entropy: bool,
    want_l: bool,
    unshifted: bool = False,
) -> Output:
    """Pass 2: online softmax(coef·l) @ v for query rows [i0, i1); coef is [B, Hkv, G·bq].

    A sink (softmax1, sink_softmax) is one more logit of value 0: the running state starts at
    m = sink, Z = 1, acc = 0, so it enters the denominator only (and H, as one more outcome).
    ``want_l`` also accumulates ``Σ w l v`` and ``Σ w l`` (w the applied weights, l the logits
    before ``coef``): with them the backward gets dL/dc without another pass. ``unshifted``:
    softcap without a running maximum (:func:`unshifted_cap` said so).
    """
    if unshifted and not (want_entropy or want_l):
        return _capped_output_pass(p, qf, i0, i1)
    B, Hkv, G = p.q5.shape[:3]
    bq = i1 - i0
    m = torch.full((B, Hkv, G * bq), -math.inf, dtype=p.acc, device=qf.device)
    Z = torch.zeros_like(m)
    if p.sink is not None:
        m = p.sink.to(p.acc)[None, :, :, None].expand(B, Hkv, G, bq).reshape(B, Hkv, G * bq)
        Z = torch.ones_like(m)
    U = torch.zeros_like(m)
    acc = torch.zeros((B, Hkv, G * bq, p.v.shape[-1]), dtype=p.acc, device=qf.device)
    lv = torch.zeros_like(acc) if want_l else None
    lbar = torch.zeros_like(m) if want_l else None
    qc = qf * coef[..., None]  # fold the per-row inverse temperature into the queries
    for j0 in key_range(p, i0, i1):
        j1 = min(j0 + p.block, p.k.shape[2])
        s, _, _ = block_scores(p, qc, i0, i1, j0, j1)
        m_new, e, alpha, d = _rescale(m, s, clamp=want_entropy or want_l)
        if want_entropy:
            delta = torch.where(Z > 0, m - m_new, torch.zeros_like(m))
            U = alpha * (U + delta * Z) + (e * d).sum(-1)
        Z = alpha * Z + e.sum(-1)
        vb = p.v[:, :, j0:j1].to(p.acc)  # (B, Hkv, bk, dv)
        acc = acc * alpha[..., None] + e @ vb  # (B, Hkv, G·bq, dv)
        if lv is not None and lbar is not None:
            m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            el = e * ((d + m_safe[..., None]) / coef[..., None])  # e·l; masked: e = 0
            lv = lv * alpha[..., None] + el @ vb
            lbar = lbar * alpha + el.sum(-1)
        m = m_new
    Zs = torch.where(Z > 0, Z, torch.ones_like(Z))  # all-masked rows: acc = 0 -> output 0
    return Output(
        acc / Zs[..., None],
        entropy(Z, U) if want_entropy else None,
        row_lse(m, Z),
        None if lv is None else lv / Zs[..., None],
        None if lbar is None else lbar / Zs,
    )


def unshifted_cap(p: Problem) -> bool:
    """Whether softcap's weights e^{cap·tanh(l/cap)} can be summed with no running maximum.

    Every capped logit lies in [−cap, cap], so e^{±cap} must be normal numbers of the
    accumulation dtype and ``n·e^{cap}·max|v|`` must not overflow: then the fixed shift 0 loses
    nothing (each weight keeps full relative precision) and the online max, its rescaling and
    the subtraction disappear (docs/kernels.md). Gemma 2's cap 50 qualifies in float32.
    """
    if p.cap is None or p.sink is not None:
        return False
    info = torch.finfo(p.acc)
    if p.cap >= -math.log(info.tiny) - 1.0:
        return False
    vmax = float(p.v.detach().abs().amax()) if p.v.numel() else 0.0
    return math.exp(p.cap) * max(p.k.shape[2], 1) * max(vmax, 1.0) < info.max * 1e-4


def _capped_output_pass(p: Problem, qf: Tensor, i0: int, i1: int) -> Output:
    """Pass 2 for softcap with the fixed shift 0 (see :func:`unshifted_cap`): per block one
    matmul, the cap through a sigmoid and exp in place on one buffer, and a second matmul."""
    assert p.cap is not None
    B, Hkv, G = p.q5.shape[:3]
    bq = i1 - i0
    Z = torch.zeros((B, Hkv, G * bq), dtype=p.acc, device=qf.device)
    acc = torch.zeros((B, Hkv, G * bq, p.v.shape[-1]), dtype=p.acc, device=qf.device)
    qs = qf * (2.0 / p.cap)
    for j0 in key_range(p, i0, i1):
        j1 = min(j0 + p.block, p.k.shape[2])
        kb = p.k[:, :, j0:j1].to(p.acc)  # (B, Hkv, bk, d)
        # cap·tanh(l/cap) = 2cap·σ(2l/cap) − cap: torch's sigmoid is ~3× faster than its tanh
        e = (qs @ kb.transpose(-1, -2)).sigmoid_().mul_(2.0 * p.cap).sub_(p.cap).exp_()
        keep = keep_block(p, i0, i1, j0, j1)
        if keep is not None:
            e.view(B, Hkv, G, bq, j1 - j0).masked_fill_(~keep, 0.0)
        Z += e.sum(-1)
        acc += e @ p.v[:, :, j0:j1].to(p.acc)
    Zs = torch.where(Z > 0, Z, torch.ones_like(Z))
    return Output(acc / Zs[..., None], None, row_lse(torch.zeros_like(Z), Z), None, None)


class Forward(NamedTuple):
    """Every row tensor is [B, Hkv, G, Lq] (accumulation dtype); None where not asked for."""

    out: Tensor  # [B, Hkv, G, Lq, dv] in the input dtype
    beta: Tensor  # the inverse temperature c applied to l
    lse: Tensor  # log-sum-exp of c·l (and the sink)
    entropy: Tensor | None  # H of softmax(l) (return_stats, or adaptive's backward)
    out_entropy: Tensor | None  # H of the applied weights (return_stats)
    n_keys: Tensor | None  # int64 (return_stats)
    lse_l: Tensor | None  # log-sum-exp of l (adaptive's backward)
    lv: Tensor | None  # Σ w l v, [B, Hkv, G, Lq, dv] (adaptive's backward)
    lbar: Tensor | None  # Σ w l (adaptive's backward)


def analytic_counts(p: Problem, i0: int, i1: int) -> Tensor:
    """Kept keys per row without a mask: Lk, or under causal the query position + 1 (clipped)."""
    B, Hkv, G = p.q5.shape[:3]
    Lk = p.k.shape[2]
    n = visible_keys(torch.arange(i0, i1, device=p.k.device) + p.offset, Lk, p.causal)
    return n.expand(B, Hkv, G, i1 - i0).reshape(B, Hkv, G * (i1 - i0))  # (B, Hkv, G·bq)


def forward_blocks(
    p: Problem, normalizer: str, opts: dict[str, Any], *, stats: bool, grad: bool
) -> Forward:
    """The streamed forward over query blocks: pass 1 where needed, c, pass 2.

    ``stats``: also H, the output's H and n (for :class:`AttentionStats`); ``grad``: also what
    the recomputing backward needs beyond the log-sum-exp (adaptive: H, lse of l, Σ w l v, Σ w l).
    """
    B, Hkv, G, Lq, _ = p.q5.shape
    dev, dv = p.q5.device, p.v.shape[-1]
    adaptive_grad = grad and normalizer == "adaptive"

    def rows() -> Tensor:
        return torch.zeros((B, Hkv, G, Lq), dtype=p.acc, device=dev)

    out = torch.empty((B, Hkv, G, Lq, dv), dtype=p.q5.dtype, device=dev)
    c_all, lse_all = rows(), rows()
    H_all = rows() if stats or adaptive_grad else None
    Hout_all = rows() if stats else None
    n_all = torch.zeros((B, Hkv, G, Lq), dtype=torch.int64, device=dev) if stats else None
    lse_l = rows() if adaptive_grad else None
    lbar = rows() if adaptive_grad else None
    lv = torch.zeros((B, Hkv, G, Lq, dv), dtype=p.acc, device=dev) if adaptive_grad else None
    length_scaled = normalizer not in ("softmax", "adaptive", *UNIT_TEMPERATURE)
    need_pass1 = normalizer == "adaptive" or stats or (length_scaled and p.mask5 is not None)
    unshifted = unshifted_cap(p)

    def query_block(i0: int) -> None:  # rows [i0, i1): writes only its own slices
        i1 = min(i0 + p.block, Lq)
        bq = i1 - i0
        qf = (p.q5[:, :, :, i0:i1].to(p.acc) * p.scale).reshape(B, Hkv, G * bq, -1)
        st = stats_pass(p, qf, i0, i1) if need_pass1 else None
        n = st.n_keys if st is not None and st.n_keys is not None else analytic_counts(p, i0, i1)
        if normalizer == "softmax":
            c = torch.full_like(qf[..., 0], 1.0 / float(opts["temperature"]))
        elif normalizer in UNIT_TEMPERATURE:
            c = torch.ones_like(qf[..., 0])
        elif length_scaled:  # ssmax, logn, yarn, llama4_temperature; n = 0: row masked anyway
            c = inverse_temperature(normalizer, opts, n.to(p.acc))
        else:
            assert st is not None
            c = adaptive_beta(st.entropy, opts["coeffs"], opts["threshold"])
        o = output_pass(p, qf, c, i0, i1, stats, adaptive_grad, unshifted)
        out[:, :, :, i0:i1] = o.out.view(B, Hkv, G, bq, dv)
        pairs = [(c_all, c), (lse_all, o.lse), (Hout_all, o.entropy), (n_all, n)]
        if st is not None:
            pairs += [(H_all, st.entropy), (lse_l, st.lse)]
        pairs += [(lbar, o.lbar)]
        for dst, src in pairs:
            if dst is not None and src is not None:
                dst[:, :, :, i0:i1] = src.view(B, Hkv, G, bq)
        if lv is not None and o.lv is not None:
            lv[:, :, :, i0:i1] = o.lv.view(B, Hkv, G, bq, dv)

    starts = range(0, Lq, p.block)
    if _side_by_side(p, len(starts)):
        threads = torch.get_num_threads()
        grad, inference = torch.is_grad_enabled(), torch.is_inference_mode_enabled()

        def in_worker(i0: int) -> None:  # grad and inference mode are per thread: the caller's
            with torch.inference_mode(inference), torch.set_grad_enabled(grad):
                query_block(i0)

        try:  # the costliest blocks first (under a causal mask the last rows see most keys)
            pool = ThreadPoolExecutor(threads, initializer=torch.set_num_threads, initargs=(1,))
            with pool:
                for done in [pool.submit(in_worker, i0) for i0 in reversed(starts)]:
                    done.result()  # re-raises a worker's error here
        finally:  # the workers' setting is also the default of threads started later (ATen
            torch.set_num_threads(threads)  # keeps one process-wide value): the caller's back
    else:
        for i0 in starts:
            query_block(i0)
    return Forward(out, c_all, lse_all, H_all, Hout_all, n_all, lse_l, lv, lbar)


def _side_by_side(p: Problem, n_blocks: int) -> bool:
    """Whether the query blocks run side by side, one Python thread per torch thread, each
    with one intra-op thread (:func:`forward_blocks`): on the CPU, with more than one torch
    thread and more than one block, and with no autograd graph to record (``return_stats``
    under grad goes through the block ops). Each block's ops then run on one core with its
    buffers in that core's cache, and without a barrier of all threads per op: about 1.1–1.4×
    faster for softcap's streamed pass at 16,384 tokens on 2 cores (docs/kernels.md). Each
    block's arithmetic is the serial loop's (no sum crosses blocks)."""
    if p.q5.device.type != "cpu" or n_blocks < 2 or torch.get_num_threads() < 2:
        return False
    if torch.is_autocast_enabled("cpu") or torch.compiler.is_compiling():
        return False  # autocast is per thread too; a traced graph has no threads
    recording = torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (p.q5, p.k, p.v, p.sink)
    )
    return not recording
