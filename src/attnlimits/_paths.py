"""What a path is, in words, for the one-line messages about files the user named."""

from __future__ import annotations

import stat
from pathlib import Path

__all__ = ["path_kind"]


def path_kind(path: Path) -> str:
    """What ``path`` is, for a message: ``"a file"``, ``"a folder"``, ``"a FIFO (named pipe)"``,
    ``"a device"``, ``"a socket"``, or ``"missing"`` (a broken link too)."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as err:  # e.g. a parent folder without search permission
        return f"out of reach ({err.strerror})"
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket" if stat.S_ISSOCK(mode) else "neither a file nor a folder"
