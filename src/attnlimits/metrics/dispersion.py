"""Dispersion, paper B's word, measured once: the largest attention weight against the number
of items.

Paper B (Veličković et al.), §1: "Here by dispersing we mean that, as the number of input items
grows, the coefficient attached to each individual item must decay towards zero." Lemma 2.1
bounds it: with logits in a band of width Δ, every weight is at most 1/(1 + (n − 1)e^{−Δ/θ}),
so O(1/n) (:func:`attnlimits.theory.dispersion_bounds`). Dispersion is a *trend over n* of
the largest weight, measured here two ways, each for the experiment that needs it:

- :func:`dispersion_slope`: the rate, the least-squares slope of log max weight against log n
  (0: no dispersion; −1: the uniform 1/n); the scan's per-head ``dispersion_slope`` and its
  ``dispersing`` flag (slope ≤ −0.5);
- :func:`falls_throughout`: the largest weight falls at every larger n; paper B's max-retrieval
  claims (the max item's mean attention over the attention profile's sizes).

Two measures that read as dispersion are other statistics and keep other names:

- the *normalised entropy* H / log n (1: uniform) of one row at one n, a state, not a trend:
  the monitor's "dispersed" warning (H / log n_keys above ``disperse_ratio`` on every row of a
  head) and long-context's ``entropy_ratio`` column;
- the entropy rising with n: long-context's "attention disperses" claim judges the answer row's
  entropy, not its largest weight (an entropy trend; under a bounded spread both follow from
  Lemma 2.1, but they are not the same number).
"""

from __future__ import annotations

import numpy as np

from attnlimits.claims.statistics import loglog_slope

__all__ = ["dispersion_slope", "falls_throughout"]


def dispersion_slope(lengths: np.ndarray, max_weight: np.ndarray) -> np.ndarray:
    """The least-squares slope of log ``max_weight`` against log ``lengths`` along the last axis
    (:func:`attnlimits.claims.statistics.loglog_slope`): −1 for weights that fall as 1/n,
    0 for weights that do not fall. Points with a weight ≤ 0 or NaN are left out; fewer than
    two points, or one length only: NaN."""
    n = np.asarray(lengths, np.float64)
    if bool((n <= 0).any()):
        raise ValueError("lengths must be > 0")
    return loglog_slope(n, max_weight).estimate


def falls_throughout(max_weight: np.ndarray) -> np.ndarray:
    """Whether the largest weight, ordered by n along the last axis, falls at every larger n
    (strictly); vacuously true for fewer than two values (the caller decides whether one n can
    judge anything)."""
    w = np.asarray(max_weight, np.float64)
    if w.ndim < 1:
        raise ValueError("falls_throughout needs the weights along a last axis")
    return np.asarray((np.diff(w, axis=-1) < 0).all(-1))
