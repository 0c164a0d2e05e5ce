"""The hypothesis profiles of tests/conftest.py: CI draws the same cases on every run (so a
submission passes or fails on its merits, not on luck), a developer's run and the long run before
each stop draw new ones, and no test opts out of that by its own @settings."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO, hypothesis_profile

# what a test's own @settings may change; the profile decides the rest (derandomize, database).
# Suppressing health checks changes which failures are reported, not which cases are drawn.
ALLOWED = {"max_examples", "deadline", "suppress_health_check"}


@pytest.mark.parametrize(
    ("env", "profile"),
    [
        ({}, "dev"),
        ({"CI": "true"}, "ci"),
        ({"CI": "1"}, "ci"),
        ({"CI": "false"}, "dev"),
        ({"CI": ""}, "dev"),
        ({"CI": "true", "HYPOTHESIS_PROFILE": "long"}, "long"),
        ({"HYPOTHESIS_PROFILE": "ci"}, "ci"),
    ],
)
def test_the_profile_follows_the_environment(env, profile):
    assert hypothesis_profile(env) == profile


def _draws(profile: str) -> list[int]:
    seen: list[int] = []

    # a fresh function each time: hypothesis derandomises by the test's name and body
    @settings(settings.get_profile(profile), max_examples=30, database=None)
    @given(st.integers(0, 2**40))
    def probe(v: int) -> None:
        seen.append(v)

    probe()
    return seen


def test_ci_draws_the_same_varied_cases_every_run_and_dev_new_ones():
    first, again = _draws("ci"), _draws("ci")
    assert first == again
    assert len(set(first)) >= 20  # a fixed seed, still many distinct cases
    assert not settings.get_profile("ci").database  # nothing replayed from a local database
    assert _draws("dev") != _draws("dev")
    assert not settings.get_profile("long").derandomize
    assert settings.get_profile("long").max_examples > settings.get_profile("ci").max_examples


def _settings_keywords() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted((REPO / "tests").glob("*.py")):
        if path.name in ("conftest.py", "test_hypothesis_profiles.py"):  # the profiles' own
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "settings":
                found += [(path.name, node.lineno, kw.arg or "**") for kw in node.keywords]
    return found


def test_no_test_overrides_the_profiles_randomness():
    """A test's @settings(derandomize=False) or its own database would make CI's run random
    again (or a developer's run repeat itself); only the example count may vary per test."""
    found = _settings_keywords()
    assert any(kw == "max_examples" for _, _, kw in found)  # the scan sees the decorators
    bad = [f"{name}:{line} {kw}=" for name, line, kw in found if kw not in ALLOWED]
    assert not bad, bad
