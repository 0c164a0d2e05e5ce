"""The package's shape, checked from its source (docs/architecture.md draws it).

- no import cycle among the modules of ``src/attnlimits``, function-level imports included;
- a ``_private`` name is never imported from another module, and a ``_private`` module is never
  imported from outside the (sub)package that holds it;
- a lower layer never imports a higher one (:data:`LAYERS`);
- only ``attnlimits.hf_bridge`` imports transformers' attention internals;
- no file under ``src/`` or ``benchmarks/`` is longer than 400 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO

SRC = REPO / "src"
PACKAGE = "attnlimits"
#: Layer of each top-level part; a module may import its own layer or lower ones only.
LAYERS = {
    "_checks": 0,
    "_paths": 0,
    "_grad": 0,
    "_openmp": 0,  # standard library only: runs before torch loads (attnlimits/__init__.py)
    "hf_bridge": 0,
    "normalizers": 1,
    "theory": 1,
    "corpus": 1,
    "metrics": 2,
    "capture": 3,
    "kernels": 3,
    "experiments": 4,
    "monitor": 4,
    "view": 4,  # the report step (experiments) and the monitor write its pages
    "errata": 5,
    "cli": 5,
    "_registration": 5,  # registers the kernels with transformers for the package face
    "": 5,  # the package's face, attnlimits/__init__.py
}
#: transformers' modules and names that only the bridge may touch.
INTERNALS = (
    "transformers.masking_utils",
    "transformers.modeling_utils",
    "transformers.integrations",
)
INTERNAL_NAMES = {"AttentionInterface", "AttentionMaskInterface", "ALL_ATTENTION_FUNCTIONS"}
MAX_LINES = 400


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / PACKAGE).rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(module: str, path: Path) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every import, at any depth."""
    is_pkg = path.name == "__init__.py"
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if is_pkg else module.split(".")[:-1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join(here + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append(
                    (sub, None, node.lineno) if sub in MODULES else (base, alias.name, node.lineno)
                )
    return found


def _owner(name: str) -> str | None:
    """The package module an import resolves to (the longest known prefix)."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in MODULES else None


def _edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        for target, _, _ in _imports(module, path):
            owner = _owner(target)
            if owner is None or owner == module:
                continue
            if module.startswith(owner + ".") or owner.startswith(module + "."):
                continue  # a package and its own submodules
            edges[module].add(owner)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    assert _cycles(_edges()) == []


def test_the_cycle_finder_finds_cycles() -> None:
    """The check above can fail: a planted cycle, function-level import included, is found."""
    edges = {m: set(e) for m, e in _edges().items()}
    edges["attnlimits.metrics.entropy"].add("attnlimits.metrics.jacobian")
    edges["attnlimits.metrics.jacobian"].add("attnlimits.metrics.entropy")
    assert ["attnlimits.metrics.entropy", "attnlimits.metrics.jacobian"] in _cycles(edges)


def _private_violations() -> list[str]:
    bad = []
    for module, path in MODULES.items():
        for target, name, line in _imports(module, path):
            if not target.startswith(PACKAGE):
                continue
            where = f"{path.relative_to(REPO)}:{line}"
            if name is not None and name.startswith("_") and not name.startswith("__"):
                bad.append(f"{where} imports the private name {name} from {target}")
            parts = target.split(".")
            for i, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__"):
                    home = ".".join(parts[:i])  # the (sub)package that holds the private module
                    if not (module == home or module.startswith(home + ".")):
                        bad.append(f"{where} imports {target}, private to {home}")
                    break
    return bad


def test_private_names_stay_home() -> None:
    assert _private_violations() == []


def _layer(module: str) -> int:
    rest = module.removeprefix(PACKAGE).lstrip(".")
    return LAYERS[rest.split(".")[0]]


def test_lower_layers_never_import_higher_ones() -> None:
    bad = [
        f"{m} (layer {_layer(m)}) imports {t} (layer {_layer(t)})"
        for m, targets in _edges().items()
        for t in targets
        if _layer(t) > _layer(m)
    ]
    assert bad == []


def test_every_part_has_a_layer() -> None:
    parts = {m.removeprefix(PACKAGE).lstrip(".").split(".")[0] for m in MODULES}
    assert parts <= set(LAYERS), sorted(parts - set(LAYERS))


def test_only_the_bridge_touches_transformers_internals() -> None:
    bad = []
    for module, path in MODULES.items():
        if module == f"{PACKAGE}.hf_bridge":
            continue
        for target, name, line in _imports(module, path):
            if target.startswith(INTERNALS) or (
                target.startswith("transformers") and name in INTERNAL_NAMES
            ):
                bad.append(f"{path.relative_to(REPO)}:{line} imports {target} {name or ''}")
    assert bad == []


@pytest.mark.parametrize("folder", ["src", "benchmarks"])
def test_no_file_over_400_lines(folder: str) -> None:
    long = {
        str(p.relative_to(REPO)): n
        for p in sorted((REPO / folder).rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
