"""The retrieval probe: secret numbers hidden in the book, asked for at the end of each length.

*Ours* (neither paper has it). A needle ``" The secret number of the <word> is <5 digits>."``
overwrites book tokens at a random depth; a query ``" What is the secret number of the <word>?
The secret number of the <word> is <5 digits>."`` ends in the band ``[L/2, L)`` of each length
L, so its answer is read with a context of about L tokens. Under a causal mask one forward of
the longest sequence serves every length (a row sees only the tokens before it), as in
``attnlimits scan``. Each query asks for a different word, so no query can copy an earlier
query's answer. Scored under teacher forcing: a probe is right when the model's top token is
the right digit at all five digit positions, which is exactly when greedy decoding from the
query would write the number; the answer's negative log-likelihood is kept too.

Why this probe: it is generated from the text with a fixed seed, needs no download, tests one
thing (finding one earlier token sequence among ``L`` others, paper B's "sharp" retrieval),
and a 135M model solves it within its context, so a normaliser that breaks it shows.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import torch
from torch import Tensor

__all__ = ["WORDS", "Probes", "build_probes", "check_numbers", "query_tokens", "score_probes"]

#: Words the needles are about: common nouns, none a name in War and Peace, each one token in
#: most BPE vocabularies (a word of several tokens works too).
WORDS = (
    "apple",
    "river",
    "garden",
    "window",
    "bottle",
    "candle",
    "pencil",
    "mirror",
    "basket",
    "ladder",
    "blanket",
    "button",
    "carpet",
    "violin",
    "rocket",
    "lemon",
    "tiger",
    "orange",
    "planet",
    "island",
    "wallet",
    "kettle",
    "engine",
    "helmet",
    "pillow",
    "saddle",
    "feather",
    "anchor",
    "bridge",
    "castle",
    "cherry",
    "dragon",
    "forest",
    "hammer",
    "jacket",
    "magnet",
    "needle",
    "oyster",
    "parrot",
    "rabbit",
)
_NEEDLE = " The secret number of the {word} is {number}."
_QUERY = " What is the secret number of the {word}? The secret number of the {word} is {number}."
_DIGITS = 5


class Probes(NamedTuple):
    """Probe sequences and where their answers are."""

    ids: Tensor  #: [S, L] book tokens with needles and queries written over some of them
    book: Tensor  #: [S, L] bool, True where the token is still the book's
    table: pd.DataFrame  #: one row per probe (see :func:`build_probes`)


def _encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def query_tokens(tokenizer: Any) -> int:
    """The longest query's length in tokens (over :data:`WORDS`, with a 5-digit number)."""
    return max(len(_encode(tokenizer, _QUERY.format(word=w, number="12345"))) for w in WORDS)


def _answer_span(tokenizer: Any, text: str, number: str) -> tuple[list[int], int]:
    """Tokens of ``text`` (ending in the number and a period) and the index of the first token
    of the shortest token run before the period that decodes to the number (spaces ignored:
    word-level tokenizers decode with a space between tokens)."""
    ids = _encode(tokenizer, text)
    for k in range(1, len(ids)):
        if "".join(tokenizer.decode(ids[-1 - k : -1]).split()) == number:
            return ids, len(ids) - 1 - k
    tail = tokenizer.decode(ids[-8:]) if ids else ""
    raise ValueError(
        f"the tokenizer does not write the number {number} as tokens of its own before the "
        f"period (the query's end reads back as {tail!r}): the retrieval probe needs a "
        "tokenizer that splits numbers into digits or groups of digits, as SmolLM2's and "
        "GPT-2's do"
    )


def _draws(seed: int, sequence: int, n_probes: int) -> tuple[np.random.Generator, Any, Any]:
    """The generator of one sequence's probes, and their words (indices) and numbers."""
    rng = np.random.default_rng([seed, sequence])
    words = rng.choice(len(WORDS), size=n_probes, replace=False)
    numbers = rng.integers(10 ** (_DIGITS - 1), 10**_DIGITS, size=n_probes)
    return rng, words, numbers


def check_numbers(tokenizer: Any, n_probes: int, sequences: int, seed: int) -> None:
    """Refuse, before any model loads, a tokenizer that cannot write the numbers the probes of
    :func:`build_probes` will ask for (the same draws): a ``ValueError`` saying what the probe
    needs (numbers as digits or groups of digits, apart from the period after them)."""
    for s in range(sequences):
        _, words, numbers = _draws(seed, s, min(n_probes, len(WORDS)))
        for word, number in zip(words, numbers, strict=True):
            query = _QUERY.format(word=WORDS[word], number=number)
            _answer_span(tokenizer, query, str(number))


