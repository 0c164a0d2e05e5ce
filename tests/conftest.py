"""Shared test fixtures: seeded generators, the book's location, hypothesis profiles, the page
tests' browser. Helpers that several test modules share live in modules of their own beside
this one (tiny_models.py, made_up_tables.py, browser_driver.py, ...): a test module never
imports another test module (tests/test_suite_layout.py checks)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, settings

# Hypothesis profiles (docs/conventions.md, "Tests and CI"): ``dev`` draws new cases on every
# run (and replays saved failures from .hypothesis/); ``ci`` draws the same cases on every run
# (derandomize: a seed fixed per test), so a submission's outcome does not depend on luck;
# ``long`` draws many new cases, for tests/long_fuzz.sh before each stop. A test's own
# @settings may change max_examples only (tests/test_hypothesis_profiles.py checks).
# Each names its parent: hypothesis loads its own "ci" profile (derandomised) wherever $CI is set,
# and a profile registered without a parent would inherit it.
_BASE = settings(
    settings.get_profile("default"),
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
_LONG = int(os.environ.get("ATTNLIMITS_LONG_EXAMPLES", "1000"))
settings.register_profile("dev", _BASE, max_examples=60, derandomize=False)
settings.register_profile("ci", _BASE, max_examples=60, derandomize=True, database=None)
settings.register_profile("long", _BASE, max_examples=_LONG, derandomize=False)


def hypothesis_profile(env: Mapping[str, str]) -> str:
    """``$HYPOTHESIS_PROFILE`` if set, else ``ci`` where ``$CI`` says so (CI services set
    CI=true), else ``dev``."""
    if env.get("HYPOTHESIS_PROFILE"):
        return env["HYPOTHESIS_PROFILE"]
    return "ci" if env.get("CI", "").lower() not in ("", "0", "false", "no") else "dev"


HYPOTHESIS_PROFILE = hypothesis_profile(os.environ)
settings.load_profile(HYPOTHESIS_PROFILE)


def pytest_report_header() -> str:
    return f"hypothesis profile: {HYPOTHESIS_PROFILE} ({settings.default.max_examples} examples)"


# one thread per test process: the suite runs as two xdist workers on two cores, and small ops
# get slower, not faster, with more threads under contention
torch.set_num_threads(1)

REPO = Path(__file__).resolve().parents[1]
SHARED_TEXT = REPO.parent / "shared" / "data" / "war_and_peace.txt"


def torch_release(version: str) -> str:
    """A torch version without its build label. The wheel pip picks from PyPI says 2.14.1 in
    its metadata (what run.json records) and 2.14.1+cu130 in ``torch.__version__``; a CPU
    wheel from download.pytorch.org says 2.13.0+cpu in both."""
    return version.split("+")[0]


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


#: The papers' own text, the ground truth for every quote (absent in a clone outside this
#: workplace).
PAPERS = Path(__file__).resolve().parents[1].parent / "shared" / "papers"


@pytest.fixture(scope="session")
def paper_texts() -> list[str]:
    """Both papers' text files (../shared/papers); skip where they are absent."""
    if not PAPERS.is_dir():
        pytest.skip("../shared/papers is absent")
    return [p.read_text(encoding="utf-8") for p in sorted(PAPERS.glob("paper-*.txt"))]


@pytest.fixture
def registered_safe(monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/safe_experiment.py's toy experiment registered as "safe" (``skeleton.get`` finds
    it, ``attnlimits report`` redraws its runs), its computed parts' log emptied."""
    import safe_experiment
    from attnlimits.experiments import skeleton

    monkeypatch.setitem(skeleton.EXPERIMENTS, "safe", safe_experiment.__name__)
    safe_experiment.CALLS.clear()


# ---- the page tests' headless Chromium (tests/browser_driver.py) --------------------------------


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    """Where the screenshots go: docs/images with ``ATTNLIMITS_WRITE_DOCS=1``, else a temporary
    folder."""
    from browser_driver import DOCS_IMAGES

    if os.environ.get("ATTNLIMITS_WRITE_DOCS"):
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        return DOCS_IMAGES
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium for the module's tests (skips, naming what is missing, without one)."""
    from browser_driver import chrome_driver

    driver = chrome_driver()
    yield driver
    driver.quit()
