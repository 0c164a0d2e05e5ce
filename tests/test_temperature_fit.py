"""Adaptive-temperature derivation (paper B, App. F): point collection, polynomial fits, rule."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlimits.experiments.softmax_not_enough import (
    EvalConfig,
    MaxRetrievalModel,
    ModelConfig,
    TemperatureFitConfig,
    apply_rule,
    collect_points,
    fit_polynomial,
    fit_table,
    run_temperature_fit,
)
from attnlimits.experiments.softmax_not_enough.figures import plot_fit
from attnlimits.experiments.store import ResultStore
from attnlimits.normalizers import POLY_COEFFS, adaptive_beta


def test_fit_recovers_known_coefficients() -> None:
    rng = np.random.default_rng(0)
    H = rng.uniform(0.5, 6.0, 2000)
    beta = np.polyval(POLY_COEFFS, H) + rng.normal(0, 1e-3, H.size)
    assert np.allclose(fit_polynomial(H, beta, 4), POLY_COEFFS, atol=2e-3)


def test_inverse_fit_recovers_temperature_polynomial() -> None:
    true = np.array([0.01, -0.05, 0.1, -0.2, 0.9])  # 1/β as a polynomial in H
    H = np.linspace(0.6, 4.0, 500)
    beta = 1.0 / np.polyval(true, H)
    assert np.allclose(fit_polynomial(H, beta, 4, inverse=True), true, atol=1e-8)
    assert np.allclose(apply_rule(H, true, inverse=True), np.maximum(beta, 1.0))


def test_rule_threshold_and_floor() -> None:
    H = np.array([0.0, 0.3, 0.5, 0.51, 2.0, 5.0, 7.0])
    beta = apply_rule(H, POLY_COEFFS)
    assert np.all(beta >= 1.0) and np.all(beta[:3] == 1.0)
    expected = adaptive_beta(torch.as_tensor(H), POLY_COEFFS, 0.5).numpy()
    assert np.allclose(beta, expected)
    assert beta[4] == pytest.approx(np.polyval(POLY_COEFFS, 2.0))


def test_beta_grid() -> None:
    grid = TemperatureFitConfig().beta_grid()
    assert grid[0] == 1.0 and grid[-1] == pytest.approx(50.0) and len(grid) == 200
    assert np.allclose(grid[1:] / grid[:-1], grid[1] / grid[0])  # geometric


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sizes": ()},
        {"sizes": (1,)},
        {"beta_min": 0.0},
        {"beta_min": 5.0, "beta_max": 2.0},
        {"n_beta": 1},
        {"sets_per_size": 0},
    ],
)
def test_bad_config_raises(kwargs: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError):
        TemperatureFitConfig(**kwargs)


def test_collect_points_and_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    model = MaxRetrievalModel(ModelConfig(width=32))  # untrained: most inputs are errors
    cfg = TemperatureFitConfig(sizes=(8, 64), sets_per_size=40, n_beta=12, chunk_items=256)
    pts = collect_points(model, cfg)
    assert list(pts.columns) == ["size", "entropy", "beta_star", "p_star", "p_one"]
    assert len(pts) > 10 and (pts["beta_star"] >= 1.0).all()
    assert (pts["p_star"] >= pts["p_one"] - 1e-6).all()  # β = 1 is on the grid
    assert (pts["entropy"] <= np.log(pts["size"]) + 1e-4).all()
    fits = fit_table(pts, cfg)
    assert list(fits["fit"]) == ["paper", "refit", "refit_inverse"]
    assert all(len(c) == 5 for c in fits["coeffs"])
    out = run_temperature_fit(model, cfg, EvalConfig(sizes=(8,), n_sets=50), ResultStore(tmp_path))
    norms = set(out["temperature_fit_accuracy"]["norm"])
    assert norms == {"softmax", "adaptive_paper", "adaptive_refit"}
    coeffs = out["temperature_fit_coeffs"]
    assert all(len(c) == 5 for c in coeffs["coeffs"])
    assert len(plot_fit(out["temperature_fit_points"], coeffs).axes) == 1
