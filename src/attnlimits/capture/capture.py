"""Per-layer, per-head attention capture through transformers' attention interface.

transformers (>= 5) routes GPT-2, Llama and BERT attention through
``ALL_ATTENTION_FUNCTIONS[config._attn_implementation](module, q, k, v, mask, scaling=..., ...)``,
with q and k already rotated where the model uses rotary embeddings. We register one function
there, ``"attnlimits_capture"``, that computes exactly the eager attention (same ops in the same
order, so logits are bit-identical to ``attn_implementation="eager"``) and hands the layer's
tensors to a callback, with a boolean keep-mask always materialised; ``"attnlimits_capture_qkv"``
(:func:`capture_qkv`) runs SDPA instead and hands over q, k, v only. A capture lives only until
``on_layer`` returns. The layer inputs (hidden states) come from forward pre-hooks on the blocks.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from torch import Tensor, nn

from attnlimits.capture._eager import eager_maps, scaling_of
from attnlimits.capture.models import LoadedModel, attention_modules
from attnlimits.capture.precision import upcast
from attnlimits.hf_bridge import (
    get_attn_implementation,
    keep_mask,
    register_attention,
    repeat_kv,
    set_attn_implementation,
)

__all__ = [
    "CAPTURE_IMPL",
    "STREAM_IMPL",
    "TENSOR_KEYS",
    "LayerCapture",
    "LayerQKV",
    "capture",
    "capture_all",
    "capture_keys",
    "capture_qkv",
    "capturing",
]

CAPTURE_IMPL = "attnlimits_capture"
#: The implementation of :func:`capture_qkv`: SDPA output, q/k/v handed over.
STREAM_IMPL = "attnlimits_capture_qkv"
# Tensor fields of LayerCapture, in order: a contract (pinned by tests/test_capture.py).
TENSOR_KEYS = ("hidden_in", "q", "k", "v", "scores", "mask", "weights")
# The block input is named after the block; every other tensor after the attention module.
_BLOCK_KEYS = ("hidden_in",)

T = TypeVar("T")


@dataclass
class LayerQKV:
    """One layer's attention inputs, detached, in the library's axis order, without the maps:
    what :func:`capture_qkv` hands over (stream statistics with ``kernels.attention_row_stats``).

    Attributes
    ----------
    layer : layer index (0-based)
    block, attention : module paths of the block and of its attention module
    hidden_in : ``[batch, pos, d_model]`` the block's input hidden states (before any layer norm)
    q : ``[batch, head, pos, d]`` queries, after rotary embedding where the model uses it
    k, v : ``[batch, kv_head, pos, d]`` keys (after rotary) and values, per key/value head
    mask : boolean keep-mask the model applied (True = attend), ``[batch, 1, query, key]``, or
        None where the model skipped a plain causal or bidirectional mask (``causal`` says which)
    kv_head_of : ``[head]`` long, the kv head each query head reads (GQA)
    scaling : the factor applied to ``q·kᵀ`` (``1/√d`` for all three families)
    causal : whether the module is causal
    """

    layer: int
    block: str
    attention: str
    hidden_in: Tensor
    q: Tensor
    k: Tensor
    v: Tensor
    mask: Tensor | None
    kv_head_of: Tensor
    scaling: float
    causal: bool


@dataclass
class LayerCapture:
    """One layer's attention, detached, in the library's axis order: the fields of
    :class:`LayerQKV` (``mask`` always materialised) and the maps.

    Attributes
    ----------
    scores : ``[batch, head, query, key]`` the model's own scaled ``q·kᵀ·scaling``, no mask added
    mask : ``[batch, 1, query, key]`` boolean keep-mask the model applied (True = attend);
        broadcasts over heads
    weights : ``[batch, head, query, key]`` the attention weights the model used (before dropout)
    """

    layer: int
    block: str
    attention: str
    hidden_in: Tensor
    q: Tensor
    k: Tensor
    v: Tensor
    scores: Tensor
    mask: Tensor
    weights: Tensor
    kv_head_of: Tensor
    scaling: float
    causal: bool

    def named(self) -> dict[str, Tensor]:
        """The tensors under module-tree names, e.g. ``model.layers.0.self_attn.scores``."""
        return {
            f"{self.block if key in _BLOCK_KEYS else self.attention}.{key}": getattr(self, key)
            for key in TENSOR_KEYS
        }


def _names(block: str, attention: str) -> list[str]:
    return [f"{block if key in _BLOCK_KEYS else attention}.{key}" for key in TENSOR_KEYS]


def capture_keys(model: nn.Module | LoadedModel, layers: Iterable[int] | None = None) -> list[str]:
    """Module-tree names of every captured tensor, in layer then :data:`TENSOR_KEYS` order."""
    net = model.model if isinstance(model, LoadedModel) else model
    mods = attention_modules(net)
    chosen = range(len(mods)) if layers is None else sorted(set(layers))
    return [n for i in chosen for n in _names(mods[i][0], mods[i][1])]


class _StopForward(Exception):
    """Raised after the last requested layer: later layers are not needed."""


class _Session:
    """Routes attention calls of one model's modules to one callback."""

    def __init__(self, layers: set[int], on_layer: Callable[[Any], Any], stop: bool):
        self.layers, self.on_layer, self.stop = layers, on_layer, stop
        self.last = max(layers) if layers else -1
        self.hidden: dict[int, Tensor] = {}
        self.results: dict[int, Any] = {}
        self.where: dict[int, tuple[int, str, str]] = {}  # id(attention module) -> layer, paths


