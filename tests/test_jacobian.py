"""metrics.jacobian: exact softmax-Jacobian norm (secular equation) and Alg. 5 sensitivity."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnlimits.metrics.jacobian import (
    finite_difference_sensitivity,
    jacobian_top_eigenvalue,
    softmax_jacobian_matrix,
    softmax_jacobian_norm,
    softmax_jacobian_norms,
)

seeds = st.integers(0, 2**31 - 1)


def naive_norm(row: torch.Tensor, keep: torch.Tensor, t: float) -> float:
    """Per-row reference: dense Jacobian of the kept entries, eigvalsh."""
    alpha = torch.softmax(row[keep].double() / t, -1)
    return float(torch.linalg.eigvalsh(softmax_jacobian_matrix(alpha, t))[-1])


@given(
    rows=st.integers(1, 6),
    length=st.integers(1, 24),
    scale=st.floats(0.0, 30.0),
    t=st.floats(0.05, 5.0),
    p_keep=st.floats(0.3, 1.0),
    seed=seeds,
)
def test_exact_norm_matches_eigvalsh_on_masked_rows(rows, length, scale, t, p_keep, seed):
    g = torch.Generator().manual_seed(seed)
    scores = scale * torch.randn(rows, length, generator=g, dtype=torch.float64)
    if seed % 3 == 0:  # ties among the top logits
        scores = scores.round()
    mask = torch.rand(rows, length, generator=g) < p_keep
    mask[0] = True
    norms, valid = softmax_jacobian_norm(scores, t, mask=mask)
    for r in range(rows):
        if not mask[r].any():
            assert not valid[r] and math.isnan(float(norms[r]))
            continue
        assert valid[r]
        ref = naive_norm(scores[r], mask[r], t)
        assert float(norms[r]) == pytest.approx(ref, rel=1e-9, abs=1e-12 / t)
        assert float(norms[r]) <= 1 / (2 * t) * (1 + 1e-12)


def test_causal_mask_batched_heads():
    g = torch.Generator().manual_seed(0)
    b, h, q = 2, 3, 9
    scores = 4 * torch.randn(b, h, q, q, generator=g)
    causal = torch.ones(q, q, dtype=torch.bool).tril()
    norms, valid = softmax_jacobian_norm(scores, 0.5, mask=causal)
    assert norms.shape == (b, h, q) and norms.dtype == torch.float64 and bool(valid.all())
    assert bool((norms[..., 0] == 0).all())  # one kept key: α = (1), J = 0
    for i in range(b):
        for j in range(h):
            for k in range(q):
                ref = naive_norm(scores[i, j, k], causal[k], 0.5)
                assert float(norms[i, j, k]) == pytest.approx(ref, rel=1e-7, abs=1e-12)


def test_neg_inf_padding_equals_truncation_and_dim():
    g = torch.Generator().manual_seed(1)
    scores = torch.randn(5, 8, generator=g, dtype=torch.float64)
    padded = torch.cat([scores, torch.full((5, 3), -math.inf, dtype=torch.float64)], -1)
    torch.testing.assert_close(
        softmax_jacobian_norm(padded).values,
        softmax_jacobian_norm(scores).values,
        rtol=1e-12,
        atol=0,
    )
    torch.testing.assert_close(
        softmax_jacobian_norm(scores.T, dim=0).values,
        softmax_jacobian_norm(scores).values,
        rtol=0,
        atol=0,
    )


def test_tied_top_two_gives_half_over_t():
    scores = torch.tensor([[0.0, 0.0], [3.0, 3.0], [0.0, -50.0]], dtype=torch.float64)
    norms = softmax_jacobian_norm(scores, 0.25).values
    torch.testing.assert_close(norms[:2], torch.tensor([2.0, 2.0], dtype=torch.float64))
    assert float(norms[2]) < 1e-15
    l = torch.zeros(64, dtype=torch.float64)
    l[2:] = -40.0
    assert float(softmax_jacobian_norm(l).values) == pytest.approx(0.5, rel=1e-12)
    # uniform weights over L keys: λ = 1/L
    w = torch.full((3, 10), 0.1, dtype=torch.float64)
    torch.testing.assert_close(jacobian_top_eigenvalue(w).values, torch.full((3,), 0.1).double())


def test_top_eigenvalue_large_rows_vs_eigvalsh():
    g = torch.Generator().manual_seed(2)
    w = torch.softmax(3 * torch.randn(4, 300, generator=g, dtype=torch.float64), -1)
    ref = torch.linalg.eigvalsh(softmax_jacobian_matrix(w))[..., -1]
    torch.testing.assert_close(jacobian_top_eigenvalue(w).values, ref, rtol=1e-10, atol=1e-15)


def test_norm_grid_equals_one_call_per_temperature_and_eigvalsh():
    """The T grid (one sort, columns cut where every weight underflows) = per-T calls = eigvalsh."""
    g = torch.Generator().manual_seed(5)
    scores = 30 * torch.randn(3, 9, 40, generator=g, dtype=torch.float64)
    causal = torch.ones(9, 40, dtype=torch.bool).tril(31)
    temps = [1e-3, 1e-2, 0.3, 1.0, 50.0]
    grid = softmax_jacobian_norms(scores, temps, mask=causal)
    assert grid.values.shape == (3, 9, 5)
    for i, t in enumerate(temps):
        one = softmax_jacobian_norm(scores, t, mask=causal)
        torch.testing.assert_close(grid.values[..., i], one.values, rtol=0, atol=0)
        for b, r in itertools.product(range(3), range(9)):
            ref = naive_norm(scores[b, r], causal[r], t)
            assert float(grid.values[b, r, i]) == pytest.approx(ref, rel=1e-9, abs=1e-15 / t)


@pytest.mark.parametrize("second", [0.3, 1e-6, 1e-20, 1e-120, 0.0])
@pytest.mark.parametrize("rest", [0, 1, 50])
def test_top_eigenvalue_near_one_hot_and_near_tied_rows(second, rest):
    """Tiny second weights (relative precision kept) and a top pair tied to 1e-12."""
    for top in (1.0, second * (1 + 1e-12)) if second else (1.0,):
        tail = torch.full((rest,), second / 7, dtype=torch.float64)
        w = torch.cat([torch.tensor([top, second], dtype=torch.float64), tail])
        w = (w / w.sum()).unsqueeze(0)
        ref = float(torch.linalg.eigvalsh(softmax_jacobian_matrix(w))[0, -1])
        got = float(jacobian_top_eigenvalue(w).values)
        assert math.isfinite(got)
        if second >= 1e-6:
            assert got == pytest.approx(ref, rel=1e-10, abs=1e-17)
        else:  # eigvalsh itself is only absolutely accurate; check the interlacing bracket
            assert got == pytest.approx(ref, abs=1e-15)
            assert float(w[0, 1]) <= got <= float(w[0, 0])


def test_norm_bad_inputs():
    with pytest.raises(ValueError):
        softmax_jacobian_norm(torch.zeros(3, 4), 0.0)
    with pytest.raises(ValueError):
        softmax_jacobian_norm(torch.zeros(3, 4), -1.0)
    with pytest.raises(ValueError):
        softmax_jacobian_norm(torch.tensor([[math.nan, 0.0]]))
    with pytest.raises(ValueError):
        softmax_jacobian_norm(torch.zeros(3, 4), mask=torch.ones(3, 5, dtype=torch.bool))
    with pytest.raises(ValueError):
        softmax_jacobian_norm(torch.zeros(3, 4), mask=torch.ones(3, 4))
    with pytest.raises(ValueError):
        jacobian_top_eigenvalue(torch.tensor([[1.5, -0.5]]))


# --- Alg. 5 finite-difference sensitivity ------------------------------------------------


def naive_sensitivity(scores, mask, temps, epss, seed):
    """Row loop, same direction draw as the vectorised metric (one Gaussian tensor, masked)."""
    g = torch.Generator().manual_seed(seed)
    v_all = torch.randn(scores.shape, generator=g, dtype=torch.float64)
    out = torch.full((*scores.shape[:-1], len(temps), len(epss)), math.nan, dtype=torch.float64)
    for idx in itertools.product(*(range(n) for n in scores.shape[:-1])):
        keep = mask[idx]
        if not keep.any():
            continue
        l = scores[idx][keep].double()
        v = v_all[idx][keep]
        v = v / v.norm()
        for a, t in enumerate(temps):
            for b, e in enumerate(epss):
                d = torch.softmax((l + e * v) / t, -1) - torch.softmax(l / t, -1)
                out[(*idx, a, b)] = d.norm() / e
    return out


def test_sensitivity_matches_naive_loop_with_causal_mask(metric_path):
    g = torch.Generator().manual_seed(3)
    scores = 2 * torch.randn(2, 2, 6, 6, generator=g)
    causal = torch.ones(6, 6, dtype=torch.bool).tril().expand(2, 2, 6, 6).clone()
    causal[0, 1, 3] = False  # one fully masked row
    temps, epss = [0.05, 0.3, 1.0, 3.0], [1e-3, 0.1, 10.0]
    res = finite_difference_sensitivity(
        scores, temps, epss, mask=causal, generator=torch.Generator().manual_seed(7)
    )
    assert res.values.shape == (2, 2, 6, 4, 3) and res.valid.shape == (2, 2, 6)
    assert not res.valid[0, 1, 3] and int(res.valid.sum()) == 23
    ref = naive_sensitivity(scores, causal, temps, epss, 7)
    torch.testing.assert_close(res.values, ref, rtol=1e-9, atol=1e-12, equal_nan=True)
    assert bool((res.values[:, :, 0] == 0).all())  # one key: δ = 0


def test_sensitivity_in_blocks_of_rows_with_cut_columns(monkeypatch, torch_path):
    """Tiny blocks (rows sorted by kept count, columns cut to the block's kept keys) agree."""
    from attnlimits.metrics import jacobian

    g = torch.Generator().manual_seed(4)
    scores = 2 * torch.randn(3, 12, 12, generator=g)
    mask = torch.ones(12, 12, dtype=torch.bool).tril().expand(3, 12, 12).clone()
    mask[1] = torch.rand(12, 12, generator=g) > 0.4  # not prefix-shaped
    mask[2, 5] = False
    temps, epss = [0.1, 1.0], [1e-3, 10.0]
    whole = finite_difference_sensitivity(
        scores, temps, epss, mask=mask, generator=torch.Generator().manual_seed(1)
    )
    monkeypatch.setattr(jacobian, "_FD_BLOCK", 3 * len(temps) * len(epss) * 12)  # 3 rows a block
    blocked = finite_difference_sensitivity(
        scores, temps, epss, mask=mask, generator=torch.Generator().manual_seed(1)
    )
    torch.testing.assert_close(blocked.values, whole.values, rtol=1e-12, atol=0, equal_nan=True)
    ref = naive_sensitivity(scores, mask, temps, epss, 1)
    torch.testing.assert_close(blocked.values, ref, rtol=1e-9, atol=1e-12, equal_nan=True)


@given(length=st.integers(2, 20), scale=st.floats(0.0, 10.0), seed=seeds)
def test_sensitivity_obeys_corrected_bound_and_tracks_exact_norm(length, scale, seed):  # fused
    g = torch.Generator().manual_seed(seed)
    scores = scale * torch.randn(4, length, generator=g, dtype=torch.float64)
    temps = torch.tensor([0.03, 0.1, 1.0, 10.0], dtype=torch.float64)
    epss = torch.tensor([1e-6, 1e-1, 10.0], dtype=torch.float64)
    res = finite_difference_sensitivity(scores, temps, epss, generator=g)
    bound = torch.minimum(1 / (2 * temps.view(-1, 1)), math.sqrt(2) / epss.view(1, -1))
    assert bool((res.values <= bound * (1 + 1e-6) + 1e-12).all())
    exact = torch.stack([softmax_jacobian_norm(scores, float(t)).values for t in temps], -1)
    assert bool((res.values[..., 0] <= exact * (1 + 1e-4) + 1e-9).all())  # ε → 0: ||J v|| ≤ ||J||


def test_sensitivity_directions_avoid_masked_keys_and_are_seeded():
    scores = torch.zeros(1, 4, dtype=torch.float64)
    mask = torch.tensor([[True, True, False, False]])
    # the perturbation only moves kept logits: result equals the truncated row's with same v
    a = finite_difference_sensitivity(
        scores, [1.0], [0.5], mask=mask, generator=torch.Generator().manual_seed(0)
    )
    b = finite_difference_sensitivity(
        scores, [1.0], [0.5], mask=mask, generator=torch.Generator().manual_seed(0)
    )
    c = finite_difference_sensitivity(
        torch.randn(50, 9), [1.0], [0.5], generator=torch.Generator().manual_seed(1)
    )
    d = finite_difference_sensitivity(
        torch.randn(50, 9), [1.0], [0.5], generator=torch.Generator().manual_seed(2)
    )
    torch.testing.assert_close(a.values, b.values)
    assert not torch.equal(c.values, d.values)
    # two tied kept logits: 0 < δ ≤ ||J|| = 1/(2T) (v is supported on the kept pair)
    assert 0 < float(a.values.squeeze()) <= 0.5


def test_sensitivity_bad_inputs():
    s = torch.zeros(2, 3)
    for temps, epss in [
        ([0.0], [1.0]),
        ([-1.0], [1.0]),
        ([1.0], [0.0]),
        ([1.0], [-0.1]),
        ([math.nan], [1.0]),
        ([1.0], []),
        ([1.0], [math.inf]),
    ]:
        with pytest.raises(ValueError):
            finite_difference_sensitivity(s, temps, epss)
    with pytest.raises(ValueError):
        finite_difference_sensitivity(torch.tensor([[math.nan, 0.0]]), 1.0, 1.0)
    with pytest.raises(ValueError):
        finite_difference_sensitivity(s, 1.0, 1.0, mask=torch.ones(2, 4, dtype=torch.bool))
