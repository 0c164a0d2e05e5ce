"""How the adaptive-temperature polynomial β(H) was derived (paper B, Veličković et al.,
*Softmax is not Enough*, App. F; Fig. 6 analogue).

Procedure, each step labelled:

1. Inputs: fresh sets of a trained softmax max-retrieval model (*paper*), at ``cfg.sizes``,
   ``cfg.sets_per_size`` per size (*ours*: App. F does not say which sizes or how many).
   Every seed of a stacked model sees the same sets (*ours*: seeds become comparable).
2. Kept: the inputs where the item of maximal priority does **not** get the largest attention
   logit, ``argmax_i e_i != argmax_i ρ_i`` (*paper*; the others are discarded because their
   optimal temperature is 0).
3. Per kept input, grid-search the temperature θ on a linear grid (*paper*: "we perform a
   simple grid search", "in increments of"; the bounds and step are lost in our copy, our
   choice 0.005 … 2.0 in steps of 0.005, see :class:`~.config.TemperatureFitConfig` for why)
   for the θ that maximises the maximal item's attention weight w(θ) = softmax(e/θ)[i_max]
   (*paper*; :func:`max_item_temperature`, a pure tensor function); first maximiser on ties
   (*ours*). Record (H, β* = 1/θ*), H the entropy in nats
   of the unsharpened softmax(e) exactly as the adaptive normaliser computes it (*paper*: the
   listing's H).
4. Fit a degree-4 polynomial with ``np.polyfit`` (*paper*). "Inverse" is ambiguous: ``refit``
   fits β* against H, the reading the listing's use of the polynomial (it multiplies the
   logits by poly(H)) implies; ``refit_inverse`` fits θ* against H and uses β = 1/poly(H).
   ``refit_median`` (*ours*) fits the conditional median of β* instead of its mean
   (:mod:`.fits` says why). Every kept point enters the fit, edge points included (*ours*:
   the paper names no exclusion; their count is reported), and every fit is redone with θ*
   raised to ``cfg.alt_theta_min`` (*ours*) to show what the lost lower bound moves.
5. The listing's rule: β = max(poly(H), 1) where H > 0.5, else 1 (*paper*).

The grid search has one peak to find. With β = 1/θ, log w(β) = β e_i − log Σ_j exp(β e_j) has
d/dβ = e_i − E_β[e] and d²/dβ² = −Var_β(e) ≤ 0 (Prop. 3.2's variance), so it is concave in β
and w is unimodal in θ. E_β[e] rises from mean(e) at β = 0 to max(e) as β → ∞, so for a kept
input (e_i < max e) the optimum is interior, β* solving E_β[e] = e_i, whenever
e_i > mean(e); w → 0 as θ → 0 and → 1/n as θ → ∞. Where e_i ≤ mean(e) the optimum is θ = ∞
and no finite grid holds it: those inputs land on the grid's upper edge. Optima on either
edge are flagged (``edge`` = "low" / "high") and counted per size (:func:`size_table`).
(Earlier releases called w monotone in θ and maximised the output probability instead; w is
not monotone, and App. F's objective is the attention weight.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from attnlimits.experiments.softmax_not_enough.config import (
    NormSpec,
    TemperatureFitConfig,
    TrainConfig,
)
from attnlimits.experiments.softmax_not_enough.fits import (
    apply_rule,
    beta_table,
    bin_table,
    clamp_points,
    fit_median_polynomial,
    fit_polynomial,
    fit_table,
    fold_fits,
    poly_beta,
    seed_fits,
)
from attnlimits.experiments.softmax_not_enough.model import (
    MaxRetrievalModel,
    make_batch,
    set_generator,
)
from attnlimits.experiments.store import ResultStore
from attnlimits.normalizers.adaptive import ENTROPY_THRESHOLD, adaptive_stats

__all__ = [
    "ThetaSearch",
    "apply_rule",
    "beta_table",
    "bin_table",
    "clamp_points",
    "collect_points",
    "edge_labels",
    "fit_median_polynomial",
    "fit_polynomial",
    "fit_table",
    "fold_fits",
    "fold_label",
    "fold_norms",
    "max_item_temperature",
    "poly_beta",
    "refit_norms",
    "run_temperature_fit",
    "seed_fits",
    "size_table",
]

POINT_COLUMNS = [
    "seed",
    "size",
    "set",
    "entropy",
    "theta_star",
    "beta_star",
    "weight_star",
    "weight_one",
    "edge",
]


class ThetaSearch(NamedTuple):
    """Per row of :func:`max_item_temperature`: θ*, w(θ*), w at the grid point nearest 1, and
    θ*'s position on the grid (0: lower edge, len − 1: upper edge)."""

    theta: Tensor
    weight: Tensor
    weight_one: Tensor
    position: Tensor