# id(attention module) -> the session watching it; a module belongs to at most one session.
_SESSIONS: dict[int, _Session] = {}


def _watched(module: nn.Module) -> bool:
    """Whether a session wants this attention module's layer."""
    session = _SESSIONS.get(id(module))
    return session is not None and session.where[id(module)][0] in session.layers


def _hand_over(module: nn.Module, query: Tensor, key: Tensor, value: Tensor, **extra: Any) -> None:
    """Give the watching session (if any) this layer's tensors, as ``LayerCapture`` when the
    maps are in ``extra`` (scores, weights), else ``LayerQKV``; stop after the last layer."""
    if not _watched(module):
        return
    session = _SESSIONS[id(module)]
    layer, block, attn = session.where[id(module)]
    n_rep = query.shape[1] // key.shape[1]
    fields: dict[str, Any] = {
        "layer": layer,
        "block": block,
        "attention": attn,
        "hidden_in": upcast(session.hidden.pop(layer)),
        "q": upcast(query.detach()),
        "k": upcast(key.detach()),
        "v": upcast(value.detach()),
        "kv_head_of": torch.arange(query.shape[1], device=query.device) // n_rep,
        "causal": bool(getattr(module, "is_causal", False)),
    } | {k: v.detach() if isinstance(v, Tensor) else v for k, v in extra.items()}
    cap = LayerCapture(**fields) if "weights" in extra else LayerQKV(**fields)
    session.results[layer] = session.on_layer(cap)
    del cap, fields
    if session.stop and layer == session.last:
        raise _StopForward


