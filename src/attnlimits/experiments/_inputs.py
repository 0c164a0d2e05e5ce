"""Checks the experiments that take any model and any text share (scan, compare, limitations,
long-context).

Private to :mod:`attnlimits.experiments`: the model name, the text path, a text long enough for
the windows, lengths within the model's context, and what ``run.json`` records of the model.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict
from os import PathLike
from pathlib import Path
from typing import Any

__all__ = [
    "check_context",
    "check_flag",
    "check_model_name",
    "check_text_room",
    "model_record",
    "text_path",
]


def check_model_name(model: Any) -> None:
    """A non-empty string: a named model, hub id, folder or GGUF file (else ``ValueError``)."""
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"model must be a name, hub id, folder or GGUF file, got {model!r}")


def check_flag(value: Any, name: str) -> None:
    """``value`` is True or False (else ``ValueError`` naming ``name``)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")


def model_record(model: str, loaded: Any) -> dict[str, Any]:
    """What ``run.json`` records of a loaded model: its name and facts, what names its files'
    content, and the tensors its weights lacked where ``allow_incomplete_weights`` let them
    load (report.md repeats those)."""
    return {
        "id": model,
        "content": loaded.content,
        "incomplete": loaded.incomplete,
        "dtype": str(loaded.model.dtype).removeprefix("torch."),  # the weights' precision
        **asdict(loaded.info),
    }


def text_path(text: Any) -> Path | None:
    """``text`` as a ``Path`` (None stays None: the embedded book); else ``ValueError``."""
    if text is None:
        return None
    if not isinstance(text, (str, PathLike)):
        raise ValueError(f"text must be a file path or None, got {text!r}")
    return Path(text)


def check_text_room(text: str, source: str, length: int, count: int, what: str) -> None:
    """Refuse a text too short for ``count`` stretches of ``length`` tokens before the model
    loads (a token is at least one character)."""
    if len(text) < length * count:
        raise ValueError(
            f"{source} has {len(text):,} character{'' if len(text) == 1 else 's'}, too short "
            f"for {count} {what}(s) of {length} tokens; give a longer text, fewer {what}s or "
            "shorter lengths"
        )


def check_context(
    model: str, length: int, context: int | None, beyond_context: bool, verb: str
) -> None:
    """A length past the model's ``context``: an error, or with ``beyond_context`` a warning."""
    if context is None or length <= context:
        return
    message = f"L = {length} exceeds {model}'s context of {context} tokens"
    if not beyond_context:
        raise ValueError(f"{message}; pass --beyond-context to {verb} past it anyway")
    warnings.warn(f"{message}: going past it as asked (--beyond-context)", stacklevel=3)
