"""The book the experiments read: *War and Peace* (Project Gutenberg #2600), found or fetched once.

``load_text`` looks, in order, at an explicit path, ``$ATTNLIMITS_TEXT``, the repo-adjacent
``../shared/data/war_and_peace.txt``, the user cache, and finally downloads the book once into the
cache, checked against its sha256 and written atomically. Offline and with no local copy it raises
:class:`TextUnavailableError`, which says how to point it at a file.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import re
import tempfile
import urllib.request
from pathlib import Path

from attnlimits._paths import check_writable_folder, path_kind

__all__ = [
    "BOOK_START",
    "GUTENBERG_URL",
    "MAX_TEXT_BYTES",
    "WAR_AND_PEACE_SHA256",
    "TextUnavailableError",
    "cache_dir",
    "check_cache",
    "check_text_size",
    "describe_text",
    "load_text",
    "pack_text",
    "strip_gutenberg",
    "text_sha256",
    "unpack_text",
]

GUTENBERG_URL = "https://www.gutenberg.org/cache/epub/2600/pg2600.txt"
# sha256 of the raw Gutenberg #2600 file (CRLF, with header and licence)
WAR_AND_PEACE_SHA256 = "aa4a454fb73861c0c84c662ed1fa3ddd71bbd7a237783932c05d5f3b2cdd6718"
BOOK_START = "BOOK ONE: 1805"
ENV_TEXT = "ATTNLIMITS_TEXT"
ENV_CACHE = "ATTNLIMITS_CACHE_DIR"
CACHE_NAME = "war_and_peace.txt"
#: The largest text read (20 times *War and Peace*'s 3.4 MB): a text is read whole and its
#: stretches tokenised, and a 200 MB file of few tokens took 12.9 GB and 2 minutes to be found
#: too short (a 2 GB one was killed for memory at 20 GB).
MAX_TEXT_BYTES = 64_000_000

# src/attnlimits/corpus/text.py -> parents[3] is the repository root (editable installs only)
SHARED_TEXT = Path(__file__).resolve().parents[3].parent / "shared" / "data" / CACHE_NAME

_START_MARK = re.compile(r"^\*\*\* ?START OF (THE|THIS) PROJECT GUTENBERG EBOOK.*$", re.MULTILINE)
_END_MARK = re.compile(r"^\*\*\* ?END OF (THE|THIS) PROJECT GUTENBERG EBOOK.*$", re.MULTILINE)
#: The start line of a Project Gutenberg edition of the book (any release of #2600).
_BOOK_MARK = re.compile(
    r"^\*\*\* ?START OF (THE|THIS) PROJECT GUTENBERG EBOOK WAR AND PEACE\b", re.MULTILINE
)


class TextUnavailableError(OSError):
    """No local copy of the book and no way to download it."""


#: Texts another process read and shipped here (a sweep's driver puts each cell's text in Ray's
#: object store once; its workers need no copy of the file): source -> (path, raw bytes, verify).
_shipped: dict[str, tuple[str, bytes, bool]] = {}


def cache_dir() -> Path:
    """The user cache: ``$ATTNLIMITS_CACHE_DIR``, else ``$XDG_CACHE_HOME/attnlimits``, else
    ``~/.cache/attnlimits``. Created on first use by the callers that write to it."""
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "attnlimits"


def check_cache(sub: str = "") -> Path:
    """``cache_dir() / sub``, checked writable (not made) for a caller about to do slow work
    whose result goes there (a dequantised model, a generated dataset): a file in its place or
    on its way, or a folder where nothing can be written, is a one-line ``ValueError`` naming
    the folder and the setting behind it, before the work instead of after it."""
    root = cache_dir()
    if os.environ.get(ENV_CACHE):
        fix = f"${ENV_CACHE} names it: set {ENV_CACHE} to a writable folder"
    elif os.environ.get("XDG_CACHE_HOME"):
        fix = f"it is in $XDG_CACHE_HOME: set {ENV_CACHE} to a writable folder"
    else:
        fix = f"set {ENV_CACHE} to a writable folder"
    check_writable_folder(root / sub if sub else root, "cache folder", fix)
    return root / sub if sub else root


def text_sha256(data: str | bytes | os.PathLike[str]) -> str:
    """Hex sha256 of raw bytes, of a ``str`` (UTF-8 encoded), or of a file given as a path."""
    if isinstance(data, os.PathLike):
        h = hashlib.sha256()
        with open(data, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def strip_gutenberg(text: str, *, start: str | None = BOOK_START) -> str:
    """Return the book body of a Project Gutenberg plain text.

    Line endings become ``\\n``; the header up to the ``*** START OF ...`` line and everything from
    the ``*** END OF ...`` line on (the licence) are dropped. With ``start`` (default
    ``"BOOK ONE: 1805"``), the text begins at the first line that is exactly ``start``, which skips
    the title page and the table of contents (whose entries are indented). Surrounding blank
    lines are removed. Raises ``ValueError`` when ``start`` is given but no such line exists.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    m = _START_MARK.search(text)
    if m:
        text = text[m.end() :]
    m = _END_MARK.search(text)
    if m:
        text = text[: m.start()]
    if start is not None:
        m = re.search(rf"^{re.escape(start)}[ \t]*$", text, re.MULTILINE)
        if m is None:
            raise ValueError(f"no line reading exactly {start!r} in the text")
        text = text[m.start() :]
    return text.strip("\n").rstrip() + "\n"