def _capture_attention(
    module: nn.Module,
    query: Tensor,  # [b, head, q, d]
    key: Tensor,  # [b, kv_head, k, d]
    value: Tensor,  # [b, kv_head, k, d]
    attention_mask: Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[Tensor, Tensor]:
    """Eager attention (as in transformers' ``eager_attention_forward``) that reports each layer.

    A model in half precision runs its own forward in it (the output is eager's, bit for bit)
    and hands over maps computed again in float32 from its own q and k, upcast."""
    scaling = scaling_of(query, scaling, kwargs)
    n_rep = query.shape[1] // key.shape[1]
    scores, keep, weights = eager_maps(query, key, attention_mask, scaling)
    dropped = nn.functional.dropout(weights, p=dropout, training=module.training)
    out = torch.matmul(dropped, repeat_kv(value, n_rep)).transpose(1, 2).contiguous()  # [b,q,h,d]
    if _watched(module):
        seen, seen_weights = scores, weights
        if query.dtype != upcast(query).dtype:  # half precision: the maps again, in float32
            seen, _, seen_weights = eager_maps(upcast(query), upcast(key), attention_mask, scaling)
        _hand_over(
            module, query, key, value, scores=seen, mask=keep, weights=seen_weights, scaling=scaling
        )
    return out, weights


register_attention(CAPTURE_IMPL, _capture_attention, mask="materialized")


def _stream_attention(
    module: nn.Module,
    query: Tensor,  # [b, head, q, d]
    key: Tensor,  # [b, kv_head, k, d]
    value: Tensor,  # [b, kv_head, k, d]
    attention_mask: Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[Tensor, None]:
    """SDPA attention (no ``[query, key]`` map kept) that hands each layer's q, k, v over."""
    scaling = scaling_of(query, scaling, kwargs)
    n_rep = query.shape[1] // key.shape[1]
    out = nn.functional.scaled_dot_product_attention(
        query,
        repeat_kv(key, n_rep),
        repeat_kv(value, n_rep),
        attn_mask=attention_mask,
        dropout_p=dropout if module.training else 0.0,
        scale=scaling,
        is_causal=bool(getattr(module, "is_causal", False))
        and attention_mask is None
        and query.shape[2] > 1,
    ).transpose(1, 2)
    _hand_over(module, query, key, value, mask=keep_mask(attention_mask), scaling=scaling)
    return out.contiguous(), None


register_attention(STREAM_IMPL, _stream_attention, mask="sdpa")


def _layer_set(layers: Iterable[int] | None, n_layers: int) -> set[int]:
    if layers is None:
        return set(range(n_layers))
    chosen = {int(i) for i in layers}
    bad = sorted(i for i in chosen if not 0 <= i < n_layers)
    if bad:
        raise ValueError(f"layers {bad} out of range for a model with {n_layers} layers")
    return chosen


@contextlib.contextmanager
def capturing(
    model: nn.Module | LoadedModel,
    on_layer: Callable[[Any], Any],
    *,
    layers: Iterable[int] | None = None,
    materialize: bool = True,
    _stop_after_last: bool = False,
) -> Iterator[dict[int, Any]]:
    """Within the block, every forward of ``model`` calls ``on_layer`` once per chosen layer.

    Yields the dict ``{layer: on_layer's return value}``, filled as the forward runs. The model's
    attention implementation is switched to ``"attnlimits_capture"`` (numerically eager) and
    restored on exit. ``layers=None`` means all layers. With ``materialize=False`` the
    implementation is ``"attnlimits_capture_qkv"`` instead: the output comes from PyTorch's
    ``scaled_dot_product_attention`` (no ``[query, key]`` map is built) and ``on_layer`` gets a
    :class:`LayerQKV`.
    """
    net: Any = model.model if isinstance(model, LoadedModel) else model
    mods = attention_modules(net)
    session = _Session(_layer_set(layers, len(mods)), on_layer, _stop_after_last)
    hooks = []
    for i, (block_name, attn_name, attn) in enumerate(mods):
        if id(attn) in _SESSIONS:
            raise RuntimeError(f"{attn_name} is already being captured")
        session.where[id(attn)] = (i, block_name, attn_name)
    blocks = dict(net.named_modules())

    def pre_hook(i: int) -> Callable[..., None]:
        def hook(_mod: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            hidden = args[0] if args else kwargs["hidden_states"]
            session.hidden[i] = hidden.detach()  # [b, pos, d_model]

        return hook

    previous = get_attn_implementation(net)
    try:
        for i in sorted(session.layers):
            block = blocks[mods[i][0]]
            hooks.append(block.register_forward_pre_hook(pre_hook(i), with_kwargs=True))
        for key in session.where:
            _SESSIONS[key] = session
        set_attn_implementation(net, CAPTURE_IMPL if materialize else STREAM_IMPL)
        yield session.results
    finally:
        set_attn_implementation(net, previous)
        for key in session.where:
            _SESSIONS.pop(key, None)
        for h in hooks:
            h.remove()
        session.hidden.clear()


def _forward(
    model: nn.Module | LoadedModel,
    input_ids: Tensor,
    on_layer: Callable[[Any], Any],
    layers: Iterable[int] | None,
    attention_mask: Tensor | None,
    materialize: bool,
) -> dict[int, Any]:
    net: Any = model.model if isinstance(model, LoadedModel) else model
    if input_ids.ndim != 2:
        raise ValueError(f"input_ids must be [batch, pos], got shape {tuple(input_ids.shape)}")
    device = next(net.parameters()).device
    params = inspect.signature(net.forward).parameters
    takes_cache = "use_cache" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
    kwargs: dict[str, Any] = {"use_cache": False} if takes_cache else {}
    if attention_mask is not None:
        kwargs["attention_mask"] = attention_mask.to(device)
    with (
        capturing(
            net, on_layer, layers=layers, materialize=materialize, _stop_after_last=True
        ) as results,
        torch.no_grad(),
        contextlib.suppress(_StopForward),
    ):
        net(input_ids.to(device), **kwargs)
    return results


def capture(
    model: nn.Module | LoadedModel,
    input_ids: Tensor,
    *,
    on_layer: Callable[[LayerCapture], T],
    layers: Iterable[int] | None = None,
    attention_mask: Tensor | None = None,
) -> dict[int, T]:
    """Run ``model`` on ``input_ids`` ``[batch, pos]`` and call ``on_layer`` as each layer finishes.

    Memory stays bounded by one layer's maps plus what ``on_layer`` returns: the
    :class:`LayerCapture` is dropped as soon as the callback returns. Runs under ``no_grad``;
    the forward stops after the last requested layer. ``attention_mask`` is the usual 2D padding
    mask ``[batch, pos]`` (1 = token, 0 = padding).

    Returns ``{layer: on_layer(capture)}`` for the chosen layers (``None`` = all).
    """
    return _forward(model, input_ids, on_layer, layers, attention_mask, materialize=True)


def capture_qkv(
    model: nn.Module | LoadedModel,
    input_ids: Tensor,
    *,
    on_layer: Callable[[LayerQKV], T],
    layers: Iterable[int] | None = None,
    attention_mask: Tensor | None = None,
) -> dict[int, T]:
    """As :func:`capture`, but no ``[query, key]`` map is ever built: the model runs PyTorch's
    ``scaled_dot_product_attention`` and ``on_layer`` gets each layer's :class:`LayerQKV`
    (memory O(L·d) per layer, for contexts whose maps would not fit).
    """
    return _forward(model, input_ids, on_layer, layers, attention_mask, materialize=False)


def capture_all(
    model: nn.Module | LoadedModel,
    input_ids: Tensor,
    *,
    layers: Iterable[int] | None = None,
    attention_mask: Tensor | None = None,
) -> dict[int, LayerCapture]:
    """Every chosen layer's :class:`LayerCapture`, kept: for small inputs only (memory grows with
    layers x L²). Use :func:`capture` with a reducing callback for long contexts."""
    return capture(
        model, input_ids, on_layer=lambda c: c, layers=layers, attention_mask=attention_mask
    )
