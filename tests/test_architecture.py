"""The package's shape, checked from its source (docs/architecture.md draws it).

- no import cycle among the modules of ``src/attnlimits``, function-level imports and the
  ``__init__`` of every package an import runs included;
- a ``_private`` name is never imported from another module, and a ``_private`` module is never
  imported from outside the (sub)package that holds it;
- a lower layer never imports a higher one (:data:`LAYERS`);
- only ``attnlimits.hf_bridge`` imports transformers' attention internals;
- a file under ``src/`` or ``benchmarks/`` longer than 600 lines is named in a warning.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

from conftest import REPO

SRC = REPO / "src"
PACKAGE = "attnlimits"
#: Layer of each top-level part; a module may import its own layer or lower ones only.
LAYERS = {
    "_checks": 0,
    "_paths": 0,
    "_files": 0,
    "_grad": 0,
    "_openmp": 0,  # standard library only: runs before torch loads (attnlimits/__init__.py)
    "hf_bridge": 0,
    "normalizers": 1,
    "theory": 1,
    "corpus": 1,
    "metrics": 2,
    "claims": 2,  # the claims engine: pure Python, below the view that renders its verdicts
    "capture": 3,
    "kernels": 3,
    "view": 3,  # a renderer: the experiments and the monitor hand it what their pages show
    "experiments": 4,
    "monitor": 4,
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
#: Past this many lines a file is named in a warning (STYLE.md: a hint, not a rule).
LONG_FILE = 600


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


def _module_edges(module: str, path: Path) -> set[str]:
    """The package modules that importing ``path`` (as ``module``) runs: each import's module
    and the ``__init__`` of every package on its way (importing ``a.b.c`` runs ``a.b``'s),
    function-level imports included; a module's own enclosing packages are not counted (they
    run before it), a package's own submodules are."""
    out: set[str] = set()
    for target, _, _ in _imports(module, path):
        owner = _owner(target)
        if owner is None:
            continue
        parts = owner.split(".")
        for i in range(1, len(parts) + 1):
            step = ".".join(parts[:i])
            if step in MODULES and step != module and not module.startswith(step + "."):
                out.add(step)
    return out


def _edges() -> dict[str, set[str]]:
    return {module: _module_edges(module, path) for module, path in MODULES.items()}


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


def _planted(tmp_path: Path, module: str, source: str) -> set[str]:
    """The edges of ``source`` as if it were ``module``'s."""
    path = tmp_path / "planted.py"
    path.write_text(source, encoding="utf-8")
    return _module_edges(module, path)


PLANTED = "def draw():\n    from attnlimits.experiments.scan.page import page\n    return page\n"


def test_the_cycle_finder_sees_function_level_imports_through_package_inits(tmp_path) -> None:
    """A function-level import in the renderer of an experiment's page closes a circle through
    ``attnlimits.view``'s ``__init__`` (the page imports the package, which runs ``pages``): the
    circle the renderer once had with ``skeleton``, hidden in a function."""
    edges = {m: set(e) for m, e in _edges().items()}
    edges["attnlimits.view.pages"] |= _planted(tmp_path, "attnlimits.view.pages", PLANTED)
    found = [c for c in _cycles(edges) if "attnlimits.view.pages" in c]
    assert found and "attnlimits.experiments.scan.page" in found[0]


def test_a_function_level_import_upwards_is_caught(tmp_path) -> None:
    """The layer check can fail: the renderer (view, layer 3) importing an experiment (layer 4)
    inside a function is found."""
    edges = {m: set(e) for m, e in _edges().items()}
    edges["attnlimits.view.planted"] = _planted(tmp_path, "attnlimits.view.planted", PLANTED)
    bad = _layer_violations(edges)
    assert (
        "attnlimits.view.planted (layer 3) imports attnlimits.experiments.scan.page (layer 4)"
        in bad
    )


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


def _layer_violations(edges: dict[str, set[str]]) -> list[str]:
    return [
        f"{m} (layer {_layer(m)}) imports {t} (layer {_layer(t)})"
        for m, targets in edges.items()
        for t in sorted(targets)
        if _layer(t) > _layer(m)
    ]


def test_lower_layers_never_import_higher_ones() -> None:
    assert _layer_violations(_edges()) == []


def test_the_renderer_names_no_experiment() -> None:
    """``attnlimits.view`` is handed each page's content: no experiment's name appears in its
    code (Python or JavaScript) as a string, so none is special-cased there."""
    from attnlimits.experiments.skeleton import EXPERIMENTS

    files = sorted(p for p in (SRC / PACKAGE / "view").rglob("*") if p.suffix in (".py", ".js"))
    named = [
        f"{p.relative_to(REPO)} names {name!r}"
        for p in files
        for name in EXPERIMENTS
        if f'"{name}"' in (text := p.read_text(encoding="utf-8")) or f"'{name}'" in text
    ]
    assert files and named == []


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
def test_long_files_are_named(folder: str) -> None:
    """No hard cap (a cap turned into squeezed lines, issue 55): a file past
    :data:`LONG_FILE` lines is named in a warning, a hint that an idea may want its own module."""
    long = {
        str(p.relative_to(REPO)): n
        for p in sorted((REPO / folder).rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > LONG_FILE
    }
    if long:
        warnings.warn(f"files over {LONG_FILE} lines: {long}", stacklevel=1)
