"""Gradient fuzz, beside the API fuzz (tests/test_api_fuzz.py): every public function of
``normalizers``, ``metrics`` and ``theory`` (the same automatic enumeration and argument roles)
called with good float64 arguments whose float tensors require grad.

Rule (issue 43, class 8): where the forward is finite, the gradient is finite. The fuzz keeps
the finite entries of every differentiable result, backpropagates their sum (what a user does
with ``out[valid].sum()``) and checks that every input gradient is finite or None and that
backward raises nothing (e.g. "modified by an inplace operation"). The usual causes it catches:
``torch.where`` over a NaN/inf branch (the gradient 0 times inf is NaN), sqrt or log at 0, and
in-place ops on tensors autograd saved.

Worlds are float64 with moderate values (logits up to ±1e3 and -inf, vectors up to 30), masks
none, random, broadcast or causal, so that rows with fewer kept keys than N and fully masked
rows come up often. Examples per function: ATTNLIMITS_GRAD_FUZZ_EXAMPLES (12 by default).
"""

from __future__ import annotations

import math
import os
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api_fuzz_calls import FIRST, FUNCTIONS, call, leaves
from api_fuzz_roles import World
from api_fuzz_specs import spec_of
from attnlimits import metrics, theory

EXAMPLES = int(os.environ.get("ATTNLIMITS_GRAD_FUZZ_EXAMPLES", "12"))


class GradWorld(World):
    """A float64 world whose "extreme" logits are ±1e3 (not the dtype's max: a gradient of a
    value near 1.8e308 may rightly overflow)."""

    @property
    def big(self) -> float:
        return 1e3


@st.composite
def grad_worlds(draw: st.DrawFn) -> GradWorld:
    return GradWorld(
        h=draw(st.integers(1, 3)),
        q=draw(st.integers(1, 5)),
        k=draw(st.integers(2, 6)),
        d=draw(st.integers(1, 3)),
        dtype=torch.float64,
        seed=draw(st.integers(0, 2**16)),
        scale=draw(st.sampled_from((1.0, 1e-3, 30.0))),
        extreme=draw(st.booleans()),
        mask_p=draw(st.sampled_from((0.0, 0.3, 0.7, 0.9))),
    )


def _causal(mask: Any) -> Any:
    """A causal keep-mask of ``mask``'s shape (query i keeps keys 0..i), or ``mask`` itself
    where it is not a [..., Q, K] boolean tensor."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.ndim < 2:
        return mask
    q, k = mask.shape[-2:]
    return torch.ones(q, k, dtype=torch.bool).tril().expand(mask.shape).clone()


def _with_grad(value: Any) -> Any:
    """A float tensor as a float64 leaf that requires grad; anything else as it is."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.detach().to(torch.float64).clone().requires_grad_(True)
    return value


def _differentiable(out: Any) -> list[tuple[str, torch.Tensor]]:
    return [
        (path, leaf)
        for path, leaf, _ in leaves(out)
        if isinstance(leaf, torch.Tensor) and leaf.requires_grad and leaf.is_floating_point()
    ]


@pytest.mark.parametrize("qualname", sorted(FUNCTIONS))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_finite_forward_has_finite_gradients(qualname: str, data: st.DataObject) -> None:
    fn = FUNCTIONS[qualname]
    _, roles = spec_of(qualname, fn)
    w = data.draw(grad_worlds(), label="world")
    args = {name: role.good(data.draw, w) for name, role in roles.items()}
    if "mask" in args and data.draw(st.booleans(), label="causal"):
        args["mask"] = _causal(args["mask"])
    args = {k: _with_grad(v) for k, v in args.items()}
    inputs = {k: v for k, v in args.items() if isinstance(v, torch.Tensor) and v.requires_grad}
    if not inputs:
        return  # no float tensor argument: nothing to differentiate
    out = call(qualname, fn, args, FIRST)
    outputs = _differentiable(out)
    if not outputs:
        return  # a count, a choice or a detached result: no gradient to check
    total = sum(
        (torch.where(torch.isfinite(t), t, 0.0).sum() for _, t in outputs),
        start=torch.zeros((), dtype=torch.float64),
    )
    grads = torch.autograd.grad(total, list(inputs.values()), allow_unused=True)
    for name, g in zip(inputs, grads, strict=True):
        if g is None:
            continue
        bad = ~torch.isfinite(g)
        assert not bad.any(), (
            f"{qualname}: {int(bad.sum())} non-finite entries in the gradient of {name!r} "
            f"(finite outputs {[p or '.' for p, _ in outputs]}): {g}"
        )


