"""Loaded models kept for reuse within one process, for runners of many runs (a sweep's cells).

Private to :mod:`attnlimits.capture`: :func:`~attnlimits.capture.models.load_model` asks
:func:`get` before loading and hands what it loaded to :func:`put`. Nothing is kept unless a
runner asks for it, with :func:`keep_models` (for the length of a ``with`` block: the serial
sweep) or :func:`keep_models_in_this_process` (for good: a Ray worker, a process that only runs
cells). Every experiment leaves a model as it found it (attention implementation, config
parameters and hooks are restored by context managers), which is what makes reuse safe; the
sweep tests check that reused models give the tables fresh ones give.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["get", "keep_models", "keep_models_in_this_process", "models_loaded", "put"]

_kept: dict[tuple[str, ...], Any] | None = None
_loads = 0  # models loaded from disk by this process (what reuse saves is visible in a test)


def get(key: tuple[str, ...]) -> Any:
    """The kept model for (name, device, dtype, allowance), or None."""
    return None if _kept is None else _kept.get(key)


def put(key: tuple[str, ...], loaded: Any) -> None:
    """Count one load from disk; keep ``loaded`` if keeping is on."""
    global _loads
    _loads += 1
    if _kept is not None:
        _kept[key] = loaded


def models_loaded() -> int:
    """How many models this process has loaded from disk so far."""
    return _loads


@contextmanager
def keep_models() -> Iterator[None]:
    """Inside the block, each (model, device, dtype) is loaded once; dropped when it ends
    (unless keeping was already on, e.g. in a Ray worker)."""
    global _kept
    outer = _kept
    if outer is None:
        _kept = {}
    try:
        yield
    finally:
        if outer is None:
            _kept = None


def keep_models_in_this_process() -> None:
    """From now on, keep every loaded model for the life of this process."""
    global _kept
    if _kept is None:
        _kept = {}
