"""Checks the experiments that take any model and any text share (scan, compare).

Private to :mod:`attnlimits.experiments`: the model name, the text path, a text long enough for
the windows, and lengths within the model's context.
"""

from __future__ import annotations

import warnings
from os import PathLike
from pathlib import Path
from typing import Any

__all__ = ["check_context", "check_model_name", "check_text_room", "text_path"]


def check_model_name(model: Any) -> None:
    """A non-empty string: a named model, hub id, folder or GGUF file (else ``ValueError``)."""
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"model must be a name, hub id, folder or GGUF file, got {model!r}")


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
