"""docs/max_retrieval.md's run numbers are generated from saved runs' tables
(``python -m attnlimits.experiments.softmax_not_enough.doc``), never typed by hand."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from attnlimits.experiments.report import block, fill
from attnlimits.experiments.softmax_not_enough import doc

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "max_retrieval.md"
DOC_DATA = ROOT / "docs" / "data" / "softmax_not_enough"


def test_doc_numbers_are_the_saved_runs_tables():
    """Every generated block of docs/max_retrieval.md is what the saved runs' tables
    (docs/data/softmax_not_enough) render to; ATTNLIMITS_WRITE_DOCS=1 rewrites the blocks."""
    data = doc.load(DOC_DATA)
    blocks = doc.render(data)
    text = DOC.read_text(encoding="utf-8")
    if os.environ.get("ATTNLIMITS_WRITE_DOCS"):
        text = fill(text, blocks)
        DOC.write_text(text, encoding="utf-8")
    stale = "rerun python -m attnlimits.experiments.softmax_not_enough.doc RESULTS"
    for name, want in blocks.items():
        assert block(text, name) == want, f"block {name!r} is not the saved run's: {stale}"
    assert set(re.findall(r"<!-- generated: (.+?) -->", text)) == set(blocks)
    assert {"claims", "sizes", "fit_beta", "steps"} <= set(blocks)
    assert "steps_decision" not in blocks  # the pooled reading is not the doc's (point 13)
    if "--quick" in data["run"]["command"][0]:  # placeholders say so until the lead's run
        assert "placeholders" in text and "--quick" in text


def _summary(sizes: list[int]) -> pd.DataFrame:
    rows = []
    for i, n in enumerate(sizes):
        for norm, mean in (("softmax", 0.5 - 0.1 * i), ("adaptive", 0.6 - 0.1 * i)):
            diff = np.nan if norm == "softmax" else 0.1
            rows.append(
                {"norm": norm, "size": n, "n_sets": 64, "mean": mean, "ci_low": mean - 0.1,
                 "ci_high": mean + 0.1, "diff": diff, "diff_low": diff - 0.05,
                 "diff_high": diff + 0.05, "p_value": 0.001, "p_ttest": 0.02}
            )  # fmt: skip
    return pd.DataFrame(rows)


def _fit_tables() -> dict[str, pd.DataFrame]:
    coeffs = pd.DataFrame(
        {"fit": ["paper", "refit"], "theta_min": [np.nan, 0.005], "method": ["p", "ls"],
         "coeffs": [[1.0, 2.0], [0.5, 0.25]], "rmse_beta": [2.0, 1.5]}
    )  # fmt: skip
    beta = pd.DataFrame(
        {"fit": ["paper", "paper", "refit", "refit"], "theta_min": [np.nan, np.nan, 0.005, 0.005],
         "entropy": [1.0, 2.0, 1.0, 2.0], "beta_rule": [1.27, 2.1, 2.89, 8.54]}
    )  # fmt: skip
    return {
        "temperature_fit_coeffs": coeffs,
        "temperature_fit_beta": beta,
        "temperature_fit_sizes": pd.DataFrame({"size": [16, 32], "kept": [14, 31]}),
        "temperature_fit_bins": pd.DataFrame({"entropy_lo": [0.5], "beta_median": [0.9662]}),
        "temperature_fit_seed_fits": pd.DataFrame(
            {"seed": [0], "fit": ["refit"], "coeffs": [[1.0]], "beta_H1": [3.852]}
        ),
    }


def _ablation(steps: tuple[int, int]) -> dict[str, pd.DataFrame]:
    combo = {"schedule": "cosine", "regularizer": "coupled", "variant": "listing"}
    longer = _summary([16, 32])
    longer[["mean", "ci_low", "ci_high"]] += 0.05  # the longer run: +5 points, same widths
    summary = pd.concat(
        [_summary([16, 32]).assign(steps=steps[0]), longer.assign(steps=steps[1])],
        ignore_index=True,
    ).assign(**combo)
    log = pd.DataFrame(
        [{"steps": s, "seed": seed, "step": step, "loss": 1.0 / step, "acc": 0.99, "spread": 10.0}
         for s in steps for seed in (0, 1) for step in range(10, s + 1, 10)]
    )  # fmt: skip
    return {"ablation_summary": summary, "ablation_training_log": log}


def _run(folder: Path, tables: dict[str, pd.DataFrame], **params: object) -> Path:
    """A finished run folder as the doc reads it: run.json and tables/*.parquet."""
    (folder / "tables").mkdir(parents=True)
    meta = {
        "experiment": "softmax-not-enough",
        "params": {"preset": "quick", "seeds": 2, "steps": None, "ablation": False, **params},
        "benchmark": {"seeds": [0, 1], "train": {"max_size": 16, "steps": 20,
                      "schedule": "cosine", "regularizer": "coupled"},
                      "model": {"variant": "listing"}, "eval": {}},
        "machine": {"cpu": "TestCPU", "cpu_capability": "AVX2", "cores": 2, "torch_threads": 1},
        "wall_time_total_s": {"max_retrieval.train_eval": 12.4},
    }  # fmt: skip
    (folder / "run.json").write_text(json.dumps(meta))
    for name, df in tables.items():
        df.to_parquet(folder / "tables" / f"{name}.parquet")
    return folder


def test_extract_and_render_a_tiny_run(tmp_path):
    claims = pd.DataFrame(
        {"claim": ["(1) finding", "(1.a) statement", "a theorem"],
         "role": ["finding", "headline", "check"], "paper": "q",
         "reading": ["", "ours: r", ""],
         "measured": ["m1", "a | b", "m3"], "rule": ["r1", "r2", "r3"],
         "verdict": ["reproduced", "reproduced", "not reproduced"]}
    )  # fmt: skip
    tables = {"summary": _summary([16, 32]), "claims": claims, **_fit_tables()}
    main = _run(tmp_path / "main", tables, steps=7)
    abl = _run(tmp_path / "abl", {"summary": _summary([16, 32]), **_ablation((20, 40))},
               ablation=True, temperature_fit=False, ablation_steps=[20, 40])  # fmt: skip
    data = doc.extract(main, "2026-01-02") | doc.extract_ablation(abl, "2026-01-03")
    doc.save(data, tmp_path / "data")
    blocks = doc.render(doc.load(tmp_path / "data"))
    assert blocks == doc.render(data)  # the CSVs hold the text the tables render to
    assert blocks["run"] == (
        "Run: 2026-01-02, 2 seeds, 20 steps (cosine learning-rate schedule), "
        "`attnlimits reproduce softmax-not-enough --quick "
        "--steps 7`, on TestCPU (AVX2), 2 cores, 1 torch threads (stage times: "
        "max_retrieval.train_eval 12.4 s)"
    )
    assert "`python benchmarks/steps_ablation.py --quick`" in blocks["ablation_run"]
    assert "2026-01-03, 2 seeds, 20, 40 steps" in blocks["ablation_run"]
    # claims and checks apart; a '|' in a cell escaped once
    assert "a \\| b" in blocks["claims"] and "a theorem" not in blocks["claims"]
    assert "| a theorem | check | not reproduced | q |  | m3 | r3 |" in blocks["checks"]  # q: paper
    assert "| reproduced | q | ours: r | a \\| b |" in blocks["claims"]  # the row's reading
    # per size: softmax 50.0 [40.0, 60.0], adaptive 60.0 [50.0, 70.0], gain 10.0 [5.0, 15.0]
    assert (
        "| 16 | 64 | 50.0 [40.0, 60.0] | 60.0 [50.0, 70.0] | 10.0 [5.0, 15.0] |"
        in (blocks["sizes"])
    )
    assert blocks["sets"] == "| n | 16 | 32 |\n|---|---|---|\n| sets | 64 | 64 |"
    assert "| refit | 0.005 | 2.89 | 8.54 |" in blocks["fit_beta"]
    assert "| paper | — | p | 1, 2 | 2 |" in blocks["fit_fits"]
    assert "coeffs" not in blocks["fit_seed_fits"] and "3.852" in blocks["fit_seed_fits"]
    # the longer run moved every number by +5 points against the default's 20 steps
    assert "| 40 | softmax | 55.0 [45.0, 65.0] (Δ +5.0) |" in blocks["steps"]
    # the prose blocks need a real run's claims (none here) or its ablation's length rows
    assert {b for b in blocks if b.startswith("prose_")} <= {"prose_per_size_reading"}
    assert set(blocks) - {"prose_per_size_reading"} == {"run", "claims", "own_tests", "checks",
                           "sets", "sizes", "norms", "fit_sizes", "fit_bins", "fit_fits",
                           "fit_beta", "fit_seed_fits", "ablation_run", "steps", "steps_loss",
                           "rules",
                           "thresholds", "provenance"}  # fmt: skip
    # the doc: each marked block replaced, a block without markers refused
    page = "".join(f"<!-- generated: {n} -->\nold\n<!-- /generated: {n} -->\n" for n in blocks)
    filled = fill(page, blocks)
    assert all(block(filled, n) == text for n, text in blocks.items())


def test_regenerating_without_the_ablation_keeps_its_tables(tmp_path):
    """Saving rewrites the tables it is given and deletes nothing: the ablation's saved
    tables stay when the main run is regenerated alone, and a file of the user's is safe."""
    folder = tmp_path / "data"
    old = {n: pd.DataFrame({"x": ["1"]}) for n in ("claims", "steps", "ablation_run")}
    doc.save(old, folder)
    (folder / "mine.csv").write_text("x\nkeep\n")
    doc.save({"claims": pd.DataFrame({"x": ["2"]})}, folder)
    assert sorted(p.stem for p in folder.glob("*.csv")) == [
        "ablation_run",
        "claims",
        "mine",
        "steps",
    ]
    assert doc.load(folder)["claims"]["x"].tolist() == ["2"]
    assert doc.load(folder)["steps"]["x"].tolist() == ["1"]


def _prose(text: str) -> str:
    """``text`` without its generated blocks and code (what is typed by hand)."""
    text = re.sub(r"<!-- generated: (.+?) -->.*?<!-- /generated: \1 -->", "", text, flags=re.S)
    return re.sub(r"```.*?```|`[^`]*`", "", text, flags=re.S)


def test_every_interval_the_prose_quotes_is_a_committed_tables():
    """Referee point 12: an interval "m [lo, hi]" typed in docs/max_retrieval.md's prose (outside
    the generated blocks) is a cell of a committed table under docs/data (the softmax-not-enough
    tables or App. F's sensitivity tables): a number left from an earlier run fails here."""
    cells = "\n".join(
        p.read_text(encoding="utf-8")
        for folder in (DOC_DATA, DOC_DATA.parent / "appf_sensitivity")
        for p in sorted(folder.glob("*.csv"))
    )
    quoted = re.findall(r"[-+]?\d+\.\d+ \[-?\d+\.\d+, -?\d+\.\d+\]", _prose(DOC.read_text()))
    assert quoted, "the search finds the prose's intervals at all"
    stale = [q for q in quoted if q.lstrip("+") not in cells]
    assert not stale, f"prose intervals no committed table gives: {stale}"
    # the check itself catches a stale number (the 5,000-step run's pooled gain)
    assert "8.3 [7.0, 9.5]" not in cells


def test_prose_blocks_follow_the_tables():
    """The generated prose moves with the saved tables: a changed pooled gain and a size that
    loses significance change the sentences that quote them."""
    from attnlimits.experiments.softmax_not_enough import prose

    data = doc.load(DOC_DATA)
    before = prose.prose_blocks(data)
    claims = data["claims"].copy()
    claims["measured"] = claims["measured"].str.replace("8.3 [7.1, 9.4]", "1.5 [0.2, 2.8]")
    sizes = data["sizes"].copy()
    sizes.loc[sizes["size"] == "64", "p"] = "2.0e-01"
    after = prose.prose_blocks({**data, "claims": claims, "sizes": sizes})
    assert "8.3 [7.1, 9.4]" in before["prose_pooled"]
    assert "1.5 [0.2, 2.8]" in after["prose_pooled"]
    assert (
        "7 of the 10 sizes" in after["prose_pooled"]
        and "32, 64 and 16,384" in after["prose_pooled"]
    )
    assert "7 of 10" in after["prose_per_size_reading"]
    assert "at every size from 128 to 8,192" in after["prose_per_size"]  # no longer from 64


def test_the_data_behind_finding_three_and_fig7_are_committed(tmp_path):
    """Round 8, points 4 and 12: the per-seed first/last spread, bound and accuracy of both λ
    (training_log and second_lambda_log) and (2.b)'s paired rows are saved tables; the first is
    a block of the doc."""
    log = pd.DataFrame({"step": [100, 200] * 2, "seed": [0, 0, 1, 1],
                        "spread": [2.0, 6.0, 4.0, 8.0], "bound": [10.0, 20.0, 10.0, 30.0],
                        "acc": [0.5, 1.0, 0.5, 0.75]})  # fmt: skip
    second = log.assign(spread=[2.0, 0.0, 4.0, 0.0], weight_decay=0.01)
    sets = pd.DataFrame({"norm": ["softmax", "adaptive"] * 3, "seed": 0,
                         "size": [16, 16, 128, 128, 128, 128], "set": [0, 0, 0, 0, 1, 1],
                         "top": [False, False, False, False, True, True],
                         "target": [0.1, 0.2, 0.25, 0.5, 0.9, 0.95]})  # fmt: skip
    tables = {"summary": _summary([16, 32]), "claims": pd.DataFrame(columns=doc._CLAIMS),
              "training_log": log, "second_lambda_log": second, "set_attention": sets}  # fmt: skip
    main = _run(tmp_path / "main", tables)
    data = doc.extract(main, "2026-01-02")
    doc.save(data, tmp_path / "data")
    saved = doc.load(tmp_path / "data")
    per = saved["weights_per_seed"]
    assert per["λ"].tolist() == ["nan", "nan", "0.01", "0.01"]  # the tiny run names no λ
    assert per["spread ratio"].tolist() == ["3", "2", "0", "0"]
    assert per["bound ratio"].tolist() == ["2", "3", "2", "3"] and per["acc last"][1] == "0.750"
    assert "| 0.01 | 1 | 100 | 200 | 4 | 0 | 0 |" in doc.render(saved)["weights_per_seed"]
    fig7 = saved["fig7_sets"]  # above the training size, where the max item lacks the top logit
    assert fig7.to_dict("records") == [
        {"size": "128", "seed": "0", "set": "0", "adaptive": "0.5", "softmax": "0.25"}
    ]
