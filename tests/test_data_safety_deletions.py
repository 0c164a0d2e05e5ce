"""Every call in ``src/`` that can delete, replace or rename a file is a reviewed one (issue 32,
the class of items 1-3): it deletes only what attnlimits wrote.

A site is known by what protects it, not by where it sits: the file, the call, the path it
deletes, where that path comes from in its function and the conditions around the call
(:class:`Site`). Moving a reviewed call within its function, renaming the function or adding
an unrelated call keeps its site; a new deletion, or a reviewed one copied out of its guard or
onto a path of another origin, is a new site and fails until it is reviewed.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

import pytest

from conftest import REPO

SRC = REPO / "src" / "attnlimits"
#: Calls that remove, replace or rename files: os.<name>(...), shutil.<name>(...), and on any
#: object <x>.unlink(), <x>.rmdir(), <x>.rmtree() (Path's methods), and <x>.rename(y) or
#: <x>.replace(y) with one positional argument that is not a literal (Path's: DataFrame.rename
#: takes keywords, Series.rename a name, str.replace two arguments).
OS_CALLS = {"os": {"remove", "unlink", "rmdir", "removedirs", "replace", "rename", "truncate"}}
OS_CALLS["shutil"] = {"rmtree", "move"}
METHODS = {"unlink", "rmdir", "rmtree"}
PATH_MOVES = {"rename", "replace"}
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class Site(NamedTuple):
    """A call that deletes, replaces or renames, by what protects it."""

    file: str  # under src/attnlimits
    call: str  # os.replace, shutil.rmtree, .unlink (a method), from os import remove, ...
    path: str  # the paths it deletes or replaces (the call's arguments, a method's object)
    origin: str  # where the names in ``path`` get their values in the function
    guard: str = ""  # the conditions of the ``if`` and ``while`` statements around the call


#: Every site in src/attnlimits -> why it deletes only what attnlimits wrote.
REVIEWED = {
    Site(
        "_files.py",
        ".unlink",
        "Path(tmp)",
        origin=(
            "tmp = tempfile.mkstemp(dir=path.parent, prefix=f'.{path.name}.', suffix=TMP_SUFFIX)"
        ),
    ): "its own mkstemp temporary",
    Site(
        "_files.py",
        "os.replace",
        "tmp, path",
        origin=(
            "tmp = tempfile.mkstemp(dir=path.parent, prefix=f'.{path.name}.', suffix=TMP_SUFFIX); "
            "path = a parameter"
        ),
    ): "a file listed as ours first",
    Site(
        "_paths.py",
        "os.unlink",
        "probe",
        origin="probe = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=suffix)",
    ): "its own mkstemp probe (store, monitor, cache)",
    Site(
        "capture/_content.py",
        ".unlink",
        "Path(tmp)",
        origin="tmp = tempfile.mkstemp(dir=entry.parent, prefix='.hash-')",
    ): "its own mkstemp temporary",
    Site(
        "capture/_content.py",
        "os.replace",
        "tmp, entry",
        origin="tmp = tempfile.mkstemp(dir=entry.parent, prefix='.hash-'); entry = a parameter",
    ): "a remembered hash, from its mkstemp",
    Site(
        "capture/_sources.py",
        "os.replace",
        "tmp, target",
        origin=(
            "tmp = Path(tempfile.mkdtemp(prefix=f'.{stem}-', dir=root)); "
            "target = root / f'{stem}-{key}'"
        ),
    ): "a new entry of the model cache",
    Site(
        "capture/_sources.py",
        "shutil.rmtree",
        "tmp",
        origin="tmp = Path(tempfile.mkdtemp(prefix=f'.{stem}-', dir=root))",
    ): "its own mkdtemp folder",
    Site(
        "cli/_errors.py",
        ".rmdir",
        "folder",
        origin="folder = each of new; new = [p for p in (out, *out.parents) if not p.exists()]",
    ): "folders on the way to --out that the failed command created, if empty (rmdir only)",
    Site(
        "corpus/text.py", ".unlink", "tmp", origin="tmp = Path(tmp_name)"
    ): "its own mkstemp download",
    Site(
        "corpus/text.py",
        "os.replace",
        "tmp, target",
        origin="tmp = Path(tmp_name); target = a parameter",
    ): "the book's cache entry",
    Site(
        "experiments/_owned.py",
        ".rmdir",
        "folder",
        origin="folder = each of folders; folders = a parameter",
    ): "folders this process created",
    Site(
        "experiments/_owned.py",
        ".rmdir",
        "self.root / parent",
        origin="parent = each of PurePosixPath(rel).parents",
    ): "folders left empty",
    Site(
        "experiments/_owned.py",
        ".unlink",
        "Path(tmp)",
        origin="tmp = tempfile.mkstemp(dir=self.root, prefix=f'{MANIFEST}.', suffix=TMP_SUFFIX)",
    ): "its own mkstemp temporary",
    Site(
        "experiments/_owned.py",
        ".unlink",
        "path",
        origin=(
            "path = each of stale; "
            "stale = sorted((p for p in found if ours_by_name(p.name) and "
            "self._reachable(p) and p.is_file()))"
        ),
    ): "*.attnlimits-tmp",
    Site(
        "experiments/_owned.py",
        ".unlink",
        "path",
        origin="path = self.root / rel",
        guard="self._reachable(path) and path.is_file()",
    ): "listed files only",
    Site(
        "experiments/_owned.py",
        ".unlink",
        "self.root / name",
        origin="name = each of (MANIFEST, OWNER_NAME, LOCK_NAME)",
        guard="self._reachable(self.root / name)",
    ): "manifest, lock, owner note",
    Site(
        "experiments/_owned.py",
        "os.replace",
        "tmp, self.path",
        origin="tmp = tempfile.mkstemp(dir=self.root, prefix=f'{MANIFEST}.', suffix=TMP_SUFFIX)",
    ): "the manifest itself",
    Site(
        "experiments/clrs_text/data.py",
        ".unlink",
        "tmp",
        origin="tmp = path.with_name(f'.{path.name}.{os.getpid()}.tmp')",
    ): "its own temporary file, after a failed write",
    Site(
        "experiments/clrs_text/data.py",
        "os.replace",
        "tmp, path",
        origin=(
            "tmp = path.with_name(f'.{path.name}.{os.getpid()}.tmp'); "
            "path = (folder or cache_dir() / 'clrs_text') / "
            "f'clrs_text-{params_hash(spec)}.parquet'"
        ),
    ): "the CLRS-Text dataset's cache entry, from its own temporary file (pid in the name)",
    Site(
        "experiments/store.py",
        ".unlink",
        "owner",
        origin="owner = self.root / OWNER_NAME",
        guard="not owner.is_symlink()",
    ): "the lock's owner note",
}


def _deletion(node: ast.AST) -> tuple[str, list[ast.expr]] | None:
    """(the call, the paths it deletes or replaces) where ``node`` is such a call, else None."""
    if isinstance(node, ast.ImportFrom) and node.module in OS_CALLS:  # hides a call's name
        hidden = sorted(a.name for a in node.names if a.name in OS_CALLS[node.module])
        return (f"from {node.module} import {', '.join(hidden)}", []) if hidden else None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    f = node.func
    if isinstance(f.value, ast.Name) and f.attr in OS_CALLS.get(f.value.id, ()):
        return f"{f.value.id}.{f.attr}", list(node.args)
    if f.attr in METHODS:
        return f".{f.attr}", [f.value]
    literal = len(node.args) == 1 and isinstance(node.args[0], ast.Constant)
    if f.attr in PATH_MOVES and len(node.args) == 1 and not node.keywords and not literal:
        return f".{f.attr}", [f.value, node.args[0]]
    return None


def _below(node: ast.AST, guards: tuple[str, ...] = ()):
    """Every node below ``node`` outside nested functions, with the conditions of the ``if`` and
    ``while`` statements around it (``not (...)`` in an ``else``), outermost first."""
    for field, value in ast.iter_fields(node):
        for child in value if isinstance(value, list) else [value]:
            if not isinstance(child, ast.AST) or isinstance(child, FUNCTIONS):
                continue
            inner = guards
            if isinstance(node, (ast.If, ast.While)) and field in ("body", "orelse"):
                test = ast.unparse(node.test)
                inner = (*guards, test if field == "body" else f"not ({test})")
            yield child, inner
            yield from _below(child, inner)


def _bindings(scope: ast.AST) -> dict[str, set[str]]:
    """Where each name of ``scope`` (a function, or the module) gets its value: a parameter, an
    assignment's value, each item of a loop's iterable, a ``with``'s context."""
    out: dict[str, set[str]] = {}

    def bind(target: ast.AST, source: str) -> None:
        for n in ast.walk(target):
            if isinstance(n, ast.Name):
                out.setdefault(n.id, set()).add(source)

    if isinstance(scope, FUNCTIONS):
        a = scope.args
        for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg):
            if arg is not None:
                out.setdefault(arg.arg, set()).add("a parameter")
    for node, _ in _below(scope):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                bind(t, ast.unparse(node.value))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value:
            bind(node.target, ast.unparse(node.value))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            bind(node.target, f"each of {ast.unparse(node.iter)}")
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bind(node.optional_vars, f"with {ast.unparse(node.context_expr)}")
    return out


