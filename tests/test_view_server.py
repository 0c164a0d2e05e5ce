"""``attnlimits view``'s start-up and server, beyond tests/test_data_safety.py's refusals.

- the command's whole path (the CLI, the page's lookup, the server) imports no torch, scipy,
  transformers, pandas or matplotlib: it served only after 20–35 s on a busy machine;
- the icon every browser asks for is answered (204), with no 404 in the server's log.

(The listing, dotfile, link and ``..`` refusals: ``test_data_safety.py::
test_view_serves_the_page_and_what_it_shows_only``; the start-up time: benchmarks/view_start.py.)
"""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import threading
from pathlib import Path

from attnlimits.cli.view import page_of, server
from conftest import REPO

HEAVY = ("torch", "scipy", "transformers", "pandas", "matplotlib", "plotly")


def _page(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    page = folder / "report.html"
    page.write_text('<html><body><a href="tables/t.csv">t</a></body></html>', encoding="utf-8")
    return page


def test_the_view_command_imports_no_heavy_library(tmp_path):
    """The real command, run up to the point where it would serve: the heavy libraries that it
    has imported by then (none; before: torch and scipy, through ``import attnlimits``)."""
    _page(tmp_path / "run")
    code = (
        "import sys, http.server\n"
        f"HEAVY = {HEAVY!r}\n"
        "def serve(self, *args, **kwargs):\n"
        "    print('LOADED', sorted(m for m in HEAVY if m in sys.modules), flush=True)\n"
        "http.server.ThreadingHTTPServer.serve_forever = serve\n"
        "from attnlimits.cli import app\n"
        "app()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    args = [sys.executable, "-c", code, "view", str(tmp_path / "run"), "--port", "0"]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    loaded = [line for line in done.stdout.splitlines() if line.startswith("LOADED")]
    assert loaded == ["LOADED []"], (done.stdout, done.stderr[-2000:])


def test_the_server_answers_the_icon_without_an_error(tmp_path, capsys):
    """``/favicon.ico`` (asked by every browser): 204 and no 404 logged; the page is served."""
    page = _page(tmp_path / "run")
    httpd = server(page_of(tmp_path / "run"), "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        got = {}
        for path in ("/favicon.ico", "/report.html"):
            conn = http.client.HTTPConnection("127.0.0.1", httpd.server_address[1], timeout=60)
            conn.request("GET", path)
            resp = conn.getresponse()
            got[path] = (resp.status, resp.read())
            conn.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=60)
    assert got["/favicon.ico"] == (204, b"")
    assert got["/report.html"] == (200, page.read_bytes())
    log = capsys.readouterr().err
    assert "favicon" in log and " 404 " not in log and "error" not in log.lower(), log
