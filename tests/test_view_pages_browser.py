"""report.html's honest encodings and usable tables in a real browser (issue 42).

Headless Chromium as in test_view_browser.py (skipped, naming what is missing, without it):
Fig. 2c draws each x source on its own plot, never their mean; plots name what they pool and
fix; equal lines stay told apart, estimates carry their error bars, the toolbar and legend
cover no title; tables sort, filter, cut to a top 10 and download as CSV; every page has a
table of contents, anchors below images land on their target, a figure an interactive plot
mirrors is not shown twice; the explorer's choice and a table's sort and filter are kept
in the URL; the limitations
side-by-side page draws Fig. 2c of both models, colours their verdicts and fills its Run
section from each run.json. Every test also checks that the page logs no console error.
"""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnlimits.experiments.pages import RunPage, write_page
from browser_driver import (
    chrome_driver,
    console_errors,
    open_page,
)
from made_up_tables import compare_like, two_sources


@pytest.fixture(scope="module")
def downloads(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def chrome(downloads):
    driver = chrome_driver(
        {"download.default_directory": str(downloads), "download.prompt_for_download": False}
    )
    driver.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    yield driver
    driver.quit()


def _plots(driver) -> list[dict]:
    return driver.execute_script(
        "return [...document.querySelectorAll('.preset')].map(g => ({id: g.id, "
        "title: g.layout.title.text.replace(/<br>/g, ' '), ytitle: g._fullLayout.yaxis.title.text, "
        "traces: g.data.map(t => ({name: t.name, x: t.x, y: t.y, dash: t.line && t.line.dash, "
        "symbol: t.marker && t.marker.symbol, err: t.error_y && t.error_y.array}))}))"
    )


def test_fig2c_draws_each_x_source_never_their_mean(chrome, tmp_path):
    """Fig. 2c: one plot per x source, titled with it; "derived" at L = 128 is the table's
    row of that source (values: 2, hidden: 9), not their mean 5.5. Figs. 2a/2b say what each
    point pools and what is fixed, and title their y axis in words."""
    tables, meta = two_sources()
    page = write_page(tmp_path, RunPage("Limitations", tables, meta))
    open_page(chrome, page)
    assert console_errors(chrome) == []
    plots = _plots(chrome)
    fig2c = [p for p in plots if p["title"].startswith("Fig. 2c")]
    assert len(fig2c) == 2
    alg3 = tables["alg3"]
    for source in ("values", "hidden"):
        (plot,) = [p for p in fig2c if f"x\u00a0=\u00a0{source}" in p["title"]]
        assert "windows pooled" in plot["title"] and "E" in plot["title"]
        for form in ("derived", "exact", "main_text"):
            (trace,) = [t for t in plot["traces"] if t["name"] == form]
            row = alg3[(alg3.x_source == source) & (alg3.e_form == form) & (alg3.L == 128)]
            assert trace["y"][trace["x"].index(128)] == float(row["critical_n"].iloc[0])
    fig2a = next(p for p in plots if p["title"].startswith("Fig. 2a"))
    assert "pooled over layer, head" in fig2a["title"] and "N\u00a0=\u00a05" in fig2a["title"]
    assert "expectation" not in fig2a["ytitle"] and "distance" in fig2a["ytitle"]
    styles = {(t["dash"], t["symbol"]) for t in fig2a["traces"] if "values" in t["name"]}
    assert len(styles) == 1 and len(fig2a["traces"]) == 8  # colour: quantity, dash: source
    assert len({(t["dash"], t["symbol"]) for t in fig2a["traces"]}) == 2


def _boxes(driver, plot_id: str) -> dict[str, list[float] | None]:
    return driver.execute_script(
        """const g = document.getElementById(arguments[0]);
        const box = (s) => { const e = g.querySelector(s); if (!e) return null;
          const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
        return {title: box('.gtitle'), modebar: box('.modebar'), legend: box('.legend'),
                xtitle: box('.g-xtitle'), ytitle: box('.g-ytitle')};""",
        plot_id,
    )


def _overlap(a, b) -> bool:
    return bool(a and b) and a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_equal_lines_stay_apart_with_error_bars(chrome, tmp_path):
    """compare: softmax and adaptive with equal accuracies get distinct dashes and markers,
    each point its ± 1 s.e. and the plot the probes it rests on; on every plot the toolbar
    covers no title and the legend no axis title."""
    tables = compare_like()
    s = tables["summary"]
    s.loc[s.normalizer == "adaptive", "accuracy"] = s.loc[
        s.normalizer == "softmax", "accuracy"
    ].values
    s["accuracy_se"] = np.sqrt(s["accuracy"] * (1 - s["accuracy"]) / 2)
    s["probes"] = 2
    page = write_page(tmp_path, RunPage("Compare", tables, {"experiment": "compare"}))
    open_page(chrome, page)
    assert console_errors(chrome) == []
    acc = next(p for p in _plots(chrome) if p["id"] == "preset-1")
    assert len({(t["dash"], t["symbol"]) for t in acc["traces"]}) == 3
    for t in acc["traces"]:
        want = s[s.normalizer == t["name"]].sort_values("length")["accuracy_se"]
        assert t["err"] == pytest.approx(want.tolist())
    assert "2 probes per point" in acc["title"]


def test_the_toolbar_and_legends_cover_no_title(chrome, tmp_path):
    """On every plot of a page with long titles and many lines (softmax-not-enough's, App. F
    among them) the toolbar covers no title and the legend no axis title."""
    from made_up_tables import fit_tables, kind_tables

    tables, meta = kind_tables("softmax-not-enough")
    tables |= fit_tables()
    page = write_page(
        tmp_path, RunPage("SnE", tables, {**meta, "experiment": "softmax-not-enough"})
    )
    open_page(chrome, page)
    assert console_errors(chrome) == []
    ids = chrome.execute_script("return [...document.querySelectorAll('.preset')].map(g => g.id)")
    for plot in [*ids, "explore"]:
        box = _boxes(chrome, plot)
        assert box["title"] and box["modebar"], plot
        assert not _overlap(box["title"], box["modebar"]), (plot, box)
        assert not _overlap(box["legend"], box["xtitle"]), (plot, box)
        assert not _overlap(box["legend"], box["title"]), (plot, box)


def _table_page(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"layer": np.repeat(np.arange(4), 6), "head": np.tile(np.arange(6), 4),
                       "kind": rng.choice(["sink", "local", "broad"], 24),
                       "entropy": rng.random(24) * 3})  # fmt: skip
    return write_page(tmp_path, RunPage("Tables", {"heads_table": df}, {"experiment": "other"})), df


