"""report.html and ``attnlimits.view`` without a browser (tests/test_view_browser.py drives one).

- the scan page's data holds exactly the ``heads`` table's numbers, grid by grid, and its
  patterns decode to the ``patterns`` table's weights;
- the stored pattern sample of a head is its materialised attention map's rows, summed in bins;
- the report step writes ``report.html`` beside ``report.md``, listed in the folder's manifest,
  and refuses a folder where a user's ``report.html`` would be written over;
- ``attnlimits view`` and ``attnlimits.view.scan`` refuse bad input in one line.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
import torch
import transformers
from typer.testing import CliRunner

from attnlimits.capture import capture, capture_qkv, load_model
from attnlimits.cli import app
from attnlimits.corpus import load_text
from attnlimits.experiments import skeleton
from attnlimits.experiments._owned import MANIFEST
from attnlimits.experiments.limitations import text_checks
from attnlimits.experiments.pages import RunPage, page_html, write_page
from attnlimits.experiments.scan.config import Config
from attnlimits.experiments.scan.page import scan, scan_data
from attnlimits.experiments.scan.patterns import pattern_sample
from attnlimits.experiments.scan.synthetic import synthetic_scan
from attnlimits.experiments.softmax_not_enough.claims import NO_EVIDENCE
from attnlimits.experiments.store import ResultStore
from attnlimits.normalizers import ENTROPY_THRESHOLD
from attnlimits.view.explore import MAX_ROWS
from made_up_tables import fit_tables, kind_tables, monitor_table
from tiny_models import tiny_model_dir

runner = CliRunner()


def _window(html: str, name: str) -> dict:
    found = re.search(rf"<script>window\.{name} = (.*?);</script>", html, re.S)
    assert found, f"no window.{name} in the page"
    return json.loads(found.group(1).replace("<\\/", "</"))


def test_scan_page_data_is_the_heads_table():
    tables = synthetic_scan(layers=3, heads=5, lengths=(16, 64, 128), rows=4, seed=1)
    heads = tables["heads"]
    heads.loc[7, "entropy_norm"] = np.nan  # a hole stays a hole (null), not a number
    data = _window(page_html(RunPage("t", tables, {"experiment": "scan"})), "SCAN")
    assert data["lengths"] == [16, 64, 128] and data["layers"] == [0, 1, 2]
    for row in heads.itertuples():
        i, j, cells = row.layer, row.head, data["cells"][str(row.length)]
        none = data["none"][str(row.length)]
        for col in data["columns"]:
            want = getattr(row, col)
            got = cells[col][i][j]
            if col in none and none[col][i][j]:  # none found: off the scale, its own category
                assert got is None and row.critical_n == -1
                continue
            assert (got is None) if pd.isna(want) else got == pytest.approx(float(want), rel=1e-12)
        assert none["critical_n"][i][j] == (row.critical_n == -1)
        assert data["kinds"][data["kind"][str(row.length)][i][j]] == row.kind
        for flag in data["flags"]:
            assert data["flagged"][str(row.length)][flag["col"]][i][j] == getattr(row, flag["col"])


def test_scan_page_patterns_decode_to_the_patterns_table():
    tables = synthetic_scan(layers=2, heads=3, lengths=(32, 256), rows=5, seed=2)
    data = scan_data(tables["heads"], tables["patterns"])
    for length, p in data["patterns"].items():
        raw = (
            np.concatenate(
                [np.frombuffer(base64.b64decode(layer), dtype="<u2") for layer in p["data"]]
            )
            / 65535
        )
        got = raw.reshape(2, 3, len(p["rows"]), p["bins"])
        at = tables["patterns"].query(f"length == {length}")
        want = at.sort_values(["layer", "head", "row"])[[f"w{b}" for b in range(p["bins"])]]
        np.testing.assert_allclose(got.reshape(-1, p["bins"]), want.to_numpy(), atol=0.6 / 65535)
        assert p["bins"] == min(64, int(length))


def test_scan_page_token_rows_decode_to_the_attention_rows_table():
    """Per length and layer the packed weights (and keys, unless dense) are the table's rows."""
    tables = synthetic_scan(layers=2, heads=3, lengths=(32, 512), rows=5, seed=2)
    data = scan_data(tables["heads"], tables["patterns"], None, tables["attention_rows"],
                     tables["tokens"])  # fmt: skip
    tok = data["tokens"]
    assert tok["text"] == tables["tokens"]["text"].tolist()
    rows = tables["attention_rows"]
    for length, p in tok["lengths"].items():
        at = rows[rows["length"] == int(length)].sort_values(["layer", "head", "row", "key"])
        assert p["dense"] == (int(length) <= 256)  # full causal rows: keys 0 … row
        w = np.concatenate([np.frombuffer(base64.b64decode(v), "<u2") for v in p["weights"]])
        np.testing.assert_allclose(w / 65535, at["weight"], atol=0.6 / 65535)
        if not p["dense"]:
            k = np.concatenate([np.frombuffer(base64.b64decode(v), "<u2") for v in p["keys"]])
            assert k.tolist() == at["key"].tolist()
        assert sum(p["counts"]) * 2 * 3 == len(at)


