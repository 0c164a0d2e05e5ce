"""E *exact* for a limitations run: the Monte Carlo of paper A's Eq. 8 per (L, N) and head.

Theorem 1.2 gives closed forms of E = E_{I_N}[d̃] (printed and derived, which disagree:
docs/errata.md). This module estimates E itself, on rows stratified by bands of L, with a
standard error, so the report can show all three forms against each other.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from attnlimits.experiments.limitations.config import Config
from attnlimits.metrics import expected_distance_curve_mc

__all__ = ["exact_means"]


def exact_means(
    attn: Tensor,
    x: Tensor,
    mask: Tensor,
    plan: dict[int, set[int]],
    cfg: Config,
    gen: torch.Generator,
) -> pd.DataFrame:
    """E *exact* = E_{I_N}[d̃] by Monte Carlo: per (L, N) the row mean per head and its SE,
    one row per (L, N, head) with columns ``expectation_exact`` and ``expectation_exact_se``.

    Rows are stratified in bands of L (rows [L_prev, L) for each L of the plan, [0, L_0) first)
    and ``cfg.mc_rows`` evenly spaced rows of each band are drawn ``cfg.mc_samples`` times
    (:func:`~attnlimits.metrics.expected_distance_curve_mc`), with keys cut to the band's L (a
    causal row sees no later key). The mean over the first L rows is the band means weighted
    by each band's count of rows with ≥ N + 1 keys, as d̃'s row mean; its SE combines the
    spread over sampled rows (or, where every row of a band is sampled, the Monte Carlo SE).
    """
    lengths = sorted(plan)
    n_keys = mask[0].sum(-1).cpu().numpy()  # (Q,): kept keys per row, the same in every head
    bands: list[tuple[int, int, list[int], np.ndarray, np.ndarray]] = []
    lo = 0
    for lb in lengths:
        ns = sorted({n for length in lengths if length >= lb for n in plan[length] if n < lb})
        rows = torch.linspace(lo, lb - 1, min(cfg.mc_rows, lb - lo)).round().long().unique()
        if ns:
            mean, se = expected_distance_curve_mc(
                attn[:, rows, :lb],
                x[..., :lb, :],
                ns,
                mask=mask[:, rows, :lb],
                samples=cfg.mc_samples,
                generator=gen,
            )
            bands.append((lo, lb, ns, mean.double().cpu().numpy(), se.double().cpu().numpy()))
        lo = lb
    out = []
    heads = attn.shape[0]
    for length, n_set in plan.items():
        for n in n_set:
            total = float((n_keys[:length] >= n + 1).sum())
            acc = np.zeros(heads)
            var = np.zeros(heads)
            for b_lo, lb, ns, b_mean, b_se in bands:
                in_band = float((n_keys[b_lo:lb] >= n + 1).sum())
                if lb > length or n not in ns or in_band == 0:
                    continue
                j = ns.index(n)
                ok = ~np.isnan(b_mean[0, :, j])
                m_v = int(ok.sum())
                if m_v == 0:
                    acc += math.nan
                    continue
                v, e = b_mean[:, ok, j], b_se[:, ok, j]
                w = in_band / total
                acc += w * v.mean(-1)
                if m_v == in_band:  # every valid row of the band sampled: only MC noise
                    var += w * w * (e * e).sum(-1) / m_v**2
                elif m_v >= 2:
                    var += w * w * v.var(-1, ddof=1) / m_v
                else:
                    var += w * w * (e * e).sum(-1)
            out.append(
                pd.DataFrame(
                    {
                        "L": length,
                        "N": n,
                        "head": np.arange(heads),
                        "expectation_exact": acc,
                        "expectation_exact_se": np.sqrt(var),
                    }
                )
            )
    return pd.concat(out, ignore_index=True)
