"""Attention normalisers ``f(scores, dim=-1, *, mask=None, **params) -> Tensor``, and a registry.

Every normaliser takes scores of any shape (maps are ``[batch, head, query, key]``),
normalises along ``dim`` (default ``-1``) and takes a boolean keep-mask (True = attend,
broadcastable). Common contract, checked by ``tests/test_normalizers.py`` for every entry:

- masked entries are exactly 0; a row with every key masked is all zeros, never NaN;
- ``-inf`` scores count as masked, so ``-inf`` padding equals truncation;
- float16 / bfloat16 inputs are computed in float32 and cast back;
- NaN (or +inf) scores and bad parameters raise ``ValueError``;
- differentiable, with finite gradients also under masks and on all-masked rows.

Not every normaliser returns a distribution: :data:`INFO` records which do
(``row_sum == "one"``), which sum to at most one, and which are unbounded. See
``docs/normalizers.md`` for the table of formulas and sources. :func:`cosine_logits` (cosine
attention) is not a normaliser: it makes logits from q and k, to pass to any entry.

>>> from attnlimits import normalizers
>>> f = normalizers.get("sparsemax")
>>> normalizers.sums_to_one("stick_breaking")
False
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from torch import Tensor

from attnlimits._checks import ArgumentTypeError
from attnlimits.normalizers.adaptive import (
    ENTROPY_EPS,
    ENTROPY_THRESHOLD,
    POLY_COEFFS,
    adaptive_beta,
    adaptive_softmax,
    adaptive_stats,
)
from attnlimits.normalizers.base import general, softmax
from attnlimits.normalizers.cosine import cosine_logits
from attnlimits.normalizers.entmax import as_entmax, entmax15, entmax_bisect, sparsemax
from attnlimits.normalizers.length_scaling import (
    llama4_temperature,
    logn_softmax,
    softcap,
    softcap_logits,
    ssmax_trained,
    yarn_softmax,
)
from attnlimits.normalizers.scalable import ssmax
from attnlimits.normalizers.self_adjust import ssa, ssa_normalized
from attnlimits.normalizers.sinks import sink_softmax, softmax1, softpick
from attnlimits.normalizers.stieltjes import stieltjes
from attnlimits.normalizers.topk import topk_softmax
from attnlimits.normalizers.unnormalized import (
    relu2_attention,
    relu_attention,
    sigmoid,
    stick_breaking,
)

__all__ = [
    "ENTROPY_EPS",
    "ENTROPY_THRESHOLD",
    "INFO",
    "POLY_COEFFS",
    "REGISTRY",
    "NormalizerInfo",
    "adaptive_beta",
    "adaptive_softmax",
    "adaptive_stats",
    "as_entmax",
    "available",
    "cosine_logits",
    "entmax15",
    "entmax_bisect",
    "general",
    "get",
    "info",
    "llama4_temperature",
    "logn_softmax",
    "relu2_attention",
    "relu_attention",
    "sigmoid",
    "sink_softmax",
    "softcap",
    "softcap_logits",
    "softmax",
    "softmax1",
    "softpick",
    "sparsemax",
    "ssa",
    "ssa_normalized",
    "ssmax",
    "ssmax_trained",
    "stick_breaking",
    "stieltjes",
    "sums_to_one",
    "topk_softmax",
    "yarn_softmax",
]

Normalizer = Callable[..., Tensor]
RowSum = Literal["one", "at_most_one", "unbounded"]


@dataclass(frozen=True)
class NormalizerInfo:
    """What downstream code may assume about one registered normaliser.

    Attributes
    ----------
    name : str
        Registry name.
    fn : callable
        ``fn(scores, dim=-1, *, mask=None, **params) -> Tensor``; every param has a default.
    row_sum : {"one", "at_most_one", "unbounded"}
        Row sum over the kept keys, for rows with at least one kept key.
    nonnegative : bool
        Every entry is >= 0.
    sparse : bool
        Can return exact zeros at kept keys.
    source : str
        Paper (and equation) the definition follows.
    """

    name: str
    fn: Normalizer
    row_sum: RowSum
    nonnegative: bool
    sparse: bool
    source: str

    @property
    def sums_to_one(self) -> bool:
        """True where every row with a kept key sums to one."""
        return self.row_sum == "one"


_ENTRIES = (
    NormalizerInfo("softmax", softmax, "one", True, False, "Mudarisov et al. 2025, Eq. 2"),
    NormalizerInfo(
        "sparsemax", sparsemax, "one", True, True, "Martins & Astudillo 2016, Eq. 2, Alg. 1"
    ),
    NormalizerInfo("entmax15", entmax15, "one", True, True, "Peters et al. 2019, Eq. 9, Alg. 2"),
    NormalizerInfo(
        "entmax_bisect", entmax_bisect, "one", True, True, "Peters et al. 2019, Eq. 9 (bisection)"
    ),
    NormalizerInfo("ssmax", ssmax, "one", True, False, "Nakanishi 2025 (arXiv 2501.19399)"),
    NormalizerInfo("ssa", ssa, "unbounded", False, False, "Zheng et al. 2025 (arXiv 2502.18277)"),
    NormalizerInfo(
        "ssa_normalized",
        ssa_normalized,
        "at_most_one",
        True,
        True,
        "Zheng et al. 2025 (arXiv 2502.18277), normalised form",
    ),
    NormalizerInfo(
        "adaptive", adaptive_softmax, "one", True, False, "Veličković et al. 2025, Fig. 4 listing"
    ),
    NormalizerInfo("topk", topk_softmax, "one", True, True, "softmax over the top-k keys"),
    NormalizerInfo(
        "sigmoid", sigmoid, "unbounded", True, False, "Ramapuram et al. 2024 (arXiv 2409.04431)"
    ),
    NormalizerInfo(
        "stick_breaking",
        stick_breaking,
        "at_most_one",
        True,
        False,
        "Tan et al. 2025 (arXiv 2410.17980)",
    ),
    NormalizerInfo("softmax1", softmax1, "at_most_one", True, False, "Miller 2023, off by one"),
    NormalizerInfo(
        "sink_softmax", sink_softmax, "at_most_one", True, False, "a learned sink logit (gpt-oss)"
    ),
    NormalizerInfo(
        "softpick", softpick, "at_most_one", True, True, "Zuhri et al. 2025 (arXiv 2504.20966)"
    ),
    NormalizerInfo("softcap", softcap, "one", True, False, "Gemma Team 2024 (Gemma 2), §2"),
    NormalizerInfo(
        "relu", relu_attention, "unbounded", True, True, "Wortsman et al. 2023 (2309.08586)"
    ),
    NormalizerInfo("relu2", relu2_attention, "unbounded", True, True, "squared ReLU / L"),
    NormalizerInfo("logn", logn_softmax, "one", True, False, "Bai et al. 2023 (Qwen), LogN"),
    NormalizerInfo("yarn", yarn_softmax, "one", True, False, "Peng et al. 2023 (YaRN), Eq. 22"),
    NormalizerInfo(
        "llama4_temperature",
        llama4_temperature,
        "one",
        True,
        False,
        "Llama 4 attention temperature tuning (transformers)",
    ),
    NormalizerInfo(
        "ssmax_trained",
        ssmax_trained,
        "one",
        True,
        False,
        "Nakanishi 2025 (arXiv 2501.19399), s = 1/log L_train (ours)",
    ),
    NormalizerInfo(
        "as_entmax", as_entmax, "one", True, True, "Vasylenko et al. 2025 (arXiv 2506.16640)"
    ),
    NormalizerInfo(
        "stieltjes",
        stieltjes,
        "one",
        True,
        False,
        "(λ − l)^{-q}: jtaylor-eng/asentmax proposal §1 (no paper found)",
    ),
)

#: name -> NormalizerInfo, read-only.
INFO: MappingProxyType[str, NormalizerInfo] = MappingProxyType({e.name: e for e in _ENTRIES})
#: name -> normaliser function, read-only.
REGISTRY: MappingProxyType[str, Normalizer] = MappingProxyType({e.name: e.fn for e in _ENTRIES})


def available() -> list[str]:
    """Registered names, in registry order."""
    return list(REGISTRY)


def info(name: str) -> NormalizerInfo:
    """Metadata of the normaliser registered as ``name`` (``ValueError`` if unknown)."""
    if not isinstance(name, str):
        raise ArgumentTypeError(
            f"name must be a str (one of {', '.join(available())}), got {name!r:.40}"
        )
    if name not in INFO:
        raise ValueError(f"unknown normaliser name {name!r}; available: {', '.join(available())}")
    return INFO[name]


def get(name: str) -> Normalizer:
    """The normaliser registered as ``name`` (``ValueError`` listing the names if unknown)."""
    return info(name).fn


def sums_to_one(name: str) -> bool:
    """Whether every row with a kept key of ``get(name)``'s output sums to one."""
    return info(name).sums_to_one
