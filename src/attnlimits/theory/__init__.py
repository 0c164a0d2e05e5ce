"""Closed-form bounds of both papers, one pure function each (one module per paper section).

Paper A (Mudarisov et al., 2025): :mod:`~attnlimits.theory.vanishing` (Lemma 1, Corollary 1),
:mod:`~attnlimits.theory.distance` (Theorem 1, Corollary 2), :mod:`~attnlimits.theory.geometry`
(Theorem 2), :mod:`~attnlimits.theory.sensitivity` (Lemma 2, Corollary 3),
:mod:`~attnlimits.theory.coverage` (multi-head coverage, Discussion).
Both: :mod:`~attnlimits.theory.estimation` (standard error of a measured accuracy).
Paper B (Veličković et al., 2025): :mod:`~attnlimits.theory.dispersion` (Lemma 2.1,
Propositions 3.1 and 3.2).

Where a printed statement is wrong, the default here is what the numbers support and the
printed form is kept under a name that says so; ``docs/errata.md`` has the evidence.
"""

from attnlimits.theory.coverage import heads_for_coverage, multihead_coverage
from attnlimits.theory.dispersion import (
    dispersion_bounds,
    entropy_beta_derivative,
    projected_spread_bound,
)
from attnlimits.theory.distance import (
    expected_distance,
    fixed_selection_bound,
    full_selection_limit,
    jensen_gap_bound,
    large_context_limit,
    prob_not_selected,
)
from attnlimits.theory.estimation import binomial_standard_error, sets_for_standard_error
from attnlimits.theory.geometry import separability_bounds, xi
from attnlimits.theory.sensitivity import (
    corollary3_bound_as_printed,
    lemma2_bound_as_printed,
    normalizer_jacobian,
    normalizer_jacobian_norm_bound,
    softmax_jacobian_norm_bound,
    softmax_perturbation_bound,
)
from attnlimits.theory.vanishing import (
    logit_magnitude_bound,
    normalizer_weight_bounds,
    softmax_weight_bounds,
)

__all__ = [
    "binomial_standard_error",
    "corollary3_bound_as_printed",
    "dispersion_bounds",
    "entropy_beta_derivative",
    "expected_distance",
    "fixed_selection_bound",
    "full_selection_limit",
    "heads_for_coverage",
    "jensen_gap_bound",
    "large_context_limit",
    "lemma2_bound_as_printed",
    "logit_magnitude_bound",
    "multihead_coverage",
    "normalizer_jacobian",
    "normalizer_jacobian_norm_bound",
    "normalizer_weight_bounds",
    "prob_not_selected",
    "projected_spread_bound",
    "separability_bounds",
    "sets_for_standard_error",
    "softmax_jacobian_norm_bound",
    "softmax_perturbation_bound",
    "softmax_weight_bounds",
    "xi",
]
