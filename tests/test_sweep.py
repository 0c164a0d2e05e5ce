"""attnlimits sweep: spec checks, the grid of cells, merged tables, skipping finished cells, a
failed cell, models kept per worker, the text shipped, the scaling estimate against every
schedule, Ray against serial, a killed worker and a killed driver, and the command's one-line
errors."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from attnlimits.cli import app
from attnlimits.corpus import load_text, pack_text, unpack_text
from attnlimits.corpus import text as text_module
from attnlimits.experiments import skeleton
from attnlimits.experiments.store import _LOCK_NAME
from attnlimits.experiments.sweep import load_spec, lpt_makespan, run_sweep, scaling_table
from attnlimits.experiments.sweep.backends import check_address
from tiny_models import tiny_model_dir

#: Time columns differ from run to run; everything else must match exactly.
TIMES = ("seconds_per_forward", "time_vs_softmax")


@pytest.fixture(scope="module")
def llama(tmp_path_factory, book_path):
    root = tmp_path_factory.mktemp("sweep_models")
    return tiny_model_dir(
        root, "llama", load_text(book_path)[:100_000], max_positions=128, digits=True
    )


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
    ('experiment = "compare"\nresources = 2\n', "[resources] must be a table"),
    ('experiment = "compare"\n[resources]\ncpu = 2\n', "unknown [resources] key(s) ['cpu']"),
    ('experiment = "compare"\n[resources]\ncpus = 0\n', "cpus must be a number > 0, got 0"),
    ('experiment = "compare"\n[resources]\ngpus = -1\n', "gpus must be >= 0, got -1"),
    ('experiment = "compare"\n[resources]\nmemory_gb = nan\n', "memory_gb must be >= 0"),
    ('experiment = "compare"\n[resources]\ngpus = true\n', "gpus must be >= 0, got True"),
    ('experiment = "compare"\n[resources]\nretries = 1.5\n', "retries must be a whole number"),
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


def test_a_yaml_spec_gives_the_cells_of_its_toml_twin():
    """The shipped limitations example in both formats: the same cells, the same Configs."""
    examples = Path(__file__).resolve().parents[1] / "examples"
    toml, yaml = (load_spec(examples / f"sweep-limitations.{ext}") for ext in ("toml", "yaml"))
    assert [c.id for c in yaml.cells] == [c.id for c in toml.cells] and len(toml.cells) == 4
    assert [c.name for c in toml.cells][1] == "placement=spread;x_sources=hidden"
    assert (
        toml.cells[1].config.x_sources == ("hidden",) and toml.cells[2].config.placement == "start"
    )


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("experiment: compare\nquick: [\n", "not valid YAML"),
        ("- experiment\n- compare\n", "a spec is a mapping"),
        ("experiment: compare\naxes:\n  seed: 3\n", "axis 'seed' must be a non-empty list"),
    ],
)
def test_bad_yaml_specs_fail_in_one_line_naming_the_file(tmp_path, body, words):
    path = _spec(tmp_path, body, "spec.yaml")
    with pytest.raises(ValueError) as err:
        load_spec(path)
    message = str(err.value)
    assert words in message and str(path) in message and "\n" not in message, message


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
    assert spec.resources == {"cpus": 1.0, "gpus": 0.0, "retries": 2}  # the defaults
    one = load_spec(_spec(tmp_path, 'experiment = "compare"\n', "one.toml"))
    assert [c.name for c in one.cells] == ["all"]


def test_resources_default_to_one_cpu_and_a_gpu_where_a_cell_uses_cuda(tmp_path):
    cuda = 'experiment = "compare"\n[axes]\ndevice = ["cpu", "cuda:0"]\n'
    assert load_spec(_spec(tmp_path, cuda)).resources["gpus"] == 1.0
    given = cuda + "[resources]\ncpus = 4\ngpus = 0.5\nmemory_gb = 6\nretries = 0\n"
    resources = load_spec(_spec(tmp_path, given, "given.toml")).resources
    assert resources == {"cpus": 4.0, "gpus": 0.5, "memory_gb": 6.0, "retries": 0}


# ---- the scaling estimate --------------------------------------------------------------------


def _best_makespan(seconds: list[float], slots: int) -> float:
    """Every assignment of cells to workers (the naive reference; a few cells only)."""
    best = float("inf")
    for owners in itertools.product(range(slots), repeat=len(seconds)):
        loads = [0.0] * slots
        for owner, s in zip(owners, seconds, strict=True):
            loads[owner] += s
        best = min(best, max(loads))
    return best


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 100), min_size=1, max_size=7), st.integers(1, 4))
def test_longest_first_is_within_graham_bound_of_the_best_schedule(seconds, slots):
    lpt, best = lpt_makespan(seconds, slots), _best_makespan(seconds, slots)
    assert best - 1e-9 <= lpt <= (4 / 3 - 1 / (3 * slots)) * best + 1e-9
    assert lpt >= max(max(seconds), sum(seconds) / slots) - 1e-9


def test_scaling_table_and_bad_slots():
    table = scaling_table([30.0, 10.0, 10.0, 10.0], slots=(1, 2, 4))
    assert table["wall_s"].tolist() == [60.0, 30.0, 30.0]
    assert table["speedup"].tolist() == [1.0, 2.0, 2.0] and table["efficiency"].iloc[2] == 0.5
    with pytest.raises(ValueError, match="slots must be >= 1"):
        lpt_makespan([1.0], 0)
    with pytest.raises(ValueError, match="cell times must be >= 0"):
        lpt_makespan([1.0, -2.0], 2)


# ---- what a worker gets: the text shipped, a cluster address checked ---------------------------


def test_a_shipped_text_is_read_without_its_file(tmp_path, monkeypatch):
    monkeypatch.setattr(text_module, "_shipped", {})
    path = tmp_path / "book.txt"
    path.write_text("Well, Prince, so Genoa and Lucca\nare now just family estates.\n")
    expected = load_text(path)
    packed = pack_text(path)
    path.unlink()  # a worker on another machine: no copy of the file
    with pytest.raises(FileNotFoundError):
        load_text(path)
    unpack_text(packed)
    assert load_text(path) == expected
    with pytest.raises(FileNotFoundError, match="text file not found"):
        pack_text(tmp_path / "none.txt")


def test_an_unreachable_cluster_address_fails_at_once():
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start = time.perf_counter()
    with pytest.raises(ValueError, match=f"cannot reach Ray at ray://127.0.0.1:{port}"):
        check_address(f"ray://127.0.0.1:{port}")
    assert time.perf_counter() - start < 30  # not Ray's minutes of retries
    with pytest.raises(ValueError, match="must be host:port or ray://host:port"):
        check_address("headnode")
    for fine in (None, "auto", "local"):
        check_address(fine)


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
    assert [c["models_loaded"] for c in meta["cells"]] == [1, 0, 0, 0]  # loaded once, kept
    for cell in meta["cells"]:  # the skeleton's stages only: compare's own "forwards" is inside
        total = json.loads((out / "cells" / cell["id"] / "run.json").read_text())
        stages = total["wall_time_total_s"]
        assert cell["wall_time_s"] == round(stages["compute"] + stages["report"], 1)
    assert "## Scaling (estimate)" in text and "| 4 |" in text
    fresh = tmp_path / "fresh"  # the last cell alone, with a model loaded for it
    skeleton.run(skeleton.get("compare"), cells[3].config, fresh, progress=False)
    alone, merged = _tables(fresh), _tables(out)
    for name, df in alone.items():
        rows = merged[name][merged[name]["cell"] == cells[3].id].iloc[:, 3:]
        pd.testing.assert_frame_equal(rows.reset_index(drop=True), df)

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
def test_ray_gives_the_tables_serial_gives_loading_the_model_once_per_worker(llama, tmp_path):
    pytest.importorskip("ray", reason="Ray is an extra: pip install 'attnlimits[ray]'")
    spec = _spec(
        tmp_path, _tiny(llama, 'normalizers = [["adaptive"], ["topk:k=8"]]\nseed = [0, 1, 2]')
    )
    run_sweep(spec, tmp_path / "serial", progress=False)
    report, failed = run_sweep(spec, tmp_path / "ray", backend="ray", progress=False)
    assert failed == 0 and "backend ray" in report.read_text()
    serial, ray = _tables(tmp_path / "serial"), _tables(tmp_path / "ray")
    assert serial.keys() == ray.keys() and "summary" in serial
    for name in serial:
        pd.testing.assert_frame_equal(serial[name], ray[name])
    cells = json.loads((tmp_path / "ray" / "run.json").read_text())["cells"]
    loads: dict[str, int] = {}
    for cell in cells:
        loads[cell["worker"]] = loads.get(cell["worker"], 0) + cell["models_loaded"]
    assert set(loads.values()) == {1}, loads  # each worker loaded the model for its first cell
    assert len(loads) < len(cells), loads  # and kept it for the next


def _kill_first_worker(out, killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the first process other than this one seen holding a cell's folder."""
    while not stop.is_set():
        for owner in out.glob(f"cells/*/{_LOCK_NAME}.owner"):
            try:
                pid = int(owner.read_text().split()[1])
            except (OSError, ValueError, IndexError):
                continue  # being written
            if pid != os.getpid():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
        time.sleep(0.01)


