"""Batched diagnostics of attention maps ``[..., query, key]``, with per-row boolean masks.

Per-row metrics return NaN where a row cannot be scored, with a ``valid`` flag beside it;
:func:`row_mean` averages the valid rows and counts the rest (``docs/conventions.md``).

- :mod:`~attnlimits.metrics.distance`: d̃ (Eq. 7), the Theorem 1 bound and the closed-form E
- :mod:`~attnlimits.metrics.expectation`: E = E_{I_N}[d̃] (Eq. 8) by enumeration and Monte Carlo
- :mod:`~attnlimits.metrics.separability`: N_s/N (Eq. 10) and the Theorem 2 bounds
- :mod:`~attnlimits.metrics.jacobian`: exact softmax Jacobian norm, finite-difference sensitivity
- :mod:`~attnlimits.metrics.entropy`: entropy, max weight, logit spread, effective support
- :mod:`~attnlimits.metrics.criticality`: critical N by the Kolmogorov–Smirnov test (Alg. 3)
- :mod:`~attnlimits.metrics.dispersion`: paper B's dispersion, the largest weight against n
  (numpy, imported by name, not re-exported here: it needs scipy)
"""

from attnlimits.metrics._rows import RowMean, row_mean
from attnlimits.metrics.criticality import CriticalN, critical_n
from attnlimits.metrics.distance import (
    DistanceCurve,
    DistanceMetrics,
    distance_curve,
    distance_metrics,
)
from attnlimits.metrics.entropy import (
    attention_entropy,
    effective_support,
    entropy_from_scores,
    logit_spread,
    max_weight,
    support_size,
    top_mass,
)
from attnlimits.metrics.expectation import (
    expected_distance_curve_mc,
    expected_distance_exact,
    expected_distance_monte_carlo,
)
from attnlimits.metrics.jacobian import (
    RowValues,
    finite_difference_sensitivity,
    jacobian_top_eigenvalue,
    softmax_jacobian_matrix,
    softmax_jacobian_norm,
    softmax_jacobian_norms,
)
from attnlimits.metrics.separability import (
    SeparabilityMetrics,
    min_pairwise_distance,
    min_pairwise_distances,
    normalize_to_sphere,
    separability_curve,
    separability_metrics,
)

__all__ = [
    "CriticalN",
    "DistanceCurve",
    "DistanceMetrics",
    "RowMean",
    "RowValues",
    "SeparabilityMetrics",
    "attention_entropy",
    "critical_n",
    "distance_curve",
    "distance_metrics",
    "effective_support",
    "entropy_from_scores",
    "expected_distance_curve_mc",
    "expected_distance_exact",
    "expected_distance_monte_carlo",
    "finite_difference_sensitivity",
    "jacobian_top_eigenvalue",
    "logit_spread",
    "max_weight",
    "min_pairwise_distance",
    "min_pairwise_distances",
    "normalize_to_sphere",
    "row_mean",
    "separability_curve",
    "separability_metrics",
    "softmax_jacobian_matrix",
    "softmax_jacobian_norm",
    "softmax_jacobian_norms",
    "support_size",
    "top_mass",
]
