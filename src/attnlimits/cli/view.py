"""The ``attnlimits view`` command: open a results folder's ``report.html`` in a browser, or
serve it over HTTP (``--port``) for a browser on another machine.

The server serves the page and the files it references inside its folder (figures, CSV
tables, the pages of a side-by-side report's models and theirs), nothing else: no folder
listing, no hidden file (a name starting with a dot: the manifest, ``.env``), nothing through
a symbolic link, nothing outside the folder (``..``, encoded or not). Anything else is 404,
but the icon a browser asks for (``/favicon.ico``): 204, no content, so the log shows no error.
It imports no torch, scipy or pandas (nor does :mod:`attnlimits.cli`), so it serves at once.

Registered by :mod:`attnlimits.cli`. A folder without a page, a page that is a symbolic link,
a bad port or a port in use ends in one line on stderr and exit code 2.
"""

from __future__ import annotations

import functools
import html.parser
import http.server
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

__all__ = ["page_of", "served_files", "server", "view"]


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
    """Serves the files of :func:`served_files` only (GET and HEAD); anything else is 404."""

    def __init__(self, *args: Any, root: Path, served: dict[str, Path], **kwargs: Any) -> None:
        self.root, self.served = root, served
        super().__init__(*args, directory=str(root), **kwargs)

    def send_head(self) -> Any:
        url = unquote(urlsplit(self.path).path)
        path = self.served.get(url)
        if path is None and url == "/favicon.ico":  # asked by every browser: none, no error
            self.send_response(HTTPStatus.NO_CONTENT)
            self.end_headers()
            return None
        try:
            if path is None:
                raise FileNotFoundError
            inside(self.root, path)  # still no link on the way
            f = os.fdopen(open_no_follow(path, os.O_RDONLY), "rb")
        except (OSError, ValueError):
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        size = os.fstat(f.fileno())
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-type", mimetypes.guess_type(path.name)[0] or "text/plain")
        self.send_header("Content-Length", str(size.st_size))
        self.send_header("Last-Modified", formatdate(size.st_mtime, usegmt=True))
        self.end_headers()
        return f


def server(page: Path, host: str, port: int) -> http.server.ThreadingHTTPServer:
    """An HTTP server of ``page`` (:func:`served_files`) at ``host``:``port``; ``OSError`` if
    the address cannot be bound."""
    root = page.parent
    handler = functools.partial(_Handler, root=root, served=served_files(page))
    return http.server.ThreadingHTTPServer((host, port), handler)


def view(
    folder: Annotated[
        Path,
        typer.Argument(
            metavar="FOLDER", help="A results folder holding report.html (or the file)."
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
    """Open a run's interactive page (report.html) in the browser, or serve it with --port."""
    try:
        page = page_of(folder)
    except ValueError as err:
        _fail(str(err))
    if port is None:
        url = page.resolve().as_uri()
        if not webbrowser.open(url):
            _fail(f"no browser found here; open {url} yourself, or pass --port to serve it")
        typer.echo(f"opened {url}")
        return
    if not 0 <= port <= 65535:
        _fail(f"--port must lie in 0 … 65535, got {port}")
    try:
        httpd = server(page, host, port)
    except OSError as err:
        _fail(f"cannot serve on {host}:{port}: {err.strerror or err}")
    with httpd:
        where = f"http://{host}:{httpd.server_address[1]}/{page.name}"
        typer.echo(f"serving {page} and the files it shows at {where} (Ctrl-C stops)")
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            typer.echo("stopped")
