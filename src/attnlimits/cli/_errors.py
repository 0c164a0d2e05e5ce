"""How every command ends on bad input: one line on stderr, ``error: ...``, and an exit code;
and how it shows a warning: one line, ``warning: ...``."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer

__all__ = ["fail", "one_line_warnings"]


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code`` (2: bad input)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=code)


@contextmanager
def one_line_warnings() -> Iterator[None]:
    """Inside the block, a warning prints as ``warning: message`` on stderr (not Python's
    ``file:line: Category: message`` and the source line); restored on exit."""

    def show(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
        typer.echo(f"warning: {message}", err=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield
