"""A sweep spec's text as plain data, TOML or YAML, bounded before it is built (issue 43).

A spec is a few settings and lists, so whatever is far beyond that is refused in one line
naming the file (and the line, where the parser knows it), before it can hang or raise a
traceback:

- a key given twice (YAML keeps the later value silently; TOML refuses it by position only);
- nesting deeper than :data:`MAX_DEPTH` (PyYAML's composer and ``tomllib`` recurse, so 5,000
  levels end in ``RecursionError``);
- a recursive alias (``&a [*a]``: a structure that contains itself);
- aliases expanding past :data:`MAX_NODES` values ("billion laughs": a 546-byte file that
  expands to 10⁹ strings).

The YAML bounds are checked on PyYAML's event stream, which the parser produces without
recursion, stopping at the first event past a bound: nothing is composed or expanded first.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["MAX_DEPTH", "MAX_NODES", "read_data"]

#: Nesting a spec may use: [axes] -> an axis -> a value that is a list -> ... (about 4 needed).
MAX_DEPTH = 32
#: Values (scalars, lists, tables), counting every alias as what it expands to.
MAX_NODES = 100_000


class _SpecLoader(yaml.SafeLoader):
    """PyYAML's safe loader (plain data only) refusing a mapping key given twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:  # a merge (<<: *base) may be overridden: not a repeat
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                key = self.construct_scalar(key_node)
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise _Refused(f"key {key!r} given twice (line {seen[key]} and line {line})")
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


class _Refused(Exception):
    """A bound crossed; the message is the reason (the file is added by :func:`read_data`)."""


def _check_events(text: str) -> None:
    """Depth, recursive aliases and the expanded size of ``text``'s YAML, from its events."""
    stack: list[list[Any]] = []  # per open collection: [anchor, expanded size, height]
    done: dict[str, tuple[int, int]] = {}  # anchor -> (expanded size, height) of its node
    total = 0

    def place(size: int, height: int, line: int, what: str = "") -> None:
        """A node of ``size`` values and ``height`` levels (expanded) inside the open one."""
        nonlocal total
        total += size
        if total > MAX_NODES:
            raise _Refused(
                f"line {line}: {what}the spec expands past {MAX_NODES:,} values; "
                "a spec holds plain data: write the values out"
            )
        if len(stack) + height > MAX_DEPTH:
            raise _Refused(f"line {line}: nested deeper than {MAX_DEPTH} levels")
        if stack:
            stack[-1][1] += size
            stack[-1][2] = max(stack[-1][2], height + 1)

    for event in yaml.parse(text, Loader=_SpecLoader):
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            name = event.anchor
            if any(frame[0] == name for frame in stack):
                raise _Refused(
                    f"line {line}: alias *{name} lies inside its own anchor "
                    f"&{name} (a structure containing itself)"
                )
            if name in done:  # (an undefined alias: the loader's own error, later)
                place(*done[name], line, f"with alias *{name} ")
        elif isinstance(event, yaml.ScalarEvent):
            place(1, 0, line)
            if event.anchor is not None:
                done[event.anchor] = (1, 0)
        elif isinstance(event, yaml.CollectionStartEvent):
            place(1, 1, line)  # the collection itself (its items add on when it ends)
            stack.append([event.anchor, 0, 1])
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, size, height = stack.pop()
            if stack:  # its items (itself was counted at its start)
                stack[-1][1] += size
                stack[-1][2] = max(stack[-1][2], height + 1)
            if anchor is not None:
                done[anchor] = (size + 1, height)


def _load_yaml(text: str) -> Any:
    _check_events(text)
    return yaml.load(text, Loader=_SpecLoader)  # a SafeLoader: plain data only


def _toml_error(err: tomllib.TOMLDecodeError, text: str) -> str:
    """tomllib's message, with the key named where it refuses one given twice."""
    message = str(err)
    at = re.search(r"\(at line (\d+), column \d+\)$", message)
    declared = re.match(r"Cannot declare \((.*)\) twice", message)
    if declared:
        key = ".".join(part.strip().strip("'\"") for part in declared.group(1).split(",") if part)
    elif message.startswith("Cannot overwrite a value") and at:
        line = text.splitlines()[int(at.group(1)) - 1]
        key = line.split("=")[0].strip().strip("[]").strip()
    else:
        return f"not valid TOML: {message}"
    where = f" (line {at.group(1)})" if at else ""
    return f"key {key!r} given twice{where}"


def _depth(data: Any) -> int:
    """How deeply ``data`` nests lists and tables (iteratively: no recursion to exhaust)."""
    deepest, todo = 0, [(data, 0)]
    while todo:
        value, level = todo.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            deepest = max(deepest, level + 1)
            if level + 1 > MAX_DEPTH:
                break
            todo.extend((v, level + 1) for v in value)
    return deepest


def read_data(path: Path, text: str) -> Any:
    """The spec's data: TOML, or YAML for a ``.yaml``/``.yml`` file (plain data only). A parse
    error, a key given twice, nesting past :data:`MAX_DEPTH` or aliases past :data:`MAX_NODES`
    raise ``ValueError`` in one line naming ``path`` (and the line where known)."""
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            try:
                data = _load_yaml(text)
            except yaml.YAMLError as err:
                raise _Refused("not valid YAML: " + " ".join(str(err).split())) from None
        else:
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as err:
                raise _Refused(_toml_error(err, text)) from None
            except RecursionError:
                raise _Refused(f"nested deeper than {MAX_DEPTH} levels") from None
        if _depth(data) > MAX_DEPTH:
            raise _Refused(f"nested deeper than {MAX_DEPTH} levels")
    except _Refused as err:
        raise ValueError(f"{path}: {err}") from None
    return data