def max_item_temperature(
    scores: Tensor,
    index: Tensor,
    thetas: Tensor | Sequence[float] | np.ndarray,
    *,
    dim: int = -1,
    chunk_elements: int = 1 << 24,
) -> ThetaSearch:
    """Grid search of the temperature that maximises one key's attention weight, per row.

    For each row e of ``scores`` along ``dim`` and key i = ``index``:
    θ* = argmax over ``thetas`` of softmax(e/θ)[i] (App. F's objective), first maximiser on
    ties. Computed as log-weights (e_i − max e)/θ − logsumexp((e − max e)/θ), so the search is
    stable at small θ, and keys with equal logits give bit-equal weights.

    Parameters
    ----------
    scores : Tensor
        Logits, any shape, float32 or float64 (half precision is computed in float32).
        ``-inf`` is a masked key (weight 0 at every θ); NaN and +inf are refused.
    index : Tensor of int
        The key per row: ``scores``' shape without ``dim``, values in ``[0, n)``.
    thetas : 1-D tensor or sequence of float
        The grid, every θ finite and > 0 (any order; "first" is in this order).
    dim : int
        The key axis, default ``-1``.
    chunk_elements : int
        Bound on the (rows × θ-chunk × n) temporaries: θ is processed in chunks.

    Returns
    -------
    ThetaSearch
        ``theta``, ``weight``, ``weight_one`` in the computation dtype and ``position``
        (long), each of ``index``'s shape.
    """
    if not torch.is_floating_point(scores):
        raise ValueError(f"scores must be a floating tensor, got {scores.dtype}")
    if scores.ndim == 0 or scores.shape[dim] == 0:
        raise ValueError(f"scores need a non-empty key axis dim={dim}, got {tuple(scores.shape)}")
    x = scores.movedim(dim, -1)  # (..., n)
    if x.dtype in (torch.float16, torch.bfloat16):
        x = x.float()
    n = x.shape[-1]
    index = torch.as_tensor(index, device=x.device)
    if index.dtype.is_floating_point or index.dtype == torch.bool:
        raise ValueError(f"index must be an integer tensor, got {index.dtype}")
    if index.shape != x.shape[:-1]:
        raise ValueError(
            f"index must have scores' shape without dim ({tuple(x.shape[:-1])}), "
            f"got {tuple(index.shape)}"
        )
    if index.numel() and (index.min() < 0 or index.max() >= n):
        raise ValueError(
            f"index out of range [0, {n}): got values {int(index.min())} … {int(index.max())}"
        )
    theta = torch.as_tensor(thetas, dtype=x.dtype, device=x.device)
    if theta.ndim != 1 or theta.numel() == 0:
        raise ValueError(f"thetas must be a non-empty 1-D grid, got shape {tuple(theta.shape)}")
    if not (torch.isfinite(theta) & (theta > 0)).all():
        raise ValueError(f"every temperature must be finite and > 0, got {theta.tolist()}")
    if torch.isnan(x).any() or (x == torch.inf).any():
        raise ValueError("scores must not contain NaN or +inf (-inf marks a masked key)")
    top = x.amax(-1, keepdim=True)  # (..., 1)
    if not torch.isfinite(top).all():
        raise ValueError("every row needs at least one finite score")
    x = x - top  # (..., n), max 0
    xi = x.gather(-1, index.unsqueeze(-1))  # (..., 1)
    per = max(1, chunk_elements // max(1, x.numel()))
    logw = torch.cat(  # (..., T): log softmax(x/θ)[i] for each θ
        [xi / t - torch.logsumexp(x.unsqueeze(-2) / t[:, None], -1) for t in theta.split(per)],
        -1,
    )
    best = logw.argmax(-1)  # (...,), the first maximiser
    one = int((theta - 1).abs().argmin())
    return ThetaSearch(
        theta=theta[best],
        weight=logw.gather(-1, best.unsqueeze(-1)).squeeze(-1).exp(),
        weight_one=logw[..., one].exp(),
        position=best,
    )


def edge_labels(position: np.ndarray, n_grid: int) -> np.ndarray:
    """Edge flag per θ* position: "low" on the grid's first point, "high" on its last, else
    the empty string."""
    position = np.asarray(position)
    return np.where(position == 0, "low", np.where(position == n_grid - 1, "high", ""))


def _entropy(e: Tensor) -> Tensor:
    """The listing's H (nats) of softmax(e) over the last axis, as the normaliser computes it."""
    return adaptive_stats(e)[0]


@torch.no_grad()
def collect_points(model: MaxRetrievalModel, cfg: TemperatureFitConfig) -> pd.DataFrame:
    """App. F's points: one row per kept (seed, set), columns :data:`POINT_COLUMNS`.

    ``set`` numbers the sets of one size (the same set for every seed); ``theta_star`` is on
    ``cfg.thetas()``, ``beta_star = 1/theta_star``; ``weight_star`` / ``weight_one`` are the
    maximal item's attention weight at θ* and at θ = 1 (the grid point nearest 1); ``edge``
    is "low" / "high" where θ* is the grid's first / last point, else "".
    """
    mc = model.cfg
    device = next(model.parameters()).device
    grid = cfg.thetas()
    thetas = torch.as_tensor(grid, device=device)
    S = len(model.seeds)
    seeds = torch.tensor(model.seeds, device=device)
    model.eval()
    parts = []
    for n in cfg.sizes:
        gen = set_generator(cfg.seed, n, device)
        per_chunk = max(1, cfg.chunk_items // n)
        for start in range(0, cfg.sets_per_size, per_chunk):
            b = min(per_chunk, cfg.sets_per_size - start)
            items, query, _ = make_batch(
                b, n, n_classes=mc.n_classes, query_dim=mc.query_dim, generator=gen, device=device
            )
            _, e = model.encode(items, query)  # (S, b, n)
            i_max = items[..., 0].argmax(-1).expand(S, b)  # (S, b): the maximal item
            keep = e.argmax(-1) != i_max  # (S, b)
            if not keep.any():
                continue
            found = max_item_temperature(e[keep], i_max[keep], thetas)  # each (kept,)
            pos = found.position.cpu().numpy()
            theta_star = grid[pos]
            edge = edge_labels(pos, len(grid))
            sets = torch.arange(start, start + b, device=device).expand(S, b)
            parts.append(
                pd.DataFrame(
                    {
                        "seed": seeds[:, None].expand(S, b)[keep].cpu().numpy(),
                        "size": n,
                        "set": sets[keep].cpu().numpy(),
                        "entropy": _entropy(e[keep]).double().cpu().numpy(),
                        "theta_star": theta_star,
                        "beta_star": 1.0 / theta_star,
                        "weight_star": found.weight.double().cpu().numpy(),
                        "weight_one": found.weight_one.double().cpu().numpy(),
                        "edge": edge,
                    }
                )
            )
    if not parts:  # nothing kept: an empty table with the columns' types
        dtypes = dict.fromkeys(POINT_COLUMNS, float) | {"seed": int, "size": int, "set": int}
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in (dtypes | {"edge": str}).items()})
    return pd.concat(parts, ignore_index=True)


