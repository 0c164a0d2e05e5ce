"""Head kinds and the papers' flags: the rules, in one place (the report and docs print them).

A head gets **one kind** per length: the first rule of :data:`KINDS` it meets, in order; its kind
over all lengths is the kind it has at most lengths (a tie goes to the longer length). The
thresholds are ours; the report prints the evidence (each score) beside the kind so a reader can
apply their own.

The **flags** restate the papers' guidelines as tests on one head:

- ``layer_critical_n``: paper A finds the critical N near 0.06 L ("fewer than 6 % of tokens");
  flagged where the critical N of the head's **layer** (Alg. 3 with that layer's heads as the
  samples) exceeds ``ABOUT`` · ``critical_fraction`` · L (twice the paper's, the bound past
  which the claims' rule reads "not reproduced"), or no N of the grid passes while the grid
  reaches that far. A property of the layer, so every head of a flagged layer raises it. Not
  ``critical_fraction`` · L itself: on a grid of powers of two the first N at or past
  0.06 L is 0.0625 L, the closest the grid comes to the paper, and it was flagged;
- ``active_set``: paper A's guideline "keep the active set small" for one head: flagged where
  the effective support exp(H) (the perplexity of a row) exceeds ``critical_fraction`` of its
  keys on average;
- ``dispersing``: paper B's Lemma 2.1: with bounded logits the largest weight falls as O(1/L);
  flagged where the maximum weight falls at least like 1/√L (slope of log max weight against
  log L ≤ −0.5, half-way to 1/L's −1) over the scanned lengths;
- ``vanishing_gradient``: paper A, Alg. 5 / Fig. 4: the softmax Jacobian, at most 1/(2T), drops
  by orders of magnitude where attention saturates or spreads; flagged where the head's mean
  exact ‖J‖₂ at its own scale is below 0.01 (two orders under the 1/2 bound at T = 1);
- ``assumption2``: paper A's Assumption 2 (distinct x_i, δ > 0) fails: some value vectors
  coincide, so Theorem 2's bounds do not apply to that head.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnlimits.claims.statistics import slope_interval
from attnlimits.experiments.scan.rules import ABOUT, DISPERSING
from attnlimits.metrics.dispersion import dispersion_slope

__all__ = [
    "DISPERSING_SLOPE",
    "FLAGS",
    "KINDS",
    "VANISHING_JACOBIAN",
    "dispersion_slopes",
    "flag_heads",
    "head_kind",
    "kinds",
]

#: (kind, column, threshold, rule in words); the first rule a head meets gives its kind.
KINDS: tuple[tuple[str, str, float, str], ...] = (
    (
        "induction",
        "induction",
        0.3,
        "induction score ≥ 0.3: on random tokens repeated once, the second copy puts ≥ 0.3 of its "
        "weight on the token after the first occurrence (decoders only)",
    ),
    ("sink", "sink_mass", 0.5, "sink mass ≥ 0.5: half the weight or more on the first token"),
    ("previous-token", "prev_token", 0.5, "weight on the previous token ≥ 0.5"),
    ("local", "local_mass", 0.5, "weight on the last 8 tokens (the token itself included) ≥ 0.5"),
    ("sharp", "max_weight", 0.3, "maximum weight ≥ 0.3 elsewhere: retrieval-like"),
    ("broad", "", 0.0, "none of the above: the weight is spread (dispersed)"),
)
#: A head disperses where log max weight falls at least this fast in log L (1/L is −1): the
#: claims' threshold (:data:`.rules.DISPERSING`, with its provenance), as a number.
DISPERSING_SLOPE = DISPERSING.value
#: A head's gradients vanish where its mean exact ‖J‖₂ (T = 1) is below this (bound: 1/2).
VANISHING_JACOBIAN = 0.01
#: Flag -> what the paper says (the report prints it beside the flagged heads).
FLAGS = {
    "layer_critical_n": "paper A (Fig. 2c, Discussion): the critical N is ≈ 0.06 L; past it the "
    "layer's heads cannot tell their top-N tokens from a random set; this head's layer needs "
    "over twice that (a property of the layer: all its heads raise it)",
    "active_set": "paper A (Guidelines): keep the active set small (≈ 6 % of tokens); this "
    "head spreads its weight over more",
    "dispersing": "paper B (Lemma 2.1, Thm 2.2): softmax weights disperse as O(1/L) with bounded "
    "logits; a head that must stay sharp needs help (e.g. adaptive temperature)",
    "vanishing_gradient": "paper A (Alg. 5, Fig. 4; Guidelines): the softmax Jacobian collapses "
    "where attention saturates or spreads; gradients through this head are small",
    "assumption2": "paper A (Assumption 2): x_i must be distinct (δ > 0); Theorem 2's bounds do "
    "not apply to this head",
}


def kinds(df: pd.DataFrame) -> pd.Series:
    """The kind of every row of ``df`` (one row per layer, head, length) by :data:`KINDS`."""
    out = pd.Series("broad", index=df.index, dtype=object)
    decided = pd.Series(False, index=df.index)
    for kind, column, threshold, _ in KINDS[:-1]:
        if column not in df:
            continue
        hit = ~decided & (df[column].fillna(-np.inf) >= threshold)
        out[hit] = kind
        decided |= hit
    return out


def head_kind(per_length: pd.DataFrame) -> pd.Series:
    """One kind per (layer, head): the kind at most lengths, a tie going to the longer length."""
    ranked = per_length.sort_values("length", ascending=False)
    counts = ranked.groupby(["layer", "head", "kind"], sort=False).size().rename("n").reset_index()
    first = ranked.groupby(["layer", "head", "kind"], sort=False)["length"].max().to_numpy()
    counts["longest"] = first
    best = counts.sort_values(["n", "longest"], ascending=False).groupby(["layer", "head"]).head(1)
    return best.set_index(["layer", "head"])["kind"]


def dispersion_slopes(per_length: pd.DataFrame) -> pd.DataFrame:
    """Per (layer, head): paper B's dispersion rate, the least-squares slope of log max weight
    against log L over the scanned lengths (:func:`attnlimits.metrics.dispersion_slope`: 1/L
    dispersion has slope −1), and the slope of entropy against log L (an entropy that keeps up
    with log L has slope 1); NaN with one length."""
    wide = per_length.pivot_table(
        index=["layer", "head"], columns="length", values=["max_weight", "entropy"]
    )
    lengths = wide["max_weight"].columns.to_numpy(float)  # (L,)
    return pd.DataFrame(
        {
            "dispersion_slope": dispersion_slope(lengths, wide["max_weight"].to_numpy(float)),
            "entropy_slope": slope_interval(
                np.log(lengths), wide["entropy"][wide["max_weight"].columns].to_numpy(float)
            ).estimate,
        },
        index=wide.index,
    ).reset_index()


def flag_heads(per_length: pd.DataFrame, fraction: float) -> pd.DataFrame:
    """Boolean flag columns ``flag_<name>`` for every row (layer, head, length); see the module
    docstring. ``per_length`` needs critical_n (the layer's), n_max_tested, support_fraction,
    jacobian_norm, duplicate_keys and dispersion_slope columns (NaN: not measured, not flagged)."""
    crit = per_length["critical_n"]
    past = ABOUT * fraction * per_length["length"]  # twice the paper's ≈ 0.06 L
    return pd.DataFrame(
        {
            "flag_layer_critical_n": (crit > past)
            | ((crit == -1) & (per_length["n_max_tested"] >= past)),
            "flag_active_set": per_length["support_fraction"] > fraction,
            "flag_dispersing": per_length["dispersion_slope"] <= DISPERSING_SLOPE,
            "flag_vanishing_gradient": per_length["jacobian_norm"] < VANISHING_JACOBIAN,
            "flag_assumption2": per_length["duplicate_keys"] > 0,
        },
        index=per_length.index,
    )