def _shown(driver, name: str) -> list[list[str]]:
    return driver.execute_script(
        """const box = document.querySelector(`.tablebox[data-name="${arguments[0]}"]`);
        return [...box.querySelectorAll('tbody tr')].filter(r => !r.hidden)
          .map(r => [...r.cells].map(c => c.dataset.v ?? c.textContent));""",
        name,
    )


def test_tables_sort_filter_top_ten_and_download_csv(chrome, tmp_path, downloads):
    page, df = _table_page(tmp_path)
    chrome.get(page.resolve().as_uri())
    box = chrome.find_element("css selector", '.tablebox[data-name="heads_table"]')
    header = box.find_elements("css selector", "th")[3]  # entropy
    header.click()
    got = [float(r[3]) for r in _shown(chrome, "heads_table")]
    assert got == sorted(df["entropy"].tolist())
    header.click()
    got = [float(r[3]) for r in _shown(chrome, "heads_table")]
    assert got == sorted(df["entropy"].tolist(), reverse=True)
    assert header.get_attribute("aria-sort") == "descending"
    box.find_element("css selector", ".t-filter").send_keys("sink")
    rows = _shown(chrome, "heads_table")
    assert [r[2] for r in rows] == ["sink"] * int((df["kind"] == "sink").sum())
    box.find_element("css selector", ".t-filter").clear()
    chrome.execute_script("arguments[0].dispatchEvent(new Event('input'))",
                          box.find_element("css selector", ".t-filter"))  # fmt: skip
    from selenium.webdriver.support.ui import Select

    Select(box.find_element("css selector", ".t-top")).select_by_visible_text("entropy")
    rows = _shown(chrome, "heads_table")
    top = df.nlargest(10, "entropy")
    assert [float(r[3]) for r in rows] == top["entropy"].tolist()
    for old in downloads.glob("*.csv"):
        old.unlink()
    box.find_element("css selector", ".t-csv").click()
    deadline = time.monotonic() + 30  # a wait for the download to land, not a speed limit
    while not list(downloads.glob("heads_table*.csv")) and time.monotonic() < deadline:
        time.sleep(0.1)
    (saved,) = downloads.glob("heads_table*.csv")
    got = pd.read_csv(saved)
    assert list(got.columns) == list(df.columns)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), top.reset_index(drop=True),
                                  check_dtype=False)  # fmt: skip
    assert console_errors(chrome) == []


