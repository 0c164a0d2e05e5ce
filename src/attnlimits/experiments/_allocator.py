"""glibc's allocator, tuned for runs made of many large temporaries.

A tensor above glibc's mmap threshold (at most 32 MB, the dynamic maximum) is mapped on
allocation and unmapped on free, so the next one of its size faults in every page again. An
evaluation chunk of paper B (10 seeds × 8,192 items × 128 floats, 42 MB) is such a tensor, and
on this project's machines the faults cost more than the arithmetic: 20 s of system time in a
26 s evaluation (docs/benchmarks.md). :func:`tune` raises the mmap threshold and the trim
threshold to 1 GiB through ``mallopt``, as the ``MALLOC_MMAP_THRESHOLD_`` and
``MALLOC_TRIM_THRESHOLD_`` environment variables would at start-up: freed blocks stay in the
heap and are reused. The numbers do not change; memory freed during a run is kept for it.
``ATTNLIMITS_MALLOC=default`` leaves the allocator alone; other C libraries are left alone.

What the heap keeps between the stages of a run, a run gives back with :func:`trim` (glibc's
``malloc_trim``): ``compare`` calls it after each forward of 8,192 tokens, so that one
forward's freed blocks (6 to 400 MB) are not held through the next (the effect on its peak,
measured once, is within the runs' spread: docs/compare.md#speed).
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["state", "trim", "tune"]

#: mallopt's parameter numbers (glibc's malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_THRESHOLD = 1 << 30
_TUNED = "mmap and trim thresholds"  # how state() begins once tune() raised them
_STATE: dict[str, object] = {}


def tune() -> dict[str, object]:
    """Raise glibc's mmap and trim thresholds once per process; return what was done."""
    if _STATE:
        return _STATE
    if os.environ.get("ATTNLIMITS_MALLOC") == "default":
        _STATE["malloc"] = "default (ATTNLIMITS_MALLOC=default)"
    elif not sys.platform.startswith("linux"):
        _STATE["malloc"] = "default (not Linux)"
    else:
        try:
            mallopt = ctypes.CDLL(None).mallopt
            mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
            done = mallopt(_M_MMAP_THRESHOLD, _THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, _THRESHOLD)
        except (OSError, AttributeError):  # pragma: no cover - a libc without mallopt
            done = 0
        _STATE["malloc"] = f"{_TUNED} {_THRESHOLD} bytes" if done else "default (mallopt refused)"
    return _STATE


def state() -> str:
    """What :func:`tune` did in this process (``"not tuned"`` before it ran)."""
    return str(_STATE.get("malloc", "not tuned"))


def trim() -> bool:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim(0)``) when
    :func:`tune` raised the thresholds; True if it ran. Between stages, not inside one: pages
    given back are faulted in again on their next use."""
    if not state().startswith(_TUNED):
        return False
    try:
        malloc_trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # pragma: no cover - tuned, so glibc: it has malloc_trim
        return False
    malloc_trim.argtypes, malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    malloc_trim(0)
    return True
