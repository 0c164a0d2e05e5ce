"""What attnlimits wrote in a results folder, and the only code that deletes there.

A results folder may also hold a user's files (their notes, a figure they added, or a folder
given as ``--out`` by mistake). So that ``--fresh``, the clean-up after a failed run and the
removal of a killed run's temporaries never touch those, every file a run writes is listed in
the folder's manifest :data:`MANIFEST` (one path a line, relative to the folder, appended)
*before* it is written. Nothing is written, renamed or deleted through a symbolic link: each
path is checked by :func:`attnlimits._paths.inside` first, and :meth:`Manifest.refuse_links`
refuses a folder with a link where a run writes, before any work. Deletion here is of listed
files only, plus files known by their names
(the lock, its owner note, the manifest, hidden ``*.attnlimits-tmp`` temporaries), and a folder
goes only by ``rmdir``: when it is empty.

A file listed but never written (a run killed between the two) is dropped from the list when
the folder is next locked (:meth:`Manifest.prune`); a file written but not listed cannot exist.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from attnlimits._files import TMP_SUFFIX, file_mode, record, recording
from attnlimits._paths import inside, open_no_follow, refuse_links

__all__ = [
    "LOCK_NAME",
    "MANIFEST",
    "OWNER_NAME",
    "TMP_SUFFIX",
    "Manifest",
    "make_folder",
    "record",
    "recording",
    "remove_empty",
]

#: The manifest's name in a results folder.
MANIFEST = ".attnlimits-files"
#: The folder lock (``filelock``'s) and the note naming its holder.
LOCK_NAME = ".attnlimits.lock"
OWNER_NAME = f"{LOCK_NAME}.owner"


def ours_by_name(name: str) -> bool:
    """A file name only attnlimits gives: the lock, its owner note, the manifest, a temporary."""
    return name in (MANIFEST, LOCK_NAME, OWNER_NAME) or (
        name.startswith(".") and name.endswith(TMP_SUFFIX)
    )


def _safe(rel: str) -> bool:
    """A manifest line that names a file inside the folder (a hand-edited one may not)."""
    parts = PurePosixPath(rel).parts
    return bool(parts) and not PurePosixPath(rel).is_absolute() and ".." not in parts


class Manifest:
    """The files attnlimits wrote in the folder ``root`` (relative POSIX paths).

    ``written`` lists those this object recorded, in this process: what a failed run removes.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.path = self.root / MANIFEST
        self.listed = self._read(self.path)
        self.written: list[str] = []

    @staticmethod
    def _read(path: Path) -> set[str]:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return set()
        except (OSError, UnicodeDecodeError) as err:
            raise ValueError(
                f"{path} (attnlimits' list of its files) is unreadable: {err}"
            ) from None
        # A last line without its newline is a write cut short: not trusted.
        return {line for line in text.split("\n")[:-1] if _safe(line)}

    def relative(self, path: Path) -> str:
        """``path``'s place in the folder, with no symbolic link on the way (``ValueError``
        naming the link otherwise). ``path`` may spell the folder otherwise (resolved)."""
        path = Path(path)
        if not path.absolute().is_relative_to(self.root.absolute()):
            real, top = path.resolve(), self.root.resolve()
            if real.is_relative_to(top):
                path = self.root / real.relative_to(top)
        return inside(self.root, path)

    def _reachable(self, path: Path) -> bool:
        """Whether ``path`` lies in the folder with no symbolic link on the way."""
        try:
            inside(self.root, path)
        except ValueError:
            return False
        return True

    def refuse_links(self, places: Iterable[str]) -> None:
        """Before any work: a ``ValueError`` naming the first symbolic link at or below
        ``places``, the listed files, the manifest, the lock and its owner note."""
        refuse_links(self.root, {*places, *self.listed, MANIFEST, LOCK_NAME, OWNER_NAME})

    def record(self, path: Path) -> None:
        """List ``path`` (inside the folder) before it is written."""
        rel = self.relative(path)
        if "\n" in rel:
            raise ValueError(f"cannot list a file name with a line break: {rel!r}")
        if rel not in self.listed:
            inside(self.root, self.path)
            fd = open_no_follow(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write(rel + "\n")
            self.listed.add(rel)
        if rel not in self.written:
            self.written.append(rel)

    def _rewrite(self) -> None:
        """The manifest rewritten whole (atomically) from ``listed``."""
        inside(self.root, self.path)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=f"{MANIFEST}.", suffix=TMP_SUFFIX)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write("".join(f"{rel}\n" for rel in sorted(self.listed)))
            os.chmod(tmp, file_mode())
            os.replace(tmp, self.path)
        finally:
            Path(tmp).unlink(missing_ok=True)  # a name only mkstemp gave: ours

    def prune(self) -> None:
        """Drop listed files that do not exist (a run killed between listing and writing)."""
        gone = {rel for rel in self.listed if not (self.root / rel).is_file()}
        if gone:
            self.listed -= gone
            self._rewrite()

    def remove(self, rels: Iterable[str]) -> list[str]:
        """Delete the listed files among ``rels`` (others are left alone), then the folders
        they leave empty below the root; returns what was deleted."""
        removed, gone = [], sorted(set(rels) & self.listed)
        for rel in gone:
            path = self.root / rel
            if self._reachable(path) and path.is_file():  # never through a link, nor one
                path.unlink()
                removed.append(rel)
            self.listed.discard(rel)
            for parent in PurePosixPath(rel).parents:
                if parent == PurePosixPath("."):
                    break
                try:
                    (self.root / parent).rmdir()  # only when empty (a link is no folder)
                except OSError:
                    break
        if gone:
            self._rewrite()
        return removed

    def remove_temporaries(self, places: Iterable[str]) -> list[Path]:
        """Delete the temporaries a killed run left: in the root, beside every listed file and
        anywhere under ``places`` (folders a run writes into). Known by their names only."""
        folders = {self.root} | {(self.root / rel).parent for rel in self.listed}
        found = set()
        for folder in folders:
            found |= set(folder.glob(f".*{TMP_SUFFIX}"))
        for place in places:
            if (self.root / place).is_dir():
                found |= set((self.root / place).rglob(f".*{TMP_SUFFIX}"))
        stale = sorted(
            p for p in found if ours_by_name(p.name) and self._reachable(p) and p.is_file()
        )
        for path in stale:
            path.unlink(missing_ok=True)
        return stale

    def foreign(self, places: Iterable[str], limit: int = 3) -> list[str]:
        """Up to ``limit`` + 1 files at ``places`` (names in the root; folders searched
        through) that attnlimits did not write: not listed here nor in the manifest of a
        folder below (a sweep's cells), and not ours by name. Sorted."""
        found: list[str] = []
        manifests: dict[Path, set[str]] = {self.root: self.listed}
        for place in sorted(places):
            top = self.root / place
            if top.is_file() or top.is_symlink():
                if not (ours_by_name(top.name) or place in self.listed):
                    found.append(place)
                continue
            for dirpath, dirnames, filenames in os.walk(top):
                dirnames.sort()
                here = Path(dirpath)
                for name in sorted(filenames):
                    if ours_by_name(name) or self._listed_above(here / name, manifests):
                        continue
                    found.append((here / name).relative_to(self.root).as_posix())
                    if len(found) > limit:
                        return sorted(found)
        return sorted(found)

    def _listed_above(self, path: Path, manifests: dict[Path, set[str]]) -> bool:
        """Whether the manifest of the root or of a folder between it and ``path`` lists it
        (``manifests``: those read so far, by folder)."""
        folder = path.parent
        while True:
            if folder not in manifests:
                manifests[folder] = self._read(folder / MANIFEST)
            if path.relative_to(folder).as_posix() in manifests[folder]:
                return True
            if folder == self.root or folder == folder.parent:
                return False
            folder = folder.parent

    def discard(self, new_folders: list[Path]) -> None:
        """After a failed run (the folder lock held): delete what this object recorded; when
        no listed file and no ``run.json`` is left, the manifest and the lock too, then those of
        ``new_folders`` (the folders this process created, deepest first) that are empty."""
        self.remove(self.written)
        if self.listed or (self.root / "run.json").exists():  # a run's files stay, and its lock
            return
        # Unlinking the lock while holding it is safe: filelock does so on release, and a
        # contender that opened it sees its inode unlinked and starts over.
        for name in (MANIFEST, OWNER_NAME, LOCK_NAME):
            if self._reachable(self.root / name):
                (self.root / name).unlink(missing_ok=True)
        remove_empty(new_folders)


def make_folder(root: Path) -> list[Path]:
    """Create ``root`` and its missing parents; return the folders this call created, deepest
    first. Empty when ``root`` already existed, even if another process made it a moment ago:
    ``mkdir`` decides, not an earlier look."""
    root = Path(root)
    missing = []
    for folder in (root, *root.parents):
        if folder.exists() or folder.is_symlink():
            break
        missing.append(folder)
    try:
        root.mkdir(parents=True)
    except OSError:  # there already, or not creatable (the store names that)
        return []
    return missing


def remove_empty(folders: Iterable[Path]) -> None:
    """``rmdir`` each folder in turn (deepest first), stopping at the first that is not empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return
