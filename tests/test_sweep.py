"""attnlimits sweep: spec checks, the grid of cells, merged tables, skipping finished cells, a
failed cell, Ray against serial, and the command's one-line errors."""

from __future__ import annotations

import json
import sys

import pandas as pd
import pytest
from typer.testing import CliRunner

from attnlimits.cli import app
from attnlimits.corpus import load_text
from attnlimits.experiments import skeleton
from attnlimits.experiments.sweep import load_spec, run_sweep
from tiny_models import tiny_model_dir

#: Time columns differ from run to run; everything else must match exactly.
TIMES = ("seconds_per_forward", "time_vs_softmax")


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep_models")
    return tiny_model_dir(root, "llama", load_text()[:100_000], max_positions=128, digits=True)


def _spec(tmp_path, body: str, name: str = "spec.toml"):
    path = tmp_path / name
    path.write_text(body)
    return path


def _tiny(llama, axes: str) -> str:
    return (
        f'experiment = "compare"\n[fixed]\nmodel = "{llama}"\nlengths = [64, 128]\n'
        f"sequences = 1\nprobes_per_length = 1\nrows = 2\n[axes]\n{axes}\n"
    )


def _tables(folder) -> dict[str, pd.DataFrame]:
    """The merged tables but claims (whose text quotes times), time columns dropped."""
    return {
        p.stem: (df := pd.read_parquet(p)).drop(columns=[c for c in TIMES if c in df])
        for p in sorted((folder / "tables").glob("*.parquet"))
        if p.stem != "claims"
    }


# ---- the spec ----------------------------------------------------------------------------------

BAD_SPECS = [
    ('experiment = "compare"\nquick = tru\n', "not valid TOML"),
    ('experiment = "nosuch"\n', "experiment must be one of"),
    ('experiment = "compare"\n[axes]\nseeds = [1, 2]\n', "unknown compare setting(s) ['seeds']"),
    ('experiment = "compare"\n[fixed]\nrowz = 2\n', "unknown compare setting(s) ['rowz']"),
    ('experiment = "compare"\n[axes]\nseed = []\n', "axis 'seed' must be a non-empty list"),
    ('experiment = "compare"\n[axes]\nseed = 1\n', "axis 'seed' must be a non-empty list"),
    ('experiment = "compare"\n[axes]\nseed = [1, 1]\n', "axis 'seed' repeats a value"),
    ('experiment = "compare"\n[fixed]\nseed = 1\n[axes]\nseed = [1, 2]\n', "both fixed and"),
    ('experiment = "compare"\nquick = "yes"\n', "quick must be true or false"),
    ('experiment = "compare"\nseed = 1\n', "unknown key(s) ['seed']"),
    ('experiment = "compare"\nfixed = 3\n', "[fixed] must be a table"),
    ('experiment = "compare"\n[axes]\nseed = [0, -1]\n', "cell seed=-1: seed must be"),
    (
        'experiment = "compare"\n[axes]\nnormalizers = [["adaptive"], ["softmax", "adaptive"]]\n',
        "cells normalizers=adaptive and normalizers=softmax,adaptive have the same settings",
    ),
    (
        'experiment = "compare"\n[axes]\nnormalizers = [["adaptive"], ["nosuch"]]\n',
        "cell normalizers=nosuch: unknown normalizer 'nosuch'",
    ),
]


@pytest.mark.parametrize(("body", "words"), BAD_SPECS)
def test_bad_specs_fail_in_one_line_naming_the_file(tmp_path, body, words):
    path = _spec(tmp_path, body)
    with pytest.raises(ValueError) as err:
        load_spec(path)
    message = str(err.value)
    assert words in message and str(path) in message and "\n" not in message, message


def test_bad_toml_names_the_line(tmp_path):
    with pytest.raises(ValueError, match=r"line 3"):
        load_spec(_spec(tmp_path, 'experiment = "compare"\n\nquick = \n'))


def test_cells_are_the_cartesian_product_in_a_stable_order(tmp_path):
    body = (
        'experiment = "compare"\nquick = true\n[fixed]\nlengths = [128, 256]\n[axes]\n'
        'normalizers = [["softmax", "adaptive"], ["logn:train_length=128"]]\nseed = [0, 1, 2]\n'
    )
    spec = load_spec(_spec(tmp_path, body))
    assert [c.axes["seed"] for c in spec.cells] == [0, 1, 2] * 2
    assert spec.cells[3].name == "normalizers=logn:train_length=128;seed=0"
    cfg = spec.cells[3].config
    assert cfg.normalizers == ("softmax", "logn:train_length=128") and cfg.seed == 0
    assert cfg.lengths == (128, 256) and cfg.sequences == 1  # fixed, and the quick preset
    assert len({c.id for c in spec.cells}) == 6
    assert [c.id for c in load_spec(spec.path).cells] == [c.id for c in spec.cells]
    one = load_spec(_spec(tmp_path, 'experiment = "compare"\n', "one.toml"))
    assert [c.name for c in one.cells] == ["all"]


# ---- running it ----------------------------------------------------------------------------------


