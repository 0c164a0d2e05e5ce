"""The screenshots of docs/view.md, taken from saved scans in headless Chromium (issue 42).

Opens a scan folder's own ``report.html`` (as the run wrote it) and, with a second scan A, the
page of ``attnlimits view A RUN`` (served as the command serves it), and saves element
screenshots, each scaled to at most ``--width`` pixels and stored as a palette PNG:

- ``view-scan-smollm2.png``: the heatmap, sink mass at L = ``--length``, flags as marks;
- ``view-scan-critical-smollm2.png``: the layer's critical N at the L where its "none found"
  heads come nearest half (marked, never a colour of the scale);
- ``view-scan-tokens-smollm2.png``: the tokens of the head with the highest induction score at
  ``--length`` (opened through the address), then its layer's heads as thumbnails;
- ``view-pair-smollm2.png`` (with ``--pair A``): A and RUN on one scale, and RUN − A.

Usage::

    python benchmarks/view_screenshots.py /work/runs/scan_default --pair /work/runs/scan_quick
"""

from __future__ import annotations

import argparse
import io
import threading
import time
from pathlib import Path
from typing import Any

from view_open import _driver

_ROOT = Path(__file__).resolve().parents[1]


def _wait(driver: Any, condition: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout  # a wait for the page under load, not a speed limit
    while time.monotonic() < deadline:
        if driver.execute_script(f"return !!({condition})"):
            return
        time.sleep(0.1)
    raise SystemExit(f"error: never true: {condition}; console: {driver.get_log('browser')}")


def _save(png: bytes, path: Path, width: int) -> None:
    """``png`` at most ``width`` wide, as a palette PNG (a few hundred kB at most)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    if image.width > width:
        image = image.resize((width, round(image.height * width / image.width)), Image.LANCZOS)
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    print(f"{path} {image.width}×{image.height} {path.stat().st_size / 1e3:.0f} kB")


def _open(driver: Any, url: str) -> None:
    driver.get("about:blank")
    driver.get(url)
    _wait(driver, "window.attnlimitsView && attnlimitsView.ready")


def _element(driver: Any, ident: str) -> bytes:
    element = driver.find_element("id", ident)
    driver.execute_script("arguments[0].scrollIntoView()", element)
    time.sleep(0.5)  # the scroll's repaint
    return bytes(element.screenshot_as_png)


def _scan(driver: Any, run: Path, out: Path, length: int, width: int) -> None:
    import pandas as pd

    heads = pd.read_parquet(run / "tables" / "heads.parquet")
    none = heads.groupby("length")["critical_n"].agg(lambda s: abs((s == -1).mean() - 0.5))
    page = (run / "report.html").resolve().as_uri()
    _open(driver, f"{page}#metric=sink_mass&L={length}")
    _save(_element(driver, "main"), out / "view-scan-smollm2.png", width)
    _open(driver, f"{page}#metric=critical_n&L={int(none.idxmin())}")
    _save(_element(driver, "main"), out / "view-scan-critical-smollm2.png", width)
    at = heads[heads["length"] == length]
    top = at.loc[at["induction"].idxmax()]
    where = f"layer={int(top['layer'])}&head={int(top['head'])}"
    _open(driver, f"{page}#metric=induction&L={length}&{where}")
    _wait(driver, "document.querySelector('#tokens .tok-text')")
    _wait(driver, "document.querySelectorAll('#thumbs canvas').length > 0")
    from PIL import Image

    parts = [Image.open(io.BytesIO(_element(driver, i))) for i in ("tokens", "thumbs")]
    both = Image.new("RGB", (max(p.width for p in parts), sum(p.height for p in parts)), "white")
    both.paste(parts[0], (0, 0))
    both.paste(parts[1], (0, parts[0].height))
    buf = io.BytesIO()
    both.save(buf, format="PNG")
    _save(buf.getvalue(), out / "view-scan-tokens-smollm2.png", width)


def _pair(driver: Any, a: Path, b: Path, out: Path, length: int, width: int) -> None:
    from attnlimits.cli.view import page_of, pair_server

    httpd = pair_server(page_of(a), page_of(b), "127.0.0.1", 0, (a.name, b.name))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        driver.get(f"http://127.0.0.1:{httpd.server_address[1]}/pair.html")
        _wait(driver, "window.attnlimitsPair && attnlimitsPair.ready", 300)
        driver.execute_script(
            f"attnlimitsPair.state.metric = 'sink_mass'; attnlimitsPair.state.length = "
            f"'{length}'; document.getElementById('pair-metric').value = 'sink_mass';"
            f"document.getElementById('pair-length').value = '{length}';"
            "attnlimitsPair.draw().then(() => { window.drawn = true; });"
        )
        _wait(driver, "window.drawn === true")
        _save(_element(driver, "pair-grids"), out / "view-pair-smollm2.png", width)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a saved scan folder (its report.html)")
    parser.add_argument("--pair", type=Path, help="a second scan A: view A RUN's page too")
    parser.add_argument("--out", type=Path, default=_ROOT / "docs" / "images")
    parser.add_argument("--length", type=int, default=256, help="L shown (default 256)")
    parser.add_argument("--width", type=int, default=1000, help="max px wide (default 1000)")
    args = parser.parse_args()
    for run in (args.run, args.pair):
        if run is not None and not (run / "report.html").is_file():
            raise SystemExit(f"error: {run} has no report.html (a scan folder is needed)")
    driver = _driver(2)
    driver.set_window_size(1300, 1400)
    try:
        _scan(driver, args.run, args.out, args.length, args.width)
        if args.pair is not None:
            _pair(driver, args.pair, args.run, args.out, args.length, args.width)
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
