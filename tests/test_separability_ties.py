"""Separability (paper A, Eq. 10–11) on repeated tokens with tied weights, both paths.

Layer 0 of a model gives bit-identical vectors for a repeated token, and its weights may tie
the top weight exactly, within one ulp, or nearly: then the ball radius r of a row is 0 or
tiny, and its sign was decided by float32 rounding of ||x||² on the torch path (the one CUDA
takes), so rows with r = 0 came out NaN while still valid (issue 54: ``row_mean`` stopped
``reproduce limitations`` on an H100). Every valid row must be finite-or-defined, never NaN,
on both paths, and the two paths must agree.
"""

from __future__ import annotations

import math
import os

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from attnlimits import theory
from attnlimits.metrics import separability_curve, separability_metrics
from attnlimits.metrics._rows import row_mean
from attnlimits.metrics._topn import selection_csr
from attnlimits.theory.geometry import separability_bounds
from separability_reference import count_range

TIES = ["exact", "ulp", "1e-4"]


def _tied(seed: int, q: int, k: int, d: int, tie: str, layout: str, dtype: torch.dtype):
    """Maps [head, Q, K] whose top key 0 has a bitwise copy, key 1, weighted ``tie`` below it;
    keys 2 and 3 a second such pair lower down. x on the unit sphere, [head or 1, K, d]."""
    g = torch.Generator().manual_seed(seed)
    heads = 2 if layout == "per_head" else 1
    x = F.normalize(torch.randn(heads, k, d, generator=g, dtype=torch.float64), dim=-1)
    x = x.to(dtype)
    x[:, 1] = x[:, 0]
    if k >= 5:
        x[:, 3] = x[:, 2]
    w = torch.rand(2, q, k, generator=g, dtype=torch.float64) * 0.4
    w[..., 0] = 1.0
    if k >= 5:
        w[..., 2] = 0.6
    w = (w / w.sum(-1, keepdim=True)).to(dtype)
    for top, dup in ((0, 1), (2, 3)) if k >= 5 else ((0, 1),):
        a = w[..., top]
        w[..., dup] = {
            "exact": a,
            "ulp": torch.nextafter(a, torch.zeros_like(a)),
            "1e-4": a * (1 - 1e-4),
        }[tie]
    return w, x


def _run(fn, fused: bool):
    before = os.environ.get("ATTNLIMITS_FUSED")
    os.environ["ATTNLIMITS_FUSED"] = "1" if fused else "0"
    try:
        return fn()
    finally:
        if before is None:
            os.environ.pop("ATTNLIMITS_FUSED", None)
        else:
            os.environ["ATTNLIMITS_FUSED"] = before


def _no_nan_where_valid(m) -> None:
    for name in ("ratio", "lower", "upper", "r"):
        values = getattr(m, name)
        assert not bool((torch.isnan(values) & m.valid).any()), name
        row_mean(values, m.valid)  # what stopped the H100 run


@pytest.mark.parametrize("fused", [False, True], ids=["torch", "fused"])
def test_duplicated_key_exact_tie_is_never_nan(fused):
    """The issue's case, N = 1, d = 64: the repeated top token ties exactly. r = 0 in exact
    arithmetic; the row keeps its values (N_s/N = 1, the lower bound's limit 1)."""
    if fused:
        pytest.importorskip("numba")
    for seed in range(20):
        attn, x = _tied(seed, 1, 16, 64, "exact", "shared", torch.float32)
        m = _run(lambda attn=attn, x=x: separability_metrics(attn, x, 1), fused)
        assert bool(m.valid.all())
        _no_nan_where_valid(m)
        assert m.ratio.eq(1).all() and m.lower.eq(1).all()


