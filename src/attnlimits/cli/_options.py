"""List options, parsed one way for every command: comma-separated or repeated values, finite
numbers where numbers are asked for, and each value once (a repeat is refused, naming it, as
the experiments' Configs and a sweep's axes refuse one); and the options several commands share."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any

import typer

from attnlimits.cli._errors import fail

__all__ = [
    "AllowIncomplete",
    "Beyond",
    "Device",
    "Dtype",
    "Fresh",
    "Model",
    "Quick",
    "Text",
    "distinct",
    "names",
    "numbers",
    "path",
    "repeated",
    "specs",
]

Model = Annotated[
    str | None,
    typer.Option(help="Named model (smollm2-135m, gpt2, minilm-l6), hub id, or local folder."),
]
Text = Annotated[
    str | None,  # a str, so that an empty --text is refused, not read as "." (typer's Path(""))
    typer.Option(help="Plain-text book; default: War and Peace ($ATTNLIMITS_TEXT, or cached)."),
]
Device = Annotated[str | None, typer.Option(help="cpu, cuda or cuda:N (checked before loading).")]
Dtype = Annotated[
    str | None,
    typer.Option(
        help="The weights' precision: auto (default: float32 where it fits in memory, else the "
        "checkpoint's own; the checkpoint's own on a GPU), float32, bfloat16 or float16. "
        "Attention maps and statistics are computed in float32 whichever it is."
    ),
]
Quick = Annotated[bool, typer.Option(help="Small grids (smoke run); options you give still win.")]
Fresh = Annotated[
    bool,
    typer.Option(
        help="Start afresh over a previous run in --out with other settings; removes only "
        "the files that run wrote."
    ),
]
Beyond = Annotated[
    bool | None, typer.Option(help="Allow lengths past the model's context (a warning only).")
]
AllowIncomplete = Annotated[
    bool | None,
    typer.Option(
        help="Load a model whose files lack tensors, hold unexpected ones or hold some in "
        "another shape (refused by default: transformers fills them at random); "
        "report.md and run.json then say so."
    ),
]

#: What each item of a list option must be, where more than "a number".
_KIND_WORD = {int: ", each a whole number"}


def distinct(values: tuple, flag: str) -> tuple:
    """``values``, or one ``error:`` line naming the ones ``flag`` repeats."""
    from attnlimits._checks import check_distinct  # torch: not on the path of `view`

    try:
        check_distinct(values, flag)
    except ValueError as err:
        fail(str(err))
    return values


def _items(text: str, flag: str, what: str) -> list[str]:
    """The comma-separated items of ``text``, empty ones dropped; a comma inside brackets is
    part of its item (``sink_softmax:sink=[1,2],adaptive`` is two specs)."""
    items = [v.strip() for v in re.split(r",(?![^\[\]]*\])", text) if v.strip()]
    if not items:
        fail(f"{flag} needs at least one {what}, got {text!r}")
    return items


def numbers(text: str | None, kind: Callable[[str], Any], name: str) -> tuple | None:
    """``--lengths 32,64,128``: finite numbers of ``kind``, each once; None when not given."""
    if text is None:
        return None
    flag, each = f"--{name}", _KIND_WORD.get(kind, "")  # type: ignore[call-overload]
    items = _items(text, flag, "number")
    try:
        values = tuple(kind(v) for v in items)
    except ValueError:
        fail(f"{flag} takes comma-separated numbers{each}, got {text!r}")
    if not all(math.isfinite(v) for v in values):
        fail(f"{flag} takes finite numbers, got {text!r}")
    return distinct(values, flag)


def path(text: str | None, name: str) -> Path | None:
    """A path option: an empty one is refused (``Path("")`` would be the current folder)."""
    if text is None:
        return None
    if not text.strip():
        fail(f"--{name} is empty; give a path")
    return Path(text)


def names(text: str | None, name: str) -> tuple[str, ...] | None:
    """``--normalizers softmax,adaptive``: names, each once; None when not given."""
    if text is None:
        return None
    flag = f"--{name}"
    return distinct(tuple(_items(text, flag, "name")), flag)


def repeated(values: Iterable[str] | None, name: str, *, split: bool = True) -> tuple | None:
    """A repeatable option (``--x-source values --x-source keys``, or with ``split`` also
    ``--x-source values,keys``): each value once; None when not given."""
    if not values:
        return None
    flag = f"--{name}"
    items = [i for v in values for i in (_items(v, flag, "value") if split else [v])]
    return distinct(tuple(items), flag)


def specs(text: str | None, name: str) -> tuple[str, ...] | None:
    """``--normalizers adaptive,topk:k=64``: normaliser specs, each checked as typed (its
    message quotes the spec as the user wrote it) and each once, whatever its spelling
    (``topk:k=4`` and ``topk: k=4`` are one)."""
    given = names(text, name)
    if given is None:
        return None
    from attnlimits.experiments.compare.config import spec_key

    keys: dict[Any, str] = {}
    for spec in given:
        try:
            key = spec_key(spec)
        except ValueError as err:
            fail(str(err))
        if key in keys:  # the same spelling was refused by names()
            fail(f"--{name} repeats {keys[key]!r} as {spec!r}; give each normalizer once")
        keys[key] = spec
    return given