def _hash(driver) -> dict[str, str]:
    from urllib.parse import parse_qsl

    return dict(parse_qsl(driver.execute_script("return location.hash.slice(1)")))


def test_a_tables_sort_and_filter_are_kept_in_the_url(chrome, tmp_path):
    """Sorting and filtering write the table's state into the address; a link with it opens the
    table sorted and filtered (and in view), a "top 10 by" link cut to its ten."""
    page, df = _table_page(tmp_path)
    chrome.get(page.resolve().as_uri())
    box = chrome.find_element("css selector", '.tablebox[data-name="heads_table"]')
    header = box.find_elements("css selector", "th")[3]  # entropy
    header.click()
    header.click()  # descending
    box.find_element("css selector", ".t-filter").send_keys("Sink")
    assert _hash(chrome) == {"t.heads_table.sort": "-entropy", "t.heads_table.q": "Sink"}
    url = chrome.current_url
    sink = df[df["kind"] == "sink"].sort_values("entropy", ascending=False)
    chrome.get("about:blank")
    chrome.get(url)
    rows = _shown(chrome, "heads_table")
    assert [float(r[3]) for r in rows] == sink["entropy"].tolist()
    box = chrome.find_element("css selector", '.tablebox[data-name="heads_table"]')
    assert box.find_element("css selector", ".t-filter").get_attribute("value") == "Sink"
    assert box.find_elements("css selector", "th")[3].get_attribute("aria-sort") == "descending"
    assert chrome.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return r.top >= -1 && r.top < innerHeight",
        box,
    )
    chrome.get("about:blank")
    chrome.get(page.resolve().as_uri() + "#t.heads_table.top=entropy")
    rows = _shown(chrome, "heads_table")
    assert [float(r[3]) for r in rows] == df.nlargest(10, "entropy")["entropy"].tolist()
    box = chrome.find_element("css selector", '.tablebox[data-name="heads_table"]')
    box.find_elements("css selector", "th")[0].click()  # a sort replaces the top 10
    assert _hash(chrome) == {"t.heads_table.sort": "layer"}
    assert len(_shown(chrome, "heads_table")) == len(df)
    assert console_errors(chrome) == []


def _png(path: Path, width: int, height: int) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (width, height), (200, 220, 240)).save(path)


