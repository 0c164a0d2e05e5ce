"""The other kinds' pages in a real browser (headless Chromium, as in tests/test_view_browser.py,
skipped naming what is missing without it): a generic run's page loads without errors; the
monitor's page draws its steps, warnings and token view; compare's page plots its summary and
explores it; softmax-not-enough's draws its figures and links each verdict to its plot; CLRS-Text's
draws a profile per algorithm. Last: the screenshots left docs/images alone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from attnlimits.experiments.pages import RunPage, write_page
from browser_driver import (
    DOCS_BEFORE,
    DOCS_IMAGES,
    console_errors,
    digests,
    not_blank,
    open_page,
)
from made_up_tables import compare_like


def test_a_generic_page_loads_without_errors(browser, tmp_path):
    tables = {"values": pd.DataFrame({"step": [0, 1], "loss": [0.5, 0.25]})}
    claims = pd.DataFrame(
        [{"claim": "c", "paper": "-", "measured": 1.0, "rule": "-", "verdict": "partly"}]
    )
    page = write_page(tmp_path, RunPage("Generic", tables, {"experiment": "other"}, claims))
    browser.get(page.resolve().as_uri())
    assert browser.execute_script("return typeof Plotly") == "object"
    assert "partly" in browser.find_element("tag name", "table").text
    assert console_errors(browser) == []


def test_monitor_page_draws_steps_and_warnings(browser, tmp_path, images):
    from selenium.webdriver.support.ui import Select

    from attnlimits.view.monitor_page import write_monitor_page
    from made_up_tables import monitor_table

    table = monitor_table()
    page = write_monitor_page(tmp_path, table)
    open_page(browser, page)
    assert console_errors(browser) == []
    assert not_blank(browser.find_element("id", "main").screenshot_as_png) > 50
    Select(browser.find_element("id", "stat")).select_by_value("sink_mass")
    z = browser.execute_script("return document.getElementById('main').data[0].z")
    row = table[(table.layer == 1) & (table["head"] == 1)].sort_values("step")
    assert z[3] == pytest.approx(row["sink_mass"].tolist())
    marks = browser.execute_script(
        "return document.getElementById('main').data.slice(1).map(t => [t.name, t.x, t.y])"
    )
    assert marks == [["collapsed", [20], ["L1 H0"]], ["dispersed", [30], ["L0 H1"]]]
    Select(browser.find_element("id", "layer")).select_by_value("1")
    names = browser.execute_script("return document.getElementById('lines').data.map(t => t.name)")
    assert names == ["head 0", "head 1", "collapsed", "dispersed"]
    browser.save_screenshot(str(images / "view-monitor.png"))


def _monitored(out: Path, tokenizer: Any = None, steps: int = 4) -> Any:
    """A hand-written loop of ``steps`` steps under AttentionMonitor(every=2), its page in
    ``out``; the monitor."""
    import torch

    from attnlimits.monitor import AttentionMonitor
    from monitor_models import batch, tiny

    model = tiny("llama", "sdpa").eval()
    with AttentionMonitor(every=2, out_dir=out, tokenizer=tokenizer).watch(model) as mon:
        for step in range(steps):
            ids, mask = batch(seed=step)
            with torch.no_grad():
                model(ids, attention_mask=mask)
            mon.step()
    return mon


def test_monitor_page_shows_a_steps_tokens_with_the_kept_weights(browser, tmp_path):
    """With a tokenizer: choosing a step, layer and head shows the first sequence's rows as
    tokens, their text and weights the monitor's token_rows' (▶ steps through the rows)."""
    from selenium.webdriver.support.ui import Select

    from attnlimits.view import MONITOR_PAGE
    from monitor_models import WordTokenizer

    mon = _monitored(tmp_path, WordTokenizer())
    rows, tokens = mon.token_rows()
    open_page(browser, tmp_path / MONITOR_PAGE)
    for sel, value in (("mt-step", "2"), ("mt-layer", "1"), ("mt-head", "3")):
        Select(browser.find_element("id", sel)).select_by_value(value)
    at = rows[(rows["step"] == 2) & (rows["layer"] == 1) & (rows["head"] == 3)]
    text = tokens[tokens["step"] == 2].set_index("position")["text"]
    for n, row in enumerate(sorted(at["row"].unique())):
        if n:
            browser.find_element("id", "mt-next").click()
        shown = browser.execute_script(
            """return [...document.querySelectorAll('#monitor-tokens span.tok')].map(s => ({
              text: s.textContent, key: s.dataset.key === undefined ? null : Number(s.dataset.key),
              weight: s.dataset.weight === undefined ? null : Number(s.dataset.weight),
              query: s.classList.contains('query')}))"""
        )
        want = at[at["row"] == row].sort_values("key")
        keyed = [t for t in shown if t["key"] is not None]
        assert [t["key"] for t in keyed] == want["key"].tolist()
        np.testing.assert_allclose([t["weight"] for t in keyed], want["weight"], atol=0.6 / 65535)
        assert [t["text"] for t in keyed] == text[want["key"]].tolist()
        assert [t["key"] for t in shown if t["query"]] == [row]
    assert "step 2" in browser.find_element("id", "monitor-tokens").text
    assert console_errors(browser) == []


def test_monitor_page_says_in_one_line_why_it_has_no_token_view(browser, tmp_path):
    """Without a tokenizer the page says so, in one visible line, and draws no token."""
    from attnlimits.view import MONITOR_PAGE

    _monitored(tmp_path)
    open_page(browser, tmp_path / MONITOR_PAGE)
    note = browser.find_element("id", "monitor-tokens")
    assert note.is_displayed() and note.text.startswith("No token view: no tokenizer was given")
    assert "\n" not in note.text
    assert browser.find_elements("css selector", "span.tok") == []
    assert console_errors(browser) == []


def test_compare_page_plots_the_summary_and_explores_it(browser, tmp_path, images):
    from selenium.webdriver.support.ui import Select

    tables = compare_like()
    page = write_page(tmp_path, RunPage("Compare", tables, {"experiment": "compare"}))
    open_page(browser, page)
    assert console_errors(browser) == []
    assert not_blank(browser.find_element("id", "preset-0").screenshot_as_png) > 50
    lines = browser.execute_script(
        "return document.getElementById('preset-1').data.map(t => [t.name, t.x, t.y])"
    )
    s = tables["summary"]
    for name, x, y in lines:  # accuracy against length, one line per normaliser
        at = s[s["normalizer"] == name].sort_values("length")
        assert x == at["length"].tolist() and y == pytest.approx(at["accuracy"].tolist())
    assert [line[0] for line in lines] == ["softmax", "adaptive", "logn:train_length=64"]
    Select(browser.find_element("id", "ex-y")).select_by_value("seconds_per_forward")
    title = browser.execute_script("return document.getElementById('explore').layout.title.text")
    assert title == "summary: seconds_per_forward against length"
    browser.save_screenshot(str(images / "view-compare.png"))
    assert console_errors(browser) == []


def _in_view(driver, element_id: str) -> bool:
    return driver.execute_script(
        """const r = document.getElementById(arguments[0]).getBoundingClientRect();
        return r.top >= -1 && r.top < window.innerHeight && r.height > 0;""",
        element_id,
    )


def test_softmax_page_draws_its_figures_and_links_each_verdict(browser, tmp_path, images):
    """The accuracy plot is the summary's means per arm with its 95 % intervals, the training
    sizes shaded; App. F draws the polynomials; a verdict's link scrolls its plot into view."""
    from attnlimits.experiments import skeleton
    from made_up_tables import fit_tables, kind_tables

    experiment = skeleton.get("softmax-not-enough")
    tables, meta = kind_tables("softmax-not-enough")
    tables |= fit_tables()
    meta = {**meta, "experiment": "softmax-not-enough"}
    claims = experiment.claims(tables, meta)
    page = write_page(tmp_path, RunPage("SnE", tables, meta, claims, evidence=experiment.evidence))
    open_page(browser, page)
    assert console_errors(browser) == []
    assert not_blank(browser.find_element("id", "preset-0").screenshot_as_png) > 50
    traces = browser.execute_script(
        "return document.getElementById('preset-0').data.map(t => [t.name, t.x, t.y, "
        "t.error_y.array, t.error_y.arrayminus])"
    )
    s = tables["summary"]
    assert [t[0] for t in traces] == ["softmax", "adaptive"]
    for name, x, y, up, down in traces:
        at = s[s["norm"] == name].sort_values("size")
        assert x == at["size"].tolist() and y == pytest.approx(at["mean"].tolist())
        assert up == pytest.approx((at["ci_high"] - at["mean"]).tolist())
        assert down == pytest.approx((at["mean"] - at["ci_low"]).tolist())
    x0, x1 = browser.execute_script(
        "const s = document.getElementById('preset-0').layout.shapes[0]; return [s.x0, s.x1]"
    )
    assert x0 < 16 < x1 < 64, "the shaded range is the training sizes (n ≤ 16)"
    names = browser.execute_script(
        "return document.getElementById('preset-2').data.map(t => t.name)"
    )
    assert {"paper (raw)", "paper (rule)", "refit (raw)", "β* per input"} <= set(names)
    browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
    assert not _in_view(browser, "preset-0")
    link = browser.find_element(
        "css selector", 'tr.verdict-reproduced a.evidence[href="#preset-0"]'
    )
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
    link.click()
    assert browser.execute_script("return location.hash") == "#preset-0"
    assert _in_view(browser, "preset-0"), "the verdict's link did not bring its plot into view"
    # the first such link may sit in a wide row of a scrolled table box (the claims' long
    # readings): bring it into view, as a reader scrolling the table would, then follow it
    link = browser.find_element("css selector", 'a.evidence[href="#table-summary"]')
    browser.execute_script("arguments[0].scrollIntoView({block: 'center', inline: 'center'})", link)
    link.click()
    assert _in_view(browser, "table-summary")
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(str(images / "view-softmax-not-enough.png"))
    assert console_errors(browser) == []


