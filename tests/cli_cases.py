"""A bad-input case's outcome and its one ``error:`` line, as docs/reliability.md shows it
(tests/test_cli.py runs the cases; tests/test_torch_builds.py renders one under another torch)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class Result(NamedTuple):
    code: int
    output: str
    changed: list[str]  # what the case added, removed or touched on disk
    out: Path  # its --out


def error_message(result: Result, env: dict[str, str]) -> str:
    """The ``error:`` line, with the scratch paths and torch's version as placeholders."""
    import torch

    line = next((ln for ln in result.output.splitlines() if ln.startswith("error:")), "")
    subs = [("OUT", str(result.out)), *sorted(env.items(), key=lambda kv: -len(kv[1]))]
    for name, value in [*subs, ("TORCH", torch.__version__)]:
        line = line.replace(value, "{" + name + "}")
    return line