def test_contents_anchors_below_images_and_no_static_copy_of_a_plot(chrome, tmp_path):
    """A table of contents links every section; the static figures take their place before
    they load (so an anchor below them stays where a link sent the reader); the figure an
    interactive plot mirrors is a link (to the plot, its PNG and SVG), not an image."""
    tables = compare_like()
    names = ["accuracy", "tall_a", "tall_b", "tall_c"]
    for n in names:
        _png(tmp_path / "figures" / f"{n}.png", 800, 1400)
    page = write_page(
        tmp_path, RunPage("Compare", tables, {"experiment": "compare"}, figures=names)
    )
    at = "(document.getElementById('figure-tall_c').getBoundingClientRect().top + scrollY)"
    record = f"document.addEventListener('DOMContentLoaded', () => {{ window.before = {at}; }})"
    script = chrome.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": record})
    chrome.get(page.resolve().as_uri())
    chrome.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", script)
    deadline = time.monotonic() + 30  # a wait for the images to load, not a speed limit
    while time.monotonic() < deadline and not chrome.execute_script(
        "scrollBy(0, 600); return [...document.images].every(i => i.complete)"
    ):
        time.sleep(0.05)
    before, after = chrome.execute_script(f"return [window.before, {at}]")
    assert after == pytest.approx(before, abs=1), "loading the figures moved the anchor"
    chrome.execute_script("scrollTo(0, 0)")
    chrome.find_element("css selector", 'nav.toc a[href="#figure-tall_c"]').click()
    top = chrome.execute_script(
        "return document.getElementById('figure-tall_c').getBoundingClientRect().top"
    )
    assert 0 <= top < 200, f"the link landed {top:.0f} px off its target"
    contents = chrome.execute_script(
        "return [...document.querySelectorAll('nav.toc > ul > li > a')].map(a => a.textContent)"
    )
    heads = chrome.execute_script(
        "return [...document.querySelectorAll('h2')].map(h => h.textContent)"
    )
    assert contents == heads and "Tables" in contents and "Run" in contents
    chrome.find_element("css selector", 'nav.toc a[href="#table-summary"]').click()
    assert chrome.execute_script(
        "const r = document.getElementById('table-summary').getBoundingClientRect();"
        "return r.top >= -1 && r.top < innerHeight"
    )
    srcs = chrome.execute_script("return [...document.images].map(i => i.getAttribute('src'))")
    assert "figures/accuracy.png" not in srcs and "figures/tall_a.png" in srcs
    link = chrome.find_element("id", "figure-accuracy")
    hrefs = [a.get_attribute("href") for a in link.find_elements("tag name", "a")]
    assert hrefs[0].endswith("#preset-1") and hrefs[1].endswith("figures/accuracy.png")
    assert console_errors(chrome) == []


def test_the_explorers_choice_is_kept_in_the_url(chrome, tmp_path):
    from selenium.webdriver.support.ui import Select

    tables, meta = two_sources()
    page = write_page(tmp_path, RunPage("Limitations", tables, meta))
    open_page(chrome, page)
    Select(chrome.find_element("id", "ex-table")).select_by_value("alg3")
    Select(chrome.find_element("id", "ex-y")).select_by_value("critical_n")
    Select(chrome.find_element("id", "ex-group")).select_by_value("e_form")
    Select(chrome.find_element("id", "ex-and")).select_by_value("x_source")
    url = chrome.current_url
    assert "ex.table=alg3" in url and "ex.and=x_source" in url
    chrome.get("about:blank")
    chrome.get(url)
    _open_url_ready(chrome)
    for sel, want in (("ex-table", "alg3"), ("ex-y", "critical_n"), ("ex-group", "e_form"),
                      ("ex-and", "x_source")):  # fmt: skip
        assert chrome.find_element("id", sel).get_attribute("value") == want
    names = chrome.execute_script("return document.getElementById('explore').data.map(t => t.name)")
    assert "derived · values" in names and "derived · hidden" in names
    assert console_errors(chrome) == []


def _open_url_ready(driver) -> None:
    deadline = time.monotonic() + 60  # a wait for the page under load, not a speed limit
    while time.monotonic() < deadline:
        if driver.execute_script("return !!(window.attnlimitsExplore && attnlimitsExplore.ready)"):
            return
        time.sleep(0.05)
    raise AssertionError(f"never became ready; console: {driver.get_log('browser')}")


