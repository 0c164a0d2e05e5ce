"""report.html in a real browser: headless Chromium driven by selenium (issue 31).

For the scan page (a synthetic scan's tables; the other kinds' pages and the generic page of
any other run are in tests/test_view_browser_kinds.py): it loads with no console error; the
main heatmap renders (the screenshot is not blank) and its numbers are the Parquet table's for
a sampled head; the length selector changes it; the filters blank the heads they exclude;
clicking a head opens its attention pattern, whose numbers are the stored sample's.
Screenshots go to docs/images/ only when ``ATTNLIMITS_WRITE_DOCS=1`` (else to a temporary
folder: a test run leaves the tree as it found it; the ``images`` fixture in
tests/conftest.py). Without Chromium, its driver or selenium the tests skip, naming what is
missing (``.ci/run`` installs them; tests/browser_driver.py).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from attnlimits.experiments.pages import RunPage, write_page
from attnlimits.experiments.scan.synthetic import synthetic_scan
from browser_driver import (
    console_errors,
    not_blank,
    open_page,
)


def _main_z(driver) -> np.ndarray:
    z = driver.execute_script("return document.getElementById('main').data[0].z")
    return np.array([[np.nan if v is None else v for v in row] for row in z], dtype=float)


@pytest.fixture(scope="module")
def scan_page(tmp_path_factory):
    tables = synthetic_scan(layers=6, heads=8, lengths=(128, 512), rows=8, seed=4)
    root = tmp_path_factory.mktemp("scan_page")
    meta = {"experiment": "scan", "model": {"id": "synthetic 6×8"}}
    return write_page(root, RunPage("Scan: synthetic", tables, meta)), tables


def test_scan_page_loads_renders_and_shows_the_tables_numbers(browser, scan_page, images):
    page, tables = scan_page
    open_page(browser, page)
    assert console_errors(browser) == []
    png = browser.find_element("id", "main").screenshot_as_png
    assert not_blank(png) > 50, "the heatmap did not render"
    browser.save_screenshot(str(images / "view-scan.png"))
    heads = tables["heads"]
    state = browser.execute_script("return attnlimitsView.state")
    assert state["length"] == "512"
    at = heads[heads["length"] == 512]
    z = _main_z(browser)
    column = state["metric"]
    for row in at.sample(5, random_state=0).itertuples():  # sampled heads
        assert z[row.layer, row.head] == pytest.approx(getattr(row, column), rel=1e-12)


def test_length_selector_and_filters_change_the_heatmap(browser, scan_page):
    from selenium.webdriver.support.ui import Select

    page, tables = scan_page
    open_page(browser, page)
    heads = tables["heads"]
    Select(browser.find_element("id", "metric")).select_by_value("max_weight")
    Select(browser.find_element("id", "length")).select_by_value("128")
    at = heads[heads["length"] == 128]
    z = _main_z(browser)
    np.testing.assert_allclose(z[at["layer"], at["head"]], at["max_weight"].to_numpy())
    title = browser.execute_script("return document.getElementById('main').layout.title.text")
    assert "L = 128" in title and "maximum weight" in title
    Select(browser.find_element("id", "kind-filter")).select_by_visible_text("sink")
    z = _main_z(browser)
    sink = (at["kind"] == "sink").to_numpy()
    assert np.isfinite(z[at["layer"], at["head"]]).tolist() == sink.tolist()
    Select(browser.find_element("id", "kind-filter")).select_by_value("")
    Select(browser.find_element("id", "flag-filter")).select_by_value("flag_dispersing")
    z = _main_z(browser)
    flagged = at["flag_dispersing"].to_numpy()
    assert np.isfinite(z[at["layer"], at["head"]]).tolist() == flagged.tolist()
    assert console_errors(browser) == []


def test_clicking_a_head_opens_its_pattern(browser, scan_page, images):
    from selenium.webdriver.common.action_chains import ActionChains

    page, tables = scan_page
    open_page(browser, page)
    layer, head = 2, 5
    x, y, w, h = browser.execute_script(
        """const gd = document.getElementById('main'), L = gd._fullLayout;
        const r = gd.getBoundingClientRect();
        return [L.xaxis._offset + L.xaxis.l2p(arguments[1]),
                L.yaxis._offset + L.yaxis.l2p(arguments[0]), r.width, r.height];""",
        layer,
        head,
    )
    main = browser.find_element("id", "main")
    ActionChains(browser).move_to_element_with_offset(main, int(x - w / 2), int(y - h / 2)).click(
    ).perform()  # fmt: skip
    shown = browser.execute_script("return attnlimitsView.state.clicked")
    assert shown == {"layer": layer, "head": head}
    z = browser.execute_script("return document.getElementById('pattern').data[0].z")
    p = tables["patterns"]
    at = p[(p["length"] == 512) & (p["layer"] == layer) & (p["head"] == head)].sort_values("row")
    want = at[[f"w{b}" for b in range(64)]].to_numpy()
    np.testing.assert_allclose(np.array(z), want, atol=0.6 / 65535)
    text = browser.find_element("id", "head-table").text
    assert f"layer {layer}, head {head}" in text
    browser.save_screenshot(str(images / "view-scan-head.png"))
    assert console_errors(browser) == []


def _click_head(driver, layer: int, head: int) -> None:
    """A real mouse click on the heatmap's cell (layer, head)."""
    from selenium.webdriver.common.action_chains import ActionChains

    x, y, w, h = driver.execute_script(
        """const gd = document.getElementById('main'), L = gd._fullLayout;
        const r = gd.getBoundingClientRect();
        return [L.xaxis._offset + L.xaxis.l2p(arguments[1]),
                L.yaxis._offset + L.yaxis.l2p(arguments[0]), r.width, r.height];""",
        layer,
        head,
    )
    main = driver.find_element("id", "main")
    ActionChains(driver).move_to_element_with_offset(main, int(x - w / 2), int(y - h / 2)).click(
    ).perform()  # fmt: skip


