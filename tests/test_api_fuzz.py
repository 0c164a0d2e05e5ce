"""API fuzz: every public function of ``normalizers``, ``metrics`` and ``theory`` (their
``__all__`` and the normaliser registry, found automatically) called with drawn arguments.

Each call draws one *world* (sizes, dtype, value scale; tests/api_fuzz_roles.py) and every
argument from its role, then maybe replaces one argument by a careless value: another
container, dtype or device, a wrong shape, NaN or ±inf, an extreme or out-of-range number.
The only allowed outcomes (docs/conventions.md, "Errors"):

- a finite result (NaN only where the function documents a row it cannot score), and for the
  normalisers the contract of their registry entry (row sums, masked entries exactly 0);
- a ``ValueError`` or ``TypeError`` whose message names the replaced argument; arguments that
  were not replaced must not be refused.

Anything else (a raw IndexError, RuntimeError, ZeroDivisionError, ...) fails, and so does a
call that runs past :data:`LIMIT` seconds (a hang). A public function without an argument
strategy here fails :func:`test_every_public_function_has_a_strategy`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api_fuzz_calls import FIRST, FUNCTIONS, LIMIT, call, leaves
from api_fuzz_roles import Role, World, assert_normaliser_contract, worlds
from api_fuzz_specs import ALIASES, REGISTERED, SPECS, Spec, spec_of

#: Examples per function: 100 by default (about 45 s of CPU for all); raise it for a longer hunt,
#: e.g. ATTNLIMITS_API_FUZZ_EXAMPLES=1000 before a release.
EXAMPLES = int(os.environ.get("ATTNLIMITS_API_FUZZ_EXAMPLES", "100"))


# ------------------------------------------------------------------ the oracle


def names(message: str, param: str) -> bool:
    words = (param, *ALIASES.get(param, ()))
    return any(re.search(rf"(?<![A-Za-z_]){re.escape(w)}(?![A-Za-z_])", message) for w in words)


def _as_float64(args: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v
        for k, v in args.items()
    }


def overflowed(fn: Callable[..., Any], args: dict[str, Any], path: str, t: torch.Tensor) -> Any:
    """Where ``t`` (a leaf below float64) is ±inf because the exact answer is beyond its
    dtype's range: the same call in float64 gives a value that large there."""
    if t.dtype == torch.float64:
        return torch.zeros((), dtype=torch.bool)
    for p, leaf, _ in leaves(call("", fn, _as_float64(args), LIMIT)):
        if p == path and isinstance(leaf, torch.Tensor) and leaf.shape == t.shape:
            return torch.isinf(t) & (leaf.abs() > torch.finfo(t.dtype).max)
    return torch.zeros((), dtype=torch.bool)


def check_finite(
    qualname: str, spec: Spec, args: dict[str, Any], out: Any, fn: Callable[..., Any]
) -> None:
    for path, leaf, valid in leaves(out):
        if isinstance(leaf, (int, np.integer)):
            continue  # an int is finite (and may exceed int64)
        t = leaf if isinstance(leaf, torch.Tensor) else torch.as_tensor(leaf, dtype=torch.float64)
        if t.is_meta or not (t.is_floating_point() or t.is_complex()):
            continue
        bad = ~torch.isfinite(t)
        if valid is not None and valid.shape == t.shape[: valid.ndim]:
            bad = bad & valid.reshape(valid.shape + (1,) * (t.ndim - valid.ndim))
        if spec.nonfinite_ok is not None and bad.any():
            ok = torch.as_tensor(spec.nonfinite_ok(args, path, out))
            ok = ok.reshape(ok.shape + (1,) * (t.ndim - ok.ndim)) if ok.ndim < t.ndim else ok
            bad = bad & ~ok
        if bad.any() and torch.isinf(t[bad]).all():
            bad = bad & ~overflowed(fn, args, path, t)
        assert not bad.any(), f"{qualname}{path}: non-finite result {t}"


_SEEN: set[tuple[str, str]] = set()


@st.composite
def calls(draw: st.DrawFn, roles: dict[str, Role]) -> tuple[World, dict[str, Any], str | None]:
    w = draw(worlds())
    args = {name: role.good(draw, w) for name, role in roles.items()}
    abused = draw(st.sampled_from([None, *roles])) if roles else None
    if abused is not None:
        args[abused] = roles[abused].bad(draw, w, args[abused])
    return w, args, abused


@pytest.mark.parametrize("qualname", sorted(FUNCTIONS))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_public_function_answers_or_refuses_clearly(qualname: str, data: st.DataObject) -> None:
    fn = FUNCTIONS[qualname]
    spec, roles = spec_of(qualname, fn)
    w, args, abused = data.draw(calls(roles), label="world, args, abused")
    key = (qualname, str(w.dtype))
    limit = LIMIT if key in _SEEN else FIRST
    _SEEN.add(key)
    try:
        out = call(qualname, fn, args, limit)
    except (ValueError, TypeError) as err:
        message = str(err)
        assert abused is not None, f"{qualname} refused valid arguments: {message}"
        assert names(message, abused), f"{qualname}: {abused!r} replaced, message: {message}"
        return
    check_finite(qualname, spec, args, out, fn)
    if qualname in REGISTERED or qualname == "normalizers.general":
        name = REGISTERED.get(qualname, "softmax")  # general: F / Σ F sums to one too
        assert_normaliser_contract(name, args["scores"], args.get("mask"), out, args.get("dim", -1))
    if spec.check is not None:
        spec.check(args, out)


def test_every_public_function_has_a_strategy() -> None:
    """A new public function fails here until SPECS gives its arguments roles."""
    missing = []
    for qualname, fn in FUNCTIONS.items():
        try:
            spec_of(qualname, fn)
        except KeyError as err:
            missing.append(str(err))
    assert not missing, missing
    assert not set(SPECS) - set(FUNCTIONS), "SPECS names a function that is not public"
