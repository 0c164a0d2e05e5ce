"""Hugging Face transformers integration: the streaming kernels as ``attn_implementation`` names.

Importing :mod:`attnlimits.kernels` registers (idempotently) an ``attn_implementation`` name
for every normaliser of :mod:`attnlimits.normalizers` with transformers' ``AttentionInterface``
and, for their masks, with ``ALL_MASK_ATTENTION_FUNCTIONS``. Three run the streaming kernels
(O(L) memory):

=========================  ============  ==============================================
name                       normaliser    parameters (``config.attnlimits_params``)
=========================  ============  ==============================================
``attnlimits_softmax_t``   ``softmax``   ``temperature`` (default 1)
``attnlimits_ssmax``       ``ssmax``     ``s`` (default 0.43, as ``normalizers.ssmax``)
``attnlimits_adaptive``    ``adaptive``  ``coeffs``, ``threshold`` (paper B's listing)
=========================  ============  ==============================================

Every other registry entry ``<name>`` is ``attnlimits_<name>``: the length scalings (``logn``,
``yarn``, ``llama4_temperature``), ``softcap``, ``softmax1`` and ``sink_softmax`` (``sink``: one
logit, or a list with one per query head) through :func:`streaming_attention`, the rest
(``attnlimits_sparsemax``, ``attnlimits_softpick``, ...) through
:func:`~attnlimits.kernels.chunked.chunked_attention`: materialised one block of
``block_size`` query rows at a time (peak about three ``[B, Hq, block_size, Lk]`` tensors), its
parameters those of the normaliser (``config.attnlimits_params = {"train_length": 4096}``).

Parameters reach the kernel through the model, not through module-level state: each attention
call reads the dict ``module.config.attnlimits_params`` (missing = defaults; the key
``block_size`` is accepted too). :func:`patch` sets and restores it; :func:`register` instead
freezes parameters into a closure under a new name, which then ignores the config.

Masks: the names use transformers' ``sdpa_mask``, a boolean ``[B, 1, Lq, Lk]`` keep-mask, or
``None`` when the pattern is plain causal (``Lq == Lk``, or an empty static cache) or a
single-token decode step; then the kernel follows ``sdpa_attention_forward``: causal when
``Lq > 1``, top-left aligned (keys past ``Lq`` are dropped, as sdpa does for a static cache).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor, nn

from attnlimits.hf_bridge import additive_bias, keep_mask, register_attention, using_attention
from attnlimits.kernels.chunked import chunked_attention
from attnlimits.kernels.reference import naive_attention
from attnlimits.kernels.spec import NORMALIZERS, resolve_params
from attnlimits.kernels.streaming import streaming_attention
from attnlimits.normalizers import available, get

__all__ = [
    "CONFIG_ATTR",
    "HF_NAMES",
    "config_params",
    "make_attention_function",
    "patch",
    "register",
]

#: Registered implementation name -> normaliser: the three streamed ones, then every other
#: registry entry as ``attnlimits_<name>`` (materialised per block of query rows).
HF_NAMES: dict[str, str] = {
    "attnlimits_softmax_t": "softmax",
    "attnlimits_ssmax": "ssmax",
    "attnlimits_adaptive": "adaptive",
} | {f"attnlimits_{n}": n for n in available() if n not in ("softmax", "ssmax", "adaptive")}
#: Config attribute holding the kernel parameters of the built-in names.
CONFIG_ATTR = "attnlimits_params"
_DEFAULT_BLOCK = 256


def _kernel_mask(mask: Tensor) -> Tensor:
    """A transformers mask as a keep-mask; real additive biases are refused, not dropped."""
    if additive_bias(mask) is not None:
        raise ValueError("additive float masks with biases other than 0 / -inf are not supported")
    keep = keep_mask(mask)
    assert keep is not None
    return keep


def make_attention_function(
    normalizer: str, *, frozen: dict[str, Any] | None = None, naive: bool = False
) -> Callable[..., tuple[Tensor, None]]:
    """An ``AttentionInterface`` function running :func:`streaming_attention` with ``normalizer``.

    Parameters
    ----------
    normalizer : str
        ``"softmax"``, ``"ssmax"`` or ``"adaptive"`` run :func:`streaming_attention`; any other
        registry name runs :func:`~attnlimits.kernels.chunked.chunked_attention`.
    frozen : dict, optional
        Fixed kernel parameters; when None they are read per call from
        ``module.config.attnlimits_params``.
    naive : bool
        Use :func:`~attnlimits.kernels.naive_attention` (materialised scores, O(L²) memory) in
        the input dtype instead of the streaming kernel: a reference for tests.

    Returns
    -------
    Callable
        ``f(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs)`` with
        q ``[B, Hq, Lq, d]``, k/v ``[B, Hkv, Lk, d]``, returning ``(out [B, Lq, Hq, dv], None)``.
    """

    def attention(
        module: nn.Module,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        attention_mask: Tensor | None,
        scaling: float | None = None,
        dropout: float = 0.0,
        **kwargs: Any,
    ) -> tuple[Tensor, None]:
        if dropout:
            raise ValueError(
                f"attnlimits kernels have no attention dropout (got {dropout}); call model.eval()"
            )
        if frozen is not None:
            params = dict(frozen)
        else:
            params = dict(getattr(getattr(module, "config", None), CONFIG_ATTR, None) or {})
        block = int(params.pop("block_size", _DEFAULT_BLOCK))
        Lq = query.shape[2]
        causal = False
        mask = None
        if attention_mask is not None:
            mask = _kernel_mask(attention_mask)[..., : key.shape[2]]
        else:
            is_causal = kwargs.get("is_causal")
            is_causal = getattr(module, "is_causal", True) if is_causal is None else is_causal
            causal = bool(is_causal) and Lq > 1
            if causal and key.shape[2] > Lq:  # empty static cache: sdpa's top-left alignment
                key, value = key[:, :, :Lq], value[:, :, :Lq]
        if normalizer not in NORMALIZERS:
            out = chunked_attention(
                query, key, value, normalizer, mask=mask, causal=causal, scale=scaling,
                chunk_rows=block, **params,
            )  # fmt: skip
        elif naive:
            out = naive_attention(
                query, key, value, normalizer, mask=mask, causal=causal, scale=scaling, **params
            )
        else:
            out = streaming_attention(
                query, key, value, normalizer, mask=mask, causal=causal, scale=scaling,
                block_size=block, **params,
            )  # fmt: skip
        return out.transpose(1, 2).contiguous(), None  # (B, Lq, Hq, dv)

    attention.__name__ = f"attnlimits_{normalizer}_attention"
    return attention


def register(name: str, normalizer: str, *, naive: bool = False, **params: Any) -> str:
    """Register ``normalizer`` with fixed ``params`` as ``attn_implementation=name``.

    ``naive=True`` registers the materialised reference instead (O(L²) memory; for tests).
    Returns ``name``; re-registering a name replaces it. Parameters are checked now, not at the
    first forward. Example: ``register("ssmax_s04", "ssmax", s=0.4)``.
    """
    given = {k: v for k, v in params.items() if k != "block_size"}
    if normalizer in NORMALIZERS:
        resolve_params(normalizer, given)
    else:  # the normaliser checks its own parameters
        get(normalizer)(torch.zeros(1, 2), **given)
    fn = make_attention_function(normalizer, frozen=params, naive=naive)
    return register_attention(name, fn)


def register_defaults() -> None:
    """Register the built-in names of :data:`HF_NAMES` (idempotent; run on import)."""
    for name, normalizer in HF_NAMES.items():
        register_attention(name, make_attention_function(normalizer))


_INVERSE = {v: k for k, v in HF_NAMES.items()}


@contextmanager
def patch(model: Any, normalizer: str = "adaptive", **params: Any) -> Iterator[Any]:
    """Run an already loaded model with a streaming kernel inside a ``with`` block.

    Sets ``model.set_attn_implementation(name)`` and ``model.config.attnlimits_params = params``
    and restores both on exit (also on error). ``normalizer`` is any registry name
    (:func:`attnlimits.normalizers.available`) or an ``attnlimits_*`` name; ``params`` are that
    normaliser's parameters plus an optional ``block_size``.

    Examples
    --------
    >>> with patch(model, "softmax", temperature=2.0):  # doctest: +SKIP
    ...     logits = model(ids).logits
    """
    name = _INVERSE.get(normalizer, normalizer)
    if name not in HF_NAMES:
        raise ValueError(f"unknown normalizer {normalizer!r}; choose one of {sorted(_INVERSE)}")
    with config_params(model, params), using_attention(model, name):
        yield model


@contextmanager
def config_params(model: Any, params: dict[str, Any]) -> Iterator[Any]:
    """Set ``model.config.attnlimits_params`` (what the registered names read per call) to a
    copy of ``params`` inside the block; restore it, or its absence, on exit (also on error)."""
    config = model.config
    had, old_params = hasattr(config, CONFIG_ATTR), getattr(config, CONFIG_ATTR, None)
    try:
        setattr(config, CONFIG_ATTR, dict(params))
        yield model
    finally:
        if had:
            setattr(config, CONFIG_ATTR, old_params)
        else:
            delattr(config, CONFIG_ATTR)
