"""The App. F polynomials fitted to (H, β*) points, and the tables that show them beside their
data (paper B, Veličković et al., *Softmax is not Enough*, App. F; Fig. 6 analogue).

Fits (:func:`fit_table`), each a degree-4 polynomial in the entropy H:

- ``paper``: the published coefficients (the listing's ``POLY_COEFFS``);
- ``refit``: ``np.polyfit`` of β* on H, least squares, as App. F does it;
- ``refit_inverse``: least squares of θ* = 1/β* on H, then β = 1/poly(H) (the other reading
  of App. F's "inverse");
- ``refit_median``: least *absolute* deviations of β* on H (*ours*), the polynomial through the
  conditional median. Why: β* = 1/θ* has a long upper tail (θ* down to the grid's lower bound
  gives β* up to 1/θ_min), and least squares follows the conditional *mean*, which a few points
  near 1/θ_min drag far above the bulk of the scatter; the median is moved by a far point no
  more than by a near one, and, since 1/x is monotone, the median of β* in any entropy bin is
  1/(median of θ*): fitting the median does not depend on whether β or θ is fitted. Solved
  exactly as a linear programme (``scipy.optimize.linprog``, HiGHS).

Every fit is also redone with θ* raised to at least ``alt_theta_min`` (:func:`clamp_points`),
to show how much the grid's lost lower bound moves it. :func:`bin_table` gives per-entropy-bin
quartiles of β* beside each fit, so a reader can see which curve follows the points.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from scipy import sparse
from scipy.optimize import linprog

from attnlimits.experiments.softmax_not_enough.config import TemperatureFitConfig
from attnlimits.normalizers.adaptive import ENTROPY_THRESHOLD, POLY_COEFFS, adaptive_beta

__all__ = [
    "apply_rule",
    "beta_table",
    "bin_table",
    "clamp_points",
    "fit_median_polynomial",
    "fit_polynomial",
    "fit_table",
    "fold_fits",
    "poly_beta",
    "seed_fits",
]


def fit_polynomial(
    entropy: np.ndarray, beta: np.ndarray, degree: int = 4, *, inverse: bool = False
) -> np.ndarray:
    """Least-squares polynomial, highest degree first (``np.polyfit``).

    ``inverse=False`` (the reading the listing's use implies): fit β(H). ``inverse=True``: fit
    the temperature θ = 1/β against H instead; then β = 1/poly(H).
    """
    y = 1.0 / np.asarray(beta, float) if inverse else np.asarray(beta, float)
    return np.polyfit(np.asarray(entropy, float), y, degree)


def fit_median_polynomial(entropy: np.ndarray, beta: np.ndarray, degree: int = 4) -> np.ndarray:
    """The polynomial minimising Σ|β_i − poly(H_i)| (median regression), highest degree first.

    Linear programme: min Σ(r⁺ + r⁻) subject to V a + r⁺ − r⁻ = β, r± ≥ 0, with V the
    Vandermonde matrix of H/c (c = max |H|, for conditioning; the coefficients are rescaled
    back to H).
    """
    H, y = np.asarray(entropy, float), np.asarray(beta, float)
    if H.shape != y.shape or H.ndim != 1 or len(H) <= degree:
        raise ValueError(f"need 1-D entropy and beta of one length > degree, got {H.shape}")
    c = max(1.0, float(np.abs(H).max()))
    V = np.vander(H / c, degree + 1)  # (N, degree + 1), highest power first
    n, p = V.shape
    eye = sparse.identity(n, format="csr")
    res = linprog(
        np.r_[np.zeros(p), np.ones(2 * n)],
        A_eq=sparse.hstack([sparse.csr_matrix(V), eye, -eye]).tocsr(),
        b_eq=y,
        bounds=[(None, None)] * p + [(0, None)] * (2 * n),
        method="highs",
    )
    if res.status != 0:
        raise RuntimeError(f"median regression failed: {res.message}")
    return res.x[:p] / c ** np.arange(degree, -1, -1)


def poly_beta(
    entropy: np.ndarray | Sequence[float],
    coeffs: Sequence[float] | np.ndarray,
    *,
    inverse: bool = False,
) -> np.ndarray:
    """The raw β of a polynomial, no rule: poly(H), or 1/poly(H) for a temperature polynomial
    (``inverse=True``; +inf where poly(H) ≤ 0: a temperature at or below 0 is unbounded
    sharpening)."""
    poly = np.polyval(np.asarray(coeffs, float), np.asarray(entropy, float))
    if not inverse:
        return poly
    return np.where(poly > 0, 1.0 / np.where(poly > 0, poly, 1.0), np.inf)


def apply_rule(
    entropy: np.ndarray,
    coeffs: Sequence[float] | np.ndarray,
    threshold: float = ENTROPY_THRESHOLD,
    *,
    inverse: bool = False,
) -> np.ndarray:
    """β(H) under the listing's rule: max(poly(H), 1) where H > threshold, else 1.

    With ``inverse=True`` the polynomial is the temperature: β = max(1/poly(H), 1).
    """
    H = np.array(entropy, dtype=float)
    if not inverse:
        return adaptive_beta(torch.from_numpy(H), tuple(coeffs), threshold).numpy()
    return np.where(H > threshold, np.maximum(poly_beta(H, coeffs, inverse=True), 1.0), 1.0)


def clamp_points(points: pd.DataFrame, theta_min: float) -> pd.DataFrame:
    """The points as a grid starting at ``theta_min`` (a point of the original grid above its
    lower bound) would have found them: θ* raised to at least ``theta_min``, β* = 1/θ*, and
    ``edge`` = "low" where θ* is now ``theta_min``. Exact because w(θ) is unimodal (the
    module docstring of :mod:`.temperature_fit`): an optimum below ``theta_min`` leaves w
    falling on the narrower grid, so its first point wins."""
    theta = np.maximum(points["theta_star"].to_numpy(float), theta_min)
    low = np.isclose(theta, theta_min, rtol=0, atol=1e-12)
    edge = np.where(low, "low", np.where(points["edge"] == "high", "high", ""))
    return points.assign(theta_star=theta, beta_star=1.0 / theta, edge=edge)


_METHODS = {
    "paper": "published",
    "refit": "least squares on β (App. F)",
    "refit_inverse": "least squares on θ, β = 1/poly",
    "refit_median": "least absolute deviations on β (median)",
}


def _fits(H: np.ndarray, b: np.ndarray, degree: int) -> dict[str, tuple[np.ndarray, bool]]:
    return {
        "refit": (fit_polynomial(H, b, degree), False),
        "refit_inverse": (fit_polynomial(H, b, degree, inverse=True), True),
        "refit_median": (fit_median_polynomial(H, b, degree), False),
    }


def fit_table(points: pd.DataFrame, cfg: TemperatureFitConfig) -> pd.DataFrame:
    """The published polynomial and our refits of degree ``cfg.degree``, on the points as
    collected and on the points clamped at ``cfg.alt_theta_min`` (:func:`clamp_points`; not
    if None). Columns: ``fit, theta_min`` (the grid's lower bound the points had), ``method,
    inverse, coeffs, rmse_beta, mae_beta, n_points`` (errors between the rule's β, threshold
    ``cfg.threshold``, and β* over the points used)."""
    degree, threshold = cfg.degree, cfg.threshold
    if len(points) <= degree:
        raise ValueError(
            f"need more than degree = {degree} points to fit, got {len(points)} (no kept "
            "inputs: try more sets_per_size or larger sizes)"
        )
    rows = []
    alt = () if cfg.alt_theta_min is None else (cfg.alt_theta_min,)
    for theta_min in (cfg.theta_min, *alt):
        first = theta_min == cfg.theta_min
        pts = points if first else clamp_points(points, theta_min)
        H, b = pts["entropy"].to_numpy(float), pts["beta_star"].to_numpy(float)
        fits = _fits(H, b, degree)
        if first:
            fits = {"paper": (np.asarray(POLY_COEFFS, float), False)} | fits
        for name, (c, inv) in fits.items():
            err = apply_rule(H, c, threshold, inverse=inv) - b
            rows.append(
                {
                    "fit": name,
                    "theta_min": theta_min,
                    "method": _METHODS[name],
                    "inverse": inv,
                    "coeffs": [float(x) for x in c],
                    "rmse_beta": float(np.sqrt(np.mean(err**2))),
                    "mae_beta": float(np.mean(np.abs(err))),
                    "n_points": len(b),
                }
            )
    return pd.DataFrame(rows)


def beta_table(
    fits: pd.DataFrame,
    entropies: Sequence[float] = (1.0, 2.0, 3.0, 4.0),
    threshold: float = ENTROPY_THRESHOLD,
) -> pd.DataFrame:
    """β of each fit at each H: ``fit, theta_min, inverse, entropy, beta_raw``
    (:func:`poly_beta`) and ``beta_rule`` (:func:`apply_rule`). The paper's polynomial gives
    1.27 / 2.10 / 2.25 / 2.39 at H = 1 / 2 / 3 / 4."""
    H = np.asarray(entropies, float)
    parts = [
        pd.DataFrame(
            {
                "fit": row.fit,
                "theta_min": float(getattr(row, "theta_min", np.nan)),
                "inverse": bool(row.inverse),
                "entropy": H,
                "beta_raw": poly_beta(H, row.coeffs, inverse=bool(row.inverse)),
                "beta_rule": apply_rule(H, row.coeffs, threshold, inverse=bool(row.inverse)),
            }
        )
        for row in fits.itertuples()
    ]
    return pd.concat(parts, ignore_index=True)


def bin_table(points: pd.DataFrame, fits: pd.DataFrame, width: float = 0.25) -> pd.DataFrame:
    """Per entropy bin of ``width`` nats (edges on multiples of it): ``entropy_lo,
    entropy_hi, n, entropy_median, beta_q25, beta_median, beta_q75`` of the points, and each
    fit's raw β at the bin's median H (one column per fit on the grid's own lower bound)."""
    H = points["entropy"].to_numpy(float)
    lo = np.floor(H / width) * width
    grp = points.assign(entropy_lo=np.round(lo, 9)).groupby("entropy_lo", sort=True)
    q = grp["beta_star"].quantile([0.25, 0.5, 0.75]).unstack()  # (bins, 3)
    table = pd.DataFrame(
        {
            "entropy_lo": q.index.to_numpy(float),
            "entropy_hi": q.index.to_numpy(float) + width,
            "n": grp.size().to_numpy(),
            "entropy_median": grp["entropy"].median().to_numpy(),
            "beta_q25": q[0.25].to_numpy(),
            "beta_median": q[0.5].to_numpy(),
            "beta_q75": q[0.75].to_numpy(),
        }
    )
    collected = fits[fits["theta_min"] == fits["theta_min"].min()] if "theta_min" in fits else fits
    for row in collected.itertuples():
        table[row.fit] = poly_beta(table["entropy_median"], row.coeffs, inverse=bool(row.inverse))
    return table


def seed_fits(
    points: pd.DataFrame,
    cfg: TemperatureFitConfig,
    entropies: Sequence[float] = (1.0, 2.0, 3.0, 4.0),
) -> pd.DataFrame:
    """The β-against-H refits per seed, least squares and median, to show the spread over
    seeds: ``seed, fit, n_points, coeffs`` and the raw β at each H (columns ``beta_H1`` …);
    NaN where a seed has too few points for the degree."""
    rows, degree = [], cfg.degree
    for seed, p in points.groupby("seed", sort=True):  # one fit per seed: ten at most
        H, b = p["entropy"].to_numpy(float), p["beta_star"].to_numpy(float)
        for name in ("refit", "refit_median"):
            if len(p) <= degree:
                c = np.full(degree + 1, np.nan)
            elif name == "refit":
                c = fit_polynomial(H, b, degree)
            else:
                c = fit_median_polynomial(H, b, degree)
            beta = poly_beta(np.asarray(entropies, float), c)
            rows.append(
                {
                    "seed": int(seed),
                    "fit": name,
                    "n_points": len(p),
                    "coeffs": [float(x) for x in c],
                }
                | {f"beta_H{h:g}": float(v) for h, v in zip(entropies, beta, strict=True)}
            )
    return pd.DataFrame(rows)


def fold_fits(points: pd.DataFrame, cfg: TemperatureFitConfig) -> pd.DataFrame:
    """The β-against-H refits (least squares and median) on each half of the seeds, for
    judging a refit on the seeds it was *not* fitted on: the sorted seeds split into two folds
    (first half, second half); fold k is fitted on fold k's seeds and evaluated on the other
    fold's. Columns ``fold, fit, fit_seeds, held_out, n_points, coeffs``."""
    seeds = np.sort(points["seed"].unique())
    if len(seeds) < 2:
        raise ValueError(f"fold_fits needs points from >= 2 seeds, got {len(seeds)}")
    halves = (seeds[: len(seeds) // 2], seeds[len(seeds) // 2 :])
    rows, degree = [], cfg.degree
    for k, mine in enumerate(halves):  # two folds
        p = points[points["seed"].isin(mine)]
        if len(p) <= degree:
            raise ValueError(f"fold {k} (seeds {mine.tolist()}): {len(p)} points, need > {degree}")
        H, b = p["entropy"].to_numpy(float), p["beta_star"].to_numpy(float)
        for name, c in (
            ("refit", fit_polynomial(H, b, degree)),
            ("refit_median", fit_median_polynomial(H, b, degree)),
        ):
            rows.append(
                {
                    "fold": k,
                    "fit": name,
                    "fit_seeds": [int(x) for x in mine],
                    "held_out": [int(x) for x in halves[1 - k]],
                    "n_points": len(p),
                    "coeffs": [float(x) for x in c],
                }
            )
    return pd.DataFrame(rows)