def _shown_tokens(driver) -> list[dict]:
    return driver.execute_script(
        """return Array.from(document.querySelectorAll('#tokens span.tok')).map(s => ({
          text: s.textContent, key: s.dataset.key === undefined ? null : Number(s.dataset.key),
          weight: s.dataset.weight === undefined ? null : Number(s.dataset.weight),
          query: s.classList.contains('query'), title: s.title}))"""
    )


def test_clicking_a_head_shows_its_tokens_with_the_stored_weights(browser, scan_page, images):
    """CircuitsVis-style rows: the text is the tokens table's, each shaded key's weight the
    attention_rows table's (uint16 on the page), the query outlined; ▶ steps to the next row."""
    from selenium.webdriver.support.ui import Select

    page, tables = scan_page
    open_page(browser, page)
    Select(browser.find_element("id", "length")).select_by_value("128")  # full rows (L <= 256)
    layer, head = 3, 2
    _click_head(browser, layer, head)
    assert browser.execute_script("return attnlimitsView.state.clicked") == {
        "layer": layer, "head": head}  # fmt: skip
    rows, text = tables["attention_rows"], tables["tokens"].set_index("position")["text"]
    at = rows[(rows["layer"] == layer) & (rows["head"] == head) & (rows["length"] == 128)]
    for step, row in enumerate(sorted(at["row"].unique())):
        if step:
            browser.find_element("id", "tok-next").click()
        shown = _shown_tokens(browser)
        want = at[at["row"] == row].sort_values("key")
        keyed = [s for s in shown if s["key"] is not None]
        assert [s["key"] for s in keyed] == want["key"].tolist()  # every key of a full row
        np.testing.assert_allclose([s["weight"] for s in keyed], want["weight"], atol=0.6 / 65535)
        assert [s["text"].replace("↵", "\n") for s in keyed] == text[want["key"]].tolist()
        assert [s["key"] for s in shown if s["query"]] == [row]
        assert all(s["title"].startswith(f"key {s['key']} ") and "weight" in s["title"]
                   for s in keyed)  # fmt: skip
        assert f"query row {step + 1} of" in browser.find_element("id", "tokens").text
    Select(browser.find_element("id", "length")).select_by_value("512")  # top-k only
    shown = [s for s in _shown_tokens(browser) if s["key"] is not None]
    at = rows[(rows["layer"] == layer) & (rows["head"] == head) & (rows["length"] == 512)]
    want = at[at["row"] == at["row"].min()].sort_values("key")
    assert len(want) == 8 and [s["key"] for s in shown] == want["key"].tolist()
    np.testing.assert_allclose([s["weight"] for s in shown], want["weight"], atol=0.6 / 65535)
    browser.save_screenshot(str(images / "view-scan-tokens.png"))
    assert console_errors(browser) == []


