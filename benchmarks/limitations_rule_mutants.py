"""Do the verdict tests catch a changed rule? Mutants of paper A's verdict rules, the readings
its statements are judged at, and the shared rule that joins them.

    python benchmarks/limitations_rule_mutants.py

Four sets of mutants, each run in this process against the tests that need no run (the
known-answer tables of every rule and of the finding rule, and the claims judged on synthetic
tables, in ``tests/test_limitations_rules.py``, ``test_limitations_findings.py``,
``test_limitations_readings.py`` and ``tests/test_verdicts.py``; Alg. 3's grid and KS table,
``test_limitations_critical.py``, and the quotes and docs, ``test_limitations_doc.py``, need a
run, the papers' text or a tmp_path, and judge no rule):

- every numeric threshold of ``experiments/limitations/rules.py`` and of the readings it shares
  with the scan (``experiments/paper_a_readings.py``) moved by 2 % (0 → 0.01), and every
  comparison of their functions flipped (``<`` ↔ ``<=``, ``>`` ↔ ``>=``);
- the readings in ``findings.py`` at which each statement is judged (T < 0.1, the drop from
  T = 0.01 to T = 1, the T > ε an ε is judged over and how many it needs, the T ≥ 1 with some
  ε ≥ T, 0.1 ≤ T ≤ 1 for "tracks", the grid's resolution of 0.06·L and of its floor, the grid's
  last N, N ≈ 16, N = 20, N ≈ 0.25·L, p ≥ α, the lower bound > 0, N = 1 for Theorem 2, the
  bound's rounding slack), how it aggregates (median or mean over heads, maximum or minimum
  over heads), the N a change is measured from, the signs of slopes, the censoring of lengths
  that never accept, and "not testable";
- the combine rule of ``claims/verdicts.py`` (any not reproduced → not reproduced, not
  testable left out, headlines alone decide, agreement counted against the pooled verdict);
- pooled against windows in ``claims.py`` (the windows joined into the verdict, as before
  issue 40).

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

import test_limitations_findings
import test_limitations_readings
import test_limitations_rules as T
import test_verdicts as TV
from attnlimits.claims import verdicts
from attnlimits.experiments import paper_a_readings
from attnlimits.experiments.limitations import corollary2, findings, rules

claims_module = sys.modules["attnlimits.experiments.limitations.claims"]
#: the test modules whose tests the mutants run (none needs a run, the papers or a tmp_path)
TEST_MODULES = (T, test_limitations_findings, test_limitations_readings, TV)
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
    # aggregation over heads, and which end of the heads
    ('med = ph.groupby("N")["ratio"].median()', 'med = ph.groupby("N")["ratio"].mean()'),
    # the N a change is measured from, and the N a statement is judged at
    ("ratio.loc[n_hi] / ratio.loc[n_from]", "ratio.loc[n_hi] / ratio.loc[n_lo]"),
    ("first = above_one[0] if above_one", "first = ns[0] if above_one"),
    ("n_at = 100 if 100 in mean.index else n_hi", "n_at = 20 if 20 in mean.index else n_hi"),
    ("rules.converges,\n            r_lo,\n            r_hi,",
     "rules.converges,\n            r,\n            r,"),  # the point, not its interval
    # the signs of slopes
    ('slope_d = _slope(mean.index, mean["distance"])',
     'slope_d = -_slope(mean.index, mean["distance"])'),
    ("math.nan if f else _slope_over(d)", "math.nan if f else -_slope_over(d)"),
    ("w = (x - x.mean()) / ((x - x.mean()) ** 2).sum()",
     "w = (x.mean() - x) / ((x - x.mean()) ** 2).sum()"),
    # censoring: a length that never accepts dropped (the old reading), or at its lower end only
    ("ok = crit[~blind]", "ok = crit[~blind & found.to_numpy(dtype=bool)]"),
    ('np.where(censored, ok["L"], known)', 'np.where(censored, ok["n_max"], known)'),
    ("float(np.where(w > 0, lo, hi) @ w)", "float(np.where(w > 0, hi, lo) @ w)"),
    # "not testable": where KS accepts at the smallest N; where no head has δ > 0
    ('blind = (found & (crit["critical_n"] == n_min))',
     'blind = (found & (crit["critical_n"] < n_min))'),
    ('no_delta = "" if len(bounds) else', 'no_delta = "" if True else'),
    # (v.a): an ε held by g's ceiling √2/ε is left out; (v.c): the drop counted from T = 0.01
    ("deriv = [low[low.index > e][e] for e in top.columns]",
     "deriv = [low[e] for e in top.columns]"),
    ("abs(math.log10(t) + 2)", "abs(math.log10(t) + 1)"),
    # "collapse": the spread over ε, at T ≥ 1
    ("(high.max(axis=1) / high.min(axis=1))", "(high.max(axis=0) / high.min(axis=0))"),
    # issue 56: (v.a) needs MIN_T temperatures per ε; (v.c)'s reading (c) across T ≥ 1; (iii.b)
    # at the grid's resolution; (iv.g) the maximum over heads; (v.e) the largest ratio below
    # T = 0.1; (v.f) saturation over the lowest decade; (v.g) from the smallest T; (ii.d) against
    # the peak over N
    ("few = [len(d) < rules.MIN_T.value for d in deriv]", "few = [len(d) < 2 for d in deriv]"),
    ("(top.loc[t_from, below] / top.loc[t_to, below]).min())",
     "(top.loc[t_from, below] / top.loc[t_to, below]).max())"),
    ("below = [e for e in top.columns if e < t_from]",
     "below = [e for e in top.columns if e <= t_from]"),  # (v.c): ε ≥ T left out
    ('if "limit_lo" in ok:', "if False:"),
    ('ph.loc[ph["N"] >= (n16 or math.inf), "ratio"].max()',
     'ph.loc[ph["N"] >= (n16 or math.inf), "ratio"].median()'),
    ("float(near.max()) if len(near)", "float(near.min()) if len(near)"),
    ("envelope.index <= 10 * envelope.index.min()", "envelope.index <= 0.1"),
    ("exact.iloc[0] / exact.loc[t01]", "exact.iloc[-1] / exact.loc[t01]"),
    # round 4: (v.d) judged where some ε ≥ T; (v.f)'s "tracks" over 0.1 ≤ T ≤ 1; (iii.a) the
    # grid's last N shows no critical N; (iii.b)'s floor at the grid's resolution; (iv.e) where
    # the lower bound is > 0; (iv.f) at N = 1 too
    ("open_t = [t for t in t_hi if top.columns.max() >= t]", "open_t = list(t_hi)"),
    ("open_t = [t for t in t_hi if top.columns.max() >= t]",
     "open_t = [t for t in t_hi if top.columns.max() > t]"),
    ("(envelope.index >= 0.1) & (envelope.index <= 1)", "(envelope.index >= 0.1)"),
    ('edge = (found & (crit["critical_n"] == crit["n_max"]))',
     'edge = (found & (crit["critical_n"] < 0))'),
    ('out["limit_floor"] = [floors[int(n)] for n in out.index]',
     'out["limit_floor"] = [0.0 for n in out.index]'),
    ('informative = bounds[bounds["lower"] > 0]', "informative = bounds"),
    ('every = ph[ph["assumption2"]]', 'every = ph[ph["assumption2"] & (ph["N"] > 1)]'),
]  # fmt: skip
COROLLARY2 = [  # (ii.d) at the largest N, (ii.e) at N ≈ 0.25·L, each against the peak over N
    ("mean.iloc[-1] / mean.max()", "mean.iloc[-1] / mean.iloc[0]"),
    ("float(dist.loc[n] / dist.max())", "float(dist.loc[n] / dist.iloc[0])"),
    ("near(rules.PROPORTIONAL.value)", "near(0.9)"),
    ('at = grid[grid["L"] == grid["L"].max()]', 'at = grid[grid["L"] == grid["L"].min()]'),
]  # fmt: skip
VERDICTS = [  # the combine rule and agreement (claims/verdicts.py)
    ("    if NOT in judged:\n        return NOT\n", ""),  # the old rule: [R, N] -> partly
    ("judged = [v for v in given if v not in (NOT_TESTABLE, NA)]",
     "judged = [v for v in given if v not in (NA,)]"),
    ("return NOT_TESTABLE if NOT_TESTABLE in given else NA", "return NA"),
    ("all(v == REPRODUCED for v in judged)", "any(v == REPRODUCED for v in judged)"),
    ('heads = [r for r in rows if r["role"] == HEADLINE]',
     'heads = [r for r in rows if r["role"] != CHECK]'),  # supporting ones decide too
    ("same = sum(v == pooled for v in parts)", "same = sum(v == REPRODUCED for v in parts)"),
]  # fmt: skip
CLAIMS = [  # pooled against windows (claims.py): the old rule joined the windows into the verdict
    ('        row["windows"] = verdicts.agreement(row["verdict"], [w[i]["verdict"] for w in per])',
     '        row["windows"] = verdicts.agreement(row["verdict"], [w[i]["verdict"] for w in per])\n'
     '        vs = [row["verdict"], *[w[i]["verdict"] for w in per]]\n'
     '        row["verdict"] = rules.share([v == rules.REPRODUCED for v in vs])'),
]  # fmt: skip


#: A string literal on one line: masked (same length) before numbers and comparisons are sought,
#: so that a threshold's reason ("within 0.3 of 1") is not mutated as if it were code.
_STRINGS = re.compile(r"\"[^\"]*\"|'[^']*'")


def rule_mutants(source: str, name: str) -> list[tuple[str, str]]:
    """(label, mutated source) for each threshold and comparison of the rules' file ``name``."""
    lines = source.splitlines(keepends=True)
    out, in_doc = [], False
    for i, line in enumerate(lines):
        code = _STRINGS.sub(lambda m: " " * len(m.group(0)), line.split("#")[0])
        if code.count('"""') == 1:
            in_doc = not in_doc
            continue
        if in_doc or '"""' in code or not code.strip():
            continue
        edits = []
        if re.match(r"^[A-Z_][A-Z_, ]* = ", code) and "REPRODUCED" not in code:
            for m in re.finditer(r"(?<![\w.])(\d+\.?\d*)(?![\w.])", code):
                if code[: m.start()].endswith("point="):
                    continue  # the referee's point a threshold answers: a label, not a value
                value = float(m.group(1))
                edits.append((m, repr(value * 1.02 if value else 0.01)))
        elif not code.lstrip().startswith(("def ", "from ", "import ")):
            flip = {"<=": "<", ">=": ">", "<": "<=", ">": ">="}
            for m in re.finditer(r"<=|>=|(?<![<>=-])<(?![=<])|(?<![<>=-])>(?![=>])", code):
                edits.append((m, flip[m.group(0)]))
        for m, new in edits:
            mutated = lines.copy()
            mutated[i] = line[: m.start()] + new + line[m.end() :]
            out.append((f"{name}:{i + 1} {m.group(0)} -> {new}", "".join(mutated)))
    return out


