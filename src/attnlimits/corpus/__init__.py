"""attnlimits.corpus: the text experiments read (*War and Peace*) and its token windows.

- :func:`load_text`: the book, from a path, ``$ATTNLIMITS_TEXT``, ``../shared/data`` or a
  verified one-time download; Gutenberg header and licence stripped.
- :func:`token_windows`: ``[n_windows, L]`` consecutive token windows from the start of Book One;
  :func:`spread_windows`: windows spread evenly over the text (paper A's reproduction);
  :func:`check_windows`: the one-line error for a text too short for them.
"""

from attnlimits.corpus.text import (
    BOOK_START,
    GUTENBERG_URL,
    WAR_AND_PEACE_SHA256,
    TextUnavailableError,
    cache_dir,
    check_cache,
    describe_text,
    load_text,
    pack_text,
    strip_gutenberg,
    text_sha256,
    unpack_text,
)
from attnlimits.corpus.windows import (
    SpreadWindows,
    check_windows,
    encode,
    spread_windows,
    token_windows,
    word_tokenizer,
)

__all__ = [
    "BOOK_START",
    "GUTENBERG_URL",
    "WAR_AND_PEACE_SHA256",
    "SpreadWindows",
    "TextUnavailableError",
    "cache_dir",
    "check_cache",
    "check_windows",
    "describe_text",
    "encode",
    "load_text",
    "pack_text",
    "spread_windows",
    "strip_gutenberg",
    "text_sha256",
    "token_windows",
    "unpack_text",
    "word_tokenizer",
]