def test_pattern_sample_is_the_materialised_map_summed_in_bins(book_path, tmp_path):
    model = tiny_model_dir(tmp_path, "llama", load_text(book_path)[:50_000], max_positions=256)
    loaded = load_model(str(model))
    ids = torch.randint(0, 50, (1, 96), generator=torch.Generator().manual_seed(3))
    cfg = Config(lengths=(96,), rows=5)
    sampled = capture_qkv(loaded, ids, on_layer=lambda c: pattern_sample(c, 96, cfg))
    maps = capture(loaded, ids, on_layer=lambda c: c.weights[0].double())
    for layer, df in sampled.items():
        w = maps[layer]  # (head, query, key)
        bins = int(df["bins"].iloc[0])
        assert bins == 64
        edges = np.arange(96) * bins // 96
        for rec in df.itertuples():  # every (head, row) of the sample
            want = np.bincount(edges, weights=w[rec.head, rec.row].numpy(), minlength=bins)
            got = np.array([getattr(rec, f"w{b}") for b in range(bins)])
            np.testing.assert_allclose(got, want, atol=1e-6)
            assert rec.keys == rec.row + 1  # causal: the row sees itself and what precedes it


# ---- the report step -----------------------------------------------------------------------


@dataclass(frozen=True)
class Cfg:
    steps: int = 2


def _compute(cfg, store, *, progress=True):
    return {"values": pd.DataFrame({"step": range(cfg.steps), "loss": [0.5, 0.25][: cfg.steps]})}


def _claims(tables, meta):
    row = {"claim": "loss falls", "paper": "-", "measured": 0.25, "rule": "< 0.5"}
    return pd.DataFrame([row | {"verdict": "reproduced"}])


EXPERIMENT = skeleton.Experiment(
    name="pagetoy",
    title="Page toy",
    config=Cfg,
    compute=_compute,
    figures=lambda t, m: {},
    claims=_claims,
    sections=lambda t, m: ["## Notes", "", "| a | b |", "|---|---|", "| 1 | `x` |"],
)


@pytest.fixture
def _toy(monkeypatch):
    monkeypatch.setitem(skeleton.EXPERIMENTS, "pagetoy", __name__)


def test_the_report_step_writes_report_html_listed_in_the_manifest(tmp_path, _toy):
    out = tmp_path / "run"
    skeleton.run(EXPERIMENT, Cfg(), out, progress=False)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "report.html" in (out / MANIFEST).read_text().split("\n")
    assert "<title>Page toy</title>" in page and "Plotly" in page
    assert '<tr class="verdict-reproduced"><td>loss falls</td>' in page
    assert "<td><code>x</code></td>" in page and "tables/values.csv" in page
    (out / "report.html").unlink()
    assert skeleton.redraw(out) == out / "report.md"
    assert (out / "report.html").is_file(), "attnlimits report DIR writes the page again"