def _free_start(rng: np.random.Generator, busy: np.ndarray, size: int, stop: int) -> int:
    """A random start in [0, stop − size] whose ``size`` tokens are all free (rejection first,
    then the first free slot; ``ValueError`` if there is none)."""
    for _ in range(64):
        start = int(rng.integers(0, max(1, stop - size + 1)))
        if not busy[start : start + size].any():
            return start
    window = np.lib.stride_tricks.sliding_window_view(busy[:stop], size).any(axis=1)
    free = np.flatnonzero(~window)
    if not len(free):
        raise ValueError(f"no room for a needle of {size} tokens before position {stop}")
    return int(free[0])


def build_probes(
    tokenizer: Any, book_ids: Tensor, lengths: tuple[int, ...], per_length: int, seed: int
) -> Probes:
    """Write needles and queries over ``book_ids`` ``[S, max(lengths)]``.

    Per sequence and length L, ``per_length`` queries end back to back at position L (the last
    one's final token is row L − 1), each about its own word, whose needle starts uniformly at
    random before that query (not overlapping anything written). ``table`` has one row per
    probe: ``sequence``, ``length``, ``word``, ``number``, ``needle_start``, ``query_start``,
    ``answer_start`` (the first digit's position), ``answer_tokens``, ``depth`` (needle start /
    query start, 0 = the sequence's start) and ``distance`` (answer start − needle start).
    """
    ids = book_ids.clone()
    S, L = ids.shape
    book = torch.ones_like(ids, dtype=torch.bool)
    rows = []
    n_probes = len(lengths) * per_length
    if n_probes > len(WORDS):
        raise ValueError(f"at most {len(WORDS)} probes per sequence, asked for {n_probes}")
    for s in range(S):  # a few sequences and probes, not tokens: the loop is cheap
        rng, words, numbers = _draws(seed, s, n_probes)
        busy = np.zeros(L, dtype=bool)
        queries = []
        for j, length in enumerate(sorted(lengths)):
            end = length
            for i in range(per_length):
                word, number = WORDS[words[j * per_length + i]], str(numbers[j * per_length + i])
                q, first = _answer_span(tokenizer, _QUERY.format(word=word, number=number), number)
                start = end - len(q)
                if start < length // 2:
                    raise ValueError(f"length {length} has no room for {per_length} probes")
                ids[s, start:end] = torch.tensor(q)
                busy[start:end] = True
                queries.append((length, word, number, start, start + first, len(q) - first - 1))
                end = start
        for length, word, number, q_start, a_start, n_answer in queries:
            needle = _encode(tokenizer, _NEEDLE.format(word=word, number=number))
            n_start = _free_start(rng, busy, len(needle), q_start)
            ids[s, n_start : n_start + len(needle)] = torch.tensor(needle)
            busy[n_start : n_start + len(needle)] = True
            rows.append(
                {
                    "sequence": s,
                    "length": length,
                    "word": word,
                    "number": number,
                    "needle_start": n_start,
                    "query_start": q_start,
                    "answer_start": a_start,
                    "answer_tokens": n_answer,
                    "depth": n_start / q_start,
                    "distance": a_start - n_start,
                }
            )
        book[s] = torch.from_numpy(~busy)
    return Probes(ids, book, pd.DataFrame(rows))


def score_probes(table: pd.DataFrame, ids: Tensor, logits_at: Any) -> pd.DataFrame:
    """``table`` (one sequence's probes) with ``correct`` (top token right at every answer
    position), ``first_digit`` (right at the first) and ``answer_nll`` (summed over the
    answer's tokens, nats). ``logits_at(positions)`` returns the logits predicting the tokens
    at ``positions`` (from the rows one before)."""
    if not len(table):
        return table.assign(correct=[], first_digit=[], answer_nll=[])
    pos = np.concatenate(
        [
            np.arange(a, a + n)
            for a, n in zip(table["answer_start"], table["answer_tokens"], strict=True)
        ]
    )
    target = ids.cpu()[torch.from_numpy(pos)]
    logits = logits_at(torch.from_numpy(pos)).float()  # (P, V)
    nll = torch.nn.functional.cross_entropy(logits, target, reduction="none")
    hit = (logits.argmax(-1) == target).numpy()
    splits = np.cumsum(table["answer_tokens"].to_numpy())[:-1]
    per = [
        (h.all(), bool(h[0]), float(n.sum()))
        for h, n in zip(np.split(hit, splits), np.split(nll.numpy(), splits), strict=True)
    ]
    correct, first, nll_sum = zip(*per, strict=True)
    return table.assign(correct=list(correct), first_digit=list(first), answer_nll=list(nll_sum))
