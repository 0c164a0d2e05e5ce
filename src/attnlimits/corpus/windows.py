"""Token windows: stretches of L tokens, consecutive from the start of the text
(:func:`token_windows`) or spread evenly over its length (:func:`spread_windows`)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, NamedTuple

import torch
from torch import Tensor

from attnlimits._checks import check_int_at_least

__all__ = [
    "SpreadWindows",
    "check_windows",
    "count_tokens",
    "encode",
    "spread_windows",
    "token_windows",
    "word_tokenizer",
]

# Generous first guess of characters per token (English BPE/WordPiece is ~4); the prefix doubles
# until it holds enough tokens, so a bad guess costs time, never correctness.
_CHARS_PER_TOKEN = 6
# Tokens whose text lies near the cut could tokenise differently in the full text; drop this many.
_SAFETY_TOKENS = 8
# A prefix grows no further than this many characters per token needed: text in words has 1-6,
# and a text with fewer tokens (a file of NUL bytes or spaces) would be tokenised whole, its
# size times ~64 in memory, to find it too short.
_MAX_CHARS_PER_TOKEN = 256
# Texts are counted in pieces of this many characters (bounded memory, a count exact to the
# few tokens that straddle a cut).
_COUNT_CHARS = 1 << 20


def encode(tokenizer: Any, text: str) -> list[int]:
    """Token ids of ``text`` without special tokens (no BOS/CLS/SEP); HF or tiktoken-like."""
    if callable(tokenizer) and hasattr(tokenizer, "model_max_length"):  # a transformers tokenizer
        ids = tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]
    else:
        try:
            ids = tokenizer.encode(text, add_special_tokens=False)
        except TypeError:
            ids = tokenizer.encode(text)
    return [int(i) for i in ids]


class _SparseTextError(ValueError):
    """A text with too few tokens for its length to be worth tokenising further."""


def count_tokens(tokenizer: Any, text: str) -> int:
    """How many tokens ``text`` has, encoded a piece of about a million characters at a time
    (cut at line breaks), so that its memory stays bounded whatever the text's length."""
    count, start = 0, 0
    while start < len(text):
        piece = _cut_at_line(text[start : start + _COUNT_CHARS + 1], _COUNT_CHARS)
        count += len(encode(tokenizer, piece))
        start += len(piece)
    return count


def check_windows(n_tokens: int, length: int, windows: int, source: str = "the text") -> None:
    """Raise a one-line ``ValueError`` unless a text of ``n_tokens`` tokens holds ``windows``
    windows of ``length`` tokens; the message names ``source`` and both token counts.

    Callers that can count tokens before loading a model (a tokenizer alone) call this first,
    so a text too short fails before any work; :func:`token_windows` calls it too.
    """
    for name, value in (("length", length), ("windows", windows), ("n_tokens", n_tokens)):
        check_int_at_least(value, name, 1 if name != "n_tokens" else 0)
    need = length * windows
    if n_tokens < need:
        raise ValueError(
            f"{source} is too short: it has {n_tokens} tokens, but windows × L = "
            f"{windows} × {length} = {need} are needed (give a longer text, fewer windows "
            "or a smaller L)"
        )


def _cut_at_line(text: str, n_chars: int) -> str:
    """The prefix of at most ``n_chars`` characters, ending at a line break when there is one."""
    if n_chars >= len(text):
        return text
    cut = text.rfind("\n", 0, n_chars)
    return text[: cut + 1] if cut > 0 else text[:n_chars]