def test_a_users_report_html_is_never_written_over(tmp_path, _toy):
    v = tmp_path / "v"
    v.mkdir()
    (v / "report.html").write_text("my page")
    with pytest.raises(ValueError, match=r"holds files attnlimits did not write \(report\.html\)"):
        skeleton.run(EXPERIMENT, Cfg(), v, progress=False)
    assert (v / "report.html").read_text() == "my page"


def test_write_page_outside_a_run_writes_one_file(tmp_path):
    path = write_page(
        tmp_path, RunPage("x", synthetic_scan(2, 2, (8,), rows=2), {"experiment": "scan"})
    )
    assert path == tmp_path / "report.html" and sorted(p.name for p in tmp_path.iterdir()) == [
        "report.html"
    ]
    assert ResultStore(tmp_path).manifest.listed == set()  # no run held the folder: no list


# ---- bad input ---------------------------------------------------------------------------------


def test_view_command_errors_are_one_line(tmp_path):
    res = runner.invoke(app, ["view", str(tmp_path / "nope")])
    assert res.exit_code == 2
    assert (
        res.output.strip() == f"error: {tmp_path / 'nope'} is not a results folder (no such folder)"
    )
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text("{}")
    res = runner.invoke(app, ["view", str(tmp_path / "run")])
    assert res.exit_code == 2
    assert res.output.strip() == (
        f"error: {tmp_path / 'run'} has no report.html; write it with: attnlimits report "
        f"{tmp_path / 'run'}"
    )
    write_page(
        tmp_path / "run", RunPage("x", synthetic_scan(2, 2, (8,), rows=2), {"experiment": "scan"})
    )
    res = runner.invoke(app, ["view", str(tmp_path / "run"), "--port", "70000"])
    assert (
        res.exit_code == 2
        and res.output.strip() == "error: --port must lie in 0 … 65535, got 70000"
    )


def test_notebook_scan_figure(tmp_path):
    tables = synthetic_scan(layers=3, heads=4, lengths=(16, 32), rows=2)
    fig = scan(tables["heads"], metric="max_weight", length=16)
    shown = [t for t in fig.data if t.visible]
    assert len(shown) == 1 and shown[0].name == "max_weight L=16"
    at = tables["heads"].query("length == 16")
    np.testing.assert_array_equal(
        np.asarray(shown[0].z)[at["layer"], at["head"]], at["max_weight"].to_numpy()
    )
    with pytest.raises(ValueError, match=r"metric 'nope' is not among"):
        scan(tables["heads"], metric="nope")
    with pytest.raises(ValueError, match=r"length 17 is not a scanned length: \[16, 32\]"):
        scan(tables["heads"], length=17)
    with pytest.raises(TypeError, match="heads must be a pandas DataFrame, got dict"):
        scan({"layer": [0]})
    with pytest.raises(ValueError, match=r"heads lacks the column\(s\) \['length'\]"):
        scan(tables["heads"].drop(columns="length"))


# ---- the monitor's page ----------------------------------------------------------------------


def test_monitor_page_data_is_the_table_and_marks_the_warnings():
    from attnlimits.view.monitor_page import monitor_data

    t = monitor_table()
    data = monitor_data(t, collapse_entropy=0.05, disperse_ratio=0.95)
    assert data["steps"] == [10, 20, 30] and data["heads"] == [[0, 0], [0, 1], [1, 0], [1, 1]]
    for row in t.itertuples():
        i = data["heads"].index([row.layer, row.head])
        assert data["grids"]["max_weight"][i][data["steps"].index(row.step)] == row.max_weight
    assert data["warnings"] == {"collapsed": [[20, 1, 0]], "dispersed": [[30, 0, 1]]}
    assert monitor_data(t, disperse_ratio=1.0)["warnings"]["dispersed"] == []


