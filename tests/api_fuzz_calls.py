"""The API fuzz's calls (tests/test_api_fuzz.py, tests/test_grad_fuzz.py): the public functions
of ``normalizers``, ``metrics`` and ``theory``, found automatically; a call under a time limit;
the numeric leaves of a result."""

from __future__ import annotations

import inspect
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from attnlimits import metrics, normalizers, theory

MODULES = {"normalizers": normalizers, "metrics": metrics, "theory": theory}
#: Seconds one call may take (the first call of a function gets FIRST: numba compiles once).
LIMIT = 5.0
FIRST = 120.0


def public_functions() -> dict[str, Callable[..., Any]]:
    """``module.name`` -> function for every public callable that is not a class, and every
    registered normaliser (under its function's name)."""
    out: dict[str, Callable[..., Any]] = {}
    for mod_name, mod in MODULES.items():
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj) and not isinstance(obj, type):
                out[f"{mod_name}.{name}"] = obj
    for fn in normalizers.REGISTRY.values():
        out.setdefault(f"normalizers.{fn.__name__}", fn)
    return out


class Hang(BaseException):
    """A call ran past its time limit."""


def _numba_compiling() -> bool:
    """Whether this thread holds numba's compiler lock (it is compiling a fused kernel)."""
    try:
        from numba.core.compiler_lock import global_compiler_lock
    except ImportError:  # pragma: no cover
        return False
    return bool(global_compiler_lock.is_locked())


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():  # pragma: no cover
        yield  # SIGALRM reaches the main thread only
        return

    def on_alarm(signum: int, frame: Any) -> None:
        if _numba_compiling():  # an exception inside numba's compiler breaks every later
            signal.setitimer(signal.ITIMER_REAL, 1.0)  # compile in this process: wait, look
            return  # again in 1 s (a cold machine compiles the fused kernels for minutes)
        raise Hang(f"call ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def leaves(out: Any) -> Iterator[tuple[str, Any, Any]]:
    """(path, value, valid-or-None) for every numeric leaf of a result."""
    valid = getattr(out, "valid", None) if isinstance(out, tuple) else None
    if isinstance(out, dict):
        for k, v in out.items():
            for p, leaf, ok in leaves(v):
                yield f"[{k}]{p}", leaf, ok
    elif isinstance(out, tuple):
        for i, v in enumerate(out):
            for p, leaf, ok in leaves(v):
                yield f"[{i}]{p}", leaf, ok if ok is not None else valid
    elif isinstance(out, (torch.Tensor, np.ndarray, float, int, np.floating, np.integer)):
        yield "", out, None


def call(qualname: str, fn: Callable[..., Any], args: dict[str, Any], limit: float) -> Any:
    params = inspect.signature(fn).parameters
    pos = [v for k, v in args.items() if params[k].kind is not inspect.Parameter.KEYWORD_ONLY]
    kw = {k: v for k, v in args.items() if params[k].kind is inspect.Parameter.KEYWORD_ONLY}
    with time_limit(limit):
        return fn(*pos, **kw)


FUNCTIONS = public_functions()
