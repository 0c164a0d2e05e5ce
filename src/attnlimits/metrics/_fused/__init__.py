"""Fused CPU kernels for the top-N metrics of paper A (Mudarisov et al., NeurIPS 2025, Eqs. 6–12).

Why hand-written: each N of a grid is, in plain torch, about ten elementwise passes over a
[head, Q, K] temporary (one product, then add, clamp, sqrt, masks, sum), and at L = 1024 those
passes, not the arithmetic, are the time (docs/benchmarks.md). ``torch.compile`` fuses them but
costs about 20 s of C++ compilation per graph on a fresh machine and cannot express the
cheaper recurrence below; numba compiles these loops in a few seconds, once (cached on disk),
and ships as a wheel. The torch code in :mod:`~attnlimits.metrics.distance`,
:mod:`~attnlimits.metrics.separability` and :mod:`~attnlimits.metrics.expectation` stays the
device-generic path (GPU, autograd, float16 callers) and the reference the tests hold these
kernels to.

One row (a query of one head) at a time, all rows in parallel (``numba.prange``, each row
written by one thread, so results do not depend on the thread count):

- :func:`topn_rows`: the nested sets I_N of a row (the first N keys of ``order``: by weight for
  the top-N metrics, random for E exact) grow one key at a time, and ⟨x_i, s_N⟩ for every key
  grows with them by one row of the Gram matrix G = x xᵀ (``acc += α_j G_j``): N_max·K
  multiply-adds a row for the whole grid, instead of one [d]×[d, K] product per N. Per N, in
  one pass over the keys: d̃ = Σ_{kept i∉I_N} ||α_i x_i − s_N|| (Eq. 7) from
  ||α_i x_i − s||² = α_i²G_ii − 2α_i⟨x_i, s⟩ + ||s||²; on request the ball radius
  r = min_{kept i∉I_N} ||α_i x_i − s|| and the Theorem 1.1 parts (d_1, max_{j∈I_N}||x_j||, ᾱ_N).
- :func:`separability_rows`: the same recurrence in float64 for Eq. 10's ball radius and the
  direct count N_s.
- :func:`expectation_rows`: Theorem 1.2's closed forms of E (derived and printed) for every N
  and the Jensen-gap bounds where asked, one pass over the keys per N.

``ATTNLIMITS_FUSED=0`` in the environment turns these kernels off (the torch path runs).
"""

from attnlimits.metrics._fused.expectation import expectation_rows
from attnlimits.metrics._fused.grid import distance_grid
from attnlimits.metrics._fused.rows import FlatRows, enabled, flat_rows, gram_tables, top_order
from attnlimits.metrics._fused.selection import (
    TopNOut,
    pairwise_min,
    separability_rows,
    topn_rows,
)
from attnlimits.metrics._fused.sensitivity import jacobian_rows, perturbation_rows

__all__ = [
    "FlatRows",
    "TopNOut",
    "distance_grid",
    "enabled",
    "expectation_rows",
    "flat_rows",
    "gram_tables",
    "jacobian_rows",
    "pairwise_min",
    "perturbation_rows",
    "separability_rows",
    "top_order",
    "topn_rows",
]