@pytest.mark.slow  # ~25 s: a local Ray runtime, a worker killed and its cell retried
def test_a_worker_killed_mid_cell_is_retried_to_the_tables_serial_gives(llama, tmp_path):
    pytest.importorskip("ray", reason="Ray is an extra: pip install 'attnlimits[ray]'")
    spec = _spec(tmp_path, _tiny(llama, 'normalizers = [["adaptive"], ["topk:k=8"]]'))
    run_sweep(spec, tmp_path / "serial", progress=False)
    out, killed, stop = tmp_path / "ray", [], threading.Event()
    killer = threading.Thread(target=_kill_first_worker, args=(out, killed, stop))
    killer.start()
    try:
        report, failed = run_sweep(spec, out, backend="ray", progress=False)
    finally:
        stop.set()
        killer.join()
    assert len(killed) == 1 and failed == 0, report.read_text()
    cells = json.loads((out / "run.json").read_text())["cells"]
    assert all(c["status"] == "done" for c in cells)
    assert all(not c["worker"].endswith(f":{killed[0]}") for c in cells)  # retried elsewhere
    serial, ray = _tables(tmp_path / "serial"), _tables(out)
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


@pytest.mark.slow  # ~20 s: two command-line processes
def test_a_killed_sweep_finishes_the_rest_when_run_again(llama, tmp_path):
    spec = _spec(tmp_path, _tiny(llama, 'normalizers = [["adaptive"], ["topk:k=8"]]'))
    run_sweep(spec, tmp_path / "whole", progress=False)
    first = load_spec(spec).cells[0]
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "attnlimits.cli", "sweep", str(spec), "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})  # fmt: skip
    deadline = time.monotonic() + 120
    while not (out / "cells" / first.id / "report.md").exists() and proc.poll() is None:
        assert time.monotonic() < deadline, "the first cell never finished"
        time.sleep(0.01)
    proc.kill()  # the driver, in its second cell (or just after)
    proc.wait()
    report, failed = run_sweep(spec, out, progress=False)
    assert failed == 0 and "| skipped |" in report.read_text()
    whole, resumed = _tables(tmp_path / "whole"), _tables(out)
    for name in whole:
        pd.testing.assert_frame_equal(whole[name], resumed[name])


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


