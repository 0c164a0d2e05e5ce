"""Row means from stratified rows: E *exact* (the Monte Carlo of paper A's Eq. 8) per (L, N) and
head, and Alg. 3's N grid beyond ``ns_alg3`` (d̃, Eq. 7, and E in every form).

Theorem 1.2 gives closed forms of E = E_{I_N}[d̃] (printed and derived, which disagree:
docs/errata.md). :func:`exact_means` estimates E itself; :func:`extension_means` gives d̃ and
each form of E at the large N of Alg. 3's extended grid (up to 0.9·L), where a whole grid over
every row would cost N_max·K per row. Both take ``cfg.mc_rows`` evenly spaced rows of each band
of L (rows [L_prev, L) for each L of the plan, [0, L_0) first), the same rows for both, and
weight the band means as the row mean over the first L rows does (by each band's count of rows
with ≥ N + 1 keys). Alg. 3 needs per-head means only, so the rows can be sampled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from attnlimits.experiments.limitations.config import E_FORMS, Config
from attnlimits.metrics import distance_curve, expected_distance_curve_mc
from attnlimits.theory.distance import ExpectedForm

__all__ = ["exact_means", "extension_means"]


class _Band(NamedTuple):
    lo: int
    hi: int  # rows [lo, hi), keys cut to hi (a causal row sees no later key)
    rows: Tensor  # the sampled rows
    ns: list[int]  # the N of the plan this band serves
    mean: dict[str, np.ndarray]  # column -> [head, rows, n_N]
    se: np.ndarray | None  # Monte Carlo SE per row, [head, rows, n_N]


def _bands(plan: dict[int, set[int]], mc_rows: int) -> list[tuple[int, int, Tensor, list[int]]]:
    """(lo, hi, sampled rows, N served) per band of L; bands no N of the plan reaches are left
    out."""
    lengths = sorted(plan)
    out, lo = [], 0
    for hi in lengths:
        ns = sorted({n for length in lengths if length >= hi for n in plan[length] if n < hi})
        rows = torch.linspace(lo, hi - 1, min(mc_rows, hi - lo)).round().long().unique()
        if ns:
            out.append((lo, hi, rows, ns))
        lo = hi
    return out


class _BandMeans(NamedTuple):
    """One band's per-N summaries: each column's mean over its sampled valid rows [head, n_N],
    the variance of that mean [head, n_N] (None without an SE), the band's count of rows with
    ≥ N + 1 keys [n_N], and the index of each N."""

    means: dict[str, np.ndarray]
    var: np.ndarray | None
    in_band: np.ndarray
    column: dict[int, int]  # N -> its index


def _summarise(band: _Band, n_keys: np.ndarray) -> _BandMeans:
    ns = np.asarray(band.ns)
    in_band = (n_keys[band.lo : band.hi, None] >= ns[None, :] + 1).sum(0)
    first = next(iter(band.mean.values()))  # [head, rows, n_N]
    ok = ~np.isnan(first[0])  # [rows, n_N]: the row has ≥ N + 1 keys
    m_v = ok.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = {c: np.where(ok, v, 0.0).sum(1) / m_v for c, v in band.mean.items()}
        var = None
        if band.se is not None:
            e2 = np.where(ok, band.se, 0.0) ** 2
            spread = np.where(ok, (first - means[next(iter(means))][:, None, :]) ** 2, 0.0)
            var = np.where(
                m_v == in_band,  # every valid row of the band sampled: only MC noise
                e2.sum(1) / m_v**2,
                np.where(m_v >= 2, spread.sum(1) / np.maximum(m_v - 1, 1) / m_v, e2.sum(1)),
            )
    return _BandMeans(means, var, in_band, {int(n): j for j, n in enumerate(band.ns)})


def _weighted(
    bands: Sequence[_Band], plan: dict[int, set[int]], n_keys: np.ndarray, heads: int
) -> pd.DataFrame:
    """Per (L, N, head): each column's mean over the first L rows from the band means, weighted
    by each band's count of rows with ≥ N + 1 keys; ``<column>_se`` where the band has an SE
    (the spread over sampled rows, or, where every row of a band is sampled, the MC SE)."""
    cols = list(bands[0].mean) if bands else []
    summaries = [(band.hi, _summarise(band, n_keys)) for band in bands]
    keys: list[tuple[int, int]] = []
    acc: dict[str, list[np.ndarray]] = {c: [] for c in cols}
    var: list[np.ndarray] = []
    for length, n_set in plan.items():
        for n in sorted(n_set):
            total = float((n_keys[:length] >= n + 1).sum())
            sums = {c: np.zeros(heads) for c in cols}
            v = np.zeros(heads)
            for hi, s in summaries:
                j = s.column.get(n)
                if hi > length or j is None or s.in_band[j] == 0:
                    continue
                w = s.in_band[j] / total
                for c in cols:  # NaN where no sampled row of the band is valid
                    sums[c] += w * s.means[c][:, j]
                if s.var is not None and np.isfinite(s.var[:, j]).all():
                    v += w * w * s.var[:, j]
            keys.append((length, n))
            for c in cols:
                acc[c].append(sums[c])
            var.append(v)
    out = pd.DataFrame(
        {
            "L": np.repeat([k[0] for k in keys], heads),
            "N": np.repeat([k[1] for k in keys], heads),
            "head": np.tile(np.arange(heads), len(keys)),
        }
    )
    for c in cols:
        out[c] = np.concatenate(acc[c]) if keys else []
    if bands and bands[0].se is not None:
        out[f"{cols[0]}_se"] = np.sqrt(np.concatenate(var)) if keys else []
    return out


def exact_means(
    attn: Tensor,
    x: Tensor,
    mask: Tensor,
    plan: dict[int, set[int]],
    cfg: Config,
    gen: torch.Generator,
    samples: int | None = None,
) -> pd.DataFrame:
    """E *exact* = E_{I_N}[d̃] by Monte Carlo: per (L, N) the row mean per head and its SE,
    one row per (L, N, head) with columns ``expectation_exact`` and ``expectation_exact_se``.

    ``cfg.mc_rows`` rows of each band are drawn ``samples`` (default ``cfg.mc_samples``) times
    (:func:`~attnlimits.metrics.expected_distance_curve_mc`); the SE combines the spread over
    sampled rows (or, where every row of a band is sampled, the Monte Carlo SE).
    """
    bands = []
    for lo, hi, rows, ns in _bands(plan, cfg.mc_rows):
        mean, se = expected_distance_curve_mc(
            attn[:, rows, :hi],
            x[..., :hi, :],
            ns,
            mask=mask[:, rows, :hi],
            samples=samples or cfg.mc_samples,
            generator=gen,
        )
        mean_np = {"expectation_exact": mean.double().cpu().numpy()}
        bands.append(_Band(lo, hi, rows, ns, mean_np, se.double().cpu().numpy()))
    return _weighted(bands, plan, mask[0].sum(-1).cpu().numpy(), attn.shape[0])


def extension_means(
    attn: Tensor,
    x: Tensor,
    mask: Tensor,
    plan: dict[int, set[int]],
    cfg: Config,
    forms: tuple[ExpectedForm, ...],
) -> pd.DataFrame:
    """d̃ (Eq. 7) and E in each closed form per (L, N, head) for Alg. 3's extended grid
    (``plan``: L -> its N beyond ``ns_alg3``), on the rows :func:`exact_means` samples: the
    same per-head means as over every row, estimated from ``cfg.mc_rows`` rows per band."""
    bands = []
    columns = {c: f for c, f in E_FORMS.items() if f in forms}
    for lo, hi, rows, ns in _bands(plan, cfg.mc_rows):
        curve = distance_curve(
            attn[:, rows, :hi], x[..., :hi, :], ns, mask=mask[:, rows, :hi], forms=forms
        )
        valid = curve.valid.expand_as(curve.distance)

        def rows_np(v: Tensor, valid: Tensor = valid) -> np.ndarray:  # NaN: < N + 1 keys
            return torch.where(valid, v, torch.nan).double().cpu().numpy()

        mean = {"distance": rows_np(curve.distance)}
        mean |= {c: rows_np(curve.expected[f]) for c, f in columns.items()}
        bands.append(_Band(lo, hi, rows, ns, mean, None))
    return _weighted(bands, plan, mask[0].sum(-1).cpu().numpy(), attn.shape[0])
