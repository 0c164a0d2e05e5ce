"""Passive OpenMP waiting for the ``attnlimits`` command, so a loaded machine costs its share.

PyTorch's CPU kernels run on OpenMP threads that, by default, spin for a while at the end of
every parallel region before they sleep. On a machine other work also loads, a spinning thread
holds a core its partner needs, and each small operation waits for a descheduled thread: paper
B's training (many small operations a step) ran 16–20× slower per step with 2 threads on a
2-core machine that a neighbour loaded, and as fast as with 1 thread once the threads slept
instead of spinning (``OMP_WAIT_POLICY=PASSIVE``; docs/benchmarks.md, "A loaded machine").

The OpenMP runtime reads ``OMP_WAIT_POLICY`` once, when it loads, i.e. when ``torch`` is first
imported. So this module (standard library only) runs first in ``attnlimits/__init__.py`` and
sets ``OMP_WAIT_POLICY=PASSIVE`` when the process is the ``attnlimits`` command
(``attnlimits ...`` or ``python -m attnlimits.cli ...``), torch is not imported yet and the
user has not set the variable: a value the user gives always wins (``OMP_WAIT_POLICY=ACTIVE
attnlimits ...`` keeps the spinning). A library user's process is left alone; to get the same
robustness there, set ``OMP_WAIT_POLICY=PASSIVE`` in the environment before Python starts (or
before the first ``import torch``), or call ``torch.set_num_threads(1)`` on a shared machine.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["is_cli", "passive_waiting_for_the_cli", "state"]

_STATE: list[str] = []


def is_cli(argv0: str, orig_argv: list[str]) -> bool:
    """Whether the process is the ``attnlimits`` command: its console script, or
    ``python -m attnlimits.cli`` (``orig_argv``: the interpreter's own arguments)."""
    name = Path(argv0).name.removesuffix(".exe").removesuffix("-script.py")
    if name == "attnlimits":
        return True
    args = iter(orig_argv[1:])
    for arg in args:  # the interpreter's options, up to the script or -m
        if arg == "-m":
            return next(args, None) == "attnlimits.cli"
        if arg in ("-X", "-W"):
            next(args, None)  # the option's value
        elif not arg.startswith("-"):
            return False  # a script, whatever its arguments
    return False


def passive_waiting_for_the_cli() -> str:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` for the command (see the module docstring); return
    what was done, in words (also :func:`state`)."""
    if not _STATE:
        _STATE.append(_decide())
    return _STATE[0]


def state() -> str:
    """What :func:`passive_waiting_for_the_cli` did in this process, in words."""
    return _STATE[0] if _STATE else "not decided"


def _decide() -> str:
    if "OMP_WAIT_POLICY" in os.environ:
        return f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']} (the user's)"
    if not is_cli(sys.argv[0] if sys.argv else "", list(getattr(sys, "orig_argv", sys.argv))):
        return "OpenMP's default (not the attnlimits command)"
    if "torch" in sys.modules:
        return "OpenMP's default (torch was imported first)"
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return "OMP_WAIT_POLICY=PASSIVE (set by the attnlimits command)"