def test_the_monitor_writes_its_page_at_the_end_of_training(tmp_path):
    from attnlimits.monitor import AttentionMonitor
    from monitor_models import batch, tiny

    model = tiny("llama", "sdpa")
    with AttentionMonitor(every=1, out_dir=tmp_path, disperse_ratio=1.0).watch(model) as mon:
        for step in range(2):
            model(batch(seed=step, pad=0)[0])
            mon.step()
            assert not (tmp_path / "attention_monitor.html").exists(), "only at the end"
    page = (tmp_path / "attention_monitor.html").read_text(encoding="utf-8")
    data = _window(page, "MONITOR")
    assert data["steps"] == [1, 2] and len(data["heads"]) == 2 * 4
    res = runner.invoke(app, ["view", str(tmp_path), "--port", "-1"])
    assert res.output.strip() == "error: --port must lie in 0 … 65535, got -1"


class _PageCheck(transformers.TrainerCallback):
    """Checks, at every step of a Trainer run, that no page is written before training ends."""

    def __init__(self, folder) -> None:
        self.folder, self.steps = folder, 0

    def on_step_end(self, args, state, control, **kwargs):
        assert not (self.folder / "attention_monitor.html").exists(), "only at the end"
        self.steps += 1


def test_a_monitored_trainer_run_leaves_the_page_beside_its_parquet(tmp_path):
    """The Trainer path: AttentionMonitor as a Trainer callback writes attention_monitor.html
    beside attention_monitor.parquet when training ends, holding the Parquet's numbers."""
    import warnings

    from attnlimits.monitor import TABLE_NAME, AttentionHeadWarning, AttentionMonitor
    from monitor_models import Tokens, tiny

    model = tiny("gpt2", "sdpa")
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), max_steps=3, per_device_train_batch_size=2, report_to=[],
        use_cpu=True, save_strategy="no", disable_tqdm=True,
    )  # fmt: skip
    check = _PageCheck(tmp_path)
    trainer = transformers.Trainer(model, args, train_dataset=Tokens(), callbacks=[check])
    AttentionMonitor(every=1).attach(trainer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AttentionHeadWarning)
        trainer.train()
    assert check.steps == 3
    table = pd.read_parquet(tmp_path / TABLE_NAME)
    data = _window((tmp_path / "attention_monitor.html").read_text(encoding="utf-8"), "MONITOR")
    assert data["steps"] == [1, 2, 3] == sorted(table["step"].unique())
    for row in table.itertuples():
        i = data["heads"].index([row.layer, row.head])
        assert data["grids"]["entropy"][i][data["steps"].index(row.step)] == pytest.approx(
            row.entropy, rel=1e-12
        )


def test_scan_stores_patterns_and_recomputes_them_for_parts_saved_without(book_path, tmp_path):
    """A scan's ``patterns`` table: every sampled row sums to 1; a run resumed from parts saved
    before patterns existed computes the missing layers again instead of failing."""
    from attnlimits.experiments.scan import EXPERIMENT as SCAN

    model = tiny_model_dir(tmp_path, "llama", load_text(book_path)[:50_000], max_positions=128)
    cfg = Config(model=str(model), lengths=(16, 32), windows=1, rows=4, ns=(1, 2),
                 induction_period=8)  # fmt: skip
    out = tmp_path / "scan"
    skeleton.run(SCAN, cfg, out, progress=False)
    patterns = pd.read_parquet(out / "tables" / "patterns.parquet")
    weights = patterns[[f"w{b}" for b in range(64)]].to_numpy(dtype=float)
    np.testing.assert_allclose(np.nansum(weights, axis=1), 1.0, atol=1e-5)
    assert sorted(patterns["length"].unique()) == [16, 32] and set(patterns["bins"]) == {16, 32}
    heads = pd.read_parquet(out / "tables" / "heads.parquet")
    for part in (out / "parts").glob("patterns-*/*.parquet"):  # as a run before this version
        part.unlink()
    skeleton.run(SCAN, cfg, out, progress=False)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "tables" / "patterns.parquet"), patterns)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "tables" / "heads.parquet"), heads)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert sorted(_window(html, "SCAN")["patterns"]) == ["16", "32"]
    ids = set(re.findall(r'id="([^"]+)"', html))
    rows = re.findall(r'<tr class="verdict[^"]*">(.*?)</tr>', html, re.S)
    assert rows and all('href="#main"' in r for r in rows), "each verdict links to the heatmap"
    for href in re.findall(r'<a class="evidence" href="#([^"]+)"', html):
        assert href in ids


