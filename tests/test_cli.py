"""Bad input at the command line: exit code 2, one line naming the problem, nothing left on disk.

Every case here is also a row of docs/reliability.md; ``test_reliability_doc_is_current`` renders
the table from what the commands print now and fails (showing the new table) when the two drift.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnlimits.cli import app
from conftest import REPO
from tiny_models import tiny_model_dir

runner = CliRunner()
DOC = REPO / "docs" / "reliability.md"

LIM = ["reproduce", "limitations"]
SNE = ["reproduce", "softmax-not-enough"]
LC = ["demo", "long-context"]
SCAN = ["scan"]
CMP = ["compare"]

# (what a user tried, argv with {MODEL} {BOOK} {OUT} {TMP} placeholders, setup)
CASES: list[tuple[str, list[str], str | None]] = [
    ("an unknown device", [*LIM, "--device", "tpu", "--out", "{OUT}"], None),
    ("CUDA on a machine without it", [*LIM, "--device", "cuda", "--out", "{OUT}"], "no_cuda"),
    ("a temperature that is NaN", [*LIM, "--temperatures", "nan,1", "--out", "{OUT}"], None),
    ("a temperature that is infinite", [*LIM, "--temperatures", "inf", "--out", "{OUT}"], None),
    ("a temperature ≤ 0", [*LIM, "--temperatures", "0,1", "--out", "{OUT}"], None),
    ("N = 0", [*LIM, "--n", "0", "--out", "{OUT}"], None),
    ("N not below every L", [*LIM, "--n", "64", "--lengths", "32,64", "--out", "{OUT}"], None),
    ("lengths that are not numbers", [*LIM, "--lengths", "a,b", "--out", "{OUT}"], None),
    ("an empty list of lengths", [*LIM, "--lengths", ",", "--out", "{OUT}"], None),
    ("zero windows", [*LIM, "--windows", "0", "--out", "{OUT}"], None),
    ("an unknown x source", [*LIM, "--x-source", "queries", "--out", "{OUT}"], None),
    ("an unknown window placement", [*LIM, "--placement", "middle", "--out", "{OUT}"], None),
    ("one Monte Carlo draw per row", [*LIM, "--mc-samples", "1", "--out", "{OUT}"], None),
    ("two models, the second a folder that does not exist", [*LIM, "--model", "{MODEL}", "--model", "{TMP}/no-model", "--out", "{OUT}"], None),
    ("two models, the first with L beyond its context", [*LIM, "--model", "{MODEL}", "--model", "no-org/no-model", "--text", "{BOOK}", "--out", "{OUT}"], None),
    ("a model folder that does not exist", [*LIM, "--model", "{TMP}/no-model", "--out", "{OUT}"], None),
    ("an unknown hub id, offline", [*LIM, "--model", "no-org/no-model", "--out", "{OUT}"], "offline"),
    ("a text file that does not exist", [*LIM, "--model", "{MODEL}", "--text", "{TMP}/none.txt", "--quick", "--out", "{OUT}"], None),
    ("a text file that is not UTF-8", [*LIM, "--model", "{MODEL}", "--text", "{TMP}/latin1.txt", "--quick", "--out", "{OUT}"], "latin1"),
    ("a text too short for the windows", [*LIM, "--model", "{MODEL}", "--text", "{TMP}/short.txt", "--quick", "--out", "{OUT}"], "short"),
    ("L beyond the model's context", [*LIM, "--model", "{MODEL}", "--text", "{BOOK}", "--lengths", "512", "--out", "{OUT}"], None),
    ("an output folder that cannot be written", [*LIM, "--model", "{MODEL}", "--quick", "--out", "{TMP}/file/sub"], "blocker"),
    ("one seed for a paired t-test", [*SNE, "--seeds", "1", "--out", "{OUT}"], None),
    ("an unknown normaliser", [*SNE, "--normalizers", "softmax,bogus", "--out", "{OUT}"], None),
    ("an unknown model variant", [*SNE, "--model-variant", "flax", "--out", "{OUT}"], None),
    ("an unknown LR schedule", [*SNE, "--schedule", "linear", "--out", "{OUT}"], None),
    ("zero prompts", [*LC, "--prompts", "0", "--out", "{OUT}"], None),
    ("scan: lengths below 4", [*SCAN, "{MODEL}", "--lengths", "2,8", "--out", "{OUT}"], None),
    ("scan: one sampled row", [*SCAN, "{MODEL}", "--rows", "1", "--out", "{OUT}"], None),
    ("scan: an unknown device", [*SCAN, "{MODEL}", "--device", "tpu", "--out", "{OUT}"], None),
    ("scan: a model folder that does not exist", [*SCAN, "{TMP}/no-model", "--out", "{OUT}"], None),
    ("scan: a text too short for the windows (before the model loads)", [*SCAN, "{TMP}/no-model", "--text", "{TMP}/short.txt", "--out", "{OUT}"], None),
    ("scan: L beyond the model's context", [*SCAN, "{MODEL}", "--text", "{BOOK}", "--lengths", "512", "--out", "{OUT}"], None),
    ("compare: an unknown normaliser", [*CMP, "--normalizers", "softmax,bogus", "--out", "{OUT}"], None),
    ("compare: a parameter the normaliser refuses", [*CMP, "--normalizers", "topk:k=0", "--out", "{OUT}"], None),
    ("compare: a parameter without a value", [*CMP, "--normalizers", "topk:k", "--out", "{OUT}"], None),
    ("compare: a temperature on the baseline", [*CMP, "--normalizers", "softmax:temperature=2", "--out", "{OUT}"], None),
    ("compare: L beyond the model's context", [*CMP, "--model", "{MODEL}", "--text", "{BOOK}", "--lengths", "512", "--out", "{OUT}"], None),
    ("compare: lengths too short for the probes", [*CMP, "--model", "{MODEL}", "--text", "{BOOK}", "--lengths", "32,64", "--out", "{OUT}"], None),
    ("a report of a folder without a run", ["report", "{TMP}"], None),
    ("sweep: a spec file that does not exist", ["sweep", "{TMP}/none.toml", "--out", "{OUT}"], None),
    ("sweep: an unknown backend", ["sweep", "{TMP}/none.toml", "--backend", "dask", "--out", "{OUT}"], None),
]  # fmt: skip


@pytest.fixture(scope="module")
def env(tmp_path_factory, book_path) -> dict[str, str]:
    root = tmp_path_factory.mktemp("cli")
    text = book_path.read_text(encoding="utf-8")
    model = tiny_model_dir(root, "llama", text[:200_000], max_positions=256)
    (root / "latin1.txt").write_bytes("Pierre said: « déjà vu »\n".encode("latin-1") * 50)
    (root / "short.txt").write_text("BOOK ONE: 1805\n\n" + "the war " * 20)
    (root / "file").write_text("")
    return {"MODEL": str(model), "BOOK": str(book_path), "TMP": str(root)}


def _argv(args: list[str], env: dict[str, str], out: Path) -> list[str]:
    subs = {**env, "OUT": str(out)}
    return [re.sub(r"\{(\w+)\}", lambda m: subs[m.group(1)], a) for a in args]


def _invoke(args: list[str], setup: str | None, env: dict[str, str], out: Path, monkeypatch):
    if setup == "no_cuda":
        import torch

        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    if setup == "offline":
        import huggingface_hub.constants as hf

        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        monkeypatch.setattr(hf, "HF_HUB_OFFLINE", True)
    return runner.invoke(app, _argv(args, env, out))


def _message(output: str, env: dict[str, str], out: Path) -> str:
    import torch  # its version names the build (2.14.1+cu130, 2.13.0+cpu): {TORCH} in the doc

    line = output.strip().splitlines()[-1] if output.strip() else ""
    for name, value in [("OUT", str(out)), *env.items(), ("TORCH", torch.__version__)]:
        line = line.replace(value, "{" + name + "}")
    return line


@pytest.mark.parametrize(("what", "args", "setup"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2_and_leaves_nothing(
    what, args, setup, env, tmp_path, monkeypatch
):
    out = tmp_path / "out"
    res = _invoke(args, setup, env, out, monkeypatch)
    assert res.exit_code == 2, (what, res.output)
    assert "Traceback" not in res.output
    lines = [ln for ln in res.output.strip().splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, res.output
    assert not out.exists(), f"{what}: a run that never started left {sorted(out.rglob('*'))}"


def test_reliability_doc_is_current(env, tmp_path_factory, monkeypatch):
    rows = ["| what was tried | command | exit | message |", "|---|---|---|---|"]
    for what, args, setup in CASES:
        out = tmp_path_factory.mktemp("o") / "out"
        with monkeypatch.context() as mp:
            res = _invoke(args, setup, env, out, mp)
        cmd = " ".join(["attnlimits", *args]).replace("|", "\\|")
        msg = _message(res.output, env, out).replace("|", "\\|")
        rows.append(f"| {what} | `{cmd}` | {res.exit_code} | `{msg}` |")
    table = "\n".join(rows)
    doc = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    if os.environ.get("ATTNLIMITS_WRITE_DOCS"):
        start, end = "<!-- cases: start -->", "<!-- cases: end -->"
        head, _, rest = doc.partition(start)
        _, _, tail = rest.partition(end)
        DOC.write_text(f"{head}{start}\n{table}\n{end}{tail}", encoding="utf-8")
        doc = DOC.read_text(encoding="utf-8")
    stale = "docs/reliability.md is stale; rerun with ATTNLIMITS_WRITE_DOCS=1:\n"
    assert table in doc, stale + table


def test_quick_with_short_lengths_runs(env, tmp_path):
    """--quick fills its own N grids first; the user's --lengths win and the grids follow."""
    out = tmp_path / "out"
    argv = [*LIM, "--model", env["MODEL"], "--text", env["BOOK"], "--quick", "--lengths", "32,64"]
    res = runner.invoke(app, [*argv, "--x-source", "values", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert (out / "report.md").is_file()


def test_ctrl_c_says_what_was_saved(env, tmp_path, monkeypatch):
    from attnlimits.experiments import skeleton
    from attnlimits.experiments.store import ResultStore

    out = tmp_path / "out"

    def interrupted(experiment, config, folder, **kw):
        ResultStore(folder).save_part("x", {}, "k", __import__("pandas").DataFrame({"a": [1]}))
        raise KeyboardInterrupt

    monkeypatch.setattr(skeleton, "run", interrupted)
    res = runner.invoke(app, [*LIM, "--model", env["MODEL"], "--out", str(out)])
    assert res.exit_code == 130
    assert f"interrupted: 1 part(s) saved in {out}; rerun the command to resume" in res.output


def test_a_resumed_run_with_other_settings_is_refused(env, tmp_path):
    out = tmp_path / "out"
    base = [*LIM, "--model", env["MODEL"], "--text", env["BOOK"], "--quick", "--x-source", "values"]
    assert runner.invoke(app, [*base, "--out", str(out)]).exit_code == 0
    res = runner.invoke(app, [*base, "--windows", "2", "--out", str(out)])
    assert (
        res.exit_code == 2 and "other settings (windows)" in res.output and "--fresh" in res.output
    )
    assert (
        runner.invoke(app, [*base, "--windows", "2", "--fresh", "--out", str(out)]).exit_code == 0
    )