def test_thumbnails_show_a_layers_heads_and_open_one(browser, scan_page):
    from selenium.webdriver.support.ui import Select

    page, _ = scan_page
    open_page(browser, page)
    assert len(browser.find_elements("css selector", "#thumbs canvas")) == 8  # layer 0's heads
    Select(browser.find_element("id", "thumb-layer")).select_by_value("4")
    thumbs = browser.find_elements("css selector", "#thumbs canvas")
    assert [(int(t.get_attribute("data-layer")), int(t.get_attribute("data-head")))
            for t in thumbs] == [(4, h) for h in range(8)]  # fmt: skip
    assert not_blank(thumbs[6].screenshot_as_png) > 5, "a thumbnail drew nothing"
    thumbs[6].click()
    assert browser.execute_script("return attnlimitsView.state.clicked") == {"layer": 4, "head": 6}
    assert "layer 4, head 6" in browser.find_element("id", "tokens").text
    picked = browser.find_elements("css selector", "#thumbs canvas.picked")
    assert [p.get_attribute("data-head") for p in picked] == ["6"]
    assert console_errors(browser) == []


def test_none_found_and_not_computed_are_their_own_categories(browser, scan_page, images):
    """The layer's critical N: −1 (none found) and NaN (not computed) are never values on the
    scale: blank in the heatmap, drawn by a categories layer with its glyph and a legend."""
    from selenium.webdriver.support.ui import Select

    page, tables = scan_page
    open_page(browser, page)
    Select(browser.find_element("id", "metric")).select_by_value("critical_n_over_L")
    Select(browser.find_element("id", "length")).select_by_value("128")
    heads = tables["heads"]
    at = heads[heads["length"] == 128]
    z = _main_z(browser)
    none = (at["critical_n"] == -1).to_numpy()
    assert none.any() and np.isnan(z[at["layer"], at["head"]][none]).all()
    np.testing.assert_allclose(
        z[at["layer"], at["head"]][~none], at["critical_n_over_L"].to_numpy()[~none]
    )
    cat = browser.execute_script(
        "const t = document.getElementById('main').data[1]; return [t.name, t.z, t.text]"
    )
    assert cat[0] == "categories"
    codes = np.array([[np.nan if v is None else v for v in r] for r in cat[1]])
    assert (codes[at["layer"], at["head"]][none] == 0).all()
    assert np.isnan(codes[at["layer"], at["head"]][~none]).all()
    assert {cat[2][r.layer][r.head] for r in at[none].itertuples()} == {"∅"}
    names = browser.execute_script("return document.getElementById('main').data.map(t => t.name)")
    assert any("none found" in n for n in names)
    scale = browser.execute_script("const t = document.getElementById('main').data[0]; "
                                   "return [t.zmin, t.zmax]")  # fmt: skip
    assert scale[0] > 0, "−1 is not on the colour scale"
    browser.save_screenshot(str(images / "view-scan-critical.png"))
    Select(browser.find_element("id", "length")).select_by_value("512")  # no critical N past 256
    codes = browser.execute_script("return document.getElementById('main').data[1].z")
    assert {v for r in codes for v in r} == {1}
    names = browser.execute_script("return document.getElementById('main').data.map(t => t.name)")
    assert any("not computed" in n for n in names)
    assert console_errors(browser) == []


