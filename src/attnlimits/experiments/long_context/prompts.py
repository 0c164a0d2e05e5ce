"""Max-finding prompts: n distinct numbers, one per line, and the start of the answer."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ANSWER_PREFIX",
    "QUESTION",
    "MaxPrompt",
    "build_prompts",
    "format_prompt",
    "parse_answer",
    "sample_numbers",
]

QUESTION = "Which number is the largest?"
ANSWER_PREFIX = "The largest number is "


@dataclass(frozen=True)
class MaxPrompt:
    """One max-finding prompt: ``numbers`` in the order shown, ``target = max(numbers)``."""

    n: int
    index: int
    numbers: tuple[int, ...]
    target: int
    text: str


def sample_numbers(n: int, rng: np.random.Generator, low: int = 100, high: int = 999) -> list[int]:
    """``n`` distinct integers drawn uniformly from ``[low, high]``, in random order."""
    if not 1 <= n <= high - low + 1:
        raise ValueError(f"cannot draw {n} distinct integers from [{low}, {high}]")
    return [int(x) for x in rng.choice(np.arange(low, high + 1), size=n, replace=False)]


def format_prompt(numbers: list[int] | tuple[int, ...], tokenizer: Any = None, chat: bool = True):
    """The question, one number per line, and the start of the answer.

    With ``chat`` and a tokenizer that has a chat template, the question is the user turn and
    :data:`ANSWER_PREFIX` starts the assistant turn; otherwise plain text. Either way the text ends
    with ``"The largest number is "``, so the next tokens are the answer's digits.
    """
    question = QUESTION + "\n" + "\n".join(str(x) for x in numbers)
    if chat and getattr(tokenizer, "chat_template", None):
        turn = [{"role": "user", "content": question}]
        head = tokenizer.apply_chat_template(turn, add_generation_prompt=True, tokenize=False)
        return str(head) + ANSWER_PREFIX
    return question + "\n" + ANSWER_PREFIX


def build_prompts(
    n: int,
    count: int,
    *,
    seed: int = 0,
    low: int = 100,
    high: int = 999,
    tokenizer: Any = None,
    chat: bool = True,
) -> list[MaxPrompt]:
    """``count`` prompts of ``n`` numbers, seeded by ``(seed, n)``: a larger ``count`` extends the
    list (the first prompts stay the same)."""
    rng = np.random.default_rng([seed, n])
    out = []
    for i in range(count):
        xs = sample_numbers(n, rng, low, high)
        out.append(MaxPrompt(n, i, tuple(xs), max(xs), format_prompt(xs, tokenizer, chat)))
    return out


def parse_answer(text: str) -> int | None:
    """The integer the generated ``text`` starts with (after whitespace), else None."""
    match = re.match(r"\s*(\d+)", text)
    return int(match.group(1)) if match else None
