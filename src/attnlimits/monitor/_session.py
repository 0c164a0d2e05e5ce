"""The wrapper side of the monitor: one registered attention implementation per wrapped one.

:meth:`Session.install` swaps a model's ``attn_implementation`` (eager, sdpa, flash, a custom
one) for ``attnlimits_monitor_<name>``, registered with the masks ``<name>`` gets
(:func:`attnlimits.hf_bridge.register_attention_like`). The wrapper calls the original function
unchanged; only while its session is ``armed`` does it also compute
:func:`attnlimits.kernels.attention_row_stats` from the detached q and k under ``no_grad`` and
fold the rows at once into per-head sums (:class:`HeadSums`): nothing of size query × key is
kept, and no map is materialised beyond one block of scores.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from attnlimits.hf_bridge import (
    additive_bias,
    attention_function,
    eager_attention_function,
    get_attn_implementation,
    keep_mask,
    register_attention_like,
    set_attn_implementation,
    uses_attention_interface,
)

__all__ = ["MONITOR_PREFIX", "STATS", "HeadSums", "Session"]

MONITOR_PREFIX = "attnlimits_monitor_"  # + the wrapped implementation's name
#: Per-row statistics, averaged over each head's rows (logged per layer: ``attn/<stat>/layer_i``).
STATS = ("entropy", "max_weight", "sink_mass", "logit_spread")


class HeadSums:
    """One layer's per-head sums over the rows of a recorded step (on the model's device)."""

    def __init__(self, n_heads: int, device: torch.device) -> None:
        self.sums = torch.zeros(len(STATS), n_heads, dtype=torch.float64, device=device)
        self.rows = torch.zeros(n_heads, dtype=torch.int64, device=device)
        self.entropy_max = torch.full((n_heads,), -math.inf, dtype=torch.float64, device=device)
        self.ratio_min = torch.full((n_heads,), math.inf, dtype=torch.float64, device=device)
        self.length = 0

    def add(self, rs: Any, length: int) -> None:
        """Fold in one call's :class:`~attnlimits.kernels.RowStats` (``[B, H, Lq]`` each).

        Rows with no kept key are left out; the largest entropy and the smallest
        ``H / log n_keys`` are taken over the rows with at least two kept keys.
        """
        kept, multi = rs.n_keys > 0, rs.n_keys >= 2
        values = torch.stack([rs.entropy, rs.max_weight, rs.sink_mass, rs.logit_spread])
        self.sums += torch.where(kept, values, 0.0).sum((1, 3)).double()
        self.rows += kept.sum((0, 2))
        ent = torch.where(multi, rs.entropy, -math.inf).amax((0, 2)).double()
        ratio = rs.entropy / torch.log(rs.n_keys.clamp_min(2).to(rs.entropy.dtype))
        low = torch.where(multi, ratio, math.inf).amin((0, 2)).double()
        self.entropy_max = torch.maximum(self.entropy_max, ent)
        self.ratio_min = torch.minimum(self.ratio_min, low)
        self.length = max(self.length, length)


# id(attention module) -> (session, layer index), for every watched model's attention modules
_WATCHED: dict[int, tuple[Session, int]] = {}
_ORIGINALS: dict[tuple[str, type], Callable[..., Any]] = {}
_WRAPPERS: dict[str, Callable[..., Any]] = {}


def _original(name: str, module: nn.Module) -> Callable[..., Any]:
    """The implementation ``name`` as ``module``'s model calls it (eager is per family)."""
    key = (name, type(module))
    fn = _ORIGINALS.get(key)
    if fn is None:
        fn = eager_attention_function(module) if name == "eager" else attention_function(name)
        _ORIGINALS[key] = fn
    return fn


