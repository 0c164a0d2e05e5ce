"""Ctrl-C and write errors outside a run's own handler (issue 58, items 7 and 9): one line and
exit 130 (or 2) wherever they land, the real error shown rather than the clean-up's, and
nothing printed once a command has printed its result."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnlimits._paths import write_error
from attnlimits.cli import app
from attnlimits.experiments.store import ResultStore
from conftest import REPO

runner = CliRunner()
SKELETON, CLI = "attnlimits.experiments.skeleton", "attnlimits.cli"
SIDE_BY_SIDE = "attnlimits.experiments.limitations.side_by_side"


def _one_error_line(output: str) -> str:
    lines = output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    assert "Traceback" not in output
    return lines[0]


def _raise(error: BaseException):
    def raising(*args, **kwargs):
        raise error

    return raising


@pytest.mark.parametrize(
    ("argv", "module", "name"),
    [
        (["scan", "no-such-model", "--out", "{OUT}"], SKELETON, "get"),
        (["reproduce", "limitations", "--quick", "--out", "{OUT}"], CLI, "check_models"),
        (["report", "{OUT}"], SKELETON, "redraw"),
        (["report", "{OUT}"], SIDE_BY_SIDE, "redraw_side_by_side"),
    ],
)
def test_ctrl_c_before_a_run_or_in_report_is_one_line_exit_130(
    tmp_path, monkeypatch, argv, module, name
):
    """Typer turned a KeyboardInterrupt outside a run's handler into a silent exit 130: 1-5 s
    into ``reproduce limitations`` (before its models run), 3 s into ``scan`` (imports), at any
    moment of ``report``."""
    import importlib

    monkeypatch.setattr(importlib.import_module(module), name, _raise(KeyboardInterrupt()))
    out = tmp_path / "out"
    res = runner.invoke(app, [a.replace("{OUT}", str(out)) for a in argv])
    assert res.exit_code == 130
    assert _one_error_line(res.output).startswith("error: interrupted (Ctrl-C)")


def _side_by_side(monkeypatch, error: BaseException) -> list[str]:
    """``reproduce limitations`` of two models whose runs are done, the joined report failing
    with ``error``; returns the command's arguments."""
    import attnlimits.cli as cli
    from attnlimits.experiments.limitations import side_by_side

    monkeypatch.setattr(cli, "check_models", lambda *args, **kwargs: None)
    monkeypatch.setattr(cli, "_run", lambda *args, **kwargs: None)
    monkeypatch.setattr(side_by_side, "write_side_by_side", _raise(error))
    return ["reproduce", "limitations", "--model", "a", "--model", "b", "--quick"]


def test_a_full_disk_while_the_joined_report_is_written_is_one_line(tmp_path, monkeypatch):
    """Item 7: write_side_by_side ran outside the run's error handler: a 65-line traceback."""
    out = tmp_path / "out"
    full = write_error(out / "report.md", OSError(errno.ENOSPC, "No space left on device"))
    res = runner.invoke(app, [*_side_by_side(monkeypatch, full), "--out", str(out)])
    assert res.exit_code == 2
    line = _one_error_line(res.output.split("\n", 2)[-1])  # after the models' two lines
    assert line == f"error: cannot write {out}/report.md: disk full (no space left on device)"


def test_ctrl_c_while_the_joined_report_is_written_is_one_line(tmp_path, monkeypatch):
    out = tmp_path / "out"
    res = runner.invoke(app, [*_side_by_side(monkeypatch, KeyboardInterrupt()), "--out", str(out)])
    assert res.exit_code == 130
    line = _one_error_line(res.output.split("\n", 2)[-1])
    assert line.startswith(f"error: interrupted while writing the joined report in {out}")


def test_the_locks_clean_up_does_not_hide_the_error_that_ended_its_block(tmp_path, monkeypatch):
    """A folder that cannot be written (chattr +i) reported only the failed unlink of
    ``.attnlimits.lock.owner``, not why the owner note could not be written."""
    from attnlimits.experiments import store as store_module

    first = PermissionError(errno.EPERM, "Operation not permitted", "owner note")
    real_open = store_module.open_no_follow
    monkeypatch.setattr(store_module, "open_no_follow", _raise(first))
    real_unlink = Path.unlink

    def unlink(self, missing_ok=False):
        if self.name.endswith(".owner"):
            raise PermissionError(errno.EPERM, "Operation not permitted", str(self))
        return real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    with pytest.raises(PermissionError) as err, ResultStore(tmp_path / "run").lock():
        pass
    assert err.value is first
    monkeypatch.setattr(store_module, "open_no_follow", real_open)
    with pytest.raises(KeyError), ResultStore(tmp_path / "run2").lock():
        raise KeyError("the block's own")  # the body's error too, not the unlink's


def _child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_a_real_sigint_in_report_is_one_line_exit_130(tmp_path):
    """The signal itself, delivered to the process while ``report`` works."""
    code = """
        import os, signal, sys, threading, time, types
        # as at a terminal: a shell's background job (`cmd &`, CI harnesses) starts with SIGINT
        # ignored, and Python then never raises KeyboardInterrupt (the stub slept 60 s)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        # report's work stood in for (no torch to import: the test stays fast)
        for name in ("experiments", "experiments.limitations", "experiments.skeleton",
                     "experiments.limitations.side_by_side"):
            module = sys.modules["attnlimits." + name] = types.ModuleType("attnlimits." + name)
            module.__path__ = []
        side_by_side = sys.modules["attnlimits.experiments.limitations.side_by_side"]
        experiments = sys.modules["attnlimits.experiments"]
        experiments.skeleton = sys.modules["attnlimits.experiments.skeleton"]
        side_by_side.redraw_side_by_side = lambda folder: time.sleep(60)
        from attnlimits.cli import app
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        sys.argv = ["attnlimits", *sys.argv[1:]]
        app()
    """
    done = _child(code, "report", str(tmp_path))
    assert done.returncode == 130, done.stderr
    assert _one_error_line(done.stderr).startswith("error: interrupted (Ctrl-C)")


def test_ctrl_c_after_the_command_printed_its_result_prints_nothing(tmp_path):
    """In the half second after ``report:`` Ctrl-C printed a 4-line traceback from an exit
    hook (``torch._dynamo``'s, ``weakref.finalize``'s) or killed the process by the signal.
    Here the signal lands in the last exit hook, after the command is over."""
    code = """
        import atexit, os, signal, sys, time
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal (above)
        from attnlimits.cli import app
        def late():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
            print("exited in peace", file=sys.stderr)
        atexit.register(late)
        sys.argv = ["attnlimits", *sys.argv[1:]]
        app()
    """
    done = _child(code, "view", str(tmp_path / "none"))  # no run there: exit 2 and its line
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == "exited in peace"