def test_the_colour_scale_stays_put_under_filters_unless_asked(browser, scan_page):
    from selenium.webdriver.support.ui import Select

    page, tables = scan_page
    open_page(browser, page)
    Select(browser.find_element("id", "metric")).select_by_value("max_weight")
    heads = tables["heads"]
    at = heads[heads["length"] == 512]

    def scale():
        return browser.execute_script(
            "const t = document.getElementById('main').data[0]; return [t.zmin, t.zmax]"
        )

    everyone = [at["max_weight"].min(), at["max_weight"].max()]
    assert scale() == pytest.approx(everyone)
    Select(browser.find_element("id", "kind-filter")).select_by_visible_text("sink")
    assert scale() == pytest.approx(everyone)
    browser.find_element("id", "rescale").click()
    sink = at[at["kind"] == "sink"]["max_weight"]
    assert scale() == pytest.approx([sink.min(), sink.max()])
    assert console_errors(browser) == []


def test_an_empty_filter_says_so(browser, scan_page, tmp_path):
    from selenium.webdriver.support.ui import Select

    _, tables = scan_page
    heads = tables["heads"].assign(flag_dispersing=True)  # every head flagged
    meta = {"experiment": "scan", "model": {"id": "synthetic"}}
    page = write_page(tmp_path, RunPage("Scan", {**tables, "heads": heads}, meta))
    open_page(browser, page)
    assert browser.find_element("id", "empty").text == ""
    Select(browser.find_element("id", "flag-filter")).select_by_value("none")
    assert "No head at L = 512 matches the filters (not flagged)" in browser.find_element(
        "id", "empty").text  # fmt: skip
    notes = browser.execute_script(
        "return document.getElementById('main').layout.annotations.map(a => a.text)"
    )
    assert notes == ["no head matches: not flagged"]
    assert console_errors(browser) == []


def test_the_tooltip_is_short_and_flags_never_hide_it(browser, scan_page):
    """Kind, flags and six numbers with units, no _std rows; a flag mark takes no hover, so
    hovering a layer-0 head on its mark shows the head's numbers."""
    from selenium.webdriver.common.action_chains import ActionChains

    page, tables = scan_page
    heads = tables["heads"]
    open_page(browser, page)
    browser.execute_script("document.getElementById('main').data.slice(2).forEach("
                           "t => { if (t.visible === 'legendonly') t.visible = true; });"
                           "Plotly.redraw('main')")  # fmt: skip
    text = browser.execute_script("return document.getElementById('main').data[0].text[0][1]")
    lines = text.split("<br>")
    assert len(lines) <= 10 and "_std" not in text and "nats" in text and "%" in text
    marks = browser.execute_script(
        "return document.getElementById('main').data.filter(t => t.type === 'scatter' "
        "&& t.x.length && t.x[0] !== null).map(t => [t.hoverinfo, t.x, t.y])"
    )
    assert marks and all(m[0] == "skip" for m in marks)
    at = heads[(heads["length"] == 512) & (heads["layer"] == 0)]
    flagged = at[at.filter(like="flag_").any(axis=1)]
    head = int(flagged["head"].iloc[0])
    x, y, w, h = browser.execute_script(
        """const gd = document.getElementById('main'), L = gd._fullLayout;
        const r = gd.getBoundingClientRect();
        return [L.xaxis._offset + L.xaxis.l2p(arguments[0]),
                L.yaxis._offset + L.yaxis.l2p(0), r.width, r.height];""",
        head,
    )
    main = browser.find_element("id", "main")
    at_mark = (int(x - w / 2), int(y - h / 2))  # the cell's centre, where its flag marks sit
    ActionChains(browser).move_to_element_with_offset(main, *at_mark).perform()
    deadline = time.monotonic() + 10
    label = ""
    while time.monotonic() < deadline and "max weight" not in label:
        label = browser.execute_script(
            "const h = document.querySelector('#main .hoverlayer'); return h ? h.textContent : ''"
        )
        time.sleep(0.05)
    assert f"layer 0, head {head}" in label and "max weight" in label, label


