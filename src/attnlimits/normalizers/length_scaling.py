"""Softmaxes with a logit scale that grows with the context: the length scalings models ship.

Each is ``softmax(c · l)`` over the kept keys with an inverse temperature ``c`` set by ``n``,
the number of kept keys of the row (under a causal mask, the query position + 1), as
Scalable-Softmax (:func:`attnlimits.normalizers.ssmax`) does; they differ in ``c(n)``
(:func:`ssmax_trained` is SSMax itself, with its ``s`` set by a training length). All
counter paper B's dispersion (Lemma 2.1) by growing the logit spread with the context.
:func:`softcap` is the opposite transform: it bounds the logits (Gemma 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from attnlimits._checks import (
    check_finite,
    check_int_at_least,
    check_positive,
    key_counts,
)
from attnlimits.normalizers._common import check_broadcasts_to, finish, masked_softmax, prepare

__all__ = [
    "LENGTH_SCALES",
    "check_length_scale",
    "llama4_scale",
    "llama4_temperature",
    "logn_scale",
    "logn_softmax",
    "softcap",
    "softcap_logits",
    "ssmax_trained",
    "ssmax_trained_scale",
    "yarn_scale",
    "yarn_softmax",
]


def _scaled(
    scores: Tensor, mask: Tensor | None, dim: int, c_of_n: Callable[[Tensor], Tensor]
) -> Tensor:
    """softmax(c(n)·l) over the kept keys, n the row's kept keys."""
    x, keep, d = prepare(scores, mask, dim)
    c = c_of_n(key_counts(keep, x, d).clamp_min(1.0))
    return finish(masked_softmax(x, keep, d, scale=c), keep, scores)


def logn_scale(n: Tensor, train_length: int = 8192) -> Tensor:
    """Qwen's c(n) = max(1, log n / log train_length) (see :func:`logn_softmax`)."""
    return (n.clamp_min(1.0).log() / math.log(train_length)).clamp_min(1.0)


def yarn_scale(n: Tensor, factor: float = 4.0) -> Tensor:
    """YaRN's c = (0.1 ln factor + 1)², the same for every row (see :func:`yarn_softmax`)."""
    return torch.full_like(n, (0.1 * math.log(factor) + 1.0) ** 2)


def llama4_scale(n: Tensor, attn_scale: float = 0.1, floor_scale: int = 8192) -> Tensor:
    """Llama 4's c(n) = 1 + attn_scale·log(⌊n / floor_scale⌋ + 1) (:func:`llama4_temperature`).

    ``attn_scale`` is clamped to ``n``'s dtype range, so that a scale beyond it gives c = 1
    below ``floor_scale`` (not inf · 0) and a saturated c above."""
    a = min(attn_scale, torch.finfo(n.dtype).max)
    return 1.0 + a * torch.log(torch.floor(n / floor_scale) + 1.0)


def ssmax_trained_scale(n: Tensor, train_length: int = 2048) -> Tensor:
    """SSMax's c(n) = s log n with s = 1 / log train_length (see :func:`ssmax_trained`)."""
    return n.clamp_min(1.0).log() / math.log(train_length)


def check_length_scale(name: str, params: dict[str, Any]) -> None:
    """Check the parameters of the length scaling ``name`` (a key of :data:`LENGTH_SCALES`)."""
    if name in ("logn", "ssmax_trained"):
        check_int_at_least(params["train_length"], "train_length", 2)
    elif name == "yarn":
        check_positive(params["factor"], "factor", tensor_ok=False)
        if params["factor"] < 1:
            raise ValueError(
                f"factor must be >= 1 (the context extension ratio), got {params['factor']}"
            )
    else:
        check_positive(params["attn_scale"], "attn_scale", tensor_ok=False)
        check_int_at_least(params["floor_scale"], "floor_scale", 1)


#: Normaliser name -> c(n, **params): the length scalings, shared with the streaming kernels.
LENGTH_SCALES: dict[str, Callable[..., Tensor]] = {
    "logn": logn_scale,
    "yarn": yarn_scale,
    "llama4_temperature": llama4_scale,
    "ssmax_trained": ssmax_trained_scale,
}


def logn_softmax(
    scores: Tensor, dim: int = -1, *, mask: Tensor | None = None, train_length: int = 8192
) -> Tensor:
    r"""Qwen's log-n attention scaling: :math:`c = \max(1, \log n / \log L_\mathrm{train})`.

    Qwen (Bai et al. 2023, Qwen Technical Report, "LogN-Scaling"; ``use_logn_attn`` in its
    modeling code, which multiplies the query at position ``p`` by
    :math:`\max(1, \log_{L_\mathrm{train}}(p + 1))`): no change within the training length,
    a logarithmic sharpening beyond it. ``train_length`` ≥ 2.
    """
    check_length_scale("logn", {"train_length": train_length})
    return _scaled(scores, mask, dim, lambda n: logn_scale(n, train_length))