def test_view_serves_the_folder_with_port(tmp_path):
    """``attnlimits view DIR --port 0`` serves the page over HTTP (a free port, printed)."""
    import os
    import subprocess
    import sys
    import urllib.request

    from conftest import REPO

    write_page(tmp_path, RunPage("x", synthetic_scan(2, 2, (8,), rows=2), {"experiment": "scan"}))
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    code = "from attnlimits.cli import app; app()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "view", str(tmp_path), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )  # fmt: skip
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://\S+", line)
        assert url, line
        with urllib.request.urlopen(url.group(0), timeout=60) as resp:
            body = resp.read()
        assert body == (tmp_path / "report.html").read_bytes()
    finally:
        proc.terminate()
        proc.wait(timeout=60)


# ---- claims linked to what decides them; each kind's presets -----------------------------------


@pytest.mark.parametrize(
    "name", ["limitations", "softmax-not-enough", "clrs-text", "long-context", "compare"]
)
def test_every_verdict_links_to_the_plots_and_tables_that_decide_it(name):
    """Each claim row's "decided by" cell links to plots and tables: in-page anchors that the
    page holds (or a table's CSV where the table is not on the page)."""
    experiment = skeleton.get(name)
    tables, meta = kind_tables(name)
    if name == "softmax-not-enough":
        tables |= fit_tables()  # App. F's row links to its figure
    claims = experiment.claims(tables, meta)
    page = page_html(
        RunPage(name, tables, {**meta, "experiment": name}, claims, evidence=experiment.evidence)
    )
    ids = set(re.findall(r'id="([^"]+)"', page)) | {
        p["id"] for p in _window(page, "EXPLORE")["presets"]
    }
    rows = re.findall(r'<tr class="verdict[^"]*">(.*?)</tr>', page, re.S)
    assert len(rows) == len(claims)
    for claim, row in zip(claims["claim"], rows, strict=True):
        links = re.findall(r'<a class="evidence" href="([^"]+)">', row)
        # δ > 0, the wrong-top share per size ((2.e)) and the argmax arm ((4)): no figure
        # shows them
        table_only = claim.startswith(("Assumption 2", "(2.e)", "(4)", "(4.a)"))
        # n/a by design: no larger model is run, no run keeps the logits Lemma 1 bounds, six
        # sentences have no numbers (paper A: text_checks.UNMEASURED); Gemma 2B not run, a
        # statement true by construction (paper B)
        unmeasured = text_checks.UNMEASURED
        if claim.startswith(("Larger variants", "Lemma 1", *unmeasured, *NO_EVIDENCE)):
            assert not links
            continue
        plot = any(h.startswith("#preset-") for h in links)
        assert plot or table_only, f"{claim!r} links to no plot: {links}"
        assert any(h.startswith(("#table-", "tables/")) for h in links), claim
        for href in links:
            if href.startswith("#"):
                assert href[1:] in ids, f"{claim!r} links to {href}, which the page lacks"
            else:
                assert href.removeprefix("tables/").removesuffix(".csv") in tables


