"""``attnlimits view``'s start-up and server.

- the command's whole path (the CLI, the page's lookup, the server) imports no torch, scipy,
  transformers, pandas or matplotlib: it served only after 20–35 s on a busy machine;
- the icon every browser asks for is answered (204), with no 404 in the server's log;
- ``attnlimits view A B``: two runs of one kind as one page (claims side by side, both pages
  in two columns, each run's files under ``/a/`` and ``/b/`` with the same refusals), opened in
  headless Chromium without console errors; two kinds are refused in one line; two scans of
  different shapes: A's and B's heatmaps on one colour scale (the range of both runs' shared
  heads), B − A per head equal to the heads tables' difference, what only one run has named;
- the page (also at ``/``) and the figures and CSVs it references are served; listings,
  dotfiles, links out of the run, files the page does not show and ``..`` (encoded or not)
  are 404 (issue 43, item 4).

(The start-up time: benchmarks/view_start.py.)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from attnlimits.cli import app
from attnlimits.cli.view import page_of, pair_server, server
from attnlimits.experiments import skeleton
from attnlimits.experiments.pages import RunPage, write_page
from attnlimits.experiments.scan.synthetic import synthetic_scan
from browser_driver import console_errors
from conftest import REPO
from safe_experiment import EXPERIMENT, Cfg

HEAVY = ("torch", "scipy", "transformers", "pandas", "matplotlib", "plotly")


def _page(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    page = folder / "report.html"
    page.write_text('<html><body><a href="tables/t.csv">t</a></body></html>', encoding="utf-8")
    return page


def _get(url: str, path: str) -> tuple[int, bytes]:
    """GET ``path`` (sent as given: no normalisation) from the server at ``url``."""
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


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
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        got = {path: _get(url, path) for path in ("/favicon.ico", "/report.html")}
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=60)
    assert got["/favicon.ico"] == (204, b"")
    assert got["/report.html"] == (200, page.read_bytes())
    log = capsys.readouterr().err
    assert "favicon" in log and " 404 " not in log and "error" not in log.lower(), log


def _run(
    folder: Path, kind: str, verdicts: list[str], seed: int, shape: tuple = (3, 4, (16, 32))
) -> Path:
    """A folder as a run of ``kind`` leaves it: run.json, claims, report.html (a scan's page
    of ``shape``: layers, heads, lengths)."""
    (folder / "tables").mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"experiment": kind}), encoding="utf-8")
    claims = pd.DataFrame({"claim": ["(i) one", "(ii) two"], "paper": "-", "measured": [1.0, 2.0],
                           "rule": "-", "verdict": verdicts})  # fmt: skip
    claims.to_parquet(folder / "tables" / "claims.parquet")
    claims.to_csv(folder / "tables" / "claims.csv", index=False)
    tables = synthetic_scan(*shape, rows=2, seed=seed)
    tables["heads"].to_parquet(folder / "tables" / "heads.parquet")
    write_page(folder, RunPage(f"Scan {seed}", tables, {"experiment": "scan"}, claims))
    (folder / ".env").write_text("SECRET=1", encoding="utf-8")
    return folder


@pytest.fixture
def pair(tmp_path):
    a = _run(tmp_path / "a", "scan", ["reproduced", "partly"], 1)
    b = _run(tmp_path / "b", "scan", ["reproduced", "not reproduced"], 2)
    httpd = pair_server(page_of(a), page_of(b), "127.0.0.1", 0, ("run A", "run B"))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield a, b, httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=60)


def test_view_a_b_serves_both_runs_and_their_claims_side_by_side(pair):
    a, b, port = pair
    url = f"http://127.0.0.1:{port}"
    status, page = _get(url, "/pair.html")
    assert status == 200 and _get(url, "/") == (200, page)
    text = page.decode("utf-8")
    assert 'src="a/report.html"' in text and 'src="b/report.html"' in text
    row = re.search(r"<tr><td>\(ii\) two</td>(.*?)</tr>", text)
    assert row and "≠" in row.group(1) and "partly" in row.group(1)
    assert "not reproduced" in row.group(1)
    assert _get(url, "/a/report.html") == (200, (a / "report.html").read_bytes())
    assert _get(url, "/b/report.html") == (200, (b / "report.html").read_bytes())
    for path in ("/a/.env", "/b/run.json", "/a/", "/a/../b/report.html", "/a/%2e%2e/b/.env",
                 "/report.html", "/tables/claims.parquet"):  # fmt: skip
        status, body = _get(url, path)
        assert status == 404 and b"SECRET" not in body, path


def test_view_a_b_refuses_runs_of_two_kinds_in_one_line(tmp_path):
    a = _run(tmp_path / "a", "scan", ["reproduced", "partly"], 1)
    b = _run(tmp_path / "b", "compare", ["reproduced", "partly"], 2)
    result = CliRunner().invoke(app, ["view", str(a), str(b), "--port", "0"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "a scan run" in lines[0] and "a compare run" in lines[0], lines


def test_view_a_b_opens_in_a_browser_without_errors(browser, pair):
    _, _, port = pair
    browser.get(f"http://127.0.0.1:{port}/pair.html")
    deadline = time.monotonic() + 60  # a wait for the pages under load, not a speed limit
    ready = "return ['page-a', 'page-b'].map(i => { const w = document.getElementById(i)" \
            ".contentWindow; return !!(w.attnlimitsView && w.attnlimitsView.ready); })"  # fmt: skip
    while browser.execute_script(ready) != [True, True] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert browser.execute_script(ready) == [True, True]
    table = browser.find_element("tag name", "table").text
    assert "partly" in table and "not reproduced" in table
    assert console_errors(browser) == []


def _ready_pair(driver, port: int) -> dict:

    driver.get(f"http://127.0.0.1:{port}/pair.html")
    _wait(driver, "window.attnlimitsPair && attnlimitsPair.ready")
    return driver.execute_script("return attnlimitsPair")


def _wait(driver, condition: str) -> None:
    deadline = time.monotonic() + 120  # a wait for the pages under load, not a speed limit
    while time.monotonic() < deadline:
        if driver.execute_script(f"return !!({condition})"):
            return
        time.sleep(0.1)
    raise AssertionError(f"never true: {condition}; console: {driver.get_log('browser')}")


def test_view_a_b_of_two_scans_aligns_heads_and_their_difference(browser, tmp_path):
    """A (3 layers, L = 16, 32) and B (4 layers, L = 16, 32, 64): the heads both have, on one
    scale, and B − A equal to the tables' difference; layer 3 and L = 64 named as B's only."""
    a = _run(tmp_path / "a", "scan", ["reproduced", "partly"], 1, (3, 4, (16, 32)))
    b = _run(tmp_path / "b", "scan", ["reproduced", "partly"], 2, (4, 4, (16, 32, 64)))
    httpd = pair_server(page_of(a), page_of(b), "127.0.0.1", 0, ("run A", "run B"))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        pair = _ready_pair(browser, httpd.server_address[1])
        assert pair["grids"] and pair["shared"]["layers"] == [0, 1, 2]
        assert pair["shared"]["lengths"] == ["16", "32"], pair["shared"]
        note = browser.find_element("id", "pair-shared").text
        assert "layers 3 only in B" in note and "lengths L = 64 only in B" in note, note
        browser.execute_script(
            "attnlimitsPair.state.metric = 'max_weight'; attnlimitsPair.state.length = '16';"
            "attnlimitsPair.draw().then(() => { window.drawn = true; });"
        )
        _wait(browser, "window.drawn === true")
        got = browser.execute_script(
            "return ['pair-a', 'pair-b', 'pair-diff'].map(i => {"
            " const t = document.getElementById(i).data[0];"
            " return {z: t.z, zmin: t.zmin, zmax: t.zmax}; })"
        )
        assert console_errors(browser) == []
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=60)
    ha, hb = (pd.read_parquet(r / "tables" / "heads.parquet") for r in (a, b))
    va, vb = (h[(h["length"] == 16) & (h["layer"] < 3)].set_index(["layer", "head"])["max_weight"]
              for h in (ha, hb))  # fmt: skip
    both = pd.concat([va, vb])
    for side in got[:2]:  # one scale: the range of both runs' shared heads
        assert (side["zmin"], side["zmax"]) == pytest.approx((both.min(), both.max()))
    diff = got[2]["z"]
    for (layer, head), value in (vb - va).items():
        assert diff[layer][head] == pytest.approx(value, rel=1e-12, abs=1e-15), (layer, head)


def test_view_a_b_keeps_its_choice_in_the_url(browser, pair):
    """A link with a diagnostic and a length opens the pair on them; a choice made on the page
    is written back into the address."""
    from urllib.parse import parse_qsl

    from selenium.webdriver.support.ui import Select

    _, _, port = pair
    browser.get(f"http://127.0.0.1:{port}/pair.html#metric=max_weight&L=16")
    _wait(browser, "window.attnlimitsPair && attnlimitsPair.ready")
    state = browser.execute_script("return attnlimitsPair.state")
    assert (state["metric"], state["length"]) == ("max_weight", "16")
    assert browser.find_element("id", "pair-metric").get_attribute("value") == "max_weight"
    assert browser.find_element("id", "pair-length").get_attribute("value") == "16"
    title = browser.execute_script("return document.getElementById('pair-a').layout.title.text")
    assert "L = 16" in title, title
    Select(browser.find_element("id", "pair-length")).select_by_value("32")
    got = dict(parse_qsl(browser.execute_script("return location.hash.slice(1)")))
    assert got == {"metric": "max_weight", "L": "32"}
    assert console_errors(browser) == []


# ---- the page and what it shows, nothing else (issue 43, item 4) ------------------------------


@pytest.mark.usefixtures("registered_safe")
@pytest.mark.parametrize("given", ["folder", "page"])
def test_view_serves_the_page_and_what_it_shows_only(tmp_path, given):
    """Given a page file, the server served its whole parent folder with a listing; given a
    run folder, it listed it, served dotfiles (.env, the manifest) and followed links out of
    it. Now: the page (also at /) and the figures and CSVs it references; the rest is 404,
    ``..`` encoded or not included."""
    import os
    import re
    import subprocess
    import sys

    run = tmp_path / "run"
    skeleton.run(EXPERIMENT, Cfg(), run, progress=False)
    (run / ".env").write_text("SECRET=1")
    (run / "notes.txt").write_text("my notes, not on the page")
    (tmp_path / "secret.txt").write_text("outside the run")
    (run / "figures" / "values.png").unlink()
    (run / "figures" / "values.png").symlink_to(tmp_path / "secret.txt")  # shown by the page
    (run / "out").symlink_to(tmp_path)
    page = (run / "report.html").read_bytes()
    assert b'src="figures/values.png"' in page and b'href="tables/values.csv"' in page
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    code = "from attnlimits.cli import app; app()"
    target = run if given == "folder" else run / "report.html"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "view", str(target), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )  # fmt: skip
    try:
        url = re.search(r"http://\S+", proc.stdout.readline())
        assert url, "no address printed"
        served = {p: _get(url.group(0), p) for p in ("/report.html", "/", "/tables/values.csv")}
        assert served["/report.html"] == (200, page) and served["/"] == (200, page)
        assert served["/tables/values.csv"] == (200, (run / "tables/values.csv").read_bytes())
        refused = [
            "/figures/", "/tables", "/figures/?C=M;O=D",  # listings
            "/.env", "/.attnlimits-files", "/.attnlimits.lock", "/%2eenv",  # dotfiles
            "/figures/values.png", "/out/secret.txt", "/out/",  # links out of the run
            "/notes.txt", "/run.json", "/figures/values.svg", "/tables/values.parquet",  # the rest
            "/../secret.txt", "/%2e%2e/secret.txt", "/figures/..%2f..%2fsecret.txt",  # traversal
            "/tables/%2e%2e/%2e%2e/secret.txt", "//etc/passwd",
        ]  # fmt: skip
        for path in refused:
            status, body = _get(url.group(0), path)
            assert status == 404, (path, status, body[:200])
            assert b"outside the run" not in body and b"SECRET" not in body, path
    finally:
        proc.terminate()
        proc.wait(timeout=60)
