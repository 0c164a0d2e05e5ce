"""Shared test fixtures: seeded generators, the book's location, hypothesis profiles."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci" if os.environ.get("CI") else "default")

# one thread per test process: the suite runs as two xdist workers on two cores, and small ops
# get slower, not faster, with more threads under contention
torch.set_num_threads(1)

REPO = Path(__file__).resolve().parents[1]
SHARED_TEXT = REPO.parent / "shared" / "data" / "war_and_peace.txt"


@pytest.fixture(params=["fused", "torch"])
def metric_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a metric test twice: through the fused CPU kernels (attnlimits.metrics._fused) and
    through the torch path they replace (``ATTNLIMITS_FUSED=0``), both against the test's
    naive reference."""
    if request.param == "fused":
        pytest.importorskip("numba")
        monkeypatch.setenv("ATTNLIMITS_FUSED", "1")
    else:
        monkeypatch.setenv("ATTNLIMITS_FUSED", "0")
    return str(request.param)


@pytest.fixture
def torch_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The torch path only: for tests of its internals (query blocks, Gram routes, d_1 loop)."""
    monkeypatch.setenv("ATTNLIMITS_FUSED", "0")


@pytest.fixture
def gen() -> torch.Generator:
    """A seeded CPU generator: every random test input is reproducible."""
    return torch.Generator().manual_seed(0)


@pytest.fixture(scope="session")
def book_path() -> Path:
    """War and Peace from ../shared/data (or $ATTNLIMITS_TEXT); skip where neither exists."""
    env = os.environ.get("ATTNLIMITS_TEXT")
    path = Path(env) if env else SHARED_TEXT
    if not path.is_file():
        pytest.skip(f"book text not found at {path}")
    return path
