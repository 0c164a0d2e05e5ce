"""Hugging Face transformers integration: the attention kernels as ``attn_implementation`` names.

Importing :mod:`attnlimits.kernels` registers (idempotently) an ``attn_implementation`` name
for every normaliser of :mod:`attnlimits.normalizers` with transformers' ``AttentionInterface``
and, for their masks, with ``ALL_MASK_ATTENTION_FUNCTIONS``: ``attnlimits_<name>`` for every
``<name>`` of :func:`attnlimits.normalizers.available` (``attnlimits_softmax_t`` is another name
for ``attnlimits_softmax``). Three have named parameters of their own:

=========================  ============  ==============================================
name                       normaliser    parameters (``config.attnlimits_params``)
=========================  ============  ==============================================
``attnlimits_softmax_t``   ``softmax``   ``temperature`` (default 1)
``attnlimits_ssmax``       ``ssmax``     ``s`` (default 0.43, as ``normalizers.ssmax``)
``attnlimits_adaptive``    ``adaptive``  ``coeffs``, ``threshold`` (paper B's listing)
=========================  ============  ==============================================

The normalisers of :data:`~attnlimits.kernels.spec.NORMALIZERS` (the three above, the length
scalings ``logn``, ``yarn``, ``llama4_temperature``, ``ssmax_trained``, ``softcap``,
``softmax1`` and ``sink_softmax`` with ``sink``: one logit, or a list with one per query head)
run by default through PyTorch's SDPA (:func:`~attnlimits.kernels.sdpa.sdpa_attention`, O(L)
memory forward and backward, attention dropout supported); softcap, which has no SDPA form, and
``{"kernel": "streaming"}`` in the parameters run :func:`streaming_attention` (no dropout). The
rest (``attnlimits_sparsemax``, ``attnlimits_softpick``, ...) run
:func:`~attnlimits.kernels.chunked.chunked_attention`: materialised one block of
``block_size`` query rows at a time (peak about three ``[B, Hq, block_size, Lk]`` tensors), its
parameters those of the normaliser (``config.attnlimits_params = {"train_length": 4096}``).

Parameters reach the kernel through the model, not through module-level state: each attention
call reads the dict ``module.config.attnlimits_params`` (missing = defaults; the keys
``block_size`` and ``kernel`` are accepted too). :func:`patch` sets and restores it;
:func:`register` instead freezes parameters into a closure under a new name, which then ignores
the config.

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

from attnlimits.hf_bridge import (
    additive_bias,
    keep_mask,
    register_attention,
    uses_attention_interface,
    using_attention,
)
from attnlimits.kernels.chunked import chunked_attention
from attnlimits.kernels.reference import naive_attention
from attnlimits.kernels.sdpa import SDPA_NORMALIZERS, sdpa_attention
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

#: Registered implementation name -> normaliser: the three with names of their own, then every
#: registry entry as ``attnlimits_<name>`` (``attnlimits_softmax`` = ``attnlimits_softmax_t``).
HF_NAMES: dict[str, str] = {
    "attnlimits_softmax_t": "softmax",
    "attnlimits_ssmax": "ssmax",
    "attnlimits_adaptive": "adaptive",
} | {f"attnlimits_{n}": n for n in available() if n not in ("ssmax", "adaptive")}
#: Config attribute holding the kernel parameters of the built-in names.
CONFIG_ATTR = "attnlimits_params"
#: Values of the ``kernel`` parameter: SDPA where a normaliser has an SDPA form (default), or
#: always the streaming kernel (the reference).
KERNELS = ("sdpa", "streaming")
_DEFAULT_BLOCK = 256


def _kernel_choice(params: dict[str, Any]) -> str:
    """Pop and check the ``kernel`` parameter (default ``"sdpa"``)."""
    kernel = params.pop("kernel", "sdpa")
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {list(KERNELS)}, got {kernel!r}")
    return str(kernel)


def _no_dropout(dropout: float, what: str) -> None:
    """Refuse attention dropout for a kernel without it, naming the ways out."""
    if dropout:
        raise ValueError(
            f"{what} has no attention dropout (got {dropout}): call model.eval() or set the "
            "model's attention dropout to 0 for training, or use a normaliser with an SDPA "
            f"form ({', '.join(SDPA_NORMALIZERS)}) with the default kernel='sdpa'"
        )


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
    """An ``AttentionInterface`` function running ``normalizer``'s kernel (SDPA/streaming/chunked).

    Parameters
    ----------
    normalizer : str
        A name of :data:`~attnlimits.kernels.spec.NORMALIZERS` runs
        :func:`~attnlimits.kernels.sdpa.sdpa_attention` (``kernel="sdpa"``, the default; it
        falls back to :func:`streaming_attention` where a normaliser has no SDPA form) or
        :func:`streaming_attention` (``kernel="streaming"``); any other registry name runs
        :func:`~attnlimits.kernels.chunked.chunked_attention`.
    frozen : dict, optional
        Fixed kernel parameters; when None they are read per call from
        ``module.config.attnlimits_params``. Besides the normaliser's own: ``block_size``
        (streaming and chunked kernels) and ``kernel`` (``"sdpa"`` or ``"streaming"``).
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
        if frozen is not None:
            params = dict(frozen)
        else:
            params = dict(getattr(getattr(module, "config", None), CONFIG_ATTR, None) or {})
        block = int(params.pop("block_size", _DEFAULT_BLOCK))
        kernel = _kernel_choice(params)
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
            _no_dropout(dropout, f"the chunked kernel of {normalizer!r}")
            out = chunked_attention(
                query,
                key,
                value,
                normalizer,
                mask=mask,
                causal=causal,
                scale=scaling,
                chunk_rows=block,
                **params,
            )
        elif naive:
            _no_dropout(dropout, "the materialised reference")
            out = naive_attention(
                query, key, value, normalizer, mask=mask, causal=causal, scale=scaling, **params
            )
        elif kernel == "sdpa":
            out = sdpa_attention(
                query,
                key,
                value,
                normalizer,
                mask=mask,
                causal=causal,
                scale=scaling,
                dropout_p=dropout,
                block_size=block,
                **params,
            )
        else:
            _no_dropout(dropout, "the streaming kernel (kernel='streaming')")
            out = streaming_attention(
                query,
                key,
                value,
                normalizer,
                mask=mask,
                causal=causal,
                scale=scaling,
                block_size=block,
                **params,
            )
        return out.transpose(1, 2).contiguous(), None  # (B, Lq, Hq, dv)

    attention.__name__ = f"attnlimits_{normalizer}_attention"
    return attention


