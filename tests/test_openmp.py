"""The ``attnlimits`` command waits passively for OpenMP threads; a library user's process and
a user's own ``OMP_WAIT_POLICY`` are left alone (src/attnlimits/_openmp.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from attnlimits._openmp import is_cli

SHOW = "import attnlimits, os, attnlimits._openmp as o; print(os.environ.get('OMP_WAIT_POLICY'))"


def _policy(prefix: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"} | env
    out = subprocess.run(
        [sys.executable, "-c", prefix + SHOW], env=clean, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


@pytest.mark.parametrize(
    ("argv0", "orig", "expected"),
    [
        ("/venv/bin/attnlimits", ["/venv/bin/python", "/venv/bin/attnlimits", "scan"], True),
        ("C:/venv/Scripts/attnlimits.exe", ["python"], True),
        ("/x/attnlimits/cli/__main__.py", ["python", "-m", "attnlimits.cli", "scan"], True),
        ("x.py", ["python", "-X", "importtime", "-m", "attnlimits.cli"], True),
        ("-c", ["python", "-c", "import attnlimits"], False),
        ("x.py", ["python", "-m", "pytest", "-m", "attnlimits.cli"], False),
        ("train.py", ["python", "train.py", "attnlimits.cli"], False),
    ],
)
def test_is_cli_knows_the_command_from_a_script(argv0, orig, expected):
    assert is_cli(argv0, orig) is expected


def test_the_command_sets_passive_waiting_before_torch_loads():
    assert _policy("import sys; sys.argv[0] = '/venv/bin/attnlimits'; ") == "PASSIVE"


def test_the_user_setting_wins_and_a_library_process_is_left_alone():
    cli = "import sys; sys.argv[0] = '/venv/bin/attnlimits'; "
    assert _policy(cli, OMP_WAIT_POLICY="ACTIVE") == "ACTIVE"
    assert _policy("") == "None"  # a library user's script
    assert _policy("import torch; " + cli) == "None"  # too late: OpenMP has loaded