def _origin(paths: list[ast.expr], bindings: dict[str, set[str]]) -> str:
    """Where the names in ``paths`` get their values in the function (``self`` aside), followed
    where a value is another name (``for path in stale``: where ``stale`` comes from too)."""
    todo = [n.id for p in paths for n in ast.walk(p) if isinstance(n, ast.Name)]
    seen: list[str] = []
    while todo:
        name = todo.pop(0)
        if name in seen or name in ("self", "cls") or name not in bindings:
            continue
        seen.append(name)
        for source in bindings[name]:
            bare = source.removeprefix("each of ").removeprefix("with ")
            if bare.isidentifier():  # a name bound to a name: where that one comes from
                todo.append(bare)
    return "; ".join(f"{n} = {' | '.join(sorted(bindings[n]))}" for n in seen)


def deletions(root: Path = SRC) -> dict[Site, list[str]]:
    """Every site below ``root`` -> where its calls are (file:line and function)."""
    found: dict[Site, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        scopes = [(tree, "<module>")]
        scopes += [(n, n.name) for n in ast.walk(tree) if isinstance(n, FUNCTIONS)]
        for scope, name in scopes:
            bindings = _bindings(scope)
            for node, guards in _below(scope):
                hit = _deletion(node)
                if hit:
                    call, paths = hit
                    target = ", ".join(ast.unparse(p) for p in paths)
                    site = Site(rel, call, target, _origin(paths, bindings), " and ".join(guards))
                    found.setdefault(site, []).append(f"{rel}:{node.lineno} ({name})")
    return found


def unreviewed(found: dict[Site, list[str]]) -> tuple[dict[Site, list[str]], set[Site]]:
    """(the sites found that REVIEWED lacks, with where they are; the reviewed sites gone)."""
    return {s: at for s, at in found.items() if s not in REVIEWED}, set(REVIEWED) - set(found)


def test_every_call_that_deletes_a_file_is_a_reviewed_one():
    """A new deletion (or a reviewed one out of its guard) fails here until it is reviewed:
    it must delete only what attnlimits wrote (a listed file, its own temporary, a folder it
    created and emptied) and be added to REVIEWED with the reason."""
    new, gone = unreviewed(deletions())
    assert not new and not gone, {"new or changed": new, "gone": sorted(gone)}


def test_the_deletion_scan_sees_what_it_must(tmp_path):
    """The scan is not blind: a planted rmtree, unlink, Path.rename and `from os import remove`
    are found, each with its path, the path's origin and its guard; a DataFrame's or a
    Series' rename and a str.replace are not deletions."""
    (tmp_path / "x.py").write_text(
        "import shutil\nfrom os import remove\ndef f(p):\n    shutil.rmtree(p)\n"
        "    for q in p.iterdir():\n        if q.suffix == '.tmp':\n            q.unlink()\n"
        "    p.rename(p.with_name('old'))\n    s = p.name.replace('a', 'b')\n"
        "    return df.rename(columns={'a': 'b'}), series.rename('n')\n"
    )
    assert set(deletions(tmp_path)) == {
        Site("x.py", "from os import remove", "", ""),
        Site("x.py", "shutil.rmtree", "p", "p = a parameter"),
        Site("x.py", ".unlink", "q", "q = each of p.iterdir()", guard="q.suffix == '.tmp'"),
        Site("x.py", ".rename", "p, p.with_name('old')", "p = a parameter"),
    }


# ---- the check keys sites by what protects them: proved on a scratch copy of src/ -------------


def _scratch(tmp_path: Path, edit=None) -> Path:
    """A copy of the files REVIEWED names, each tree first changed by ``edit(tree)``."""
    root = tmp_path / "src"
    for rel in sorted({site.file for site in REVIEWED}):
        tree = ast.parse((SRC / rel).read_text(encoding="utf-8"))
        if edit is not None:
            edit(tree)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(ast.unparse(tree), encoding="utf-8")
    return root


def _into_manifest_remove(code: str):
    """An edit that puts ``code`` first in ``Manifest.remove`` of experiments/_owned.py (a
    method with a reviewed, guarded ``path.unlink()``); ``code`` at the top of the module
    where it is an import."""

    def edit(tree: ast.Module) -> None:
        new = ast.parse(code).body
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == "Manifest":
                method = next(f for f in node.body if getattr(f, "name", "") == "remove")
                if isinstance(new[0], ast.ImportFrom):
                    tree.body[:0] = new
                else:
                    method.body[1:1] = new  # after the docstring
                return

    return edit


@pytest.mark.parametrize(
    ("code", "call", "path", "guard"),
    [
        ("os.remove(rels)", "os.remove", "rels", ""),
        ("shutil.rmtree(self.root)", "shutil.rmtree", "self.root", ""),
        ("Path(rel).unlink()", ".unlink", "Path(rel)", ""),
        ("self.path.rename(self.root / 'old')", ".rename", "self.path, self.root / 'old'", ""),
        ("os.rename(self.path, 'old')", "os.rename", "self.path, 'old'", ""),
        ("path.unlink()", ".unlink", "path", ""),  # the reviewed call, out of its guard
        ("if path.exists():\n    path.unlink()", ".unlink", "path", "path.exists()"),
        ("from os import remove", "from os import remove", "", ""),
    ],
    ids=["os.remove", "shutil.rmtree", "Path.unlink", "Path.rename", "os.rename",
         "a reviewed unlink unguarded", "another guard", "from os import remove"],
)  # fmt: skip
def test_a_new_deletion_fails_the_check(tmp_path, code, call, path, guard):
    """Each planted in a reviewed function of a scratch copy of src/: the check names it as a
    new site (its call, path and guard), and nothing reviewed goes missing. Same function,
    same file, same path as a reviewed site: none of that lets it through."""
    new, gone = unreviewed(deletions(_scratch(tmp_path, _into_manifest_remove(code))))
    assert gone == set()
    assert [(s.file, s.call, s.path, s.guard) for s in new] == [
        ("experiments/_owned.py", call, path, guard)
    ], new


def _reverse_every_block(tree: ast.Module) -> None:
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                block.reverse()


def _rename_every_function(tree: ast.Module) -> None:
    for node in ast.walk(tree):
        if isinstance(node, FUNCTIONS):
            node.name = f"{node.name}_moved"


def _unrelated_calls_and_a_with_around(tree: ast.Module) -> None:
    for node in ast.walk(tree):
        if isinstance(node, FUNCTIONS):
            wrapped = ast.parse("with nullcontext():\n    pass").body[0]
            assert isinstance(wrapped, ast.With)
            wrapped.body = [*ast.parse("log(Path('elsewhere').exists())").body, *node.body]
            node.body = [wrapped]


@pytest.mark.parametrize(
    "edit",
    [_reverse_every_block, _rename_every_function, _unrelated_calls_and_a_with_around],
    ids=["every block reversed", "every function renamed", "an unrelated call, a with around"],
)
def test_moving_a_reviewed_call_or_adding_an_unrelated_one_keeps_its_site(tmp_path, edit):
    """The reviewed files of a scratch copy of src/, changed throughout: every statement moved
    within its block (the calls change lines), every function renamed, an unrelated call
    added and every body moved into a ``with``. Every reviewed site is still found, and
    nothing new."""
    found = deletions(_scratch(tmp_path, edit))
    assert unreviewed(found) == ({}, set())
    unchanged = deletions(_scratch(tmp_path / "unchanged"))
    assert found.keys() == unchanged.keys() and found != unchanged, "no call moved"
