"""The ``attnlimits view`` command: open a results folder's ``report.html`` in a browser, or
serve it over HTTP (``--port``) for a browser on another machine.

The server serves the page and the files it references inside its folder (figures, CSV
tables, the pages of a side-by-side report's models and theirs), nothing else: no folder
listing, no hidden file (a name starting with a dot: the manifest, ``.env``), nothing through
a symbolic link, nothing outside the folder (``..``, encoded or not). Anything else is 404,
but the icon a browser asks for (``/favicon.ico``): 204, no content, so the log shows no error.
It imports no torch, scipy or pandas (nor does :mod:`attnlimits.cli`), so it serves at once.

``attnlimits view A B`` serves two runs of the same kind as one page (:mod:`attnlimits.view.pair`:
their claims side by side, their pages in two columns; A's files under ``/a/``, B's under
``/b/``, each as above) and opens it (``--port``: serves it only). Runs of two kinds are refused.

Registered by :mod:`attnlimits.cli`. A folder without a page, a page that is a symbolic link,
a bad port or a port in use ends in one line on stderr and exit code 2.
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import io
import json
import mimetypes
import os
import posixpath
import webbrowser
from email.utils import formatdate
from http import HTTPStatus
from pathlib import Path, PurePosixPath
from typing import Annotated, Any
from urllib.parse import unquote, urlsplit

import typer

from attnlimits._paths import inside, open_no_follow
from attnlimits.cli._errors import fail as _fail

__all__ = ["kind_of", "page_of", "pair_server", "served_files", "server", "view"]


def page_of(folder: Path) -> Path:
    """The page of ``folder`` (a results folder, a monitor's folder, or the page itself); a
    ``ValueError`` naming what is missing and what writes it, or a link where the page is."""
    from attnlimits.view import MONITOR_PAGE, PAGE_NAME  # names only: no pandas

    folder = Path(folder)
    if folder.is_file() and folder.suffix == ".html":
        return folder.resolve()  # the file the user named, wherever a link they named points
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a results folder (no such folder)")
    page = folder / PAGE_NAME
    if not page.is_file() and (folder / MONITOR_PAGE).is_file():
        page = folder / MONITOR_PAGE
    if not page.is_file():
        how = (
            f"write it with: attnlimits report {folder}"
            if (folder / "run.json").is_file()
            else "it is written by a run (attnlimits scan, compare, reproduce ...)"
        )
        raise ValueError(f"{folder} has no {PAGE_NAME}; {how}")
    inside(folder, page)  # a link there is refused, naming it
    return page


class _References(html.parser.HTMLParser):
    """The ``src`` and ``href`` values of a page's elements (script text is not parsed)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [v for k, v in attrs if k in ("src", "href") and v]


def _servable(root: Path, rel: str) -> bool:
    """A file at ``rel`` in ``root``: no part hidden, no link on the way, not outside."""
    if any(part.startswith(".") for part in PurePosixPath(rel).parts):
        return False
    try:
        inside(root, root / rel)
    except ValueError:
        return False
    return (root / rel).is_file()


def served_files(page: Path) -> dict[str, Path]:
    """What the server serves for ``page``: URL path -> file. The page (also at ``/``) and the
    files it references by relative URL inside its folder (and, for a referenced page, those it
    references), each a regular file with no hidden part, reached through no link."""
    root, served = page.parent, {}
    todo = [page.name]
    while todo:
        rel = todo.pop()
        if f"/{rel}" in served or not _servable(root, rel):
            continue
        served[f"/{rel}"] = root / rel
        if not rel.endswith(".html"):
            continue
        refs = _References()
        refs.feed((root / rel).read_text(encoding="utf-8", errors="replace"))
        for ref in refs.found:
            url = urlsplit(ref)
            if url.scheme or url.netloc or not url.path or url.path.startswith("/"):
                continue  # elsewhere, or an anchor in the page
            target = posixpath.normpath(posixpath.join(posixpath.dirname(rel), unquote(url.path)))
            if target != ".." and not target.startswith("../"):
                todo.append(target)
    served["/"] = page
    return served


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves what ``served`` maps a URL path to (GET and HEAD): a file (with the folder it
    must lie in, no link on the way) or a page's bytes; anything else is 404."""

    def __init__(
        self, *args: Any, root: Path, served: dict[str, tuple[Path, Path] | bytes], **kwargs: Any
    ) -> None:
        self.root, self.served = root, served
        super().__init__(*args, directory=str(root), **kwargs)

    def send_head(self) -> Any:
        url = unquote(urlsplit(self.path).path)
        found = self.served.get(url)
        if found is None and url == "/favicon.ico":  # asked by every browser: none, no error
            self.send_response(HTTPStatus.NO_CONTENT)
            self.end_headers()
            return None
        if isinstance(found, bytes):
            self._headers("text/html", len(found), None)
            return io.BytesIO(found)
        try:
            if found is None:
                raise FileNotFoundError
            root, path = found
            inside(root, path)  # still no link on the way
            f = os.fdopen(open_no_follow(path, os.O_RDONLY), "rb")
        except (OSError, ValueError):
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        size = os.fstat(f.fileno())
        self._headers(
            mimetypes.guess_type(path.name)[0] or "text/plain", size.st_size, size.st_mtime
        )
        return f

    def _headers(self, kind: str, length: int, mtime: float | None) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-type", kind)
        self.send_header("Content-Length", str(length))
        if mtime is not None:
            self.send_header("Last-Modified", formatdate(mtime, usegmt=True))
        self.end_headers()


def server(page: Path, host: str, port: int) -> http.server.ThreadingHTTPServer:
    """An HTTP server of ``page`` (:func:`served_files`) at ``host``:``port``; ``OSError`` if
    the address cannot be bound."""
    root = page.parent
    served: dict[str, tuple[Path, Path] | bytes] = {
        url: (root, path) for url, path in served_files(page).items()
    }
    handler = functools.partial(_Handler, root=root, served=served)
    return http.server.ThreadingHTTPServer((host, port), handler)


def kind_of(page: Path) -> str:
    """The kind of the run whose page is ``page``: its ``run.json``'s experiment, else the
    page's name (a monitor's page, a side-by-side report)."""
    try:
        meta = json.loads((page.parent / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return page.name
    return str(meta.get("experiment") or page.name) if isinstance(meta, dict) else page.name


def _side(page: Path, label: str, tag: str) -> Any:
    """One run of a pair, for :func:`attnlimits.view.pair.pair_html`."""
    import pandas as pd

    from attnlimits.view.pair import Side

    table = None
    if _servable(page.parent, "tables/claims.parquet"):  # no link, nothing hidden on the way
        table = pd.read_parquet(page.parent / "tables" / "claims.parquet")
    return Side(label, f"{tag}/{page.name}", table)


def pair_server(
    a: Path, b: Path, host: str, port: int, labels: tuple[str, str] | None = None
) -> http.server.ThreadingHTTPServer:
    """An HTTP server of the pages ``a`` and ``b`` as one (see the module docstring), labelled
    ``labels`` (default: their folders); a ``ValueError`` naming both kinds when they differ,
    ``OSError`` if the address is taken."""
    kinds = kind_of(a), kind_of(b)
    if kinds[0] != kinds[1]:
        raise ValueError(
            f"{a.parent} is a {kinds[0]} run and {b.parent} a {kinds[1]} run: view A B shows "
            "two runs of the same kind side by side"
        )
    if a.resolve() == b.resolve():
        raise ValueError(f"{a} is given twice: view A B compares two runs")
    from attnlimits.view.pair import pair_html

    served: dict[str, tuple[Path, Path] | bytes] = {}
    for tag, page in (("a", a), ("b", b)):
        served |= {
            f"/{tag}{u}": (page.parent, p) for u, p in served_files(page).items() if u != "/"
        }
    la, lb = labels or (str(a.parent), str(b.parent))
    body = pair_html(kinds[0], _side(a, la, "a"), _side(b, lb, "b")).encode("utf-8")
    served |= {"/": body, "/pair.html": body}
    handler = functools.partial(_Handler, root=a.parent, served=served)
    return http.server.ThreadingHTTPServer((host, port), handler)


def view(
    folders: Annotated[
        list[Path],
        typer.Argument(
            metavar="FOLDER [FOLDER_B]",
            help="A results folder holding report.html (or the file); two: the runs side by side.",
        ),
    ],
    port: Annotated[
        int | None,
        typer.Option(
            help="Serve the page (and only the files it shows) at http://HOST:PORT/report.html "
            "instead of opening a browser here (0: any free port); Ctrl-C stops."
        ),
    ] = None,
    host: Annotated[
        str, typer.Option(help="Address to serve on with --port (0.0.0.0: every interface).")
    ] = "127.0.0.1",
) -> None:
    """Open a run's interactive page (report.html) in the browser, or serve it with --port;
    two folders: two runs of one kind side by side."""
    if len(folders) > 2:
        _fail(f"view takes one results folder, or two to compare; got {len(folders)}")
    try:
        pages = [page_of(folder) for folder in folders]
    except ValueError as err:
        _fail(str(err))
    if port is None and len(pages) == 1:
        url = pages[0].resolve().as_uri()
        if not webbrowser.open(url):
            _fail(f"no browser found here; open {url} yourself, or pass --port to serve it")
        typer.echo(f"opened {url}")
        return
    if port is not None and not 0 <= port <= 65535:
        _fail(f"--port must lie in 0 … 65535, got {port}")
    try:
        if len(pages) == 1:
            httpd, name = server(pages[0], host, port or 0), pages[0].name
        else:
            labels = (str(folders[0]), str(folders[1]))
            httpd, name = pair_server(pages[0], pages[1], host, port or 0, labels), "pair.html"
    except ValueError as err:
        _fail(str(err))
    except OSError as err:
        _fail(f"cannot serve on {host}:{port}: {err.strerror or err}")
    with httpd:
        where = f"http://{host}:{httpd.server_address[1]}/{name}"
        shown = pages[0] if len(pages) == 1 else " and ".join(str(p) for p in pages)
        typer.echo(f"serving {shown} and the files it shows at {where} (Ctrl-C stops)")
        if port is None and not webbrowser.open(where):
            typer.echo(f"no browser found here; open {where} yourself")
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            typer.echo("stopped")