def register(name: str, normalizer: str, *, naive: bool = False, **params: Any) -> str:
    """Register ``normalizer`` with fixed ``params`` as ``attn_implementation=name``.

    ``naive=True`` registers the materialised reference instead (O(L²) memory; for tests).
    Returns ``name``; re-registering a name replaces it. Parameters are checked now, not at the
    first forward. Example: ``register("ssmax_s04", "ssmax", s=0.4)``.
    """
    given = {k: v for k, v in params.items() if k not in ("block_size", "kernel")}
    _kernel_choice(dict(params))
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


_INVERSE = {v: k for k, v in reversed(HF_NAMES.items())}  # the first name of each normaliser


@contextmanager
def patch(model: Any, normalizer: str = "adaptive", **params: Any) -> Iterator[Any]:
    """Run an already loaded model with a streaming kernel inside a ``with`` block.

    Sets ``model.set_attn_implementation(name)`` and ``model.config.attnlimits_params = params``
    and restores both on exit (also on error). ``model`` is a transformers model whose attention
    goes through ``attn_implementation`` (anything else: a one-line ``TypeError``).
    ``normalizer`` is any registry name (:func:`attnlimits.normalizers.available`) or an
    ``attnlimits_*`` name; ``params`` are that normaliser's parameters plus an optional
    ``block_size`` and ``kernel`` (``"sdpa"``, the default, or ``"streaming"``).

    Examples
    --------
    >>> with patch(model, "softmax", temperature=2.0):  # doctest: +SKIP
    ...     logits = model(ids).logits
    """
    name = _INVERSE.get(normalizer, normalizer)
    if name not in HF_NAMES:
        raise ValueError(f"unknown normalizer {normalizer!r}; choose one of {sorted(_INVERSE)}")
    if not (isinstance(model, nn.Module) and uses_attention_interface(model)):
        why = (
            "does not call its attention through transformers' attention interface"
            if hasattr(model, "config")
            else "is not a transformers model (it has no .config)"
        )
        raise TypeError(
            "patch takes a transformers model whose attention goes through attn_implementation "
            f"(e.g. from AutoModelForCausalLM.from_pretrained); {type(model).__name__} {why}"
        )
    with config_params(model, params), using_attention(model, name):
        yield model


@contextmanager
def config_params(model: Any, params: dict[str, Any]) -> Iterator[Any]:
    """Set ``model.config.attnlimits_params`` (what the registered names read per call) to a
    copy of ``params`` inside the block; restore it, or its absence, on exit (also on error)."""
    config = getattr(model, "config", None)
    if config is None:
        raise TypeError(
            f"config_params takes a transformers model (with a .config); got {type(model).__name__}"
        )
    had, old_params = hasattr(config, CONFIG_ATTR), getattr(config, CONFIG_ATTR, None)
    try:
        setattr(config, CONFIG_ATTR, dict(params))
        yield model
    finally:
        if had:
            setattr(config, CONFIG_ATTR, old_params)
        else:
            delattr(config, CONFIG_ATTR)