@given(
    seed=st.integers(0, 2**31 - 1),
    q=st.integers(1, 4),
    k=st.integers(3, 12),
    d=st.sampled_from([2, 3, 8, 64]),
    tie=st.sampled_from(TIES),
    layout=st.sampled_from(["shared", "per_head"]),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    data=st.data(),
)
def test_tied_duplicates_agree_across_paths(seed, q, k, d, tie, layout, dtype, data):
    pytest.importorskip("numba")
    attn, x = _tied(seed, q, k, d, tie, layout, dtype)
    ns = sorted(data.draw(st.sets(st.integers(1, k - 1), min_size=1)))
    fused = _run(lambda: separability_curve(attn, x, ns), True)
    ref = _run(lambda: separability_curve(attn, x, ns), False)
    for m in (fused, ref):
        _no_nan_where_valid(m)
    assert torch.equal(fused.valid, ref.valid)
    # N_s by the naive float64 count; where a tied duplicate puts an inside distance exactly
    # on r (keys 2 and 3 at N = 3), rounding may count it in or out, in either path
    lo, hi = count_range(attn, x, None, ns)
    n = torch.tensor(ns, dtype=torch.float64)
    for m in (fused, ref):
        count = (m.ratio.double() * n).round()
        assert bool(((count >= lo) & (count <= hi))[m.valid].all())
    sure = (lo == hi) & fused.valid
    torch.testing.assert_close(fused.ratio[sure], ref.ratio[sure], rtol=0, atol=0)
    # r from ||α_j x_j||² − 2α_j⟨x_j, s⟩ + ||s||² in float64: √(ε₆₄)·||s|| where it cancels
    torch.testing.assert_close(fused.r.double(), ref.r.double(), rtol=2e-5, atol=1e-7)
    at_one = torch.tensor(ns) == 1  # N = 1: ξ = 0, lower = 1 for every r ≥ 0
    assert fused.lower[..., at_one].eq(1).all() and ref.lower[..., at_one].eq(1).all()
    finite = torch.isfinite(fused.lower) & torch.isfinite(ref.lower)
    assert torch.equal(torch.isfinite(fused.lower), torch.isfinite(ref.lower))
    torch.testing.assert_close(
        fused.lower[finite], ref.lower[finite], rtol=1e-4, atol=1e-4, equal_nan=True
    )
    torch.testing.assert_close(fused.upper, ref.upper, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_selection_csr_passes_torch_invariant_check():
    """cuSPARSE documents sorted, distinct column indices per CSR row; the selection matrix
    of the Gram route is built in weight order, so it must sort them (torch's own check)."""
    g = torch.Generator().manual_seed(0)
    attn = torch.rand(7, 10, generator=g, dtype=torch.float64)
    attn[:, 3] = attn[:, 4]  # ties: a stable order
    order = attn.argsort(dim=-1, descending=True, stable=True)
    for lo, hi in ((0, 1), (0, 4), (2, 7), (0, 10)):
        sel = selection_csr(attn, order[:, lo:hi])
        torch.sparse_csr_tensor(
            sel.crow_indices(), sel.col_indices(), sel.values(), sel.shape, check_invariants=True
        )
        idx = order[:, lo:hi]
        want = torch.zeros_like(attn).scatter_(-1, idx, attn.gather(-1, idx))
        torch.testing.assert_close(sel.to_dense(), want, rtol=0, atol=0)
    # the layout it replaced (columns in weight order) is what torch's check refuses
    idx = order[:, :4]
    with pytest.raises(RuntimeError, match="sorted"):
        torch.sparse_csr_tensor(
            torch.arange(0, 7 * 4 + 1, 4),
            idx.reshape(-1),
            attn.gather(-1, idx).reshape(-1),
            attn.shape,
            check_invariants=True,
        )


def test_zero_radius_takes_the_limit_and_keeps_gradients_finite():
    """r = 0 (measured): the lower bound's limit r → 0⁺ of 1 − Σξ_i/(rN), 1 where Σξ = 0
    (N = 1) and −inf otherwise; the upper bound its formula at r = 0; no NaN in either, nor in
    the gradients (the double where keeps 0/0 out of them)."""
    one = torch.tensor([[0.7]], dtype=torch.float64, requires_grad=True)
    two = torch.tensor([[0.5, 0.3]], dtype=torch.float64, requires_grad=True)
    r = torch.zeros(1, dtype=torch.float64)
    lower1, upper1 = separability_bounds(one, r, 1.0, 0.5, check=False)
    assert lower1.tolist() == [1.0] and upper1.tolist() == [1.0]
    lower2, upper2 = separability_bounds(two, r, 1.0, 0.5, check=False)
    assert lower2.tolist() == [-math.inf]
    xi_ = theory.xi(two.detach(), 1.0, 0.5)
    torch.testing.assert_close(upper2, torch.exp(-(xi_**2) / 16).mean(-1))
    # continuous at N = 1: a tiny positive r gives the same values
    tiny = torch.full((1,), 1e-300, dtype=torch.float64)
    assert separability_bounds(one, tiny, 1.0, 0.5, check=False)[0].tolist() == [1.0]
    (lower1.sum() + upper1.sum() + upper2.sum()).backward()
    assert torch.isfinite(one.grad).all() and torch.isfinite(two.grad).all()
    with pytest.raises(ValueError, match="r"):  # the public check still wants r > 0
        separability_bounds(one.detach(), r, 1.0, 0.5)