def test_the_address_keeps_the_head_metric_and_length(browser, scan_page):
    from selenium.webdriver.support.ui import Select

    page, _ = scan_page
    browser.get("about:blank")
    browser.get(page.resolve().as_uri() + "#layer=2&head=5&metric=max_weight&L=128")
    deadline = time.monotonic() + 60
    while not browser.execute_script("return !!(window.attnlimitsView && attnlimitsView.ready)"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    state = browser.execute_script("return attnlimitsView.state")
    assert (state["metric"], state["length"], state["clicked"]) == (
        "max_weight", "128", {"layer": 2, "head": 5})  # fmt: skip
    assert browser.find_element("id", "metric").get_attribute("value") == "max_weight"
    assert "layer 2, head 5, L = 128" in browser.find_element("id", "tokens").text
    Select(browser.find_element("id", "length")).select_by_value("512")
    _click_head(browser, 4, 1)
    hash_ = browser.execute_script("return location.hash")
    assert dict(p.split("=") for p in hash_[1:].split("&")) == {
        "metric": "max_weight", "L": "512", "layer": "4", "head": "1"}  # fmt: skip
    browser.execute_script("location.hash = '#metric=sink_mass&L=128&layer=1&head=7'")
    deadline = time.monotonic() + 10  # a link followed on the page opens its view
    while browser.execute_script("return attnlimitsView.state.clicked")["head"] != 7:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert browser.execute_script("return attnlimitsView.state.metric") == "sink_mass"
    assert console_errors(browser) == []


def test_the_address_keeps_a_head_and_a_tables_state_together(browser, scan_page, tmp_path):
    """The scan's keys and a table's (view/address.js) share the hash: a link with both opens
    the head and the sorted table; clicking a head keeps the table's keys, sorting keeps the
    head's."""
    from urllib.parse import parse_qsl

    _, tables = scan_page
    claims = pd.DataFrame({"claim": ["a", "b", "c"], "measured": [2.0, 3.0, 1.0],
                           "verdict": ["reproduced", "partly", "not reproduced"]})  # fmt: skip
    page = write_page(tmp_path, RunPage("Scan: synthetic", tables, {"experiment": "scan"}, claims))
    browser.get("about:blank")
    browser.get(page.resolve().as_uri() + "#layer=2&head=5&metric=max_weight&L=128"
                "&t.claims.sort=-measured")  # fmt: skip
    deadline = time.monotonic() + 60
    while not browser.execute_script("return !!(window.attnlimitsView && attnlimitsView.ready)"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert browser.execute_script("return attnlimitsView.state.clicked") == {"layer": 2, "head": 5}
    assert "layer 2, head 5, L = 128" in browser.find_element("id", "tokens").text
    column = """const box = document.querySelector('.tablebox[data-name="claims"]');
        return [...box.querySelectorAll('tbody tr')].map(r => r.cells[0].textContent);"""
    assert browser.execute_script(column) == ["b", "a", "c"]
    browser.execute_script("scrollTo(0, 0)")
    _click_head(browser, 4, 1)
    state = lambda: dict(parse_qsl(browser.execute_script("return location.hash.slice(1)")))  # noqa: E731
    assert state() == {"layer": "4", "head": "1", "metric": "max_weight", "L": "128",
                       "t.claims.sort": "-measured"}  # fmt: skip
    browser.execute_script(
        """const box = document.querySelector('.tablebox[data-name="claims"]');
        [...box.querySelectorAll('thead th')].find(h => h.textContent === 'claim').click();"""
    )
    assert browser.execute_script(column) == ["a", "b", "c"]
    assert state() == {"layer": "4", "head": "1", "metric": "max_weight", "L": "128",
                       "t.claims.sort": "claim"}  # fmt: skip
    assert console_errors(browser) == []
