"""Adaptive-temperature derivation (paper B, App. F): the θ search, point collection, fits."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar
from torch import Tensor, nn

from attnlimits import normalizers
from attnlimits.experiments.softmax_not_enough.config import TemperatureFitConfig, TrainConfig
from attnlimits.experiments.softmax_not_enough.figures import plot_fit
from attnlimits.experiments.softmax_not_enough.temperature_fit import (
    POINT_COLUMNS,
    apply_rule,
    beta_table,
    bin_table,
    clamp_points,
    collect_points,
    edge_labels,
    fit_median_polynomial,
    fit_polynomial,
    fit_table,
    max_item_temperature,
    poly_beta,
    refit_norms,
    run_temperature_fit,
    seed_fits,
    size_table,
)
from attnlimits.experiments.store import ResultStore
from attnlimits.normalizers import POLY_COEFFS, adaptive_beta, adaptive_stats

GRID = TemperatureFitConfig().thetas()


# ---- the θ search ------------------------------------------------------------------------


def brute_force(scores: Tensor, index: Tensor, thetas: np.ndarray) -> tuple[list[int], Tensor]:
    """Per row, a Python loop over θ with torch.softmax: first θ of the largest weight."""
    positions, weights = [], torch.empty(len(scores), len(thetas), dtype=scores.dtype)
    for r in range(len(scores)):
        for k, t in enumerate(thetas):
            weights[r, k] = torch.softmax(scores[r] / float(t), -1)[index[r]]
        best = 0
        for k in range(len(thetas)):
            if weights[r, k] > weights[r, best]:
                best = k
        positions.append(best)
    return positions, weights


def test_search_equals_brute_force_with_ties(gen: torch.Generator) -> None:
    scores = torch.randn(60, 9, generator=gen, dtype=torch.float64) * 3
    scores[:20] = (scores[:20] * 2).round() / 2  # many tied logits
    scores[20:25] = 1.5  # every logit tied: the weight is 1/n at every θ
    index = torch.randint(9, (60,), generator=gen)
    thetas = np.round(np.arange(0.05, 3.0001, 0.05), 12)
    found = max_item_temperature(scores, index, thetas)
    positions, weights = brute_force(scores, index, thetas)
    best = weights.max(1).values
    assert torch.allclose(found.weight, best, rtol=1e-12, atol=0)
    # the same θ wherever the maximum is unique beyond rounding; on exact ties, the first
    runner_up = weights.masked_fill(weights == best[:, None], -1).max(1).values
    clear = (best - runner_up) > 1e-12 * best
    assert clear.sum() > 30
    assert found.position[clear].tolist() == torch.tensor(positions)[clear].tolist()
    assert (found.position[20:25] == 0).all()
    assert torch.equal(found.theta, torch.as_tensor(thetas)[found.position])
    one = int(np.argmin(np.abs(thetas - 1.0)))
    assert torch.allclose(found.weight_one, weights[:, one], rtol=1e-12, atol=0)


def test_search_dim_dtype_and_batch_shape(gen: torch.Generator) -> None:
    scores = torch.randn(3, 4, 11, generator=gen, dtype=torch.float64)
    index = torch.randint(11, (3, 4), generator=gen)
    ref = max_item_temperature(scores, index, GRID)
    moved = max_item_temperature(scores.transpose(1, 2), index, GRID, dim=1)
    assert torch.equal(ref.position, moved.position) and ref.position.shape == (3, 4)
    chunked = max_item_temperature(scores, index, GRID, chunk_elements=1)  # one θ at a time
    assert torch.equal(ref.position, chunked.position)
    f32 = max_item_temperature(scores.float(), index, GRID)
    assert f32.weight.dtype == torch.float32
    assert torch.allclose(f32.weight.double(), ref.weight, rtol=1e-5)


def _true_theta(e: Tensor, i: int) -> float:
    """The continuous optimum via β: log w(β) is concave, so a bounded scalar search finds it."""

    def neg_log_weight(beta: float) -> float:
        return -float(torch.log_softmax(beta * e, -1)[i])

    return 1.0 / minimize_scalar(neg_log_weight, bounds=(1e-3, 1e3), method="bounded").x


def test_interior_optimum_hand_made() -> None:
    # max item (index 1) second: w → 0 as θ → 0 and → 1/n as θ → ∞, with a peak between
    e = torch.tensor([2.0, 1.5] + [0.0] * 30, dtype=torch.float64)
    found = max_item_temperature(e, torch.tensor(1), GRID)
    assert edge_labels(found.position.numpy(), len(GRID)) == ""
    assert abs(float(found.theta) - _true_theta(e, 1)) <= GRID[1] - GRID[0]  # within a step
    assert float(found.weight) > max(float(found.weight_one), 1 / len(e))
    assert float(torch.softmax(e / 0.01, -1)[1]) < 1e-3 < float(found.weight)


def test_edge_optima_flagged() -> None:
    # e_i below the mean logit: the optimum is θ = ∞, so the last grid point
    high = torch.tensor([3.0, -1.0, 0.0, 0.0], dtype=torch.float64)
    # e_i a hair (1e-6) below the top, the rest 0.02 below: the peak is at θ ≈ 0.0016 < θ_min
    low = torch.tensor([1.0, 1.0 - 1e-6, 0.98, 0.98], dtype=torch.float64)
    assert _true_theta(low, 1) < GRID[0]
    found = max_item_temperature(torch.stack([high, low]), torch.tensor([1, 1]), GRID)
    assert edge_labels(found.position.numpy(), len(GRID)).tolist() == ["high", "low"]
    assert found.theta.tolist() == [GRID[-1], GRID[0]]


@pytest.mark.parametrize(
    ("scores", "index", "thetas", "match"),
    [
        (torch.zeros(2, 3), torch.tensor([0, 1]), [0.0, 1.0], "finite and > 0"),
        (torch.zeros(2, 3), torch.tensor([0, 1]), [-1.0], "finite and > 0"),
        (torch.zeros(2, 3), torch.tensor([0, 3]), [1.0], "out of range"),
        (torch.zeros(2, 3), torch.tensor([0, -1]), [1.0], "out of range"),
        (torch.zeros(2, 3), torch.tensor([0, 1, 2]), [1.0], "shape without dim"),
        (torch.zeros(2, 3), torch.tensor([0.0, 1.0]), [1.0], "integer"),
        (torch.zeros(2, 3), torch.tensor([0, 1]), [], "non-empty"),
        (torch.zeros(2, 3, dtype=torch.long), torch.tensor([0, 1]), [1.0], "floating"),
        (torch.tensor([[0.0, math.nan]]), torch.tensor([0]), [1.0], "NaN"),
        (torch.full((1, 2), -math.inf), torch.tensor([0]), [1.0], "finite score"),
    ],
)
def test_search_rejects_bad_input(
    scores: Tensor, index: Tensor, thetas: list[float], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        max_item_temperature(scores, index, thetas)


@given(
    st.lists(st.floats(-20, 20), min_size=2, max_size=30),
    st.integers(0, 29),
    st.lists(st.integers(0, len(GRID) - 1), min_size=1, max_size=8),
)
def test_weight_star_beats_every_grid_point(logits: list[float], i: int, probe: list[int]) -> None:
    e = torch.tensor(logits, dtype=torch.float64)
    i = i % len(logits)
    found = max_item_temperature(e, torch.tensor(i), GRID)
    w_star = float(found.weight)
    assert w_star == pytest.approx(float(torch.softmax(e / float(found.theta), -1)[i]), rel=1e-9)
    for k in probe:
        assert w_star >= float(torch.softmax(e / GRID[k], -1)[i]) * (1 - 1e-12)
    assert w_star >= float(found.weight_one) * (1 - 1e-12)
    assert float(found.weight_one) == pytest.approx(float(torch.softmax(e, -1)[i]), rel=1e-9)


# ---- collecting points on a stub model ----------------------------------------------------


class StubModel(nn.Module):
    """``seeds``, ``cfg``, ``encode`` and ``forward_multi`` of the max-retrieval model: scores
    e = items · w_s per seed (deterministic in the items), readout = attention-pooled class."""

    def __init__(self, seeds: tuple[int, ...] = (3, 5), n_classes: int = 4) -> None:
        super().__init__()
        self.seeds = seeds
        self.cfg = SimpleNamespace(n_classes=n_classes, query_dim=3)
        w = torch.randn(len(seeds), 1 + n_classes, generator=torch.Generator().manual_seed(1))
        w[:, 0] = torch.tensor([6.0, 2.0][: len(seeds)])  # priority counts, the class too
        self.w = nn.Parameter(w)
        self.calls: list[tuple[Tensor, Tensor]] = []

    def encode(self, items: Tensor, query: Tensor) -> tuple[Tensor, Tensor]:
        e = torch.einsum("bnd,sd->sbn", items, self.w) + 0.1 * query[:, :1]  # (S, B, n)
        self.calls.append((items, e))
        return items.expand(len(self.seeds), *items.shape), e

    def forward_multi(
        self, items: Tensor, query: Tensor, norms: list[tuple[str, dict[str, Any]]]
    ) -> list[Tensor]:
        f, e = self.encode(items, query)
        out = []
        for name, params in norms:
            a = normalizers.get(name)(e, dim=-1, **params)  # (S, B, n)
            out.append((a.unsqueeze(-1) * f[..., 1:]).sum(-2))  # (S, B, C)
        return out


def stub() -> Any:
    """A :class:`StubModel`, typed as the model the functions expect (duck typing)."""
    return StubModel()


@torch.no_grad()
def test_collect_points_on_stub() -> None:
    model = stub()
    cfg = TemperatureFitConfig(sizes=(6, 40), sets_per_size=50, chunk_items=128)
    pts = collect_points(model, cfg)
    assert list(pts.columns) == POINT_COLUMNS
    assert set(pts["seed"]) == {3, 5} and set(pts["size"]) == {6, 40}
    assert (pts["entropy"] <= np.log(pts["size"]) + 1e-5).all()
    assert (pts["weight_star"] >= pts["weight_one"] * (1 - 1e-6)).all()
    assert np.allclose(pts["beta_star"], 1 / pts["theta_star"])
    assert np.isin(pts["theta_star"], GRID).all()
    assert set(pts["edge"]) <= {"", "low", "high"}
    assert (pts["edge"] == "high").eq(pts["theta_star"] == GRID[-1]).all()
    for n in cfg.sizes:  # rebuild each size's sets from what the stub saw
        calls = [c for c in model.calls if c[0].shape[1] == n]
        items = torch.cat([c[0] for c in calls])  # (sets, n, d)
        e = torch.cat([c[1] for c in calls], 1)  # (S, sets, n)
        assert items.shape[0] == cfg.sets_per_size
        kept = e.argmax(-1) != items[..., 0].argmax(-1)  # (S, sets)
        here = pts[pts["size"] == n]
        assert len(here) == int(kept.sum()) > 0
        s = torch.tensor(here["seed"].map({3: 0, 5: 1}).to_numpy())
        k = torch.tensor(here["set"].to_numpy())
        assert kept[s, k].all()
        assert np.allclose(here["entropy"], adaptive_stats(e[s, k])[0].numpy(), atol=1e-6)
    again = collect_points(stub(), cfg)
    pd.testing.assert_frame_equal(pts, again)  # seeded: the same sets every run


def test_collect_points_nothing_kept() -> None:
    model = stub()
    with torch.no_grad():
        model.w.zero_()
        model.w[:, 0] = 1.0  # scores follow priority: nothing is kept
    pts = collect_points(model, TemperatureFitConfig(sizes=(8,), sets_per_size=5))
    assert list(pts.columns) == POINT_COLUMNS and len(pts) == 0
    with pytest.raises(ValueError, match="no kept"):
        fit_table(pts, TemperatureFitConfig())


def test_run_temperature_fit_and_figure(tmp_path: Path) -> None:
    model = stub()
    cfg = TemperatureFitConfig(sizes=(8, 32), sets_per_size=60)
    trained = TrainConfig(steps=0)
    out = run_temperature_fit(model, cfg, ResultStore(tmp_path), train_cfg=trained)
    assert set(out) == {
        f"temperature_fit_{t}"
        for t in ("points", "sizes", "coeffs", "beta", "bins", "seed_fits", "folds")
    }
    norms = refit_norms(out["temperature_fit_coeffs"], cfg.threshold)
    assert list(norms) == ["adaptive (refit)", "adaptive (refit_median)"]
    coeffs = out["temperature_fit_coeffs"]
    own = coeffs[coeffs["theta_min"] == cfg.theta_min].set_index("fit")
    for name in ("refit", "refit_median"):  # the fits on the grid as collected, not θ ≥ 0.05
        expect = ("adaptive", {"coeffs": tuple(own.loc[name, "coeffs"]), "threshold": 0.5})
        assert norms[f"adaptive ({name})"] == expect
    sizes = out["temperature_fit_sizes"]
    assert sizes["kept"].sum() == len(out["temperature_fit_points"])
    assert (sizes["n_sets"] == 2 * 60).all()
    assert list(out["temperature_fit_seed_fits"]["seed"]) == [3, 3, 5, 5]
    # the points are a stored part: a rerun reads them back unchanged
    again = run_temperature_fit(model, cfg, ResultStore(tmp_path), train_cfg=trained)
    pd.testing.assert_frame_equal(again["temperature_fit_points"], out["temperature_fit_points"])
    assert len(list((tmp_path / "parts").glob("fit_points-*"))) == 1
    # a model trained with other settings gets its own points, never the stored ones
    run_temperature_fit(model, cfg, ResultStore(tmp_path), train_cfg=TrainConfig(steps=1))
    assert len(list((tmp_path / "parts").glob("fit_points-*"))) == 2
    fig = plot_fit(out["temperature_fit_points"], coeffs, bins=out["temperature_fit_bins"])
    assert len(fig.axes) == 2
    assert "θ*" in fig.axes[0].get_ylabel() and "β*" in fig.axes[1].get_ylabel()


# ---- fits and tables ------------------------------------------------------------------------


def _points(H: np.ndarray, beta: np.ndarray, seed: int = 0) -> pd.DataFrame:
    return pd.DataFrame(
        {"seed": seed, "size": 64, "entropy": H, "beta_star": beta, "theta_star": 1 / beta,
         "edge": ""}
    )  # fmt: skip


def test_fit_polynomial_recovers_known_coefficients() -> None:
    rng = np.random.default_rng(0)
    H = rng.uniform(0.5, 6.0, 2000)
    beta = np.polyval(POLY_COEFFS, H) + rng.normal(0, 1e-3, H.size)
    assert np.allclose(fit_polynomial(H, beta, 4), POLY_COEFFS, atol=2e-3)


def test_fit_table_recovers_every_reading() -> None:
    H = np.linspace(0.6, 4.0, 400)
    beta_poly = np.array([0.01, -0.1, 0.2, 0.5, 1.5])  # β > 1 on [0.6, 4]: the rule is inert
    cfg = TemperatureFitConfig(alt_theta_min=None)
    fits = fit_table(_points(H, np.polyval(beta_poly, H)), cfg)
    assert list(fits["fit"]) == ["paper", "refit", "refit_inverse", "refit_median"]
    assert list(fits["inverse"]) == [False, False, True, False]
    assert (fits["theta_min"] == cfg.theta_min).all()
    for i in (1, 3):  # least squares and median both recover an exact polynomial
        assert np.allclose(fits.loc[i, "coeffs"], beta_poly, atol=1e-6)
        assert fits.loc[i, "rmse_beta"] < 1e-6 and fits.loc[i, "mae_beta"] < 1e-6
    assert (fits["n_points"] == 400).all()
    theta_poly = np.array([0.002, -0.01, 0.02, -0.1, 0.8])  # θ < 1 on [0.6, 4]
    fits = fit_table(_points(H, 1 / np.polyval(theta_poly, H)), cfg)
    assert np.allclose(fits.loc[2, "coeffs"], theta_poly, atol=1e-8)
    assert fits.loc[2, "rmse_beta"] < 1e-8


def test_median_fit_follows_the_bulk_where_least_squares_follows_the_tail() -> None:
    """β* = poly(H) ± noise, plus 15 % of points at β* = 200 (θ* on a lower bound of 0.005):
    the median fit stays on the polynomial, least squares runs far above the bulk."""
    rng = np.random.default_rng(1)
    H = rng.uniform(0.6, 4.0, 2000)
    true = np.array([0.0, 0.05, -0.2, 1.5, 1.2])
    beta = np.polyval(true, H) + rng.normal(0, 0.2, H.size)
    beta[rng.random(H.size) < 0.15] = 200.0
    at = np.array([1.0, 2.0, 3.0])
    median = np.polyval(fit_median_polynomial(H, beta, 4), at)
    least = np.polyval(fit_polynomial(H, beta, 4), at)
    assert np.allclose(median, np.polyval(true, at), atol=0.3)
    assert (least > np.polyval(true, at) + 20).all()
    # degree 0 is the sample median (odd count), to the solver's precision
    assert fit_median_polynomial(H[:999], beta[:999], 0)[0] == pytest.approx(
        np.median(beta[:999]), abs=1e-9
    )
    # half the points on either side of a median fit (up to the 5 it interpolates)
    resid = beta - np.polyval(fit_median_polynomial(H, beta, 4), H)
    assert abs(int((resid > 1e-9).sum()) - int((resid < -1e-9).sum())) <= 5
    with pytest.raises(ValueError, match="length"):
        fit_median_polynomial(H[:3], beta[:3], 4)


def test_alt_theta_min_refits_on_clamped_points() -> None:
    H = np.linspace(0.6, 4.0, 200)
    beta = np.where(H > 3, 150.0, 1 + H)  # θ* = 1/150 < 0.05 above H = 3
    pts = _points(H, beta)
    fits = fit_table(pts, TemperatureFitConfig())  # alt_theta_min = 0.05
    alt = fits[fits["theta_min"] == 0.05].set_index("fit")
    assert list(alt.index) == ["refit", "refit_inverse", "refit_median"]  # no second "paper"
    clamped = np.minimum(beta, 20.0)
    assert np.allclose(alt.loc["refit", "coeffs"], fit_polynomial(H, clamped, 4))
    own = fits[fits["theta_min"] == 0.005].set_index("fit")
    assert not np.allclose(own.loc["refit", "coeffs"], alt.loc["refit", "coeffs"])
    c = clamp_points(pts.assign(edge=np.where(beta > 100, "low", "")), 0.05)
    assert c["beta_star"].max() == pytest.approx(20.0)
    assert (c["edge"] == "low").sum() == int((beta > 20).sum())


def test_clamping_equals_the_narrower_grid_search(gen: torch.Generator) -> None:
    """Raising θ* to 0.05 is what a grid starting at 0.05 finds (w is unimodal in θ)."""
    scores = torch.randn(400, 20, generator=gen, dtype=torch.float64) * 0.2
    index = scores.argsort(-1)[:, -2]  # the runner-up: an interior optimum, often small
    index[:50] = torch.randint(20, (50,), generator=gen)  # and some anywhere
    wide = max_item_temperature(scores, index, GRID)
    pts = pd.DataFrame(
        {"theta_star": wide.theta.numpy(), "edge": edge_labels(wide.position.numpy(), len(GRID))}
    )
    narrow_grid = GRID[GRID >= 0.05 - 1e-12]
    narrow = max_item_temperature(scores, index, narrow_grid)
    clamped = clamp_points(pts, 0.05)
    assert (clamped["theta_star"] == 0.05).sum() > 20 and (pts["edge"] == "high").sum() > 0
    assert clamped["theta_star"].tolist() == narrow.theta.tolist()
    assert (
        clamped["edge"].tolist() == edge_labels(narrow.position.numpy(), len(narrow_grid)).tolist()
    )


def test_bin_table_quartiles_and_fit_columns() -> None:
    H = np.r_[np.full(5, 1.1), np.full(4, 2.6)]
    beta = np.r_[[1.0, 2.0, 3.0, 4.0, 100.0], [5.0, 6.0, 7.0, 8.0]]
    pts = _points(H, beta)
    fits = fit_table(_points(np.linspace(0.6, 4, 50), np.linspace(2, 5, 50)),
                     TemperatureFitConfig())  # fmt: skip
    table = bin_table(pts, fits, width=0.5)
    assert table["entropy_lo"].tolist() == [1.0, 2.5] and table["n"].tolist() == [5, 4]
    assert table[["beta_q25", "beta_median", "beta_q75"]].to_numpy().tolist() == [
        [2.0, 3.0, 4.0], [5.75, 6.5, 7.25]
    ]  # fmt: skip
    own = fits[fits["theta_min"] == 0.005]
    assert set(own["fit"]) <= set(table.columns) and "theta_min" not in table.columns
    paper = own.set_index("fit").loc["paper", "coeffs"]
    assert np.allclose(table["paper"], np.polyval(paper, [1.1, 2.6]))


def test_beta_table_matches_polyval_and_rule() -> None:
    H = np.linspace(0.6, 4.0, 50)
    fits = fit_table(_points(H, 1.5 + 0.1 * H), TemperatureFitConfig())
    table = beta_table(fits, entropies=(0.3, 1, 2, 3, 4))
    assert len(table) == len(fits) * 5 and set(table["theta_min"]) == {0.005, 0.05}
    for row in fits.itertuples():
        sub = table[table["fit"] == row.fit]
        raw = np.polyval(row.coeffs, sub["entropy"])
        raw = 1 / raw if row.inverse else raw
        assert np.allclose(sub["beta_raw"], raw)
        rule = np.where(sub["entropy"] > 0.5, np.maximum(raw, 1.0), 1.0)
        assert np.allclose(sub["beta_rule"], rule)
    paper = table[(table["fit"] == "paper") & (table["entropy"] >= 1)]
    assert np.allclose(paper["beta_raw"], [1.27, 2.10, 2.25, 2.39], atol=0.005)  # published


def test_seed_fits_spread() -> None:
    H = np.linspace(0.6, 4.0, 100)
    pts = pd.concat(
        [_points(H, 1 + H, seed=0), _points(H, 2 + H, seed=1), _points(H[:3], H[:3], 2)]
    )
    table = seed_fits(pts, TemperatureFitConfig()).set_index(["seed", "fit"])
    assert table.index.tolist() == [(s, f) for s in (0, 1, 2) for f in ("refit", "refit_median")]
    assert table["n_points"].tolist() == [100, 100, 100, 100, 3, 3]
    cols = ["beta_H1", "beta_H2", "beta_H3", "beta_H4"]
    for fit in ("refit", "refit_median"):
        assert np.allclose(table.loc[(0, fit), cols].astype(float), [2, 3, 4, 5], atol=1e-6)
        assert np.allclose(table.loc[(1, fit), ["beta_H1", "beta_H4"]].astype(float), [3, 6],
                           atol=1e-6)  # fmt: skip
        assert table.loc[(2, fit), cols].isna().all()  # 3 points < degree + 1


def test_size_table_counts_edges() -> None:
    pts = _points(np.array([1.0, 2.0, 3.0]), np.array([0.5, 2.0, 100.0]))
    pts["edge"] = ["high", "", "low"]
    table = size_table(pts, TemperatureFitConfig(sizes=(64, 128), sets_per_size=10), n_seeds=2)
    assert table.loc[0, ["n_sets", "kept", "edge_low", "edge_high"]].tolist() == [20, 3, 1, 1]
    assert table.loc[0, "kept_frac"] == pytest.approx(0.15)
    assert table.loc[1, "kept"] == 0 and math.isnan(table.loc[1, "edge_frac"])


def test_inverse_rule_and_threshold() -> None:
    true = np.array([0.01, -0.05, 0.1, -0.2, 0.9])  # 1/β as a polynomial in H
    H = np.linspace(0.6, 4.0, 500)
    beta = 1.0 / np.polyval(true, H)
    assert np.allclose(fit_polynomial(H, beta, 4, inverse=True), true, atol=1e-8)
    assert np.allclose(apply_rule(H, true, inverse=True), np.maximum(beta, 1.0))
    assert poly_beta([1.0], [-1.0], inverse=True)[0] == np.inf  # θ ≤ 0: unbounded sharpening
    H = np.array([0.0, 0.3, 0.5, 0.51, 2.0, 5.0, 7.0])
    got = apply_rule(H, POLY_COEFFS)
    assert np.all(got >= 1.0) and np.all(got[:3] == 1.0)
    assert np.allclose(got, adaptive_beta(torch.as_tensor(H), POLY_COEFFS, 0.5).numpy())


# ---- config -------------------------------------------------------------------------------


def test_theta_grid_is_linear_with_one_on_it() -> None:
    assert GRID[0] == 0.005 and GRID[-1] == 2.0 and len(GRID) == 400
    assert np.allclose(np.diff(GRID), 0.005) and 1.0 in GRID
    grid = TemperatureFitConfig(
        theta_min=0.1, theta_max=0.5, theta_step=0.1, alt_theta_min=None
    ).thetas()
    assert grid.tolist() == [0.1, 0.2, 0.3, 0.4, 0.5]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"sizes": ()}, "sizes"),
        ({"sizes": (1,)}, "sizes"),
        ({"theta_min": 0.0}, "0 < theta_min"),
        ({"theta_min": 2.0, "theta_max": 1.0}, "theta_min < theta_max"),
        ({"theta_step": 0.0}, "theta_step > 0"),
        ({"theta_step": 0.3}, "whole number"),
        ({"theta_max": math.inf}, "finite"),
        ({"sets_per_size": 0}, "sets_per_size"),
        ({"chunk_items": 0}, "chunk_items"),
        ({"degree": -1}, "degree"),
        ({"threshold": math.nan}, "threshold"),
        ({"alt_theta_min": 0.0475}, "alt_theta_min"),  # not on the grid
        ({"alt_theta_min": 0.005}, "alt_theta_min"),  # not above theta_min
        ({"theta_min": 0.1, "theta_max": 0.5, "theta_step": 0.1}, "alt_theta_min"),
        ({"bin_width": 0.0}, "bin_width"),
    ],
)
def test_bad_config_raises(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TemperatureFitConfig(**kwargs)