def _wrapper(original: str) -> Callable[..., Any]:
    """The implementation registered as ``MONITOR_PREFIX + original``: ``original``, as is."""
    if original in _WRAPPERS:
        return _WRAPPERS[original]

    def monitored_attention(
        module: nn.Module,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        attention_mask: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        fn = _original(original, module)
        out = fn(module, query, key, value, attention_mask, *args, **kwargs)
        watched = _WATCHED.get(id(module))
        if watched is not None and watched[0].armed:
            session, layer = watched
            session.record(layer, module, query, key, attention_mask, original, args, kwargs)
        return out

    monitored_attention.__qualname__ = monitored_attention.__name__ = MONITOR_PREFIX + original
    _WRAPPERS[original] = monitored_attention
    return monitored_attention


def _row_stats() -> Callable[..., Any]:
    """:func:`attnlimits.kernels.attention_row_stats`, imported late (kernels load transformers)."""
    from attnlimits.kernels import row_stats

    return row_stats.attention_row_stats


def _attention_modules(model: Any) -> list[nn.Module]:
    """The model's per-layer self-attention modules; ``TypeError`` for a model that cannot be
    watched (not a transformers model, or attention outside the attention interface)."""
    from attnlimits.capture.models import attention_modules

    name = type(model).__name__
    if not isinstance(model, nn.Module) or not hasattr(model, "config"):
        raise TypeError(f"model must be a transformers PreTrainedModel, got {name}")
    if not uses_attention_interface(model):
        raise TypeError(
            f"{name}'s attention does not go through transformers' attention interface "
            "(attn_implementation), so AttentionMonitor cannot watch it"
        )
    try:
        return [mod for _, _, mod in attention_modules(model)]
    except (AttributeError, TypeError, ValueError) as err:
        raise TypeError(f"no per-layer self-attention modules found in {name}: {err}") from None


def _unsupported(attention_mask: Any, key: Tensor, kwargs: dict[str, Any]) -> str | None:
    """Why a call's statistics would not be those of the weights it computes, or None."""
    if attention_mask is not None and not isinstance(attention_mask, Tensor):
        return f"its mask is a {type(attention_mask).__name__}, not a tensor"
    if any(kwargs.get(k) is not None for k in ("softcap", "s_aux", "sinks")):
        return "logit soft-capping and attention sinks are not modelled"
    if attention_mask is not None and attention_mask.ndim == 4:
        if additive_bias(attention_mask) is not None:
            return "its mask carries additive biases (ALiBi or relative positions)"
    elif (window := kwargs.get("sliding_window")) and key.shape[2] > window:
        return "its sliding window is not in the mask"
    return None


class Session:
    """One watched model: its previous implementation, modules, and a recorded step's sums.

    ``armed`` says whether the current step is recorded; ``sums`` maps layer to
    :class:`HeadSums`; ``skipped`` maps layer to why a call was not recorded.
    """

    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        self.armed = False
        self.model: Any = None
        self.previous = ""
        self.modules: list[nn.Module] = []
        self.sums: dict[int, HeadSums] = {}
        self.skipped: dict[int, str] = {}
        self.tokens: Any = None  # the token view's sample (monitor/_tokens.py), if kept

    def install(self, model: Any) -> None:
        """Swap ``model``'s attention implementation for its recording wrapper."""
        modules = _attention_modules(model)
        current = get_attn_implementation(model)
        if current.startswith(MONITOR_PREFIX) or any(id(m) in _WATCHED for m in modules):
            raise ValueError(f"{type(model).__name__} is already watched by an AttentionMonitor")
        name = register_attention_like(MONITOR_PREFIX + current, _wrapper(current), like=current)
        for layer, mod in enumerate(modules):
            _WATCHED[id(mod)] = (self, layer)
        set_attn_implementation(model, name)
        self.model, self.previous, self.modules = model, current, modules

    def uninstall(self) -> None:
        """Restore the model's attention implementation and forget it."""
        if self.model is not None:
            set_attn_implementation(self.model, self.previous)
            for mod in self.modules:
                _WATCHED.pop(id(mod), None)
        self.model, self.modules, self.armed = None, [], False
        self.take()

    def take(self) -> tuple[dict[int, HeadSums], dict[int, str]]:
        """The sums and skip reasons gathered since the last call, and a clean slate."""
        out = (self.sums, self.skipped)
        self.sums, self.skipped = {}, {}
        return out

    def record(
        self,
        layer: int,
        module: nn.Module,
        query: Tensor,
        key: Tensor,
        attention_mask: Any,
        original: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        """One attention call of a recorded step: its per-row statistics, folded into sums.

        The mask is the one ``original`` received: a ``[batch, 1|head, query, key]`` mask
        (boolean, or eager's additive float) holds causality; None (SDPA's skipped causal or
        bidirectional mask) or flash attention's ``[batch, key]`` padding mask leave it to the
        module's ``is_causal`` (or the call's ``is_causal``), except under eager, where no mask
        means no masking.
        """
        why = _unsupported(attention_mask, key, kwargs)
        if why is not None:
            self.skipped[layer] = why
            return
        keep = keep_mask(attention_mask)
        if keep is None or keep.ndim == 2:
            flag = kwargs.get("is_causal")
            flag = getattr(module, "is_causal", True) if flag is None else flag
            causal = original != "eager" and bool(flag)
            keep = None if keep is None else keep[:, None, None, :]
        else:
            causal = False
        scaling = kwargs.get("scaling", args[0] if args else None)
        with torch.no_grad():
            if self.tokens is not None:
                self.tokens.record(layer, query.detach(), key.detach(), keep, causal, scaling)
            try:
                rs = _row_stats()(
                    query.detach(),
                    key.detach(),
                    mask=keep,
                    causal=causal,
                    scale=scaling,
                    block_size=self.block_size,
                )
            except ValueError as err:  # e.g. NaN queries: the monitor never stops training
                self.skipped[layer] = str(err)
                return
            sums = self.sums.get(layer)
            if sums is None:
                sums = self.sums[layer] = HeadSums(query.shape[1], query.device)
            sums.add(rs, key.shape[2])
