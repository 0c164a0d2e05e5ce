"""How every command ends on bad input: one line on stderr, ``error: ...``, and an exit code."""

from __future__ import annotations

from typing import NoReturn

import typer

__all__ = ["fail"]


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code`` (2: bad input)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=code)