def _causal_case(
    n: int = 16, d: int = 5, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Causal weights [n, n] and vectors [n, d] in float64, both requiring grad (issue 43)."""
    g = torch.Generator().manual_seed(seed)
    keep = torch.ones(n, n, dtype=torch.bool).tril()
    scores = torch.randn(n, n, generator=g, dtype=torch.float64).masked_fill(~keep, -math.inf)
    attn = torch.softmax(scores, -1).requires_grad_(True)
    x = torch.randn(n, d, generator=g, dtype=torch.float64).requires_grad_(True)
    return attn, x, keep


def _issue_instance(name: str) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
    attn, x, keep = _causal_case()
    if name == "expected_distance":
        return theory.expected_distance(attn, x, 1, mask=keep), (attn, x)
    if name == "jensen_gap_bound":
        return theory.jensen_gap_bound(attn, x, 1, mask=keep), (attn, x)
    got = metrics.distance_metrics(attn, x, 2, mask=keep)
    return getattr(got, name.split(".")[1]), (attn, x)


@pytest.mark.parametrize(
    "name",
    [
        "expected_distance",
        "jensen_gap_bound",
        "distance_metrics.expected",
        "distance_metrics.distance",
        "distance_metrics.bound",
        "distance_metrics.gap_bound",
    ],
)
def test_issue_instances_have_finite_gradients(name: str) -> None:
    """The instances of issue 43: finite outputs under a causal mask (the first rows have
    L <= N) whose gradients were NaN, or whose backward raised "modified by an inplace
    operation"."""
    out, inputs = _issue_instance(name)
    total = torch.where(torch.isfinite(out), out, 0.0).sum()
    assert torch.isfinite(total)
    for g in torch.autograd.grad(total, inputs, allow_unused=True):
        assert g is None or torch.isfinite(g).all(), (name, int((~torch.isfinite(g)).sum()))


def _small_causal() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _causal_case(6, 3, seed=1)


FORMULAS: dict[str, Any] = {
    "expected_distance/derived": lambda a, x, m: theory.expected_distance(a, x, 2, mask=m),
    "expected_distance/rms": lambda a, x, m: theory.expected_distance(a, x, 2, mask=m, form="rms"),
    "jensen_gap_bound/main_text": lambda a, x, m: theory.jensen_gap_bound(a, x, 2, mask=m),
    "jensen_gap_bound/sharp": lambda a, x, m: theory.jensen_gap_bound(
        a, x, 2, mask=m, form="sharp"
    ),
    "distance_metrics": lambda a, x, m: torch.stack(
        metrics.distance_metrics(a, x, 2, mask=m)[:4], -1
    ),
    "distance_curve": lambda a, x, m: metrics.distance_curve(a, x, [1, 2], mask=m).distance,
    "expected_distance_exact": lambda a, x, m: metrics.expected_distance_exact(a, x, 2, mask=m),
    "separability_metrics": lambda a, x, m: torch.stack(
        metrics.separability_metrics(a, x / x.norm(dim=-1, keepdim=True), 1, mask=m, delta=0.1)[
            1:4
        ],
        -1,
    ),
    "expected_distance_monte_carlo": lambda a, x, m: torch.stack(
        metrics.expected_distance_monte_carlo(
            a, x, 2, mask=m, samples=4, generator=torch.Generator().manual_seed(0)
        ),
        -1,
    ),
}


@pytest.mark.parametrize("name", sorted(FORMULAS))
def test_gradients_match_finite_differences(name: str) -> None:
    """Under a causal mask, the gradients of the rows with a value (L >= N + 1) are finite and
    agree with central differences (gradcheck): the guards change no gradient that exists."""
    attn, x, keep = _small_causal()
    fn = FORMULAS[name]
    rows = torch.isfinite(fn(attn, x, keep)).reshape(keep.shape[0], -1).all(-1)
    assert 0 < int(rows.sum()) < keep.shape[0]  # some rows without a value, some with
    assert torch.autograd.gradcheck(lambda a, v: fn(a, v, keep)[rows], (attn, x))
