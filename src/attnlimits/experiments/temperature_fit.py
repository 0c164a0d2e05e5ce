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
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from matplotlib.figure import Figure
from torch import Tensor

from attnlimits.experiments.max_retrieval import (
    EvalConfig,
    MaxRetrievalModel,
    NormSpec,
    evaluate,
    make_batch,
)
from attnlimits.experiments.store import ResultStore
from attnlimits.normalizers.adaptive import ENTROPY_THRESHOLD, POLY_COEFFS, adaptive_beta

__all__ = [
    "TemperatureFitConfig",
    "apply_rule",
    "collect_points",
    "fit_polynomial",
    "fit_table",
    "plot_fit",
    "run_temperature_fit",
]


@dataclass
class TemperatureFitConfig:
    """Where to collect (H, β*) points and how to search β.

    ``beta_grid()`` is geometric from ``beta_min`` to ``beta_max`` (default 1..50, 200 points,
    about 2 % apart): β < 1 is never used by the rule, and the published polynomial stays
    below 2.5, so 50 leaves ample head-room while keeping the relative resolution uniform.
    """

    sizes: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024, 2048)
    sets_per_size: int = 2000
    beta_min: float = 1.0
    beta_max: float = 50.0
    n_beta: int = 200
    degree: int = 4
    threshold: float = ENTROPY_THRESHOLD
    only_errors: bool = True
    seed: int = 777
    chunk_items: int = 1 << 15

    def __post_init__(self) -> None:
        self.sizes = tuple(int(s) for s in self.sizes)
        if not self.sizes or min(self.sizes) < 2:
            raise ValueError(f"sizes must be ints >= 2, got {self.sizes}")
        if not 0 < self.beta_min < self.beta_max or self.n_beta < 2:
            raise ValueError(
                f"need 0 < beta_min < beta_max and n_beta >= 2, got "
                f"{self.beta_min}, {self.beta_max}, {self.n_beta}"
            )
        if self.degree < 0 or self.sets_per_size < 1 or self.chunk_items < 1:
            raise ValueError("degree must be >= 0, sets_per_size and chunk_items >= 1")

    def beta_grid(self) -> np.ndarray:
        return np.geomspace(self.beta_min, self.beta_max, self.n_beta)


def _entropy(e: Tensor) -> Tensor:
    p = torch.softmax(e, -1)
    return -(p * torch.log(p + 1e-9)).sum(-1)  # the listing's H, nats


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


def plot_fit(
    points: pd.DataFrame, fits: pd.DataFrame, threshold: float = ENTROPY_THRESHOLD
) -> Figure:
    """Fig. 6 analogue: the (H, β*) points and each polynomial, raw (dashed) and under the rule."""
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.scatter(
        points["entropy"], points["beta_star"], s=4, alpha=0.3, color="0.4", label="β* (grid)"
    )
    H = np.linspace(0.0, max(float(points["entropy"].max()), 1.0) if len(points) else 6.0, 300)
    for (_, row), color in zip(fits.iterrows(), ("C0", "C1", "C2"), strict=False):
        c = np.asarray(row["coeffs"])
        raw = np.polyval(c, H)
        raw = 1.0 / np.where(raw > 0, raw, np.nan) if row["inverse"] else raw
        ax.plot(H, raw, "--", color=color, lw=1)
        ax.plot(
            H,
            apply_rule(H, c, threshold, inverse=row["inverse"]),
            color=color,
            label=f"{row['fit']} (RMSE {row['rmse_beta']:.2f})",
        )
    ax.axvline(threshold, color="0.7", lw=0.8)
    ax.set(
        xlabel="entropy H of softmax(e) (nats)",
        ylabel="inverse temperature β",
        yscale="log",
        title="Adaptive temperature: β*(H) and degree-4 fits",
    )
    ax.legend(fontsize=8)
    return fig


def run_temperature_fit(
    model: MaxRetrievalModel,
    cfg: TemperatureFitConfig,
    eval_cfg: EvalConfig,
    store: ResultStore,
    *,
    name: str = "temperature_fit",
) -> dict[str, pd.DataFrame]:
    """Collect points, fit, evaluate accuracy with each polynomial; save tables and figure."""
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
    store.write_table(points, f"{name}_points")
    store.write_table(fits.assign(coeffs=fits["coeffs"].map(str)), f"{name}_coeffs")
    store.write_table(acc, f"{name}_accuracy")
    fig = plot_fit(points, fits, cfg.threshold)
    store.save_figure(fig, name)
    plt.close(fig)
    store.update_meta(**{name: {"config": cfg, "eval": eval_cfg}})
    return {"points": points, "fits": fits, "accuracy": acc}
