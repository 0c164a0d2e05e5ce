"""Every call in ``src/`` that can delete, replace or rename a file is a reviewed one (issue 32,
the class of items 1-3): it deletes only what attnlimits wrote."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

# ---- the class: every deletion in src/ is a reviewed one ---------------------------------------

#: Calls that remove or replace files: os.<name>(...), shutil.<name>(...), and <x>.unlink(),
#: <x>.rmdir(), <x>.rmtree() on anything (Path's methods). str.replace and DataFrame.rename
#: cannot be told from Path.replace/rename by the syntax; the package calls neither of those.
OS_CALLS = {"os": {"remove", "unlink", "rmdir", "removedirs", "replace", "rename", "truncate"}}
OS_CALLS["shutil"] = {"rmtree", "move"}
METHODS = {"unlink", "rmdir", "rmtree"}

#: (file under src/attnlimits, function, call) -> (how many, why it deletes only ours).
REVIEWED = {
    ("experiments/_owned.py", "Manifest._rewrite", "os.replace"): (1, "the manifest itself"),
    ("experiments/_owned.py", "Manifest._rewrite", ".unlink"): (1, "its own mkstemp temporary"),
    ("experiments/_owned.py", "Manifest.remove", ".unlink"): (1, "listed files only"),
    ("experiments/_owned.py", "Manifest.remove", ".rmdir"): (1, "folders left empty"),
    ("experiments/_owned.py", "Manifest.remove_temporaries", ".unlink"): (1, "*.attnlimits-tmp"),
    ("experiments/_owned.py", "Manifest.discard", ".unlink"): (1, "manifest, lock, owner note"),
    ("experiments/_owned.py", "remove_empty", ".rmdir"): (1, "folders this process created"),
    ("_files.py", "atomic_target", "os.replace"): (1, "a file listed as ours first"),
    ("_files.py", "atomic_target", ".unlink"): (1, "its own mkstemp temporary"),
    ("experiments/store.py", "ResultStore.lock", ".unlink"): (1, "the lock's owner note"),
    ("_paths.py", "probe_write", "os.unlink"): (1, "its own mkstemp probe (store, monitor, cache)"),
    ("capture/_sources.py", "gguf_dir", "os.replace"): (1, "a new entry of the model cache"),
    ("capture/_sources.py", "gguf_dir", "shutil.rmtree"): (1, "its own mkdtemp folder"),
    ("capture/_content.py", "_remember", "os.replace"): (1, "a remembered hash, from its mkstemp"),
    ("capture/_content.py", "_remember", ".unlink"): (1, "its own mkstemp temporary"),
    ("corpus/text.py", "_fetch_into_cache", "os.replace"): (1, "the book's cache entry"),
    ("corpus/text.py", "_fetch_into_cache", ".unlink"): (1, "its own mkstemp download"),
    ("experiments/clrs_text/data.py", "cached_dataset", "os.replace"): (
        1,
        "the CLRS-Text dataset's cache entry, from its own temporary file (pid in the name)",
    ),
    ("experiments/clrs_text/data.py", "cached_dataset", ".unlink"): (
        1,
        "its own temporary file, after a failed write",
    ),
    ("cli/_errors.py", "no_empty_folders_left", ".rmdir"): (
        1,
        "folders on the way to --out that the failed command created, if empty (rmdir only)",
    ),
}


def _deletions(root: Path = REPO / "src" / "attnlimits") -> dict[tuple[str, str, str], int]:
    found: dict[tuple[str, str, str], int] = {}

    def visit(node: ast.AST, scope: str, rel: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{scope}.{child.name}" if scope else child.name
            call = None
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                f = child.func
                if isinstance(f.value, ast.Name) and f.attr in OS_CALLS.get(f.value.id, ()):
                    call = f"{f.value.id}.{f.attr}"
                elif f.attr in METHODS:
                    call = f".{f.attr}"
            if isinstance(child, ast.ImportFrom) and child.module in OS_CALLS:
                for alias in child.names:  # `from os import remove` would hide a call
                    if alias.name in OS_CALLS[child.module]:
                        call = f"from {child.module} import {alias.name}"
            if call:
                key = (rel, scope or "<module>", call)
                found[key] = found.get(key, 0) + 1
            visit(child, inner, rel)

    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        visit(tree, "", path.relative_to(root).as_posix())
    return found


def test_every_call_that_deletes_a_file_is_a_reviewed_one():
    """A new deletion (or one more in a reviewed function) fails here until it is reviewed:
    it must delete only what attnlimits wrote (a listed file, its own temporary, a folder it
    created and emptied) and be added to REVIEWED with the reason."""
    found = _deletions()
    reviewed = {key: n for key, (n, _why) in REVIEWED.items()}
    assert found == reviewed, {
        "new or changed": {k: v for k, v in found.items() if reviewed.get(k) != v},
        "gone": sorted(set(reviewed) - set(found)),
    }


def test_the_deletion_scan_sees_what_it_must(tmp_path):
    """The scan is not blind: a planted rmtree, unlink and `from os import remove` are found."""
    (tmp_path / "x.py").write_text(
        "import shutil\nfrom os import remove\ndef f(p):\n    shutil.rmtree(p)\n    p.unlink()\n"
    )
    assert set(_deletions(tmp_path)) == {
        ("x.py", "<module>", "from os import remove"),
        ("x.py", "f", "shutil.rmtree"),
        ("x.py", "f", ".unlink"),
    }
