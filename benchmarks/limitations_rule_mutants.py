"""Do the verdict tests catch a changed threshold? Mutants of paper A's verdict rules.

    python benchmarks/limitations_rule_mutants.py

Two sets of mutants, each run in this process against the tests of
``tests/test_limitations_claims.py`` that need no run (the known-answer table of every rule and
the claims judged on synthetic tables):

- every numeric threshold of ``experiments/limitations/rules.py`` moved by 2 % (0 → 0.01), and
  every comparison of its functions flipped (``<`` ↔ ``<=``, ``>`` ↔ ``>=``);
- the readings in ``findings.py`` at which each sub-claim is judged (T < 0.1, the drop from
  T = 0.1 to T = 1, N ≈ 16, N = 20, p ≥ α, the bound's rounding slack, |E / d̃ − 1|), each
  moved once.

A mutant is killed when some test fails. Prints one line per mutant and the survivors; exits 1
if any survives. The module is patched in place (its functions read their thresholds at call
time), so nothing on disk changes.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))

import test_limitations_claims as T
from attnlimits.experiments.limitations import findings, rules

claims_module = sys.modules["attnlimits.experiments.limitations.claims"]
NEEDS_A_RUN = (
    "doc_numbers",
    "extension",
    "ks_",
    "head_draws",
    "figure4",
    "alg3_grid",
    "critical_n_table",
)
FINDINGS = [
    ("low = top[top.index < 0.1]", "low = top[top.index <= 0.1]"),
    ("low = top[top.index < 0.1]", "low = top[top.index < 0.3]"),
    ("top.index[top.index >= 1]", "top.index[top.index >= 0.3]"),
    ("top.index[top.index <= 0.1]", "top.index[top.index <= 0.03]"),
    ("key=lambda n: (abs(n - 16), -n)", "key=lambda n: (abs(n - 32), -n)"),
    ("above_one = [n for n in ns if n > 1]", "above_one = [n for n in ns if n >= 1]"),
    ('(ph["N"] > 1)]', '(ph["N"] >= 1)]'),
    ("n_from = 20 if 20 in ns", "n_from = 10 if 10 in ns"),
    ('passed = sub[sub["p_value"] >= alpha]', 'passed = sub[sub["p_value"] > alpha]'),
    ('ph["distance"] * (1 - 1e-6)', 'ph["distance"] * (1 + 1e-2)'),
    ("tail = med[med.index >= (n16 or math.inf)]", "tail = med[med.index > (n16 or math.inf)]"),
    ('(mean[form] / mean["distance"] - 1).abs()', '(mean[form] / mean["distance"] - 0.9).abs()'),
]


def rule_mutants(source: str) -> list[tuple[str, str]]:
    """(label, mutated source) for each threshold and comparison of rules.py."""
    lines = source.splitlines(keepends=True)
    out, in_doc = [], False
    for i, line in enumerate(lines):
        code = line.split("#")[0]
        if code.count('"""') == 1:
            in_doc = not in_doc
            continue
        if in_doc or '"""' in code or not code.strip():
            continue
        edits = []
        if re.match(r"^[A-Z_][A-Z_, ]* = ", code) and "REPRODUCED" not in code:
            for m in re.finditer(r"(?<![\w.])(\d+\.?\d*)(?![\w.])", code):
                value = float(m.group(1))
                edits.append((m, repr(value * 1.02 if value else 0.01)))
        elif not code.lstrip().startswith(("def ", "from ", "import ")):
            flip = {"<=": "<", ">=": ">", "<": "<=", ">": ">="}
            for m in re.finditer(r"<=|>=|(?<![<>=-])<(?![=<])|(?<![<>=-])>(?![=>])", code):
                edits.append((m, flip[m.group(0)]))
        for m, new in edits:
            mutated = lines.copy()
            mutated[i] = line[: m.start()] + new + line[m.end() :]
            out.append((f"rules.py:{i + 1} {m.group(0)} -> {new}", "".join(mutated)))
    return out


def install(module: ModuleType, pristine: dict, source: str, path: str) -> None:
    """``module`` rebuilt from ``source``; the names claims.py and the tests imported from it
    rebound to the new functions."""
    module.__dict__.clear()
    module.__dict__.update(pristine)
    exec(compile(source, path, "exec"), module.__dict__)
    for user in (claims_module, T):
        for name, value in list(vars(user).items()):
            if callable(value) and getattr(value, "__module__", None) == module.__name__:
                setattr(user, name, module.__dict__.get(name, value))


def failures(tests: list[Callable[[], None]]) -> list[str]:
    failed = []
    for rule, args, want in T.CASES:
        if getattr(rules, rule.__name__)(*args) != want:
            failed.append(f"{rule.__name__}{args}")
    if failed:
        return failed
    for test in tests:
        try:
            test()
        except Exception:  # any failure kills the mutant
            failed.append(test.__name__)
    return failed


def main() -> int:
    tests = [
        f
        for n, f in vars(T).items()
        if n.startswith("test_")
        and not inspect.signature(f).parameters
        and not any(k in n for k in NEEDS_A_RUN)
    ]
    survived = []
    for module, make in ((rules, rule_mutants), (findings, None)):
        path = inspect.getsourcefile(module)
        assert path is not None
        source, pristine = Path(path).read_text(encoding="utf-8"), dict(module.__dict__)
        if make is None:
            mutants = [(f"findings.py {o} -> {n}", source.replace(o, n, 1)) for o, n in FINDINGS]
        else:
            mutants = make(source)
        assert not failures(tests), "the tests fail without a mutant"
        for label, mutated in mutants:
            if mutated == source:
                raise SystemExit(f"{label}: not found in {path}")
            install(module, pristine, mutated, path)
            failed = failures(tests)
            print(("killed  " if failed else "SURVIVED"), label, failed[:1], flush=True)
            if not failed:
                survived.append(label)
        install(module, pristine, source, path)
    print(f"{len(survived)} survived" + (": " + "; ".join(survived) if survived else ""))
    return 1 if survived else 0


if __name__ == "__main__":
    raise SystemExit(main())
