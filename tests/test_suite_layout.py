"""The test suite's own shape (issue 55, "Tests by module").

- no module under tests/ imports a test module (``test_*.py``): what several test modules
  share lives in tests/conftest.py (fixtures) or in a helper module beside it (tiny_models.py,
  made_up_tables.py, browser_driver.py, ...), so a test module can be split, renamed or run
  alone without breaking another;
- a helper module holds no test (pytest collects ``test_*.py`` only: a test there never runs);
- no test file is longer than :data:`LONG_TEST_FILE` lines: a longer one is split by the module
  or concern it tests;
- every test the docs name (``tests/test_x.py::test_name``, and ``::test_other`` after it)
  exists, so moving a test between files cannot leave the docs pointing at nothing.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

from conftest import REPO

TESTS = REPO / "tests"
LONG_TEST_FILE = 700
#: (module, test module it imports) still to move, with why they wait: the helpers sit in test
#: modules that other work is changing now; each entry must still happen (the list shrinks).
PENDING_IMPORTS: set[tuple[str, str]] = set()
#: Test files over LONG_TEST_FILE lines still to split (each must still be that long).
PENDING_SPLITS: set[str] = set()


def _test_module(name: str) -> bool:
    return name.startswith("test_") and (TESTS / f"{name}.py").is_file()


def _imported_test_modules(path: Path) -> set[str]:
    """The test modules ``path`` imports, at any depth (``tests.test_x``, ``.test_x`` and
    ``import_module("test_x")`` included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or "", *(a.name for a in node.names)]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
            names = [a.value for a in node.args if isinstance(a, ast.Constant)]
        found |= {n.rsplit(".", 1)[-1] for n in names if _test_module(n.rsplit(".", 1)[-1])}
    return found


def test_no_test_module_imports_another_test_module():
    imports = {
        (path.stem, imported)
        for path in sorted(TESTS.glob("*.py"))
        for imported in _imported_test_modules(path)
        if imported != path.stem
    }
    assert imports - PENDING_IMPORTS == set(), "move the shared helpers into a helper module"
    assert PENDING_IMPORTS - imports == set(), "done: remove it from PENDING_IMPORTS"


def test_the_import_check_sees_every_form(tmp_path, monkeypatch):
    """The check is not blind: each way of importing a test module is found, a helper module's
    import is not."""
    monkeypatch.setitem(globals(), "TESTS", tmp_path)
    for name in ("test_a", "test_b", "helper"):
        (tmp_path / f"{name}.py").write_text("")
    forms = [
        "from test_a import x",
        "import test_a",
        "from tests.test_a import x",
        "from tests import test_a",
        "def f():\n    from test_a import x",
        "import importlib\nimportlib.import_module('test_a')",
    ]
    for code in forms:
        (tmp_path / "test_b.py").write_text(code + "\nfrom helper import y\n")
        assert _imported_test_modules(tmp_path / "test_b.py") == {"test_a"}, code


def test_helper_modules_hold_no_tests():
    for path in sorted(TESTS.glob("*.py")):
        if path.name.startswith("test_") or path.name == "conftest.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        tests = [n.name for n in tree.body if getattr(n, "name", "").startswith("test_")]
        assert tests == [], f"{path.name} is not collected: move {tests} into a test module"


def test_no_test_file_is_longer_than_700_lines():
    long = {
        path.name
        for path in TESTS.glob("test_*.py")
        if len(path.read_text(encoding="utf-8").splitlines()) > LONG_TEST_FILE
    }
    assert long - PENDING_SPLITS == set(), "split it by the module or concern it tests"
    assert PENDING_SPLITS - long == set(), "done: remove it from PENDING_SPLITS"


#: ``tests/test_x.py``, optionally ``::test_name``; or ``::test_name`` alone (the same file).
DOC_REF = re.compile(r"tests/([\w*]+\.py)(?:::([\w*]+))?|(?<![\w/.])::(\w[\w*]*)")


def test_every_test_the_docs_name_exists():
    """``tests/test_x.py::test_name`` (a ``*`` matches any run of characters), and
    ``::test_other`` later on the same line, in README.md and docs/."""
    defined = {
        path.name: {getattr(n, "name", "") for n in ast.parse(path.read_text("utf-8")).body}
        for path in TESTS.glob("*.py")
    }
    missing, checked = [], 0
    for doc in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            file = None
            for m in DOC_REF.finditer(line):
                file = m.group(1) or file
                name = m.group(2) or m.group(3)
                if file is None or "*" in file:
                    continue
                checked += 1
                where = f"{doc.relative_to(REPO)}:{number}"
                if file not in defined:
                    missing.append(f"{where}: tests/{file}")
                elif name and not fnmatch.filter(defined[file], name):
                    missing.append(f"{where}: tests/{file}::{name}")
    assert checked > 100, checked  # the docs name many tests: the pattern still finds them
    assert missing == [], missing
