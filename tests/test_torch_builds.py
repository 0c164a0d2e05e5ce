"""The suite passes with whichever torch build pip picks. From PyPI, the wheel's metadata says
2.14.1 and ``torch.__version__`` says 2.14.1+cu130; a CPU wheel says 2.13.0+cpu in both. Here
the installed torch is made to look like the PyPI build, whatever it is."""

from __future__ import annotations

import json
import re
from importlib import metadata

import pytest
import torch
from typer.testing import CliRunner

from attnlimits.cli import app
from attnlimits.experiments import skeleton
from cli_cases import Result, error_message
from conftest import REPO, torch_release
from toy_experiment import TOY, ToyConfig

LABELLED = "2.14.1+cu130"


@pytest.fixture
def labelled_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    installed = metadata.version

    def version(name: str) -> str:
        return torch_release(LABELLED) if name == "torch" else installed(name)

    monkeypatch.setattr(torch, "__version__", LABELLED)
    monkeypatch.setattr(metadata, "version", version)


def test_run_json_names_the_torch_that_ran(labelled_torch, tmp_path, monkeypatch):
    monkeypatch.setitem(skeleton.EXPERIMENTS, "toy", "toy_experiment")
    skeleton.run(TOY, ToyConfig(steps=1), tmp_path / "run", progress=False)
    recorded = json.loads((tmp_path / "run" / "run.json").read_text())["versions"]["torch"]
    assert torch_release(recorded) == torch_release(torch.__version__) == "2.14.1"


def test_the_reliability_doc_renders_the_same_for_every_build(
    labelled_torch, tmp_path, monkeypatch
):
    """The one message that names torch's version: {TORCH} in docs/reliability.md."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "out"
    argv = ["reproduce", "limitations", "--device", "cuda", "--out", str(out)]
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 2 and LABELLED in res.output
    message = error_message(Result(res.exit_code, res.output, [], out), {})
    assert (
        message.startswith("error:")
        and f"`{message}`" in (REPO / "docs/reliability.md").read_text()
    )


def test_ci_installs_what_the_readme_installs():
    """No torch pin (or anything else) before the README's install: CI gets the torch a user
    gets, and says which."""
    readme = (REPO / "README.md").read_text()
    test_command = re.findall(r"```bash\n(.*?)\n```", readme, re.S)[1]
    wanted = {p.strip() for p in test_command.split("&&") if p.strip().startswith("pip install")}
    ci = (REPO / ".ci" / "run").read_text()
    code = [line.split("#")[0] for line in ci.splitlines()]
    installs = {
        re.sub(r"^(python -m )?pip install( -q)?", "pip install", part.strip())
        for line in code
        for part in re.split(r"&&|\|\|", line)
        if "pip install" in part
    }
    assert wanted and installs == wanted, installs - wanted
    assert "torch.__version__" in ci