def install(module: ModuleType, pristine: dict, source: str, path: str) -> None:
    """``module`` rebuilt from ``source``; the names claims.py, rules.py and the tests imported
    from it rebound to the new functions and thresholds."""
    before = dict(module.__dict__)
    module.__dict__.clear()
    module.__dict__.update(pristine)
    exec(compile(source, path, "exec"), module.__dict__)
    for user in (claims_module, rules, *TEST_MODULES):
        if user is module:
            continue
        for name, value in list(vars(user).items()):
            ours = callable(value) and getattr(value, "__module__", None) == module.__name__
            # a name imported from the module: a threshold, a declared rule (rules' BAND_LO,
            # about_fraction), a constant
            shared = before.get(name) is value and not isinstance(value, ModuleType)
            if ours or shared:
                setattr(user, name, module.__dict__.get(name, value))


def failures(tests: list[Callable[[], None]]) -> list[str]:
    failed = []
    for rule, args, want in T.CASES:
        if getattr(rules, rule.__name__)(*args) != want:
            failed.append(f"{rule.__name__}{args}")
    for heads, want in TV.COMBINE:
        if verdicts.combine(heads) != want:
            failed.append(f"combine{heads}")
    for pooled, parts, want in TV.AGREE:
        if verdicts.agreement(pooled, parts) != want:
            failed.append(f"agreement{pooled, parts}")
    if failed:
        return failed
    for test in tests:
        try:
            test()
        except Exception:  # any failure kills the mutant: the first is enough
            failed.append(test.__name__)
            break
    return failed


def main() -> int:
    tests = [
        f
        for m in TEST_MODULES
        for n, f in vars(m).items()
        if n.startswith("test_") and not inspect.signature(f).parameters
    ]
    survived = []
    sets = (
        (rules, None),
        (paper_a_readings, None),
        (findings, FINDINGS),
        (corollary2, COROLLARY2),
        (verdicts, VERDICTS),
        (claims_module, CLAIMS),
    )
    for module, edits in sets:
        path = inspect.getsourcefile(module)
        assert path is not None
        source, pristine = Path(path).read_text(encoding="utf-8"), dict(module.__dict__)
        if edits is None:
            mutants = rule_mutants(source, Path(path).name)
        else:
            name = Path(path).name
            mutants = [(f"{name} {o.strip()} -> {n.strip()}", source.replace(o, n, 1))
                       for o, n in edits]  # fmt: skip
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
