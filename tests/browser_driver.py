"""Headless Chromium for the page tests (tests/test_view_*browser*.py, tests/test_view_server.py):
the driver, a page opened until ready, its console errors, how many colours a screenshot has.
Without Chromium, its driver or selenium a test skips, naming what is missing (``.ci/run``
installs them). The ``browser`` and ``images`` fixtures are in tests/conftest.py."""

from __future__ import annotations

import hashlib
import io
import shutil
import time
from pathlib import Path

import pytest

from conftest import REPO

DOCS_IMAGES = REPO / "docs" / "images"


def digests(folder: Path) -> dict[str, str]:
    """Each file's modification time and sha256, by name."""
    return {
        p.name: f"{p.stat().st_mtime_ns} {hashlib.sha256(p.read_bytes()).hexdigest()}"
        for p in sorted(folder.glob("*"))
    }


#: docs/images as the session found it (tests/test_view_browser_kinds.py's last test checks
#: that the browser tests left it so).
DOCS_BEFORE = digests(DOCS_IMAGES) if DOCS_IMAGES.is_dir() else {}


def find_browser() -> tuple[str, str] | str:
    """(chromium, chromedriver) paths, or why there are none."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    chromium = next((p for n in ("chromium", "chromium-browser", "google-chrome")
                     if (p := shutil.which(n))), None)  # fmt: skip
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        return (
            "no headless browser here: install Chromium and its driver "
            "(Debian: apt-get install chromium chromium-driver) to run the page's browser tests"
        )
    return chromium, driver


def chrome_driver(prefs: dict | None = None):
    """A headless Chromium driver logging the console (skips the test, naming what is missing,
    without one); ``prefs``: Chromium's preferences (e.g. where downloads go)."""
    found = find_browser()
    if isinstance(found, str):
        pytest.skip(found)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,1100", "--allow-file-access-from-files"):  # fmt: skip
        options.add_argument(arg)
    options.binary_location = found[0]
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if prefs:
        options.add_experimental_option("prefs", prefs)
    return webdriver.Chrome(service=Service(found[1]), options=options)


def open_page(driver, page: Path) -> None:
    """Open ``page`` and wait until its script says it is ready."""
    driver.get(page.resolve().as_uri())
    deadline = time.monotonic() + 60  # a wait for the page under load, not a speed limit
    while time.monotonic() < deadline:
        if driver.execute_script("return !!(window.attnlimitsView && attnlimitsView.ready)"):
            return
        time.sleep(0.05)
    raise AssertionError(f"{page} never became ready; console: {driver.get_log('browser')}")


def console_errors(driver) -> list[dict]:
    """The console's errors since the last call."""
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def not_blank(png: bytes) -> int:
    """How many distinct colours a screenshot has (a blank page has one or two)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    return len(set(image.getdata()))