def token_windows(
    tokenizer: Any, text: str, L: int, n_windows: int, *, source: str = "the text"
) -> Tensor:
    """Return ``n_windows`` consecutive, non-overlapping windows of ``L`` tokens from the start.

    Window ``i`` holds tokens ``i*L .. (i+1)*L - 1`` of ``text`` tokenised without special tokens.
    Only a prefix of the text is tokenised: it is cut at a line break and grown until it holds
    ``n_windows * L`` tokens plus a margin (tokens next to the cut are never used).

    Returns
    -------
    LongTensor of shape ``[n_windows, L]``.

    Raises ``ValueError`` when ``L`` or ``n_windows`` is not a positive int, or when the whole text
    has fewer than ``n_windows * L`` tokens (the message names ``source`` and gives both numbers),
    or when a prefix of 256 characters per token needed still lacks them (a file of NULs or
    spaces: tokenising it whole would cost ~64 times its size in memory to say so).
    """
    for name, value in (("L", L), ("n_windows", n_windows)):
        check_int_at_least(value, name, 1)
    need = L * n_windows
    n_chars = (need + _SAFETY_TOKENS) * _CHARS_PER_TOKEN
    while True:
        prefix = _cut_at_line(text, n_chars)
        whole = len(prefix) == len(text)
        ids = encode(tokenizer, prefix)
        usable = len(ids) if whole else len(ids) - _SAFETY_TOKENS
        if usable >= need:
            break
        if whole:
            check_windows(len(ids), L, n_windows, source)
        if n_chars >= (need + _SAFETY_TOKENS) * _MAX_CHARS_PER_TOKEN:
            raise _SparseTextError(
                f"{source} has {len(ids):,} tokens in {len(prefix):,} characters where its "
                f"windows start, too few for {n_windows} window(s) of {L} tokens: under one "
                f"token per {_MAX_CHARS_PER_TOKEN} characters, which no text in words has (is "
                "it text?)"
            )
        n_chars *= 2
    return torch.tensor(ids[:need], dtype=torch.long).view(n_windows, L)  # [n_windows, L]


class SpreadWindows(NamedTuple):
    """Windows spread over a text, and where each starts (recorded in a run's ``run.json``)."""

    ids: Tensor  # [n_windows, L]
    char_starts: tuple[int, ...]  # character offset of each window's first line in the text
    first_lines: tuple[str, ...]  # that line's first 60 characters, for a reader to find it


def spread_windows(
    tokenizer: Any, text: str, L: int, n_windows: int, *, source: str = "the text"
) -> SpreadWindows:
    """``n_windows`` windows of ``L`` tokens spread evenly over the text, deterministically.

    Window ``i`` starts at the first non-blank line after character ``(2i + 1)/(2 n) · len(text)``
    (the middle of the i-th of n equal parts, so the first window is not the book's title page)
    and holds the first ``L`` tokens of the text from there, tokenised without special tokens.
    Windows may not overlap: a text too short for that raises the one-line ``ValueError`` of
    :func:`check_windows`. Only a stretch around each start is tokenised, never the whole text.
    """
    for name, value in (("L", L), ("n_windows", n_windows)):
        check_int_at_least(value, name, 1)
    part = len(text) / n_windows
    starts = []
    for i in range(n_windows):
        mid = int((2 * i + 1) * part / 2)
        line = re.compile(r"\n\s*(\S)").search(text, mid, int(mid + part / 2))
        starts.append(line.start(1) if line else mid)
    rows: list[list[int]] = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < n_windows else len(text)
        try:
            rows.append(token_windows(tokenizer, text[start:end], L, 1, source=source)[0].tolist())
        except _SparseTextError:
            raise
        except ValueError:
            check_windows(count_tokens(tokenizer, text), L, n_windows, source)
            raise ValueError(
                f"{source} is too short for {n_windows} windows of {L} tokens spread over it "
                f"(window {i + 1} has fewer than {L} tokens before the next one starts; give a "
                "longer text, fewer windows or a smaller L)"
            ) from None
    lines = tuple(text[s : s + 60].split("\n")[0] for s in starts)
    return SpreadWindows(torch.tensor(rows, dtype=torch.long), tuple(starts), lines)


def word_tokenizer(text: str, size: int = 400, *, digits: bool = False) -> Any:
    """An offline word-level tokenizer over the ``size`` most frequent words of ``text``.

    For randomly initialised models (tests, benchmarks) where no pretrained tokenizer can be
    downloaded: words and punctuation split by ``tokenizers``' Whitespace pre-tokenizer, the
    rest mapped to ``[UNK]``; ``[PAD]`` is id 1. ``digits``: numbers split into single digits,
    each a token of its own. Returns a ``PreTrainedTokenizerFast``.
    """
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    counts = Counter(re.findall(r"\w+|[^\w\s]", text[:200_000]))
    top = [w for w, _ in counts.most_common(size - 2)]
    if digits:
        top = [*"0123456789", *(w for w in top if not w.isdigit())][: size - 2]
    vocab = {"[UNK]": 0, "[PAD]": 1} | {w: i + 2 for i, w in enumerate(top)}
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if digits:
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True)]
        )
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]")
