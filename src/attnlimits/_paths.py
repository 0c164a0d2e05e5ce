"""What a path is, in words, for the one-line messages about files the user named; and the one
check every writer below a results folder makes: no symbolic link on the way (:func:`inside`)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = ["inside", "link_refused", "open_no_follow", "path_kind", "refuse_links"]


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


def link_refused(link: Path) -> ValueError:
    """The one-line refusal of a symbolic link found where attnlimits would write."""
    try:
        target = os.readlink(link)
    except OSError:
        target = "?"
    return ValueError(
        f"{link} is a symbolic link (to {target}); attnlimits writes, renames and deletes "
        "nothing through a link: remove it, or use another folder"
    )


def inside(root: Path, path: Path) -> str:
    """``path``'s place in the folder ``root`` as a relative POSIX path, after checking that it
    lies below ``root`` as spelled (no ``..``) and that neither ``path`` nor a folder between
    it and ``root`` is a symbolic link: ``ValueError`` naming the path or the link otherwise.
    ``root`` itself may be a link (it is the folder the user named).

    Every write, rename and delete below a results folder asks this first."""
    top, full = Path(root).absolute(), Path(path).absolute()
    if not full.is_relative_to(top) or full == top or ".." in full.relative_to(top).parts:
        raise ValueError(f"{path} lies outside the folder {root}")
    rel = full.relative_to(top)
    here = top
    for part in rel.parts:
        here = here / part
        if here.is_symlink():
            raise link_refused(Path(root) / here.relative_to(top))
    return rel.as_posix()


def refuse_links(root: Path, places: Iterable[str]) -> None:
    """Check, before any work, every path at ``places`` (relative to ``root``) with
    :func:`inside`, and every file and folder below those that are folders (searched without
    following links): the first symbolic link found raises its one-line ``ValueError``."""
    root = Path(root)
    for rel in sorted(set(places)):
        top = root / rel
        inside(root, top)
        if not top.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(top):  # never descends into a link
            dirnames.sort()
            for name in sorted([*dirnames, *filenames]):
                if os.path.islink(os.path.join(dirpath, name)):
                    raise link_refused(Path(dirpath) / name)


def open_no_follow(path: Path, flags: int, mode: int = 0o666) -> int:
    """``os.open`` that refuses to open through a symbolic link at ``path`` itself
    (``O_NOFOLLOW`` where the platform has it, a look first elsewhere); a file descriptor."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    if not nofollow and Path(path).is_symlink():
        raise link_refused(Path(path))
    try:
        return os.open(path, flags | nofollow, mode)
    except OSError as err:
        if err.errno == errno.ELOOP and Path(path).is_symlink():
            raise link_refused(Path(path)) from None
        raise