def size_table(points: pd.DataFrame, cfg: TemperatureFitConfig, n_seeds: int) -> pd.DataFrame:
    """Per size: sets drawn (over seeds), kept, the kept fraction, optima on each edge of the
    grid, and the range of H: ``size, n_sets, kept, kept_frac, edge_low, edge_high,
    edge_frac, entropy_min, entropy_max``."""
    rows = []
    for n in cfg.sizes:
        p = points[points["size"] == n]
        low, high = int((p["edge"] == "low").sum()), int((p["edge"] == "high").sum())
        rows.append(
            {
                "size": n,
                "n_sets": cfg.sets_per_size * n_seeds,
                "kept": len(p),
                "kept_frac": len(p) / (cfg.sets_per_size * n_seeds),
                "edge_low": low,
                "edge_high": high,
                "edge_frac": (low + high) / len(p) if len(p) else float("nan"),
                "entropy_min": float(p["entropy"].min()) if len(p) else float("nan"),
                "entropy_max": float(p["entropy"].max()) if len(p) else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def run_temperature_fit(
    model: MaxRetrievalModel,
    cfg: TemperatureFitConfig,
    store: ResultStore,
    *,
    train_cfg: TrainConfig,
    name: str = "temperature_fit",
) -> dict[str, pd.DataFrame]:
    """Collect points and fit. Tables: ``{name}_points``, ``{name}_sizes`` (:func:`size_table`),
    ``{name}_coeffs`` (:func:`.fits.fit_table`), ``{name}_beta`` (:func:`.fits.beta_table`),
    ``{name}_bins`` (:func:`.fits.bin_table`), ``{name}_seed_fits``. The points are a stored
    part, keyed by everything that fixes the model's weights (its config, ``train_cfg``, the
    seeds) and ``cfg``, so a resumed run does not redo them and a model trained otherwise
    never reads them.

    The accuracy with each polynomial is measured in the benchmark's own evaluation pass
    (:func:`refit_norms` gives the normalisers), on the same sets as softmax.
    """
    params = {"model": model.cfg, "train": train_cfg, "seeds": model.seeds, "fit": cfg}
    with store.timed(f"{name}.collect"):
        points = store.part("fit_points", params, name, lambda: collect_points(model, cfg))
    with store.timed(f"{name}.fit"):
        fits = fit_table(points, cfg)
        tables = {
            f"{name}_points": points,
            f"{name}_sizes": size_table(points, cfg, len(model.seeds)),
            f"{name}_coeffs": fits,
            f"{name}_beta": beta_table(fits, threshold=cfg.threshold),
            f"{name}_bins": bin_table(points, fits, cfg.bin_width),
            f"{name}_seed_fits": seed_fits(points, cfg),
        }
        if len(model.seeds) >= 2:
            tables[f"{name}_folds"] = fold_fits(points, cfg)
    return tables


def refit_norms(fits: pd.DataFrame, threshold: float = ENTROPY_THRESHOLD) -> dict[str, NormSpec]:
    """The registry's ``adaptive`` normaliser with each refitted β-polynomial of ``fits`` on
    the grid's own lower bound (``refit``, ``refit_median``; inverse fits are θ-polynomials,
    which the normaliser does not take; the ``alt_theta_min`` fits only show sensitivity)."""
    own = fits["theta_min"] == fits["theta_min"].min()
    return {
        f"adaptive ({row.fit})": ("adaptive", {"coeffs": tuple(row.coeffs), "threshold": threshold})
        for row in fits[own].itertuples()
        if not row.inverse and row.fit != "paper"
    }


def fold_norms(folds: pd.DataFrame, threshold: float = ENTROPY_THRESHOLD) -> dict[str, NormSpec]:
    """The ``adaptive`` normaliser with each fold's refit (:func:`.fits.fold_fits`), labelled
    ``adaptive (refit, fold k)``: evaluated on every seed, judged on the fold's held-out ones."""
    return {
        fold_label(row.fit, int(row.fold)): (
            "adaptive",
            {"coeffs": tuple(row.coeffs), "threshold": threshold},
        )
        for row in folds.itertuples()
    }


def fold_label(fit: str, fold: int) -> str:
    """The evaluation label of ``fit`` fitted on fold ``fold``'s seeds."""
    return f"adaptive ({fit}, fold {fold})"
