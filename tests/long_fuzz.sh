#!/usr/bin/env bash
# The property tests (every @given) with many new random cases, in one process: run it before
# each stop. CI draws the same cases every run (the `ci` profile, tests/conftest.py), so new
# cases come from here; a failure prints its case and a @reproduce_failure blob, and is saved in
# .hypothesis/ so the next plain pytest run replays it first. Keep the case as an @example.
#
#   tests/long_fuzz.sh [EXAMPLES] [pytest arguments]    # EXAMPLES per test, default 1000
#
# 1000 examples: about 2.5 minutes, 3000: about 7 (docs/conventions.md, "Tests and CI"). Tests
# that set their own max_examples (the slow ones) keep it.
set -euo pipefail
cd "$(dirname "$0")/.."
examples="${1:-1000}"
shift || true
export HYPOTHESIS_PROFILE=long ATTNLIMITS_LONG_EXAMPLES="$examples"
exec python -m pytest -p no:cacheprovider -q -m "hypothesis and not slow" "$@"
