"""metrics.criticality: paper A Alg. 3 (critical N by two-sample KS tests over heads)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from attnlimits.metrics.criticality import critical_n

HEADS = 144  # GPT-2: 12 layers × 12 heads


def synthetic(ns, n_crit, seed=0):
    """d̄ differs from Ē (shifted by 2) below n_crit; from n_crit on d̄ = Ē (same sample)."""
    rng = np.random.default_rng(seed)
    e = rng.normal(size=(len(ns), HEADS))
    d = e.copy()
    for i, n in enumerate(ns):
        if n < n_crit:
            d[i] = rng.normal(loc=2.0, size=HEADS)
    return d, e


def test_known_critical_n():
    ns = [1, 5, 10, 20, 50, 100]
    d, e = synthetic(ns, 20)
    res = critical_n(ns, d, e)
    assert res.critical_n == 20
    assert res.rejected.tolist() == [True, True, True, False, False, False]
    assert np.allclose(res.p_values[3:], 1.0) and np.allclose(res.statistics[3:], 0.0)
    assert res.n_heads.tolist() == [HEADS] * 6


def test_never_equal_gives_minus_one():
    ns = [1, 5, 10]
    d, e = synthetic(ns, 10**6)
    res = critical_n(ns, d, e)
    assert res.critical_n == -1 and bool(res.rejected.all())


def test_alpha_changes_the_answer():
    # N = 5: a shift with 0.01 < p < 0.05 (rejected at 0.05, not at 0.01); N = 10: identical
    base = np.linspace(0.0, 1.0, 50)
    shift = next(
        s for s in np.linspace(0, 1, 201) if 0.01 < stats.ks_2samp(base + s, base).pvalue < 0.05
    )
    d = np.stack([base + shift, base])
    e = np.stack([base, base])
    assert critical_n([5, 10], d, e, alpha=0.01).critical_n == 5
    assert critical_n([5, 10], d, e, alpha=0.05).critical_n == 10
    assert critical_n([5, 10], d, e).critical_n == 5  # default α = 0.01 as in paper A's text


def test_matches_scipy_per_n_unsorted_and_tensor_input():
    ns = [20, 1, 5]
    d, e = synthetic(ns, 10)
    res = critical_n(torch.tensor(ns), torch.from_numpy(d), torch.from_numpy(e))
    assert res.n_values.tolist() == [1, 5, 20] and res.critical_n == 20
    for j, i in enumerate([1, 2, 0]):
        ref = stats.ks_2samp(d[i], e[i])
        assert res.statistics[j] == pytest.approx(ref.statistic)
        assert res.p_values[j] == pytest.approx(ref.pvalue)


def test_nan_heads_are_dropped_and_counted():
    ns = [1, 2]
    d, e = synthetic(ns, 2)
    d[0, :10] = math.nan
    res = critical_n(ns, d, e)
    assert res.n_heads.tolist() == [HEADS - 10, HEADS]
    assert res.p_values[0] == pytest.approx(stats.ks_2samp(d[0, 10:], e[0]).pvalue)
    d[1] = math.nan
    with pytest.raises(ValueError):
        critical_n(ns, d, e)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, math.nan])
def test_bad_alpha(alpha):
    d, e = synthetic([1], 1)
    with pytest.raises(ValueError):
        critical_n([1], d, e, alpha=alpha)


def test_bad_shapes_and_values():
    d, e = synthetic([1, 2], 2)
    with pytest.raises(ValueError):
        critical_n([1, 2, 3], d, e)
    with pytest.raises(ValueError):
        critical_n([1, 2], d, e[:, None])
    with pytest.raises(ValueError):
        critical_n([1, 1], d, e)
    with pytest.raises(ValueError):
        critical_n([0, 2], d, e)
    with pytest.raises(ValueError):
        critical_n([1.5, 2.0], d, e)
    with pytest.raises(ValueError):
        critical_n([], d[:0], e[:0])
    d[0, 0] = math.inf
    with pytest.raises(ValueError):
        critical_n([1, 2], d, e)