def _download(url: str, dest: Path, *, timeout: float = 60.0) -> None:
    """Fetch ``url`` to ``dest`` (no checks; the caller verifies)."""
    req = urllib.request.Request(url, headers={"User-Agent": "attnlimits"})
    with urllib.request.urlopen(req, timeout=timeout) as resp, open(dest, "wb") as out:
        while block := resp.read(1 << 20):
            out.write(block)


def _fetch_into_cache(target: Path) -> None:
    """Download the book once into ``target``: verified, then moved into place atomically."""
    check_cache()  # a cache that cannot take the book: refused before the download
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".download-", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        try:
            _download(GUTENBERG_URL, tmp)
        except OSError as err:  # URLError, timeouts, DNS failures are all OSErrors
            raise TextUnavailableError(
                f"could not find War and Peace locally nor download it from {GUTENBERG_URL} "
                f"({err}). Pass a path, e.g. load_text('war_and_peace.txt'), or set "
                f"{ENV_TEXT}=/path/to/war_and_peace.txt (Project Gutenberg #2600)."
            ) from err
        digest = text_sha256(tmp)
        if digest != WAR_AND_PEACE_SHA256:
            raise TextUnavailableError(
                f"downloaded {GUTENBERG_URL} but its sha256 is {digest}, not the expected "
                f"{WAR_AND_PEACE_SHA256} (the edition changed?). Pass a path or set {ENV_TEXT}."
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _resolve(source: str | os.PathLike[str] | None) -> tuple[Path, bool]:
    """The file to read and whether it must match the known sha256."""
    if source is not None:
        return Path(source).expanduser(), False
    env = os.environ.get(ENV_TEXT)
    if env:
        return Path(env).expanduser(), False
    if SHARED_TEXT.is_file():
        return SHARED_TEXT, True
    cached = cache_dir() / CACHE_NAME
    if not cached.is_file():
        _fetch_into_cache(cached)
    return cached, True


def check_text_size(path: Path, size: int) -> None:
    """Refuse a text of ``size`` bytes over :data:`MAX_TEXT_BYTES`, in one line naming it,
    before it is read."""
    if size > MAX_TEXT_BYTES:
        raise ValueError(
            f"text file {path} has {size:,} bytes, over the {MAX_TEXT_BYTES:,} a text may have "
            "(it is read whole; War and Peace has 3.4 MB): give a shorter text, e.g. a part of it"
        )


def _read(path: Path) -> bytes:
    """The bytes of the text file ``path``; a folder, FIFO or device is refused by name (a FIFO
    or ``/dev/zero`` would block or never end), and a file over :data:`MAX_TEXT_BYTES` before
    it is read."""
    kind = path_kind(path)
    if kind == "missing":
        raise FileNotFoundError(f"text file not found: {path}")
    if kind != "a file":
        raise ValueError(f"text {path} is {kind}, not a plain-text file; give a .txt file")
    try:
        check_text_size(path, path.stat().st_size)
        return path.read_bytes()
    except OSError as err:
        raise OSError(f"cannot read text file {path}: {err.strerror or err}") from None


def _key(source: str | os.PathLike[str] | None) -> str:
    return "" if source is None else str(Path(source).expanduser())


def pack_text(
    source: str | os.PathLike[str] | None = None,
) -> dict[str, tuple[str, bytes, bool]]:
    """The file ``load_text(source)`` reads in this process, as raw bytes, to ship to another
    process (which hands it to :func:`unpack_text`); ``FileNotFoundError`` if it is missing."""
    path, verify = _resolve(source)
    return {_key(source): (str(path), _read(path), verify)}


def unpack_text(packed: dict[str, tuple[str, bytes, bool]]) -> None:
    """From now on, ``load_text(source)`` in this process reads the bytes :func:`pack_text`
    shipped for ``source`` (checked and decoded as a file would be) instead of a file."""
    _shipped.update(packed)


def describe_text(source: str | os.PathLike[str] | None = None) -> str:
    """What :func:`load_text` reads for ``source``, in words, for messages and ``run.json``.

    A ``source`` given is named as given. Otherwise the text is called *War and Peace* only
    where it is recognised as the book: the known sha256 of Gutenberg #2600, or a Project
    Gutenberg edition of it (its ``*** START OF ... WAR AND PEACE`` line and a line
    ``BOOK ONE: 1805``); any other file (``$ATTNLIMITS_TEXT`` may name anything) is
    ``"the text at PATH (N bytes)"``. Raises what :func:`load_text` raises for a text it
    cannot read.
    """
    if source is not None:
        return str(source)
    if (shipped := _shipped.get(_key(None))) is not None:
        path, raw = Path(shipped[0]), shipped[1]
    else:
        path, _ = _resolve(None)
        raw = _read(path)
    if text_sha256(raw) == WAR_AND_PEACE_SHA256:
        return "War and Peace"
    text = raw.decode("utf-8", errors="replace")
    if _BOOK_MARK.search(text) and re.search(rf"^{re.escape(BOOK_START)}[ \t]*\r?$", text, re.M):
        return "War and Peace"
    size = f"{len(raw):,} byte" + ("" if len(raw) == 1 else "s")
    return f"the text at {path} ({size})"


#: Byte-order marks of the encodings a text that is not UTF-8 most often is in, longest first.
_BOMS = {
    codecs.BOM_UTF32_LE: "utf-32",
    codecs.BOM_UTF32_BE: "utf-32",
    codecs.BOM_UTF16_LE: "utf-16",
    codecs.BOM_UTF16_BE: "utf-16",
}


def _decode(path: Path, raw: bytes) -> str:
    """``raw`` decoded as UTF-8. A text that is not is refused, naming the encoding it looks
    like (a byte-order mark, or NUL bytes: UTF-16 without a mark; plain text has none), else
    the first bad byte."""
    encoding = next((name for bom, name in _BOMS.items() if raw.startswith(bom)), None)
    nuls = raw.count(b"\0")
    if encoding is None and nuls > len(raw) * 4 // 5:  # UTF-32 of ASCII is 3/4 NUL
        raise ValueError(
            f"text file {path} is not text: {nuls:,} of its {len(raw):,} bytes are NUL; give "
            "a plain-text file"
        )
    if encoding is None and nuls > len(raw) // 100:
        encoding = "utf-16"  # ASCII in UTF-16 is every other byte NUL (and valid UTF-8)
    if encoding is not None:
        what = f"{nuls:,} of its {len(raw):,} bytes are NUL" if nuls else "it starts with its BOM"
        raise ValueError(
            f"text file {path} is not UTF-8 but looks like {encoding.upper()} ({what}); "
            f"re-encode it, e.g. iconv -f {encoding} -t utf-8"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        bad = raw[err.start : err.start + 1]
        raise ValueError(
            f"text file {path} is not UTF-8 (byte {err.start}: {bad!r}); re-encode it, "
            "e.g. iconv -f latin1 -t utf-8"
        ) from None


def load_text(source: str | os.PathLike[str] | None = None) -> str:
    """Return the text of *War and Peace* (or of ``source``), Gutenberg header and licence stripped.

    Sources in order: ``source`` (a path); ``$ATTNLIMITS_TEXT``;
    ``../shared/data/war_and_peace.txt`` next to the repository; the cached download in
    :func:`cache_dir`; a one-time download of Project Gutenberg #2600, verified against its
    sha256. A Gutenberg text is passed through :func:`strip_gutenberg` (from ``"BOOK ONE: 1805"``
    when that line exists); other text only has its line endings normalised to ``\\n``.

    Raises ``FileNotFoundError`` for a missing explicit path, ``ValueError`` when the known copy's
    checksum does not match, a text is empty, not UTF-8 (naming UTF-16 or UTF-32 where it looks
    like them) or over :data:`MAX_TEXT_BYTES` (before it is read), or the path is a folder,
    FIFO or device (the message names the file and says what it is), and
    :class:`TextUnavailableError` when offline with no local copy.
    """
    if (shipped := _shipped.get(_key(source))) is not None:
        path, raw, verify = Path(shipped[0]), shipped[1], shipped[2]
    else:
        path, verify = _resolve(source)
        raw = _read(path)
    if verify and (digest := text_sha256(raw)) != WAR_AND_PEACE_SHA256:
        raise ValueError(
            f"{path} has sha256 {digest}, expected {WAR_AND_PEACE_SHA256} (Gutenberg #2600)"
        )
    text = _decode(path, raw)
    if not text.strip():
        raise ValueError(f"text file {path} is empty")
    if _START_MARK.search(text) or _END_MARK.search(text):
        has_start = re.search(rf"^{re.escape(BOOK_START)}[ \t]*\r?$", text, re.MULTILINE)
        return strip_gutenberg(text, start=BOOK_START if has_start else None)
    return text.replace("\r\n", "\n").replace("\r", "\n")