def test_each_reproduction_gets_its_own_figures():
    """softmax-not-enough: accuracy per arm with the report's intervals and the training sizes
    marked, the dispersion, App. F (points, bins, the published and refit polynomials as
    curves: ``np.polyval`` of the coefficients, raw and under the rule); clrs-text: one
    profile per algorithm with the trivial baseline; long-context: accuracy with chance 1/n and
    entropies."""
    tables, meta = kind_tables("softmax-not-enough")
    tables |= fit_tables()
    data = _window(
        page_html(RunPage("t", tables, {**meta, "experiment": "softmax-not-enough"})), "EXPLORE"
    )
    figs = [p["figure"] for p in data["presets"]]
    assert figs == ["accuracy", "attention_profile", "temperature_fit",
                    "entropy_vs_temperature", "logit_spread"]  # fmt: skip
    acc = data["presets"][0]
    assert acc["shade"] == "trained" and acc["layers"][0]["low"] == "ci_low"
    summary = data["tables"]["summary"]["data"]
    assert summary["trained"] == [float(s <= 16) for s in summary["size"]]
    curves = pd.DataFrame(data["tables"]["temperature_fit_curves"]["data"])
    assert sorted(curves["curve"].unique()) == [
        "paper (raw)",
        "paper (rule)",
        "refit (raw)",
        "refit (rule)",
    ]  # the refit on the larger lower bound (θ ≥ 0.1) is left out, as in the static figure
    raw = curves[curves["curve"] == "refit (raw)"]
    np.testing.assert_allclose(raw["beta"], np.polyval([1.0, 1.0], raw["entropy"]))
    rule = curves[curves["curve"] == "paper (rule)"]
    want = np.where(
        rule["entropy"] > ENTROPY_THRESHOLD,
        np.maximum(np.polyval([0.1, 1, 1], rule["entropy"]), 1),
        1,
    )
    np.testing.assert_allclose(rule["beta"], want)

    sizes, ranks = np.arange(16, 16 + 60), np.arange(100)  # a full run's profile: every rank
    big = pd.DataFrame({"norm": "softmax", "size": np.repeat(sizes, 100),
                        "rank": np.tile(ranks, 60), "attention": 0.5})  # fmt: skip
    assert len(big) > MAX_ROWS
    tables["attention_profile"] = big
    data = _window(
        page_html(RunPage("t", tables, {**meta, "experiment": "softmax-not-enough"})), "EXPLORE"
    )
    assert "attention_profile" in [p["figure"] for p in data["presets"]], "too big to plot"

    tables, meta = kind_tables("clrs-text")
    data = _window(page_html(RunPage("t", tables, {**meta, "experiment": "clrs-text"})), "EXPLORE")
    profiles = [p for p in data["presets"] if p["figure"] == "profile"]
    assert [p["layers"][0]["where"] for p in profiles] == [
        {"algorithm": "insertion_sort"},
        {"algorithm": "minimum"},
    ]
    assert profiles[0]["shade"] == "in_distribution" and profiles[0]["layers"][1]["y"] == "baseline"

    tables, meta = kind_tables("long-context")
    data = _window(
        page_html(RunPage("t", tables, {**meta, "experiment": "long-context"})), "EXPLORE"
    )
    assert [p["figure"] for p in data["presets"]] == ["accuracy", "mean_entropy", "head_entropy"]
    acc = data["tables"]["accuracy"]["data"]
    assert acc["chance"] == [1 / n for n in acc["n"]]


def test_claims_without_evidence_or_claim_column_get_no_links_column():
    claims = pd.DataFrame([{"statement": "s", "verdict": "partly"}])
    for evidence in ((), ((r".", ("fig",), ("t",)),)):
        page = page_html(
            RunPage("t", {"t": pd.DataFrame({"x": [1]})}, {}, claims, evidence=evidence)
        )
        assert "decided by" not in page and '<tr class="verdict-partly"><td>s</td>' in page


def test_fig2c_is_one_plot_per_x_source_on_every_page():
    """Without a browser: Fig. 2c's presets are one per (model, x source), each filtering its
    source (never pooling the two), and the page has its contents and interactive tables."""
    from made_up_tables import two_sources

    tables, meta = two_sources()
    page = page_html(RunPage("t", tables, meta))
    presets = [p for p in _window(page, "EXPLORE")["presets"] if p["figure"] == "fig2c"]
    sources = [p["layers"][0]["where"] for p in presets]
    assert sources == [{"window": -1, "x_source": "hidden"}, {"window": -1, "x_source": "values"}]
    assert all(
        f"x\u00a0=\u00a0{w['x_source']}" in p["title"]
        for p, w in zip(presets, sources, strict=True)
    )
    assert '<nav class="toc"' in page and page.count('class="tablebox"') == len(tables)