def test_serial_sweep_merges_tables_and_a_rerun_skips_finished_cells(llama, tmp_path, monkeypatch):
    spec = _spec(
        tmp_path, _tiny(llama, 'normalizers = [["adaptive"], ["topk:k=8"]]\nseed = [0, 1]')
    )
    out = tmp_path / "out"
    report, failed = run_sweep(spec, out, progress=False)
    assert failed == 0 and report == out / "report.md"
    cells = load_spec(spec).cells
    summary = pd.read_parquet(out / "tables" / "summary.parquet")
    assert list(summary.columns[:3]) == ["cell", "normalizers", "seed"]
    assert list(summary["cell"].unique()) == [c.id for c in cells]
    normalizers = summary.groupby("cell")["normalizer"].apply(sorted).loc[cells[2].id]
    assert normalizers == ["softmax", "softmax", "topk:k=8", "topk:k=8"]  # two lengths each
    assert set(summary["seed"]) == {0, 1} and (out / "tables" / "heads.csv").is_file()
    for cell in cells:
        one = pd.read_parquet(out / "cells" / cell.id / "tables" / "summary.parquet")
        rows = summary[summary["cell"] == cell.id].drop(columns=["cell", "normalizers", "seed"])
        pd.testing.assert_frame_equal(rows.reset_index(drop=True), one)
    text = report.read_text()
    assert text.count("| done |") == 4 and f"cells/{cells[0].id}/report.md" in text
    meta = json.loads((out / "run.json").read_text())
    assert meta["swept"] == "compare" and meta["spec"] == spec.read_text()
    assert [c["status"] for c in meta["cells"]] == ["done"] * 4

    def boom(*args, **kwargs):
        raise AssertionError("a finished cell runs again")

    monkeypatch.setattr(skeleton, "run", boom)
    _, failed = run_sweep(spec, out, progress=False)
    assert failed == 0 and report.read_text().count("| skipped |") == 4
    pd.testing.assert_frame_equal(pd.read_parquet(out / "tables" / "summary.parquet"), summary)


def test_a_failed_cell_is_reported_and_the_others_finish(llama, tmp_path):
    spec = _spec(tmp_path, _tiny(llama, "seed = [0]").replace("[64, 128]", "[64]"))
    body = spec.read_text().replace("seed = [0]", "lengths = [[64], [256]]")
    spec.write_text(body.replace("lengths = [64]\n", ""))
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["sweep", str(spec), "--out", str(out)])
    assert res.exit_code == 1 and "1 of 2 cell(s) failed" in res.output, res.output
    report = (out / "report.md").read_text()
    assert "| done |" in report and "| failed |" in report
    assert "## Failed cells" in report and "exceeds" in report
    assert set(pd.read_parquet(out / "tables" / "summary.parquet")["lengths"]) == {"64"}


@pytest.mark.slow  # ~20 s: starting a local Ray runtime on two busy cores
def test_ray_gives_the_tables_serial_gives(llama, tmp_path):
    pytest.importorskip("ray", reason="Ray is an extra: pip install 'attnlimits[ray]'")
    spec = _spec(tmp_path, _tiny(llama, 'normalizers = [["adaptive"], ["topk:k=8"]]'))
    run_sweep(spec, tmp_path / "serial", progress=False)
    report, failed = run_sweep(spec, tmp_path / "ray", backend="ray", progress=False)
    assert failed == 0 and "backend ray" in report.read_text()
    serial, ray = _tables(tmp_path / "serial"), _tables(tmp_path / "ray")
    assert serial.keys() == ray.keys() and "summary" in serial
    for name in serial:
        pd.testing.assert_frame_equal(serial[name], ray[name])


@pytest.mark.slow  # ~30 s: a head and a worker node, two Ray runtimes on this machine
def test_a_two_node_cluster_gives_the_tables_serial_gives(llama, tmp_path):
    pytest.importorskip("ray", reason="Ray is an extra: pip install 'attnlimits[ray]'")
    import ray
    from ray.cluster_utils import Cluster

    spec = _spec(tmp_path, _tiny(llama, 'normalizers = [["adaptive"], ["topk:k=8"]]'))
    run_sweep(spec, tmp_path / "serial", progress=False)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)  # one cell per node at a time
    try:
        report, failed = run_sweep(
            spec, tmp_path / "cluster", backend="ray", address=cluster.address, progress=False
        )
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert failed == 0 and "backend ray" in report.read_text()
    serial, both = _tables(tmp_path / "serial"), _tables(tmp_path / "cluster")
    assert serial.keys() == both.keys()
    for name in serial:
        pd.testing.assert_frame_equal(serial[name], both[name])


# ---- the command ---------------------------------------------------------------------------------


def test_cli_bad_spec_and_missing_ray_end_in_one_line(tmp_path, monkeypatch):
    runner = CliRunner()
    out = tmp_path / "out"
    bad = _spec(tmp_path, 'experiment = "compare"\n[axes]\nseeds = [1]\n')
    good = _spec(tmp_path, 'experiment = "compare"\nquick = true\n', "good.toml")
    cases = [
        (["sweep", str(bad)], "unknown compare setting(s) ['seeds']"),
        (["sweep", str(tmp_path / "none.toml")], "cannot read sweep spec"),
        (["sweep", str(good), "--backend", "dask"], "--backend must be one of serial, ray"),
    ]
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    cases.append((["sweep", str(good), "--backend", "ray"], "pip install 'attnlimits[ray]'"))
    for args, words in cases:
        res = runner.invoke(app, [*args, "--out", str(out)])
        lines = res.output.strip().splitlines()
        assert res.exit_code == 2 and len(lines) == 1 and words in lines[0], res.output
        assert lines[0].startswith("error: ") and not out.exists()