def yarn_softmax(
    scores: Tensor, dim: int = -1, *, mask: Tensor | None = None, factor: float = 4.0
) -> Tensor:
    r"""YaRN's attention factor (Peng et al. 2023, arXiv 2309.00071, Eq. 22): logits times
    :math:`(0.1 \ln s + 1)^2` for a context extended ``s`` = ``factor`` times.

    YaRN scales both q and k by :math:`\sqrt{1/t} = 0.1 \ln s + 1` (transformers applies the
    ``attention_factor`` to the rotary cos and sin), so the logits grow by its square; the same
    for every row (no dependence on n). ``factor`` ≥ 1 (1: plain softmax).
    """
    check_length_scale("yarn", {"factor": factor})
    return _scaled(scores, mask, dim, lambda n: yarn_scale(n, factor))


def llama4_temperature(
    scores: Tensor,
    dim: int = -1,
    *,
    mask: Tensor | None = None,
    attn_scale: float = 0.1,
    floor_scale: int = 8192,
) -> Tensor:
    r"""Llama 4's attention temperature tuning: :math:`c = 1 + \mathrm{attn\_scale} \cdot
    \log(\lfloor n / \mathrm{floor\_scale} \rfloor + 1)`.

    transformers' Llama 4 (``attn_temperature_tuning``, ``attn_scale`` = 0.1, ``floor_scale`` =
    8192; the parameter keeps transformers' name, as ``scale`` is the kernels' logit scale)
    multiplies the query at position ``p`` by
    :math:`\log(\lfloor (p + 1)/\mathrm{floor\_scale} \rfloor + 1) \cdot \mathrm{attn\_scale} + 1`;
    here ``p + 1`` is the row's kept keys ``n``. 1 up to ``floor_scale`` keys, then a stepwise
    logarithmic sharpening.
    """
    check_length_scale("llama4_temperature", {"attn_scale": attn_scale, "floor_scale": floor_scale})
    return _scaled(scores, mask, dim, lambda n: llama4_scale(n, attn_scale, floor_scale))


def ssmax_trained(
    scores: Tensor, dim: int = -1, *, mask: Tensor | None = None, train_length: int = 2048
) -> Tensor:
    r"""Scalable-Softmax with s = 1 / log L_train: :math:`c(n) = \log n / \log L_\mathrm{train}`.

    SSMax (Nakanishi 2025, arXiv 2501.19399: softmax of :math:`s \log(n)\, l`, ``s`` learned
    per layer and head; :func:`attnlimits.normalizers.ssmax` with ``s = 1/log(train_length)``).
    This choice of ``s`` is ours, not the paper's: it is the one that makes SSMax equal plain
    softmax (c = 1) exactly at ``n = train_length``, so a model trained with softmax at that
    length sees the same attention there: softer below it, sharper beyond it. Qwen's
    :func:`logn_softmax` is the same c(n) floored at 1 (no change below the training length).
    ``train_length`` ≥ 2; default 2048 (ours).
    """
    check_length_scale("ssmax_trained", {"train_length": train_length})
    return _scaled(scores, mask, dim, lambda n: ssmax_trained_scale(n, train_length))


def softcap_logits(scores: Tensor, cap: float = 50.0) -> Tensor:
    r"""Logit soft-capping :math:`\mathrm{cap} \cdot \tanh(l / \mathrm{cap})` (Gemma 2, Gemma
    Team 2024, §2: attention logits capped at 50): compose with any normaliser,
    ``normalizers.get(name)(softcap_logits(scores, cap), mask=...)``; ``-inf`` stays ``-inf``."""
    check_positive(cap, "cap")
    check_finite(scores, "scores", allow_meta=True)
    check_broadcasts_to(cap, "cap", scores.shape)
    neg_inf = torch.isneginf(scores)  # -inf kept out of tanh's gradient too (0 · inf)
    return torch.where(neg_inf, scores, _capped(scores.masked_fill(neg_inf, 0.0), cap))


def _capped(x: Tensor, cap: float | Tensor) -> Tensor:
    """cap · tanh(x / cap), with cap clamped to ``x``'s dtype range: a cap that over- or
    underflows it would give inf · 0 or 0 / 0; the clamped one gives the limit (x, or 0)."""
    info = torch.finfo(x.dtype)
    c = (
        cap.to(x.dtype).clamp(info.tiny, info.max)
        if isinstance(cap, Tensor)
        else min(max(cap, info.tiny), info.max)
    )
    return c * torch.tanh(x / c)


def softcap(
    scores: Tensor, dim: int = -1, *, mask: Tensor | None = None, cap: float = 50.0
) -> Tensor:
    r"""Softmax of soft-capped logits, :math:`\mathrm{softmax}(\mathrm{cap}\tanh(l/\mathrm{cap}))`
    (Gemma 2). Capping bounds the spread by 2·cap, so by paper B's Lemma 2.1 the weights
    must disperse as O(1/n) once n is large; see :func:`softcap_logits` to cap before another
    normaliser."""
    check_positive(cap, "cap")
    x, keep, d = prepare(scores, mask, dim)
    check_broadcasts_to(cap, "cap", x.shape)
    return finish(masked_softmax(_capped(x, cap), keep, d), keep, scores)
