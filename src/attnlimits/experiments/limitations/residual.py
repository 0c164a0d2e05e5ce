"""Theorem 1's remark on its residual as a claims row (the round-4 referee's point 20): "the
residual ε captures the Jensen gap and is small whenever the individual weights α_i are not too
concentrated", judged by :data:`.rules.small_residual` on the cells the run already holds."""

from __future__ import annotations

import pandas as pd

from attnlimits.claims.verdicts import Row
from attnlimits.experiments.limitations import rules
from attnlimits.experiments.limitations.findings import judged_row

__all__ = ["claim_small_residual"]

_NEED = ("expectation_exact", "expectation_exact_se", "expectation")


def claim_small_residual(df: pd.DataFrame) -> list[Row]:
    """Per (window, layer, head, L, N) of ``df`` (Alg. 1 and 2's cells) ε = E exact − E derived
    against E exact, to 3 SE of E exact; not computed where the run lacks E exact."""
    if not set(_NEED) <= set(df):
        return [judged_row("Jensen", "not computed in this run", rules.not_run)]
    cells = df.dropna(subset=list(_NEED))
    if cells.empty:
        return [judged_row("Jensen", "not computed in this run", rules.not_run)]
    eps = cells["expectation_exact"] - cells["expectation"]
    ratio = eps.abs() / cells["expectation_exact"]
    q = ratio.quantile([0.5, 0.9, 1.0])
    slack = 3 * cells["expectation_exact_se"]
    small = float((eps.abs() <= rules.EPS_SMALL.value * cells["expectation_exact"] + slack).mean())
    negative = float((eps < -slack).mean())
    measured = (
        f"|ε| / E exact over {len(cells)} (window, layer, head, L, N) at Alg. 1/2's N: median "
        f"{q[0.5]:.3g}, 90th percentile {q[0.9]:.3g}, largest {q[1.0]:.3g}; "
        f"≤ {rules.EPS_SMALL:g} (to 3 SE) in {small:.1%} of them; ε < 0 beyond 3 SE in "
        f"{negative:.1%} (the weights' concentration is not stored)"
    )
    return [
        judged_row(
            "Jensen",
            measured,
            rules.small_residual,
            eps.tolist(),
            cells["expectation_exact"].tolist(),
            cells["expectation_exact_se"].tolist(),
        )
    ]
