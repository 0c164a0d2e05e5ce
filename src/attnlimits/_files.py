"""Writing a file whole or not at all (:func:`atomic_write_text`), listed first in the manifest
of the results folder this process holds, when one holds it (:func:`recording`).

Every file is written to a hidden temporary in the same folder (ending in :data:`TMP_SUFFIX`)
and renamed into place, so a writer killed half-way never leaves a half-written file. The
results folder's manifest (:mod:`attnlimits.experiments._owned`) registers itself here while
its folder is held, so that any writer below it (the store's, the report's pages, a
checkpoint) lists what it writes: this layer knows a manifest only as something with a
``root`` and a ``record(path)``.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from attnlimits._paths import inside, naming_the_path

__all__ = [
    "TMP_SUFFIX",
    "Recorder",
    "atomic_target",
    "atomic_write_bytes",
    "atomic_write_text",
    "file_mode",
    "record",
    "recording",
]

#: Every temporary file of the store ends so (and starts with a dot).
TMP_SUFFIX = ".attnlimits-tmp"


class Recorder(Protocol):
    """What lists the files written below ``root`` (a results folder's manifest)."""

    root: Path

    def record(self, path: Path) -> None: ...


_RECORDING: dict[Path, Recorder] = {}  # resolved root -> the manifest of a folder held here
_GUARD = threading.Lock()


def file_mode() -> int:
    """0666 less the process umask: what ``open(path, "w")`` would give (0644 under 022)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextmanager
def recording(manifest: Recorder) -> Iterator[None]:
    """Inside the block, :func:`record` lists in ``manifest`` the files written below its root
    (by any writer: the store's, ``atomic_write_text``, a checkpoint)."""
    key = manifest.root.resolve()
    with _GUARD:
        _RECORDING[key] = manifest
    try:
        yield
    finally:
        with _GUARD:
            if _RECORDING.get(key) is manifest:
                del _RECORDING[key]


def record(path: Path) -> bool:
    """List ``path`` in the manifest of the innermost folder held by :func:`recording` that
    holds it (a sweep's cell inside the sweep's folder); whether one does."""
    resolved, spelled = Path(path).resolve(), Path(path).absolute()
    with _GUARD:  # as spelled too: a path through a link resolves outside, and is refused
        roots = [
            r
            for r, m in _RECORDING.items()
            if resolved.is_relative_to(r) or spelled.is_relative_to(m.root.absolute())
        ]
        manifest = _RECORDING[max(roots, key=lambda r: len(r.parts))] if roots else None
    if manifest is None:
        return False
    manifest.record(path)
    return True


@naming_the_path
@contextmanager
def atomic_target(path: Path, manifest: Recorder | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it into place if the block succeeds.

    ``path`` is first listed in ``manifest``, or in that of a results folder this process holds
    that contains it. The temporary is hidden, ends in :data:`TMP_SUFFIX` (so a later run can
    remove what a killed one left) and gets the mode an ordinary file would get under the user's
    umask, not ``mkstemp``'s 0600. For writers (pandas, matplotlib) that want a file name.
    """
    if manifest is not None:  # listed first, which refuses a link on the way
        manifest.record(path)
    elif not record(path):  # in no results folder held here: not through a link
        inside(path.parent, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    os.close(fd)
    os.chmod(tmp, file_mode())
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def atomic_write_bytes(path: Path, data: bytes, *, manifest: Recorder | None = None) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and an atomic rename."""
    with atomic_target(path, manifest) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())


def atomic_write_text(path: Path, text: str) -> None:
    """:func:`atomic_write_bytes` for UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))
