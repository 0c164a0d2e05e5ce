"""Paper A (Mudarisov et al., NeurIPS 2025), §3, Figure 4 and finding (v): at low temperature,
do the sensitivity curves follow 1/T or saturate?

Printed, three statements about T < 0.1 that cannot all hold:

1. finding (v): for T < 0.1 "the empirical curves follow the theoretical 1/T trend of Corollary 3;
   smaller ε values yield larger gradients" (the paper's words, its mathematics rendered);
2. Figure 4's dashed reference, min{1/(4T), √2} (Corollary 3), is *flat* at √2 for
   T < 1/(4√2) ≈ 0.177: it saturates exactly where the curves are said to grow as 1/T;
3. the conclusions speak of sensitivity "saturating at low temperature".

Alg. 5's δ(T, ε) = ||softmax((l + εv)/T) − softmax(l/T)|| / ε is at most min{1/(2T), √2/ε}
(a derivative bound and a bound on a difference of two distributions). So δ follows 1/T only
while ε ≪ T and only for rows whose top logits are (nearly) tied, it saturates at about √2/ε
once ε ≳ T, and for a row with a clear top logit it *vanishes* as T → 0 (softmax saturates to
one-hot). Which of the three statements one sees depends on ε and on the rows, not on T alone.

``python -m attnlimits.errata figure4_low_temperature`` prints the printed curve's log-log slope
on each side of T = 0.177 and δ on three rows (two tied top logits, a top logit 1 above the
next, Gaussian logits) for Alg. 5's T grid and ε: seeded, CPU, well under a second.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from attnlimits.claims import statistics
from attnlimits.metrics.jacobian import finite_difference_sensitivity
from attnlimits.theory.sensitivity import corollary3_bound_as_printed

TEMPERATURES = tuple(float(t) for t in np.logspace(-3, 2, 11))  # Alg. 5's grid in the run
EPSILONS = (1e-3, 1e-1, 10.0)  # the paper's ε
KNEE = 1 / (4 * math.sqrt(2.0))  # where 1/(4T) meets √2: the printed curve is flat below


def rows(seed: int = 0) -> dict[str, Tensor]:
    """Logit rows of length 64, float64: two tied top logits (the others 30 below), a top
    logit 1 above the next, and Gaussian logits (σ = 3)."""
    gen = torch.Generator().manual_seed(seed)
    tied = torch.full((64,), -30.0, dtype=torch.float64)
    tied[:2] = 0.0
    gap = tied.clone()
    gap[0] = 1.0
    gauss = 3.0 * torch.randn(64, generator=gen, dtype=torch.float64)
    return {"tied top two": tied, "top 1 above the next": gap, "Gaussian (σ = 3)": gauss}


def loglog_slope(t: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of log y against log t over the points with y > 0 (δ underflows
    to 0 at small T on rows with a clear top logit); NaN with fewer than two
    (:func:`attnlimits.claims.statistics.loglog_slope`)."""
    return float(statistics.loglog_slope(t, y).estimate)


class Curve(NamedTuple):
    row: str
    eps: float
    values: np.ndarray  # δ per T of TEMPERATURES
    slope_low: float  # log-log slope over T < 0.1
    drop: float  # δ(T = 0.1) / δ(T = 1)


def printed_slopes() -> tuple[float, float]:
    """Log-log slope of min{1/(4T), √2} over the grid's T below and above the knee."""
    t = np.asarray(TEMPERATURES)
    y = np.asarray(corollary3_bound_as_printed(torch.tensor(t)))
    return loglog_slope(t[t < KNEE], y[t < KNEE]), loglog_slope(t[t > KNEE], y[t > KNEE])


def curves(seed: int = 0) -> list[Curve]:
    """δ(T, ε) of Alg. 5 on each row of :func:`rows` (one seeded direction per row)."""
    t = np.asarray(TEMPERATURES)
    low = t < 0.1
    i01, i1 = int(np.argmin(abs(t - 0.1))), int(np.argmin(abs(t - 1.0)))
    out = []
    gen = torch.Generator().manual_seed(seed + 1)
    for name, row in rows(seed).items():
        fd = finite_difference_sensitivity(row[None], TEMPERATURES, EPSILONS, generator=gen)
        vals = fd.values[0].numpy()  # (T, ε)
        for j, eps in enumerate(EPSILONS):
            v = vals[:, j]
            drop = float(v[i01] / v[i1]) if v[i1] > 0 else math.inf
            out.append(Curve(name, eps, v, loglog_slope(t[low], v[low]), drop))
    return out


def main() -> None:
    below, above = printed_slopes()
    print("Paper A, Figure 4 / finding (v): at T < 0.1, 1/T or saturation?\n")
    print(f"Printed reference min{{1/(4T), sqrt 2}}: flat at sqrt 2 for T < {KNEE:.3f}")
    print(f"  log-log slope over the grid's T < {KNEE:.3f}: {below:.2f}", end="")
    print(f"; over T > {KNEE:.3f}: {above:.2f}")
    print("  finding (v): the curves follow 1/T (slope -1) for T < 0.1, inside the flat part\n")
    print("Alg. 5's delta(T, eps) = ||softmax((l + eps v)/T) - softmax(l/T)|| / eps, L = 64;")
    print("slope: log-log over T < 0.1 (where delta > 0); drop: delta(T = 0.1) / delta(T = 1)")
    found = curves()
    print(f"{'row':<22}{'eps':>7}{'slope':>8}{'drop':>10}")
    for c in found:
        print(f"{c.row:<22}{c.eps:>7g}{c.slope_low:>8.2f}{c.drop:>10.3g}")
    print("\ndelta per T:")
    print(f"{'row':<22}{'eps':>7}" + "".join(f"{t:>10.3g}" for t in TEMPERATURES))
    for c in found:
        print(f"{c.row:<22}{c.eps:>7g}" + "".join(f"{v:>10.3g}" for v in c.values))
    print(
        "\nVerdict: the three statements describe different things. delta <= min{1/(2T), "
        "sqrt 2/eps}:\nit follows 1/T only for (nearly) tied top logits with eps << T "
        "(tied row, eps = 1e-3);\nit is flat at about sqrt 2/eps once eps >~ T (eps = 0.1, 10): "
        "the dashed curve's flat\npart is that sqrt 2, a bound on a difference of two "
        "distributions, not on a derivative\n(see corollary3); and a row with a clear top logit "
        "saturates to one-hot, where delta -> 0\nas T -> 0 ('saturating at low temperature'). "
        "The report judges (v) as stated (slope -1\nfor T < 0.1) and shows the verdict with "
        "the smallest eps alone beside it."
    )


if __name__ == "__main__":
    main()
