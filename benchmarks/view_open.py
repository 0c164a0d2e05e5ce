"""How big report.html is and how long it takes to open, in headless Chromium (issue 31).

Builds up to three pages into a temporary folder and opens each ``--repeats`` times in one
headless Chromium (selenium and Debian's ``chromium`` + ``chromium-driver``), interleaved (page
a, b, c, a, b, c, ...) so that a change in the machine's load hits all alike:

- ``scan``: the page of a saved scan folder given as ``RUN`` (its tables, claims, sections and
  ``run.json``, as ``attnlimits report RUN`` builds it; the folder itself is not written);
- ``synthetic``: a synthetic scan (:mod:`attnlimits.experiments.scan.synthetic`) the size of a
  32-layer × 32-head model at 6 lengths (128 … 4096), 16 pattern rows at every length;
- ``reference``: a page holding only plotly.js and one tiny plot (what every page costs).

Load time: from navigation start to the page's plots drawn (``window.attnlimitsView`` set
ready by the page's glue once its ``Plotly.react`` calls resolved), read from
``performance.now()`` inside the page (a script injected before the page's own sets the time
when the glue marks it ready). Reported per page: size (MB), median, min and max load time
(ms), and the median's ratio to the reference page's.

Usage::

    python benchmarks/view_open.py results/scan/smollm2-135m --repeats 10
    python benchmarks/view_open.py --repeats 5            # the synthetic page only
    python benchmarks/view_open.py RUN --repeats 3 --no-synthetic  # the run's page only
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

#: Sets window.__readyAt (ms since navigation start) when the page's glue marks it ready.
_HOOK = """
(() => {
  let value;
  Object.defineProperty(window, "attnlimitsView", { configurable: true,
    get() { return value; },
    set(v) {
      value = v;
      if (v && v.ready && window.__readyAt === undefined) window.__readyAt = performance.now();
    } });
})();
"""


def _scan_page(run: Path, out: Path) -> Path:
    """``out/report.html`` built from the saved run folder ``run``."""
    import pandas as pd

    from attnlimits.experiments import skeleton
    from attnlimits.experiments.pages import RunPage, write_page

    meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
    tables = {p.stem: pd.read_parquet(p) for p in sorted((run / "tables").glob("*.parquet"))}
    claims = tables.pop("claims", None)
    experiment = skeleton.get(str(meta.get("experiment")))
    sections = experiment.sections(tables, meta)
    figures = sorted(p.stem for p in (run / "figures").glob("*.png"))
    out.mkdir(parents=True)
    if (run / "figures").is_dir():
        (out / "figures").symlink_to((run / "figures").resolve())
    return write_page(
        out, RunPage(experiment.title, tables, meta, claims, figures, sections, experiment.evidence)
    )


def _synthetic_page(out: Path) -> Path:
    from attnlimits.experiments.pages import RunPage, write_page
    from attnlimits.experiments.scan.synthetic import synthetic_scan

    tables = synthetic_scan(32, 32, (128, 256, 512, 1024, 2048, 4096), rows=16, seed=0)
    out.mkdir(parents=True)
    meta = {"experiment": "scan", "model": {"id": "synthetic 32 × 32"}}
    return write_page(out, RunPage("Scan: synthetic 32 × 32 × 6", tables, meta))


def _reference_page(out: Path) -> Path:
    from attnlimits.view._page import document

    out.mkdir(parents=True)
    body = '<div id="p" style="height:300px"></div>'
    script = (
        "<script>Plotly.react('p', [{x: [1, 2], y: [1, 2]}], {}).then(() => "
        "{ window.attnlimitsView = { ready: true }; });</script>"
    )
    path = out / "report.html"
    path.write_text(document("reference", body, scripts=[script]), encoding="utf-8")
    return path


def _driver(threads: int) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    chromium = next((p for n in ("chromium", "chromium-browser", "google-chrome")
                     if (p := shutil.which(n))), None)  # fmt: skip
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        raise SystemExit(
            "error: no headless Chromium here (apt-get install chromium chromium-driver)"
        )
    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,1100", "--allow-file-access-from-files",
                f"--renderer-process-limit={threads}"):  # fmt: skip
        options.add_argument(arg)
    options.binary_location = chromium
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": _HOOK})
    return driver


def _open(driver: Any, page: Path, timeout: float) -> float:
    """ms from navigation start to the page's plots drawn."""
    driver.get("about:blank")
    driver.get(page.resolve().as_uri())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        at = driver.execute_script("return window.__readyAt === undefined ? null : __readyAt")
        if at is not None:
            return float(at)
        time.sleep(0.01)
    raise SystemExit(f"error: {page} was not ready after {timeout:g} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", type=Path, help="a saved scan folder (optional)")
    parser.add_argument("--repeats", type=int, default=5, help="opens per page (default 5)")
    parser.add_argument("--timeout", type=float, default=120.0, help="s per open (default 120)")
    parser.add_argument("--threads", type=int, default=1, help="renderer processes (default 1)")
    parser.add_argument(
        "--no-synthetic", action="store_true", help="skip the 32 × 32 × 6 synthetic page"
    )
    args = parser.parse_args()
    if args.repeats < 1:
        raise SystemExit(f"error: --repeats must be ≥ 1, got {args.repeats}")
    if args.run is not None and not (args.run / "run.json").is_file():
        raise SystemExit(f"error: {args.run} is not a results folder (no run.json)")
    with tempfile.TemporaryDirectory() as tmp:
        pages = {"reference": _reference_page(Path(tmp) / "reference")}
        if args.run is not None:
            pages["scan"] = _scan_page(args.run, Path(tmp) / "scan")
        if not args.no_synthetic:
            pages["synthetic"] = _synthetic_page(Path(tmp) / "synthetic")
        driver = _driver(args.threads)
        try:
            for page in pages.values():  # a first open of each: not timed
                _open(driver, page, args.timeout)
            times: dict[str, list[float]] = {name: [] for name in pages}
            for _ in range(args.repeats):
                for name, page in pages.items():
                    times[name].append(_open(driver, page, args.timeout))
        finally:
            driver.quit()
        ref = statistics.median(times["reference"])
        print(f"{'page':<10} {'MB':>6} {'median ms':>10} {'min ms':>8} {'max ms':>8} {'× ref':>6}")
        for name, page in pages.items():
            t = times[name]
            mb = page.stat().st_size / 1e6
            med = statistics.median(t)
            print(f"{name:<10} {mb:6.1f} {med:10.0f} {min(t):8.0f} {max(t):8.0f} {med / ref:6.2f}")
        print(f"({args.repeats} opens per page, interleaved, after one untimed open each)")


if __name__ == "__main__":
    main()
