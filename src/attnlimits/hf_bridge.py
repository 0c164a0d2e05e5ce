"""The one bridge to Hugging Face transformers' attention internals.

Everything attnlimits needs from inside transformers goes through this module, so that a change
in transformers (a renamed registry, a new mask convention) is mended in one place:

- :func:`keep_mask`: a transformers attention mask as a boolean keep-mask, by one rule;
- :func:`repeat_kv`: grouped-query attention's key/value heads repeated to the query heads;
- :func:`register_attention` / :func:`attention_function`: the ``attn_implementation`` registry;
  :func:`register_attention_like` registers a wrapper that gets the masks of the implementation
  it wraps, :func:`eager_attention_function` a model family's own eager attention;
- :func:`set_attn_implementation` / :func:`using_attention`: switch a loaded model's attention;
  :func:`uses_attention_interface`: whether a model's attention goes through the registry.

Model loading uses transformers' public ``Auto*`` API only and lives in
:mod:`attnlimits.capture.models`. transformers is imported inside the functions that need it:
importing this module costs nothing, and ``import attnlimits`` can register the kernels when
transformers' registry loads (:mod:`attnlimits._registration`) without an import cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

import torch
from torch import Tensor

__all__ = [
    "additive_bias",
    "attention_function",
    "eager_attention_function",
    "get_attn_implementation",
    "keep_mask",
    "register_attention",
    "register_attention_like",
    "repeat_kv",
    "set_attn_implementation",
    "uses_attention_interface",
    "using_attention",
]

MaskKind = Literal["sdpa", "materialized"]


def keep_mask(attention_mask: Tensor | None) -> Tensor | None:
    """A transformers attention mask as a boolean keep-mask (True = attend), or None.

    The one rule: a boolean mask is returned as is; a float (additive) mask keeps the entries
    that are not pushed down, i.e. greater than half the dtype's most negative value (transformers
    writes ``torch.finfo(dtype).min`` or ``-inf`` for masked entries and 0 for kept ones). The
    shape is kept: ``[batch, 1 | head, query, key]``.
    """
    if attention_mask is None:
        return None
    if attention_mask.dtype == torch.bool:
        return attention_mask
    return attention_mask > torch.finfo(attention_mask.dtype).min / 2


def additive_bias(attention_mask: Tensor) -> Tensor | None:
    """The finite additive biases of a float mask on its kept entries, or None where all are 0.

    Kernels that take only a keep-mask call this to refuse masks that carry real biases (ALiBi,
    relative positions) rather than silently dropping them.
    """
    if attention_mask.dtype == torch.bool:
        return None
    kept = attention_mask[keep_mask(attention_mask)]
    return kept if bool((kept != 0).any()) else None


def repeat_kv(x: Tensor, n_rep: int) -> Tensor:
    """``[batch, kv_head, pos, d] -> [batch, kv_head * n_rep, pos, d]``: head h reads kv h // n_rep.

    A view-and-reshape, as transformers' own ``repeat_kv``; ``n_rep = 1`` returns ``x``.
    """
    if n_rep == 1:
        return x
    b, h_kv, n, d = x.shape
    return x[:, :, None].expand(b, h_kv, n_rep, n, d).reshape(b, h_kv * n_rep, n, d)


def _materialized_mask(*args: Any, **kwargs: Any) -> Tensor | None:
    """transformers' boolean mask, never skipped (a capture records the mask as applied)."""
    from transformers.masking_utils import sdpa_mask

    kwargs["allow_is_causal_skip"] = False
    kwargs["allow_is_bidirectional_skip"] = False
    return sdpa_mask(*args, **kwargs)


def register_attention(name: str, fn: Callable[..., Any], *, mask: MaskKind = "sdpa") -> str:
    """Register ``fn`` as ``attn_implementation=name`` (re-registering replaces); returns ``name``.

    ``mask="sdpa"`` gives ``fn`` the masks SDPA gets (None where a plain causal or bidirectional
    mask can be skipped); ``"materialized"`` always gives a boolean ``[b, 1, q, k]`` mask.
    """
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask
    from transformers.modeling_utils import AttentionInterface

    AttentionInterface.register(name, fn)
    mask_fn = sdpa_mask if mask == "sdpa" else _materialized_mask
    ALL_MASK_ATTENTION_FUNCTIONS.register(name, mask_fn)
    return name


def register_attention_like(name: str, fn: Callable[..., Any], like: str) -> str:
    """Register ``fn`` as ``attn_implementation=name``, given the masks ``like`` is given.

    For wrappers of ``like``: the model builds for ``name`` exactly the mask it builds for
    ``like`` (eager's additive float mask, SDPA's boolean one or None where it can be skipped,
    flash attention's padding mask), or hands the mask over unchanged where ``like`` has no mask
    function (a custom implementation). Re-registering replaces; returns ``name``.
    """
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS
    from transformers.modeling_utils import AttentionInterface

    AttentionInterface.register(name, fn)
    # transformers decides whether to build a mask from the class-wide mapping (masking_utils)
    masks = type(ALL_MASK_ATTENTION_FUNCTIONS)._global_mapping
    if like in masks:
        masks[name] = masks[like]
    else:
        masks.pop(name, None)
    return name


def eager_attention_function(module: Any) -> Callable[..., Any]:
    """The eager attention of ``module``'s model family: its modeling file's
    ``eager_attention_forward``, which models call where ``attn_implementation="eager"``
    (transformers registers no global eager function). ``TypeError`` if the family has none."""
    import sys

    fn = getattr(sys.modules.get(type(module).__module__), "eager_attention_forward", None)
    if not callable(fn):
        raise TypeError(
            f"{type(module).__name__} ({type(module).__module__}) has no eager_attention_forward: "
            "its eager attention does not go through transformers' attention interface"
        )
    return fn


def uses_attention_interface(model: Any) -> bool:
    """Whether ``model`` (a transformers ``PreTrainedModel``) calls its attention through the
    ``attn_implementation`` registry, so that :func:`set_attn_implementation` reaches it.

    transformers' own test (a look at the modeling file's source) where it has one; True for a
    model with a config on versions without it."""
    if not hasattr(model, "config"):
        return False
    check = getattr(type(model), "_can_set_attn_implementation", None)
    return bool(check()) if callable(check) else True


def attention_function(name: str) -> Callable[..., Any]:
    """The attention function registered under ``name`` (e.g. ``"sdpa"``; eager is per model)."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    try:
        return ALL_ATTENTION_FUNCTIONS[name]
    except KeyError:
        known = ", ".join(sorted(ALL_ATTENTION_FUNCTIONS.keys()))
        raise ValueError(f"no attention implementation {name!r}; registered: {known}") from None


def get_attn_implementation(model: Any) -> str:
    """The ``attn_implementation`` a loaded model runs ("eager" where none is recorded)."""
    return getattr(model.config, "_attn_implementation", None) or "eager"


def set_attn_implementation(model: Any, name: str) -> None:
    """Switch a loaded model to ``attn_implementation=name`` (older models: set the config)."""
    setter = getattr(model, "set_attn_implementation", None)
    if setter is not None:
        setter(name)
    else:
        model.config._attn_implementation = name


@contextmanager
def using_attention(model: Any, name: str) -> Iterator[Any]:
    """Run ``model`` with ``attn_implementation=name`` inside the block; restore it on exit."""
    previous = get_attn_implementation(model)
    set_attn_implementation(model, name)
    try:
        yield model
    finally:
        set_attn_implementation(model, previous)
