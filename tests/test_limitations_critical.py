"""Paper A's Alg. 3 (``experiments/limitations/critical.py``, ``exact.py``): the grid, the KS
table, the draws of heads, the extended grid's means.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from attnlimits.experiments.limitations import Config
from attnlimits.experiments.limitations.critical import (
    critical_n_table,
    head_draws_table,
    ks_p_values,
    ks_statistics,
)
from attnlimits.metrics import critical_n


def test_alg3_grid_goes_on_to_0_9_l():
    cfg = Config()
    base, ext = cfg.alg3_grid(1024)
    assert base == _NS_BASE and ext == (192, 256, 384, 512, 640, 768, 921)
    assert cfg.alg3_grid(32) == ((1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24), (28,))
    for length in (16, 32, 100, 256, 512):
        base, ext = cfg.alg3_grid(length)
        grid = base + ext
        assert max(grid) == math.floor(0.9 * length) and max(grid) < length
        assert list(grid) == sorted(set(grid))
    with pytest.raises(ValueError, match="alg3_top"):
        Config(alg3_top=1.0)


_NS_BASE = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128)


def _grid(n_heads: int, seed: int = 0) -> pd.DataFrame:
    """A distance grid where d̃ and E meet as N grows (per head, with noise)."""
    rng = np.random.default_rng(seed)
    rows = []
    for h in range(n_heads):
        for n in (1, 2, 4, 8, 16, 28):
            d = 10 + rng.normal()
            e = d * (1 - 3 / n) + rng.normal()
            rows.append({"L": 32, "N": n, "layer": h // 4, "head": h % 4, "window": 0,
                         "distance": d, "expectation_exact": e})  # fmt: skip
    return pd.DataFrame(rows)


def test_critical_n_table_reports_beyond_the_grid_not_minus_one():
    grid = _grid(20)
    summary, tests = critical_n_table(grid, {32: (1, 2, 4, 8, 16, 28)}, 0.01)
    assert summary["n_max"].tolist() == [28]
    never = grid.assign(expectation_exact=grid["distance"] + 100)
    summary, _ = critical_n_table(never, {32: (1, 2, 4, 8, 16, 28)}, 0.01)
    assert pd.isna(summary["critical_n"].iloc[0]) and math.isnan(summary["critical_n_over_L"][0])
    assert set(tests["N"]) == {1, 2, 4, 8, 16, 28}


def test_ks_statistics_and_p_values_are_scipys():
    rng = np.random.default_rng(1)
    a = np.round(rng.normal(size=(40, 30)), 1)  # ties within and across samples
    b = np.round(rng.normal(0.3, size=(40, 30)), 1)
    d = ks_statistics(a, b)
    ref = [stats.ks_2samp(x, y) for x, y in zip(a, b, strict=True)]
    np.testing.assert_allclose(d, [r.statistic for r in ref], atol=1e-12)
    np.testing.assert_allclose(ks_p_values(d, 30), [r.pvalue for r in ref], rtol=1e-9)


def test_head_draws_match_the_test_on_each_drawn_subset():
    grid = _grid(20)
    grids = {32: (1, 2, 4, 8, 16, 28)}
    draws = head_draws_table(grid, grids, 0.05, heads=12, draws=5, seed=3)
    assert len(draws) == 5 and (draws["heads"] == 12).all()
    rng = np.random.default_rng(3)
    per_head = grid.groupby(["N", "layer", "head"])[["distance", "expectation_exact"]].mean()
    for i in range(5):
        pick = rng.choice(20, 12, replace=False)
        d = np.stack([per_head.xs(n)["distance"].to_numpy()[pick] for n in grids[32]])
        e = np.stack([per_head.xs(n)["expectation_exact"].to_numpy()[pick] for n in grids[32]])
        want = critical_n(grids[32], d, e, alpha=0.05).critical_n
        got = draws.loc[draws["draw"] == i, "critical_n"].iloc[0]
        assert (pd.isna(got) and want == -1) or got == want
    assert head_draws_table(grid, grids, 0.05, heads=20, draws=5, seed=3).empty


def test_extension_means_equal_the_row_means_when_every_row_is_sampled():
    """Alg. 3's extended grid uses stratified rows; with as many rows per band as the band
    has, its per-head means are the means over every valid row of the first L rows."""
    import torch

    from attnlimits.experiments.limitations.exact import extension_means
    from attnlimits.metrics import distance_curve

    gen = torch.Generator().manual_seed(0)
    q = 24
    mask = torch.ones(q, q, dtype=torch.bool).tril().expand(2, q, q)
    attn = torch.softmax((2 * torch.randn(2, q, q, generator=gen)).masked_fill(~mask, -1e9), -1)
    x = torch.randn(2, q, 5, generator=gen)
    plan = {12: {9, 10}, 24: {10, 15, 21}}
    cfg = Config(lengths=(12, 24), n_alg1=1, ns_alg2=(1,), ns_alg3=(1,), mc_rows=q)
    got = extension_means(attn.double(), x.double(), mask, plan, cfg, ("derived",))
    for (length, n), sub in got.groupby(["L", "N"]):
        c = distance_curve(attn.double(), x.double(), [n], mask=mask, forms=("derived",))
        ok = c.valid[..., :length, 0].expand(2, length)
        for col, v in (("distance", c.distance), ("expectation", c.expected["derived"])):
            want = torch.where(ok, v[:, :length, 0], 0).sum(-1) / ok.sum(-1)
            np.testing.assert_allclose(sub.sort_values("head")[col], want.numpy(), rtol=1e-9)