def test_cli_an_unreachable_address_ends_in_one_line(tmp_path):
    pytest.importorskip("ray", reason="Ray is an extra: pip install 'attnlimits[ray]'")
    good = _spec(tmp_path, 'experiment = "compare"\nquick = true\n', "good.toml")
    args = ["sweep", str(good), "--backend", "ray", "--address", "127.0.0.1:9", "--out"]
    res = CliRunner().invoke(app, [*args, str(tmp_path / "out")])
    lines = res.output.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert lines[0].startswith("error: cannot reach Ray at 127.0.0.1:9"), res.output
    assert not (tmp_path / "out").exists()


def test_ray_starts_without_its_info_line_or_its_workers_logs(tmp_path, monkeypatch):
    """Issue 58, item 10: Ray's INFO line on starting a local runtime (and its workers' and
    raylet's log lines) reached the screen between the sweep's own lines."""
    import logging

    from attnlimits.experiments.sweep import backends

    asked: dict = {}

    class FakeRay:
        @staticmethod
        def is_initialized() -> bool:
            return False

        @staticmethod
        def init(**kwargs):
            asked.update(kwargs)
            raise RuntimeError("no runtime in this test")

    monkeypatch.setattr(backends, "_import_ray", lambda: FakeRay)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(ValueError, match="cannot start or reach Ray at a local runtime"):
        backends._ray(None, [], tmp_path, None, {}, None, {})
    assert asked["logging_level"] == logging.WARNING and asked["log_to_driver"] is False


def test_an_address_with_the_serial_backend_is_refused(tmp_path):
    """Issue 58, item 10: ``--address ray://...`` with ``--backend serial`` was ignored."""
    spec = tmp_path / "s.toml"
    spec.write_text('experiment = "scan"\nquick = true\n[axes]\nseed = [0, 1]\n')
    with pytest.raises(ValueError, match=r"^--address ray://head:10001 names a Ray cluster"):
        run_sweep(spec, tmp_path / "out", backend="serial", address="ray://head:10001")
    assert not (tmp_path / "out").exists()