def _model_run(folder: Path, model: str, shift: int) -> None:
    """A finished limitations run of ``model``: its claims, Alg. 3 table and run.json."""
    from attnlimits.experiments.limitations.claims import claims
    from attnlimits.experiments.store import ResultStore

    tables, _ = two_sources()
    alg3 = tables["alg3"]
    alg3["critical_n"] = np.where(alg3["critical_n"] > 0, alg3["critical_n"] + shift, -1)
    store = ResultStore(folder)
    with store.lock():
        store.write_table(claims(tables, {"params": {"x_sources": ["values"], "alg3_heads": 144}}),
                          "claims")  # fmt: skip
        store.write_table(alg3.assign(model=model), "alg3")
    run = {"experiment": "limitations", "params": {"model": model, "windows": 1,
           "lengths": [32, 64, 128, 256], "x_sources": ["values", "hidden"]},
           "machine": {"cpu": f"CPU of {model}", "cores": 7},
           "versions": {"torch": "9.9"}, "wall_time_total_s": {"compute": 12.5}}  # fmt: skip
    (folder / "run.json").write_text(json.dumps(run))


def test_limitations_side_by_side_page(chrome, tmp_path):
    from attnlimits.experiments.limitations.side_by_side import write_side_by_side

    runs = {"model-a": tmp_path / "model-a", "model-b": tmp_path / "model-b"}
    for i, (model, folder) in enumerate(runs.items()):
        _model_run(folder, model, 3 * i)
    write_side_by_side(tmp_path, runs)
    open_page(chrome, tmp_path / "report.html")
    assert console_errors(chrome) == []
    plots = [p for p in _plots(chrome) if p["title"].startswith("Fig. 2c")]
    alg3 = pd.read_parquet(tmp_path / "tables" / "alg3.parquet")
    assert len(plots) == 4
    for model in runs:
        for source in ("values", "hidden"):
            (plot,) = [p for p in plots if f"model\u00a0=\u00a0{model}" in p["title"]
                       and f"x\u00a0=\u00a0{source}" in p["title"]]  # fmt: skip
            (trace,) = [t for t in plot["traces"] if t["name"] == "derived"]
            at = alg3[(alg3.model == model) & (alg3.x_source == source)
                      & (alg3.e_form == "derived")].sort_values("L")  # fmt: skip
            assert trace["y"] == at["critical_n"].astype(float).tolist()
    coloured = chrome.execute_script(
        "return [...document.querySelectorAll('.tablebox[data-name=claims] td[class^=verdict-]')]"
        ".map(td => [td.className, td.textContent])"
    )
    verdicts = pd.read_parquet(tmp_path / "tables" / "claims_by_model.parquet")
    headline = verdicts[verdicts["role"] != "check"]
    # paper A's "larger variants" row is n/a by design, and the page colours no n/a cell
    by_design = int(headline["claim"].str.startswith("Larger variants").sum())
    assert len(coloured) == 2 * (len(headline) - by_design)
    assert all(text.startswith(cls.removeprefix("verdict-").replace("-", " "))
               for cls, text in coloured)  # fmt: skip
    run = chrome.execute_script(
        "let e = document.getElementById('s-run'), out = [];"
        "while ((e = e.nextElementSibling) && e.tagName !== 'SCRIPT') out.push(e.innerText);"
        "return out.join('\\n')"
    )
    for model in runs:
        assert f"CPU of {model}, 7 cores" in run and f"model {model}" in run
    assert "?" not in run and "torch 9.9" in run and "compute 12.5" in run
    report = (tmp_path / "report.md").read_text()
    assert "1 window of 256 tokens" in report
    with io.StringIO((tmp_path / "tables" / "alg3.csv").read_text()) as f:
        assert {r["model"] for r in csv.DictReader(f)} == set(runs)


