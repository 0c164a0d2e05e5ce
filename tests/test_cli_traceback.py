"""``--traceback`` and ``ATTNLIMITS_TRACEBACK=1``: a failure's full traceback above its one
``error:`` line, for a bug report (issue 54); without either, the one line alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnlimits.cli import app

runner = CliRunner()
#: fails in the Config's check, before any folder, model or text is touched
BAD = ["reproduce", "limitations", "--temperatures", "0,1"]
RAISED = "ValueError: every temperature T must be a finite number > 0"


def _run(tmp_path: Path, args: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "out")], env=env)
    assert not (tmp_path / "out").exists()  # a refused run leaves nothing, traceback or not
    return res.exit_code, res.output


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATTNLIMITS_TRACEBACK", raising=False)


def _shows_traceback(code: int, output: str) -> None:
    lines = output.strip().splitlines()
    assert code == 2 and lines[0] == "Traceback (most recent call last):", output
    assert any(line.startswith(RAISED) for line in lines), output
    assert "limitations/config.py" in output  # where it was raised, not only the CLI's frame
    assert lines[-1].startswith("error: every temperature T")  # the one line stays last


def test_without_it_an_error_is_one_line(tmp_path: Path) -> None:
    code, output = _run(tmp_path, BAD)
    assert code == 2 and "Traceback" not in output
    assert output.strip().splitlines() == [output.strip()]


def test_the_option_shows_the_full_traceback(tmp_path: Path) -> None:
    _shows_traceback(*_run(tmp_path, ["--traceback", *BAD]))


@pytest.mark.parametrize("value", ["1", "true"])
def test_the_environment_variable_shows_it_too(tmp_path: Path, value: str) -> None:
    _shows_traceback(*_run(tmp_path, BAD, env={"ATTNLIMITS_TRACEBACK": value}))


@pytest.mark.parametrize("value", ["0", ""])
def test_the_variable_set_to_0_or_empty_does_not(tmp_path: Path, value: str) -> None:
    code, output = _run(tmp_path, BAD, env={"ATTNLIMITS_TRACEBACK": value})
    assert code == 2 and "Traceback" not in output


def test_the_option_holds_for_one_command_only(tmp_path: Path) -> None:
    _run(tmp_path, ["--traceback", *BAD])
    code, output = _run(tmp_path, BAD)  # the next command, in the same process
    assert code == 2 and "Traceback" not in output


def test_help_names_the_option_and_the_variable() -> None:
    res = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "--traceback" in res.output
    assert "ATTNLIMITS_TRACEBACK=1" in res.output
