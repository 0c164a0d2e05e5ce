"""Deriving the adaptive-temperature polynomial β(H) (Veličković et al., App. F; Fig. 6 analogue).

From a trained softmax max-retrieval model:

1. draw fresh sets at several sizes; keep the inputs the model gets wrong, i.e. where the
   maximum item's class does not get the largest output logit;
2. per kept input, grid-search the inverse temperature β applied to the attention scores,
   softmax(β·e), for the β that gives the maximum item's class the highest output probability;
   record (H, β*) with H the entropy (nats) of the unsharpened attention softmax(e);
3. fit a degree-4 polynomial β(H) with ``numpy.polyfit`` ("inverse" = inverse temperature:
   β itself is the fitted quantity, see docs/max_retrieval.md for why);
4. apply the listing's rule: β = max(poly(H), 1) where H > 0.5, else 1.

The objective in step 2 is the output probability, not the max item's attention weight: the
latter is monotone in β (it tends to 1 when the max item has the top score and to 0 when it
does not), so its grid optimum would always sit at an end of the grid.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from attnlimits.experiments.softmax_not_enough.config import (
    EvalConfig,
    NormSpec,
    TemperatureFitConfig,
)
from attnlimits.experiments.softmax_not_enough.evaluate import evaluate
from attnlimits.experiments.softmax_not_enough.model import MaxRetrievalModel, make_batch
from attnlimits.experiments.store import ResultStore
from attnlimits.normalizers.adaptive import (
    ENTROPY_THRESHOLD,
    POLY_COEFFS,
    adaptive_beta,
    adaptive_stats,
)

__all__ = [
    "apply_rule",
    "collect_points",
    "fit_polynomial",
    "fit_table",
    "run_temperature_fit",
]


def _entropy(e: Tensor) -> Tensor:
    """The listing's H (nats) of softmax(e), as the adaptive normaliser computes it."""
    return adaptive_stats(e)[0]


@torch.no_grad()
def collect_points(model: MaxRetrievalModel, cfg: TemperatureFitConfig) -> pd.DataFrame:
    """(H, β*) per kept input: ``size, entropy, beta_star, p_star, p_one`` (p = P(target))."""
    mc = model.cfg
    device = next(model.parameters()).device
    betas = cfg.beta_grid().tolist()
    gen = torch.Generator(device=device).manual_seed(cfg.seed)
    model.eval()
    rows = []
    for n in cfg.sizes:
        per_chunk = max(1, cfg.chunk_items // n)
        for start in range(0, cfg.sets_per_size, per_chunk):
            b = min(per_chunk, cfg.sets_per_size - start)
            items, query, target = make_batch(
                b, n, n_classes=mc.n_classes, query_dim=mc.query_dim, generator=gen, device=device
            )
            g, e = model.encode(items, query)  # (b, n, W), (b, 1, n)
            if cfg.only_errors:  # β = 1 is plain softmax: keep what it gets wrong
                wrong = model.readout(g, torch.softmax(e, -1)).argmax(-1) != target
                g, e, target = g[wrong], e[wrong], target[wrong]
            if len(target) == 0:
                continue
            p_t = torch.stack(  # (n_beta, kept): P(target class) at each β on the grid
                [
                    torch.softmax(model.readout(g, torch.softmax(beta * e, -1)), -1)
                    .gather(1, target[:, None])
                    .squeeze(1)
                    for beta in betas
                ]
            )
            best = p_t.argmax(0)  # first maximiser on ties
            H = _entropy(e).squeeze(1)
            rows += [
                {
                    "size": n,
                    "entropy": float(H[i]),
                    "beta_star": betas[int(best[i])],
                    "p_star": float(p_t[best[i], i]),
                    "p_one": float(p_t[0, i]),
                }
                for i in range(len(target))
            ]
    return pd.DataFrame(rows, columns=["size", "entropy", "beta_star", "p_star", "p_one"])


def fit_polynomial(
    entropy: np.ndarray, beta: np.ndarray, degree: int = 4, *, inverse: bool = False
) -> np.ndarray:
    """Least-squares polynomial, highest degree first (``np.polyfit``).

    ``inverse=False`` (our reading, the one the listing uses): fit β(H). ``inverse=True``: fit
    the temperature 1/β(H) instead; then β = 1/poly(H).
    """
    y = 1.0 / np.asarray(beta, float) if inverse else np.asarray(beta, float)
    return np.polyfit(np.asarray(entropy, float), y, degree)


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
    H = torch.from_numpy(np.array(entropy, dtype=float))
    if not inverse:
        return adaptive_beta(H, tuple(coeffs), threshold).numpy()
    poly = np.polyval(np.asarray(coeffs, float), H.numpy())
    beta = np.where(poly > 0, 1.0 / np.where(poly > 0, poly, 1.0), np.inf)
    return np.where(H.numpy() > threshold, np.maximum(beta, 1.0), 1.0)


def fit_table(points: pd.DataFrame, cfg: TemperatureFitConfig) -> pd.DataFrame:
    """Paper polynomial vs our refits: coefficients and RMS error in β on the points."""
    H, b = points["entropy"].to_numpy(), points["beta_star"].to_numpy()
    fits: dict[str, tuple[np.ndarray, bool]] = {
        "paper": (np.asarray(POLY_COEFFS), False),
        "refit": (fit_polynomial(H, b, cfg.degree), False),
        "refit_inverse": (fit_polynomial(H, b, cfg.degree, inverse=True), True),
    }
    rows = []
    for name, (c, inv) in fits.items():
        pred = apply_rule(H, c, cfg.threshold, inverse=inv)
        rows.append(
            {
                "fit": name,
                "inverse": inv,
                "coeffs": [float(x) for x in c],
                "rmse_beta": float(np.sqrt(np.mean((pred - b) ** 2))),
                "n_points": len(b),
            }
        )
    return pd.DataFrame(rows)


def run_temperature_fit(
    model: MaxRetrievalModel,
    cfg: TemperatureFitConfig,
    eval_cfg: EvalConfig,
    store: ResultStore,
    *,
    name: str = "temperature_fit",
) -> dict[str, pd.DataFrame]:
    """Collect points, fit, evaluate accuracy with each polynomial: tables ``{name}_points``,
    ``{name}_coeffs`` (coefficients as text), ``{name}_accuracy``."""
    with store.timed(f"{name}.collect"):
        points = collect_points(model, cfg)
    fits = fit_table(points, cfg)
    norms: dict[str, NormSpec] = {"softmax": ("softmax", {})}
    for row in fits.itertuples():
        if not row.inverse:  # the registry's adaptive normaliser takes β-polynomials
            norms[f"adaptive_{row.fit}"] = (
                "adaptive",
                {"coeffs": tuple(row.coeffs), "threshold": cfg.threshold},
            )
    with store.timed(f"{name}.evaluate"):
        acc = evaluate(model, eval_cfg, norms)
    return {
        f"{name}_points": points,
        f"{name}_coeffs": fits.assign(coeffs=fits["coeffs"].map(lambda c: [float(v) for v in c])),
        f"{name}_accuracy": acc,
    }