def _compare_with_tokens() -> dict[str, pd.DataFrame]:
    """A compare run's summary and its token view's tables: 3 normalisers, 2 layers × 3 heads,
    L = 64 (whole rows) and 512 (top 8), weights made up (each row a distribution)."""
    import torch

    from attnlimits.capture.token_rows import band_rows, rows_table

    tables = compare_like()
    gen = torch.Generator().manual_seed(7)
    frames = []
    for spec in tables["summary"]["normalizer"].unique():
        for layer in range(2):
            for n in (64, 512):
                idx = band_rows(n // 2, n)
                keep = torch.arange(n)[None, :] <= idx[:, None]
                w = torch.rand(3, len(idx), n, generator=gen, dtype=torch.float64) ** 8 * keep
                w = w / w.sum(-1, keepdim=True)
                frames.append(rows_table(idx, w, keep, n).assign(layer=layer, normalizer=spec))
    tables["attention_rows"] = pd.concat(frames, ignore_index=True)
    words = [f" w{i}" if i % 5 else f"\nn{i}" for i in range(512)]
    tables["tokens"] = pd.DataFrame({"position": range(512), "token_id": range(512),
                                     "text": words})  # fmt: skip
    return tables


def _tokens_in(driver, box: str) -> list[dict]:
    return driver.execute_script(
        """return [...document.querySelectorAll(`#${arguments[0]} span.tok`)].map(s => ({
          text: s.textContent, query: s.classList.contains('query'),
          key: s.dataset.key === undefined ? null : Number(s.dataset.key),
          weight: s.dataset.weight === undefined ? null : Number(s.dataset.weight)}))""",
        box,
    )


def test_compare_shows_one_head_under_two_normalisers_as_tokens(chrome, tmp_path):
    """Choosing a layer, head, length, row and two normalisers shows, side by side, the row's
    tokens with the weights of the stored attention_rows table (uint16 on the page)."""
    from selenium.webdriver.support.ui import Select

    tables = _compare_with_tokens()
    page = write_page(tmp_path, RunPage("Compare", tables, {"experiment": "compare"}))
    open_page(chrome, page)
    assert chrome.execute_script("return !!(window.compareTokens && compareTokens.ready)")
    assert chrome.execute_script("return document.getElementById('preset-1').data.length") > 0
    rows, text = tables["attention_rows"], tables["tokens"].set_index("position")["text"]
    for sel, value in (("ct-layer", "1"), ("ct-head", "2"), ("ct-length", "64"),
                       ("ct-b", "logn:train_length=64"), ("ct-row", "2")):  # fmt: skip
        Select(chrome.find_element("id", sel)).select_by_value(value)
    at = rows[(rows["layer"] == 1) & (rows["head"] == 2) & (rows["length"] == 64)]
    row = sorted(at["row"].unique())[2]
    for box, spec in (("ct-left", "softmax"), ("ct-right", "logn:train_length=64")):
        assert spec in chrome.find_element("id", box).text
        shown = _tokens_in(chrome, box)
        want = at[(at["normalizer"] == spec) & (at["row"] == row)].sort_values("key")
        keyed = [s for s in shown if s["key"] is not None]
        assert [s["key"] for s in keyed] == want["key"].tolist()  # every key of a whole row
        np.testing.assert_allclose([s["weight"] for s in keyed], want["weight"], atol=0.6 / 65535)
        assert [s["text"].replace("↵", "\n") for s in keyed] == text[want["key"]].tolist()
        assert [s["key"] for s in shown if s["query"]] == [row]
    Select(chrome.find_element("id", "ct-length")).select_by_value("512")  # top 8 in context
    at = rows[(rows["layer"] == 1) & (rows["head"] == 2) & (rows["length"] == 512)]
    row = sorted(at["row"].unique())[2]  # the third sampled row still
    for box, spec in (("ct-left", "softmax"), ("ct-right", "logn:train_length=64")):
        want = at[(at["normalizer"] == spec) & (at["row"] == row)].sort_values("key")
        keyed = [s for s in _tokens_in(chrome, box) if s["key"] is not None]
        assert len(want) == 8 and [s["key"] for s in keyed] == want["key"].tolist()
        np.testing.assert_allclose([s["weight"] for s in keyed], want["weight"], atol=0.6 / 65535)
    assert console_errors(chrome) == []
