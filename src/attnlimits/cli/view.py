"""The ``attnlimits view`` command: open a results folder's ``report.html`` in a browser, or
serve the folder over HTTP (``--port``) for a browser on another machine.

Registered by :mod:`attnlimits.cli`. A folder without a page, a bad port or a port in use ends
in one line on stderr and exit code 2.
"""

from __future__ import annotations

import functools
import http.server
import webbrowser
from pathlib import Path
from typing import Annotated

import typer

from attnlimits.cli._errors import fail as _fail

__all__ = ["page_of", "view"]


def page_of(folder: Path) -> Path:
    """The page of ``folder`` (a results folder, a monitor's folder, or the page itself); a
    ``ValueError`` naming what is missing and what writes it."""
    from attnlimits.view import PAGE_NAME
    from attnlimits.view.monitor_page import MONITOR_PAGE

    folder = Path(folder)
    if folder.is_file() and folder.suffix == ".html":
        return folder
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a results folder (no such folder)")
    page = folder / PAGE_NAME
    if not page.is_file() and (folder / MONITOR_PAGE).is_file():
        return folder / MONITOR_PAGE
    if not page.is_file():
        how = (
            f"write it with: attnlimits report {folder}"
            if (folder / "run.json").is_file()
            else "it is written by a run (attnlimits scan, compare, reproduce ...)"
        )
        raise ValueError(f"{folder} has no {PAGE_NAME}; {how}")
    return page


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
            help="Serve the folder at http://HOST:PORT/report.html instead of opening a browser "
            "here (0: any free port); Ctrl-C stops."
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
    handler = functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(page.parent.resolve())
    )
    try:
        server = http.server.ThreadingHTTPServer((host, port), handler)
    except OSError as err:
        _fail(f"cannot serve on {host}:{port}: {err.strerror or err}")
    with server:
        where = f"http://{host}:{server.server_address[1]}/{page.name}"
        typer.echo(f"serving {page.parent} at {where} (Ctrl-C stops)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            typer.echo("stopped")