def test_clrs_page_draws_a_profile_per_algorithm(browser, tmp_path):
    from made_up_tables import kind_tables

    tables, meta = kind_tables("clrs-text")
    page = write_page(tmp_path, RunPage("CLRS", tables, {**meta, "experiment": "clrs-text"}))
    open_page(browser, page)
    assert console_errors(browser) == []
    lines = browser.execute_script(
        "return document.getElementById('preset-1').data.map(t => [t.name, t.x, t.y])"
    )
    acc = tables["accuracy"]
    acc = acc[acc["algorithm"] == "minimum"]
    base = "trivial baseline"
    for name, x, y in lines:
        at = acc[acc["arm"] == name] if name != base else acc.drop_duplicates("length")
        at = at.sort_values("length")
        assert x == at["length"].tolist()
        assert y == pytest.approx(at["baseline" if name == base else "accuracy"].tolist())
    assert sorted(line[0] for line in lines) == ["adaptive", "softmax", base]
    x0, x1 = browser.execute_script(
        "const s = document.getElementById('preset-1').layout.shapes[0]; return [s.x0, s.x1]"
    )
    assert x0 < 4 < x1 < 8, "the shaded range is the training length"


def test_screenshots_leave_the_docs_alone():
    """Last in this file: without ``ATTNLIMITS_WRITE_DOCS=1`` the tests above wrote nothing
    into docs/images (a test run must not dirty the tree)."""
    if os.environ.get("ATTNLIMITS_WRITE_DOCS"):
        pytest.skip("ATTNLIMITS_WRITE_DOCS=1 asks the tests to rewrite docs/images")
    now = digests(DOCS_IMAGES) if DOCS_IMAGES.is_dir() else {}
    assert now == DOCS_BEFORE, "a browser test wrote into docs/images"
