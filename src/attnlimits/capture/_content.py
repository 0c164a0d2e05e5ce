"""Model files named by their content: the key of the GGUF dequantisation cache and of the
resumable parts a model's results are saved in.

A file's name, size and modification time do not name its content: two different files can
share all three (``os.utime`` sets the time). Its sha256 does. Hashing costs ~0.2 s per 100 MB,
so each hash is remembered in the user cache under a *guard* that no other file can share:
device, inode, size, mtime and ctime (ctime, unlike mtime, cannot be set: any write or
``utime`` moves it to the current time). A hash is remembered only when the file did not change
while it was read and its ctime lies over a second in the past (so a later rewrite cannot land
on the same ctime tick: git's "racy clean" rule), and only where ctime means the last change
(POSIX; Windows' ``st_ctime`` is the creation time, so there every use hashes).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

from attnlimits.corpus.text import cache_dir, text_sha256

__all__ = ["file_sha256", "folder_sha256", "model_files"]

#: A hash is remembered only for a file whose ctime is at least this far in the past.
_SETTLED_NS = 1_000_000_000


def _fields(st: os.stat_result) -> tuple[int, ...]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _guard(st: os.stat_result, path: Path) -> str:
    return hashlib.sha256(json.dumps([*_fields(st), str(path)]).encode()).hexdigest()


def _remember(entry: Path, digest: str) -> None:
    """Write ``digest`` to ``entry`` atomically; a cache that cannot be written is skipped."""
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".hash-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w") as f:
            f.write(digest)
        os.replace(tmp, entry)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


def file_sha256(path: Path, *, remember: bool = True) -> str:
    """The sha256 of ``path``'s bytes, remembered under the file's guard (see the module);
    with ``remember=False`` a remembered hash is used but a new one is not written (a caller
    that may yet refuse the file leaves the cache as it found it)."""
    path = Path(path).resolve()
    before = path.stat()
    entry = cache_dir() / "hashes" / _guard(before, path)
    if os.name == "posix":
        try:
            digest = entry.read_text().strip()
        except OSError:
            digest = ""
        if len(digest) == 64:
            return digest
    start = time.time_ns()
    digest = text_sha256(path)
    settled = start - before.st_ctime_ns > _SETTLED_NS
    if remember and os.name == "posix" and settled and _fields(path.stat()) == _fields(before):
        _remember(entry, digest)
    return digest


#: The kinds of file transformers reads from a model folder: weights (safetensors, pickles,
#: their shard indices), config and tokenizer files (JSON, sentencepiece, vocabularies, merges,
#: tiktoken, chat templates).
_MODEL_SUFFIXES = frozenset(
    ".json .safetensors .bin .pt .pth .msgpack .h5 .model .txt .tiktoken .jinja .gguf".split()
)
#: Files a run writes at the top of its results folder that share those kinds (a run whose
#: ``--out`` is the model's own folder must not change the model's hash).
_RUN_FILES = frozenset({"run.json"})


def model_files(folder: Path) -> list[Path]:
    """The top-level files of a model folder that make the model (transformers reads nothing
    below them): its weights, config and tokenizer files, sorted. A README, ``.gitattributes``,
    hidden files and what a run writes there (``run.json``, ``report.md``) are not the model."""
    return sorted(
        p
        for p in Path(folder).iterdir()
        if p.is_file()
        and not p.name.startswith(".")
        and p.suffix.lower() in _MODEL_SUFFIXES
        and p.name not in _RUN_FILES
    )


def folder_sha256(folder: Path) -> str:
    """One sha256 for a model folder: of the names and :func:`file_sha256` of its
    :func:`model_files`, so a run's files written into the folder leave it as it was."""
    listing = [[p.name, file_sha256(p)] for p in model_files(folder)]
    return hashlib.sha256(json.dumps(listing).encode()).hexdigest()
