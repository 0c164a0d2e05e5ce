"""What a run will cost, said before it starts: memory and time from its settings alone.

Every experiment has an ``estimate(config) -> Estimate`` (its subpackage's ``cost.py``): the
peak memory and the wall time its settings imply, from the model's known shape (no model is
loaded), the text's and grids' sizes and coefficients measured on the experiment's own code
(each ``cost.py`` says how). :func:`check` runs first in
:func:`~attnlimits.experiments.skeleton.run`, before any folder, text or model is touched:

- a run whose memory cannot fit is refused with one ``ValueError``: "… would need about X of
  memory, most of it for …; this machine has Y available";
- a run estimated at more than :data:`CONFIRM_SECONDS` (1 h) starts only when confirmed: the
  CLI's ``--yes``, or a y/N answer where stdin is a terminal (scripts and CI have none, so
  they are never left waiting for an answer); otherwise it is refused with the estimate;
- a run estimated at more than :data:`NOTICE_SECONDS` (5 min) gets one line on stderr with
  the estimate.

The estimates aim at a factor of two on the reference machine of the README's times (a
2-vCPU AMD EPYC, Zen 4); they are there to catch a thousandfold mistake in a setting and to
say when a run is long, not to schedule work (docs/resources.md).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from attnlimits.corpus.text import check_text_size

__all__ = [
    "BASE_BYTES",
    "BOOK_BYTES",
    "CONFIRM_SECONDS",
    "CUDA_SPEEDUP",
    "MEASURED_TO_REFERENCE",
    "NOTICE_SECONDS",
    "BudgetError",
    "Estimate",
    "available_memory",
    "check",
    "combined",
    "describe",
    "estimate",
    "format_bytes",
    "format_seconds",
    "text_bytes",
]

#: A run estimated longer than this (seconds) needs ``--yes`` (or a y/N at a terminal).
CONFIRM_SECONDS = 3600.0
#: A run estimated longer than this (seconds) gets its estimate printed on stderr.
NOTICE_SECONDS = 300.0
#: The coefficients of each ``cost.py`` are one-thread CPU seconds measured on a 2-vCPU AVX2
#: EPYC; the README's times were taken with two threads on an idle 2-vCPU Zen 4, about half
#: as long (tests/test_budget.py checks each default run's estimate against the README).
MEASURED_TO_REFERENCE = 0.5
#: The interpreter with torch, transformers, pandas, matplotlib and numba imported (bytes;
#: ``/usr/bin/time`` of the quick runs less their models and working sets).
BASE_BYTES = 0.75e9
#: War and Peace as shipped (bytes), for a run on the default book.
BOOK_BYTES = 3.36e6
#: What a CPU run's time is divided by on a CUDA device (not measured: a rough guess, so the
#: long-run question is asked about as often there as it should be).
CUDA_SPEEDUP = 10.0


class BudgetError(ValueError):
    """A run refused before it started: its memory cannot fit, or a long run not confirmed."""


@dataclass(frozen=True)
class Estimate:
    """What a run will cost: its wall time, and its peak memory by what holds it.

    ``memory`` maps what holds host memory (e.g. "the weights of smollm2-135m") to bytes;
    ``device_memory`` the same on a CUDA ``device`` (empty on the CPU). Build one with
    :func:`estimate`, which places each term.
    """

    what: str  # the run in words, e.g. "limitations on smollm2-135m (4 windows × 30 layers)"
    seconds: float  # wall time on ``device``
    memory: Mapping[str, float]
    device_memory: Mapping[str, float] = field(default_factory=dict)
    device: str = "cpu"

    @property
    def peak_bytes(self) -> float:
        """Peak host memory."""
        return float(sum(self.memory.values()))

    @property
    def device_bytes(self) -> float:
        """Peak memory on a CUDA device (0 on the CPU)."""
        return float(sum(self.device_memory.values()))

    def heaviest(self, on_device: bool = False) -> str:
        """What holds the most memory (of the device's or the host's)."""
        terms = self.device_memory if on_device else self.memory
        return max(terms, key=lambda k: terms[k]) if terms else ""


def estimate(
    what: str,
    cpu_seconds: float,
    memory: Mapping[str, float],
    *,
    device: str = "cpu",
    on_device: Iterable[str] = (),
    model: str | None = None,
) -> Estimate:
    """An :class:`Estimate` from a cost model's terms.

    ``cpu_seconds`` in the units the coefficients were measured in (one-thread CPU seconds on
    the AVX2 machine), scaled by :data:`MEASURED_TO_REFERENCE`, and divided by
    :data:`CUDA_SPEEDUP` on a CUDA ``device``. On CUDA the terms named in ``on_device`` (the
    working tensors) are held on the device, and the ``model`` term on both (it is loaded on
    the host, then moved); on the CPU every term is host memory.
    """
    seconds = MEASURED_TO_REFERENCE * cpu_seconds
    if not str(device).startswith("cuda"):
        return Estimate(what, seconds, dict(memory), {}, str(device))
    keys = set(on_device) | ({model} if model else set())
    host = {k: v for k, v in memory.items() if k not in set(on_device)}
    on = {k: v for k, v in memory.items() if k in keys}
    return Estimate(what, seconds / CUDA_SPEEDUP, host, on, str(device))


def combined(estimates: Sequence[Estimate], what: str) -> Estimate:
    """Runs one after another (several models, a sweep's cells): their times add up; the
    memory is the largest run's."""
    if not estimates:
        return Estimate(what, 0.0, {})
    worst = max(estimates, key=lambda e: (e.peak_bytes, e.device_bytes))
    seconds = sum(e.seconds for e in estimates)
    return Estimate(what, seconds, worst.memory, worst.device_memory, worst.device)


def text_bytes(text: str | os.PathLike[str] | None) -> float:
    """The size of a run's text file (the default book's where none is given or it cannot be
    read: ``load_text`` reports a missing file). A file over the size a text may have is
    refused here, in the estimate, before any folder is touched or the text read."""
    if text is not None:
        try:
            size = Path(text).stat().st_size
        except (OSError, ValueError):
            return BOOK_BYTES
        if Path(text).is_file():
            check_text_size(Path(text), size)
        return float(size)
    return BOOK_BYTES


def format_bytes(n: float) -> str:
    """``1.8 GB``, ``650 MB``, ``9.2 TB`` (powers of 1000, as the README's peaks)."""
    if not math.isfinite(n):
        return "an unbounded amount"
    for unit, size in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= size:
            return f"{n / size:,.3g} {unit}" if n / size < 1000 else f"{n / size:,.0f} {unit}"
    return f"{max(n, 0) / 1e6:.2g} MB"


def format_seconds(s: float) -> str:
    """``40 s``, ``22 min``, ``3 h 10 min``, ``9 days``, ``3,171 years``."""
    if not math.isfinite(s):
        return "forever"
    if s < 90:
        return f"{max(s, 1):.0f} s"
    if s < 90 * 60:
        return f"{s / 60:.0f} min"
    if s < 48 * 3600:
        h, m = divmod(round(s / 60), 60)
        return f"{h} h {m} min" if m else f"{h} h"
    if s < 2 * 365 * 86400:
        return f"{s / 86400:.0f} days"
    years = s / (365.25 * 86400)
    return f"{years:,.0f} years" if years < 1e6 else f"{years:.1e} years"


def describe(est: Estimate) -> str:
    """``about 3 h 10 min and 6.2 GB`` (and the device's memory on CUDA)."""
    text = f"about {format_seconds(est.seconds)} and {format_bytes(est.peak_bytes)}"
    if est.device_bytes:
        text += f" (+ {format_bytes(est.device_bytes)} on {est.device})"
    return text


def _cgroup_room() -> float | None:
    """What a cgroup v2 memory limit leaves (containers), or None without one."""
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = Path("/sys/fs/cgroup/memory.current").read_text().strip()
    except OSError:
        return None
    return None if limit == "max" else max(0.0, float(limit) - float(used))


def _host_available() -> float | None:
    try:
        import psutil

        room: float | None = float(psutil.virtual_memory().available)
    except ImportError:
        room = None
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemAvailable:"):
                    room = float(line.split()[1]) * 1024
        except OSError:
            pass
        if room is None and hasattr(os, "sysconf"):
            try:
                room = float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
            except (ValueError, OSError):
                room = None
    cgroup = _cgroup_room()
    if cgroup is not None:
        room = cgroup if room is None else min(room, cgroup)
    return room


def available_memory(device: str = "cpu") -> float | None:
    """Bytes free for a new run: the host's available memory (psutil, else /proc/meminfo,
    else ``sysconf``; within a cgroup's limit), or a CUDA device's free memory. None where
    it cannot be read (then nothing is refused)."""
    if str(device).startswith("cuda"):
        try:
            import torch

            free, _ = torch.cuda.mem_get_info(torch.device(device))
        except (RuntimeError, ValueError, AssertionError):
            return None
        return float(free)
    return _host_available()


def _ask(line: str) -> bool:
    """At a terminal, ask whether to start; elsewhere (scripts, CI, tests) the answer is no."""
    if not (sys.stdin and sys.stdin.isatty() and sys.stderr.isatty()):
        return False
    try:
        answer = input(f"{line}. Start it? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def check(
    est: Estimate,
    *,
    yes: bool = True,
    say: bool = True,
    memory: bool = True,
    hint: str = "",
) -> None:
    """Refuse a run that cannot fit in memory, or a long one not confirmed; say a long one.

    ``yes``: a run longer than :data:`CONFIRM_SECONDS` may start (the CLI's ``--yes``; the
    Python API's default). Otherwise it is asked about at a terminal, refused elsewhere.
    ``say``: print the estimate of a run longer than :data:`NOTICE_SECONDS` on stderr.
    ``memory``: check the memory (not where the run goes to other machines: a Ray sweep).
    ``hint``: what else the refusal of a long run suggests.
    Raises :class:`BudgetError` (a ``ValueError``) with one line.
    """
    for on_device, need in ((False, est.peak_bytes), (True, est.device_bytes)) if memory else ():
        have = available_memory(est.device if on_device else "cpu") if need else None
        if have is not None and need > have:
            where = f"{est.device} has" if on_device else "this machine has"
            raise BudgetError(
                f"{est.what} would need about {format_bytes(need)} of memory, most of it "
                f"for {est.heaviest(on_device)}; {where} {format_bytes(have)} available"
            )
    line = f"estimated: {describe(est)} for {est.what}"
    if est.seconds > CONFIRM_SECONDS and not yes:
        if not _ask(line):
            raise BudgetError(f"{line}; pass --yes to start it{hint}")
    elif say and est.seconds > NOTICE_SECONDS:
        print(line, file=sys.stderr, flush=True)
