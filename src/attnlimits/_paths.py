"""What a path is, in words, for the one-line messages about files the user named; and the one
check every writer below a results folder makes: no symbolic link on the way (:func:`inside`)."""

from __future__ import annotations

import errno
import functools
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "check_writable_folder",
    "inside",
    "link_refused",
    "naming_the_path",
    "open_no_follow",
    "path_kind",
    "probe_write",
    "refuse_links",
    "write_error",
]

#: errno values that mean the disk (or the user's share of it) is full, in words.
_FULL = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded"}


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


def write_error(path: Path, err: OSError) -> OSError:
    """``err``, met while writing ``path``, as an error of the same class whose one-line message
    names ``path`` (a full disk says so in words: ``[Errno 28]`` names no file); its ``errno``
    is kept. An error this function made already is returned as it is."""
    if getattr(err, "attnlimits_path", None) is not None:
        return err
    why = err.strerror or str(err) or type(err).__name__
    if err.errno in _FULL:
        why = f"{_FULL[err.errno]} ({why[:1].lower()}{why[1:]})"
    message = f"cannot write {path}: {why}"
    try:
        new = type(err)(message)
    except TypeError:  # a subclass with a constructor of its own
        new = OSError(message)
    new.errno = err.errno
    new.attnlimits_path = str(path)  # type: ignore[attr-defined]
    return new


def naming_the_path(
    target: Callable[..., AbstractContextManager[Any]],
) -> Callable[..., AbstractContextManager[Any]]:
    """Decorate ``target(path, ...)``, a context manager that writes ``path``: an ``OSError``
    inside it comes out as :func:`write_error` names it."""

    @contextmanager
    @functools.wraps(target)
    def named(path: Path, *args: Any, **kwargs: Any) -> Iterator[Any]:
        try:
            with target(path, *args, **kwargs) as value:
                yield value
        except OSError as err:
            raise write_error(path, err) from err

    return named


def probe_write(folder: Path, prefix: str = ".probe.", suffix: str = "") -> None:
    """Make a file in ``folder`` and remove it: ``OSError`` where nothing can be written there.
    The file is a name :func:`tempfile.mkstemp` made, never a user's."""
    fd, probe = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=suffix)
    os.close(fd)
    os.unlink(probe)


def check_writable_folder(path: Path, what: str, fix: str) -> None:
    """Refuse, with a one-line ``ValueError`` naming ``what``, the path and ``fix`` (what to do),
    a folder that cannot be written: a file (or other non-folder) in its place or on its way,
    or a folder where no file can be made (probed in ``path``, or where ``path`` is missing, in
    the deepest folder on its way, where its writer would make it). Creates nothing."""
    for p in (path, *path.parents):
        kind = path_kind(p)
        if kind == "a folder":
            break
        if kind != "missing":
            where = "" if p == path else f" (on the way to {path})"
            raise ValueError(f"{what} {p}{where} is {kind}, not a folder; {fix}")
    try:
        probe_write(p)
    except OSError as err:
        raise ValueError(f"{what} {p} cannot be written ({err.strerror or err}); {fix}") from None
