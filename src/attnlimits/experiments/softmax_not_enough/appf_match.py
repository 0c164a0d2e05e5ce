"""Does App. F's procedure give the published polynomial? The rule, its statistic and its row.

Paper B (Veličković et al., *Softmax is not Enough*), §4.1: "Then we fit an inverse degree-4
polynomial to this data—see Figure 6—and use it to predict temperatures to use at inference
time." The rule was written down before the runs it decides (docs/max_retrieval.md, "The θ
grid's floor and training-size inputs: the rule, written before the run", 2026-11-28):

- **Statistic** (:func:`match_table`): on a set of App. F points, the fit App. F describes
  (least squares of β* on H, degree 4, ``np.polyfit``) pooled over the seeds, and the same fit
  on each seed's points alone (a seed with at most ``degree`` points has none). At each H of
  :data:`H_AT` inside the points' entropy range (outside it a polynomial is extrapolation: H
  is not tested), the distance d(H) = |pooled(H) − published(H)| and the seeds' spread
  s(H) = max over seeds |seed(H) − pooled(H)|; H *matches* when d(H) ≤ s(H): the published
  polynomial is no further from our pooled fit than one of our own single-model fits is
  (the paper fitted one model).
- **Since 2026-11-28, the (F) row's statistic** (:func:`interval_table`, :data:`INTERVAL_RULE`,
  referee point 1 of docs/referee_round3.md; *set after earlier runs were public*: the per-seed
  fits had been committed on 2026-11-27): the largest single-seed deviation is a maximum over
  seeds, which only grows as seeds are added and is set by the one farthest seed (at H = 4,
  seed 0's fit of 40.3). In its place, at each tested H, the seeds' own fits give the
  :data:`FIT_LEVEL` interval of their mean (Student's t on seeds − 1 degrees of freedom,
  :func:`attnlimits.claims.statistics.difference_interval`); H *matches* where the published
  β(H) lies inside it. The verdict's words follow the same rule (:func:`judge_published`).
  The max-spread statistic above stayed for (G) and (T) until round 4 (below).
- **Rule** (:data:`PUBLISHED_RULE`): fewer than :data:`MIN_SEEDS` seeds with a fit, or no H
  tested: not testable; every H of :data:`H_AT` tested and matching: reproduced; no tested H
  matching: not reproduced; otherwise partly.
- **(G), a grid floor** (:func:`floor_table`, :func:`floor_verdict`): the points with θ*
  raised to each floor of :data:`FLOORS` (:func:`.fits.clamp_points`, exact: w is unimodal in
  θ); supported if the rule says reproduced at some floor; partly supported if not, but at
  some floor it says partly or the rise r = fit(4)/fit(2) matches; not supported otherwise.
- **(T), training-size inputs**: the rule on points collected at the training sizes only
  (:data:`TRAINING_SIZES`, :data:`TRAINING_SETS` sets per size); at most partly, since a
  softmax over at most 16 items has H ≤ ln 16 ≈ 2.77 nats.
- **Since 2026-11-28 (referee round 4, point 17; set after earlier runs were public, the
  direction stricter)**, (G) and (T) are judged by the (F) row's rule, :data:`INTERVAL_RULE`
  on :func:`interval_table` (the published β(H) inside the seeds' :data:`FIT_LEVEL`
  t-interval), not by the max-spread rule that round 3 retired for (F); and the rise matches
  where the published r lies inside the :data:`FIT_LEVEL` t-interval of the seeds' own rises
  (:func:`rise_interval`), not within the largest |r_seed − r_pooled|. One rule for all three:
  the committed (G) and (T) verdicts of 2026-11-28 had been decided by the max-spread rule.
- **Since 2026-11-28 (referee round 6, point 1; set after the runs, the direction stricter)**,
  a match that the floor's cap makes does not count for (G): at each floor, an H where at
  least :data:`CAPPED` of the points within :data:`CAP_WINDOW` nats of it had θ* below the
  floor (raised to it, so that their β* is the cap 1/floor) is *decided by the cap* and
  counts as not tested (:func:`capped_shares`); a floor's (G) verdict is :func:`judge_published`
  on the other H (column ``counted``), and its rise counts only where neither H = 2 nor H = 4 is
  capped (``rise_counted``). Before it, floor 0.39's H = 4 interval [2.34, 2.44] holding the
  published 2.39 made (G) *partly supported* at 20,000 steps, though every point near H = 4 sat
  on that floor: the cap 1/0.39 = 2.56 put it there, whatever the data. App. F itself says of
  its grid: "Empirically, we find that for all samples we cared about, was definitely in this
  range" (the symbol lost in our copy), so its θ* did not sit on the grid's lower end. The
  floors' range 0.20 … 0.50 was chosen by issue 56 after a quick run had shown that a cap near
  2.5 gives the plateau (set after a run was public).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from attnlimits.claims.rules import Rule
from attnlimits.claims.statistics import difference_interval
from attnlimits.claims.thresholds import AFTER_RUNS, OURS, Threshold
from attnlimits.claims.verdicts import (
    FINDING,
    HEADLINE,
    NA,
    NOT,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
    Statement,
    finding,
)
from attnlimits.experiments.softmax_not_enough.fits import clamp_points, fit_polynomial, poly_beta
from attnlimits.normalizers.adaptive import POLY_COEFFS

__all__ = [
    "CAPPED",
    "CAP_WINDOW",
    "FIT_LEVEL",
    "FLOORS",
    "FLOOR_RULE",
    "H_AT",
    "INTERVAL_RULE",
    "MIN_SEEDS",
    "OWN_TEST",
    "PUBLISHED_RULE",
    "Q_FIT",
    "Q_RANGE",
    "SHOWN_FLOORS",
    "TRAINING_SETS",
    "TRAINING_SIZES",
    "T_PLACE",
    "appf_rows",
    "capped_shares",
    "floor_table",
    "floor_verdict",
    "interval_table",
    "judge_published",
    "match_table",
    "own_tests",
    "rise_interval",
    "training_inputs",
]

#: The entropies (nats) where the docs compare the fits with the published polynomial; the
#: published one's plateau (2.10 → 2.39) lies over 2 … 4.
H_AT = (1.0, 2.0, 3.0, 4.0)
MIN_SEEDS = Threshold(
    "MIN_SEEDS",
    5,
    OURS,
    "a spread over fewer than five single-model fits is no spread (written before the run)",
)
FIT_LEVEL = Threshold(
    "FIT_LEVEL",
    0.95,
    AFTER_RUNS,
    "written 2026-11-28 (referee point 1), after the per-seed fits (fit_seed_fits.csv) were "
    "public on 2026-11-27: the (F) row's spread, once the largest single-seed deviation (a "
    "maximum over seeds, set by the farthest seed), is the 95 % interval of the seeds' mean "
    "fit at each H, the level of every other interval (claims.statistics.LEVEL)",
)
CAPPED = Threshold(
    "CAPPED",
    0.5,
    AFTER_RUNS,
    "written 2026-11-28 (referee round 6, point 1), after floors.csv's only match (floor 0.39 at "
    "H = 4, every point near it on the floor) was public; stricter: where most points near an "
    "H sit on the floor, the fit there is the floor's cap 1/floor, not the data's, so a match "
    "there is the cap's and is not counted (at 20,000 steps the shares are 0.96-1.00 near H = 4 "
    "and 0.10-0.37 near H = 1 over the floors)",
)
CAP_WINDOW = Threshold(
    "CAP_WINDOW",
    0.25,
    AFTER_RUNS,
    "written 2026-11-28 with CAPPED: the points within this many nats of an H are its "
    "neighbourhood, the half-width benchmarks/appf_sensitivity.py's medians already used",
)
#: (G)'s floors: 0.20, 0.21, …, 0.50, all points of the default θ grid; the table shows four.
FLOORS = tuple(round(0.2 + 0.01 * k, 2) for k in range(31))
SHOWN_FLOORS = (0.2, 0.3, 0.4, 0.5)
#: (T)'s inputs: every training size that can keep an input (a 1-item set never is: its only
#: item is the maximal one), and sets per size (about 1 % of the sets at n = 16 are kept).
TRAINING_SIZES = tuple(range(2, 17))
TRAINING_SETS = 10_000
SUPPORTED, PARTLY_SUPPORTED, NOT_SUPPORTED = "supported", "partly supported", "not supported"
#: Paper B's own words (§4.1), word for word in our copy.
Q_FIT = (
    "Then we fit an inverse degree-4 polynomial to this data—see Figure 6—and use it to predict "
    "temperatures to use at inference time."
)


#: App. F on its grid search (the optimum's symbol lost in our copy; round 6, point 1).
Q_RANGE = "Empirically, we find that for all samples we cared about, was definitely in this range"


def _fit_at(points: pd.DataFrame, degree: int, entropies: np.ndarray) -> np.ndarray | None:
    """App. F's fit (least squares of β* on H) at ``entropies``; None for too few points."""
    if len(points) <= degree:
        return None
    coeffs = fit_polynomial(points["entropy"].to_numpy(float), points["beta_star"], degree)
    return poly_beta(entropies, coeffs)


def _fits(
    points: pd.DataFrame, degree: int, entropies: Sequence[float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, list[np.ndarray], np.ndarray]:
    """(H, the published β(H), the pooled fit's β(H) or None, each seed's fit's β(H) where it
    has one, which H lie inside the points' entropy range with a pooled fit)."""
    H = np.asarray(entropies, float)
    pooled = _fit_at(points, degree, H)
    per_seed = [
        b
        for _, p in points.groupby("seed", sort=True)  # ten seeds at most
        if (b := _fit_at(p, degree, H)) is not None
    ]
    lo = float(points["entropy"].min()) if len(points) else np.inf
    hi = float(points["entropy"].max()) if len(points) else -np.inf
    tested = (H >= lo) & (H <= hi) & (pooled is not None)
    return H, poly_beta(H, POLY_COEFFS), pooled, per_seed, tested


def match_table(
    points: pd.DataFrame, degree: int = 4, entropies: Sequence[float] = H_AT
) -> pd.DataFrame:
    """The rule's statistic per H: ``entropy, tested, published, pooled, distance, spread,
    matches, n_seeds`` (``matches`` is None where H is not tested or fewer than
    :data:`MIN_SEEDS` seeds have a fit; ``n_seeds`` counts the seeds with a fit)."""
    H, published, pooled, per_seed, tested = _fits(points, degree, entropies)
    nan = np.full(len(H), np.nan)
    pooled_h = nan if pooled is None else pooled
    spread = np.max(np.abs(np.stack(per_seed) - pooled_h), axis=0) if per_seed else nan  # (len(H),)
    distance = np.abs(pooled_h - published)
    enough = len(per_seed) >= MIN_SEEDS.value
    matches = [
        bool(d <= s) if (t and enough) else None
        for d, s, t in zip(distance, spread, tested, strict=True)
    ]
    return pd.DataFrame(
        {
            "entropy": H,
            "tested": tested,
            "published": published,
            "pooled": pooled_h,
            "distance": distance,
            "spread": spread,
            "matches": pd.Series(matches, dtype=object),
            "n_seeds": len(per_seed),
        }
    )


def judge_published(matches: Sequence[bool | None], n_seeds: int) -> str:
    """The rule on the per-H flags (None: H not tested) and the seeds with a fit."""
    if n_seeds < MIN_SEEDS.value:
        return NOT_TESTABLE
    tested = [m for m in matches if m is not None]
    if not tested:
        return NOT_TESTABLE
    if len(tested) == len(matches) and all(tested):
        return REPRODUCED
    return PARTLY if any(tested) else NOT


def _ladder() -> str:
    """The verdicts :func:`judge_published` gives from the per-H matches, as both rules say it."""
    h = ", ".join(f"{x:g}" for x in H_AT)
    return (
        f"every H of {h} nats tested and matching: reproduced; none matching: not reproduced; "
        f"else partly; fewer than {MIN_SEEDS} seeds with a fit, or no H inside the points' "
        "entropy range: not testable"
    )


def _say() -> str:
    return (
        "H matches where |pooled fit − published| ≤ the largest |seed fit − pooled fit|; "
        + _ladder()
    )


PUBLISHED_RULE = Rule("published_polynomial", judge_published, _say, (MIN_SEEDS,))


def interval_table(
    points: pd.DataFrame, degree: int = 4, entropies: Sequence[float] = H_AT
) -> pd.DataFrame:
    """The (F) row's statistic per H: ``entropy, tested, published, pooled, seeds_mean, low,
    high, matches, n_seeds``: App. F's fit on each seed's points alone, their mean over the
    seeds with a fit and its :data:`FIT_LEVEL` interval (t on seeds − 1 degrees of freedom);
    ``matches`` (the published β(H) inside the interval) is None where H lies outside the
    points' entropy range or fewer than :data:`MIN_SEEDS` seeds have a fit. ``pooled`` is the
    fit to every seed's points together, shown beside it."""
    H, published, pooled, per_seed, tested = _fits(points, degree, entropies)
    nan = np.full(len(H), np.nan)
    if len(per_seed) >= 2:
        fits = np.stack(per_seed)  # (seeds, len(H))
        se = fits.std(axis=0, ddof=1) / np.sqrt(len(per_seed))
        r = difference_interval(fits.mean(axis=0), se, len(per_seed) - 1, FIT_LEVEL.value)
        mean, low, high = r.estimate, r.low, r.high
    else:
        mean = low = high = nan
    enough = len(per_seed) >= MIN_SEEDS.value
    matches = [
        bool(a <= p <= b) if (t and enough) else None
        for p, a, b, t in zip(published, low, high, tested, strict=True)
    ]
    return pd.DataFrame(
        {
            "entropy": H,
            "tested": tested,
            "published": published,
            "pooled": nan if pooled is None else pooled,
            "seeds_mean": mean,
            "low": low,
            "high": high,
            "matches": pd.Series(matches, dtype=object),
            "n_seeds": len(per_seed),
        }
    )


def _say_interval() -> str:
    return (
        f"H matches where the published β(H) lies inside the {FIT_LEVEL.value:.0%} interval "
        f"(t, seeds − 1 df) of the seeds' mean fit at H; {_ladder()} (set after earlier runs "
        "were public)"
    )


#: The (F) row's rule since 2026-11-28 (module docstring): :func:`judge_published` on
#: :func:`interval_table`'s flags.
INTERVAL_RULE = Rule(
    "published_polynomial_interval", judge_published, _say_interval, (MIN_SEEDS, FIT_LEVEL)
)


def rise_interval(points: pd.DataFrame, degree: int = 4) -> tuple[float, float, float, float]:
    """The rise r = fit(4)/fit(2) over the seeds' own fits: ``(their mean, published r, low,
    high)``, the :data:`FIT_LEVEL` t-interval of the mean (seeds − 1 degrees of freedom, as
    :func:`interval_table`); NaN bounds where H = 2 or 4 lies outside the points or fewer than
    :data:`MIN_SEEDS` seeds have a fit. The rise matches where the published r lies inside."""
    H = np.array([2.0, 4.0])
    pub = poly_beta(H, POLY_COEFFS)
    r_pub = float(pub[1] / pub[0])
    inside = len(points) and points["entropy"].min() <= 2 and points["entropy"].max() >= 4
    seeds = [b for _, p in points.groupby("seed") if (b := _fit_at(p, degree, H)) is not None]
    if not inside or len(seeds) < MIN_SEEDS.value:
        return float("nan"), r_pub, float("nan"), float("nan")
    rises = np.array([float(b[1] / b[0]) for b in seeds])
    se = rises.std(ddof=1) / np.sqrt(len(rises))
    r = difference_interval(float(rises.mean()), float(se), len(rises) - 1, FIT_LEVEL.value)
    return float(r.estimate), r_pub, float(r.low), float(r.high)


def capped_shares(points: pd.DataFrame, floor: float) -> dict[float, float]:
    """At each H of :data:`H_AT`, the share of the points within :data:`CAP_WINDOW` nats of it
    whose θ* lies below ``floor`` (a floor raises them to it: their β* is then the cap); NaN
    where no point lies near H."""
    theta = points["theta_star"].to_numpy(float)
    H = points["entropy"].to_numpy(float)
    out = {}
    for h in H_AT:
        near = np.abs(H - h) < CAP_WINDOW.value
        out[h] = float((theta[near] < floor).mean()) if near.any() else float("nan")
    return out


def _counted(m: pd.DataFrame, shares: Mapping[float, float]) -> list[bool | None]:
    """:func:`interval_table`'s flags with the H the cap decides (:data:`CAPPED`) as not
    tested (None)."""
    return [
        None if shares[h] >= CAPPED.value else flag
        for h, flag in zip(m["entropy"], m["matches"], strict=True)
    ]


def floor_table(
    points: pd.DataFrame, degree: int = 4, floors: Sequence[float] = FLOORS
) -> pd.DataFrame:
    """(G) per floor: ``floor, cap`` (1/floor), the pooled fit at each H (``fit_H1`` …), the
    seeds' mean fit's :data:`FIT_LEVEL` interval at each H (``low_H1``, ``high_H1`` …), the
    verdict of :data:`INTERVAL_RULE` (``verdict``), the rise over the seeds' fits
    (:func:`rise_interval`: ``rise, rise_low, rise_high, rise_matches``), and since round 6
    the share of points the floor caps near each H (``capped_H1`` …, :func:`capped_shares`),
    the verdict on the H the cap does not decide (``counted``) and whether the rise matches
    with neither of its H capped (``rise_counted``)."""
    rows = []
    for f in floors:  # 31 floors: a clamp and eleven small fits each
        pts = clamp_points(points, f)
        m = interval_table(pts, degree)
        r, r_pub, r_low, r_high = rise_interval(pts, degree)
        shares = capped_shares(points, f)
        free = all(shares[h] < CAPPED.value for h in (2.0, 4.0))
        rise_matches = bool(r_low <= r_pub <= r_high)
        rows.append(
            {"floor": f, "cap": 1.0 / f}
            | {f"fit_H{h:g}": v for h, v in zip(m["entropy"], m["pooled"], strict=True)}
            | {f"low_H{h:g}": v for h, v in zip(m["entropy"], m["low"], strict=True)}
            | {f"high_H{h:g}": v for h, v in zip(m["entropy"], m["high"], strict=True)}
            | {
                "verdict": INTERVAL_RULE(list(m["matches"]), int(m["n_seeds"].iloc[0])),
                "rise": r,
                "rise_low": r_low,
                "rise_high": r_high,
                "rise_matches": rise_matches,
            }
            | {f"capped_H{h:g}": v for h, v in shares.items()}
            | {
                "counted": judge_published(_counted(m, shares), int(m["n_seeds"].iloc[0])),
                "rise_counted": rise_matches and free,
            }
        )
    return pd.DataFrame(rows)


def floor_verdict(table: pd.DataFrame) -> str:
    """(G) from :func:`floor_table`'s rows, on the H no floor's cap decides (``counted``,
    ``rise_counted``; round 6, point 1): supported if some floor reproduces there; partly
    supported if some floor partly does, or its rise matches with neither H capped; n/a if the
    cap decides every H at every floor (nothing left to test); else not supported."""
    counted = table["counted"].astype(str)
    rise = table["rise_counted"].astype(str) == "True"
    if (counted == REPRODUCED).any():
        return SUPPORTED
    if (counted == PARTLY).any() or rise.any():
        return PARTLY_SUPPORTED
    if (counted == NOT_TESTABLE).all():
        return NA
    return NOT_SUPPORTED


def _say_floor() -> str:
    return (
        f"θ* raised to each floor 0.20 … 0.50; at each floor, an H where ≥ {CAPPED.value:.0%} of "
        f"the points within {CAP_WINDOW} nats had θ* below the floor is decided by the cap and "
        "not tested; on the other H, the (F) row's interval rule: some floor reproduced: "
        "supported; some floor partly, or its rise fit(4)/fit(2) inside the seeds' interval "
        "with neither H capped: partly supported; the cap deciding every H: n/a; else not "
        "supported (set after the runs)"
    )


#: (G)'s rule since round 6's point 1 (module docstring): :func:`floor_verdict` on
#: :func:`floor_table`'s rows.
FLOOR_RULE = Rule(
    "grid_floor", floor_verdict, _say_floor, (MIN_SEEDS, FIT_LEVEL, CAPPED, CAP_WINDOW)
)


#: The label of our own tests, after a claim's id ("(F) our test: …"): rows that judge
#: something the paper does not claim, App. F's procedure transferring to our models (referee
#: point 1), or one reading of a sentence it does claim, §3's temperature zero read plainly,
#: as aggregate accuracy (the round-5 referee's point 2; round 8's point 7): shown apart from
#: the paper's findings, in the docs and the README.
OWN_TEST = "our test:"


def own_tests(claims: pd.DataFrame) -> pd.Series:
    """Which rows of a claims table are our own tests (:data:`OWN_TEST` right after the claim's
    id), not the paper's."""
    return claims["claim"].astype(str).str.match(r"\(\S+\) " + re.escape(OWN_TEST))


def _per_entropy(m: pd.DataFrame, cell: Callable[[Any], str]) -> str:
    """One cell per tested entropy of :func:`match_table`'s rows ("not tested" where not)."""
    return "; ".join(
        f"H={r.entropy:g}: {cell(r) if r.tested else 'not tested'}" for r in m.itertuples()
    )


def _shown_interval(m: pd.DataFrame) -> str:
    return _per_entropy(
        m,
        lambda r: (
            f"published {r.published:.2f} vs seeds' mean fit {r.seeds_mean:.2f} "
            f"[{r.low:.2f}, {r.high:.2f}] (pooled fit {r.pooled:.2f})"
        ),
    )


def _shown(m: pd.DataFrame) -> str:
    return _per_entropy(
        m, lambda r: f"{r.pooled:.2f} vs {r.published:.2f} (d {r.distance:.2f}, s {r.spread:.2f})"
    )


#: Where (F.a)'s row names (T)'s outcome; the doc module puts the outcome in its place
#: (:func:`training_inputs`), from tables no run holds.
T_PLACE = "(T) training-size inputs: docs/max_retrieval.md"


def training_inputs(inputs: pd.DataFrame, verdicts: pd.DataFrame) -> str:
    """(T)'s outcome for (F.a)'s row (referee round 6, point 6), from
    ``appf_sensitivity/inputs.csv`` and ``verdicts.csv`` (benchmarks/appf_sensitivity.py
    ``--rule`` on the default run's and the 5,000-step run's models), the longest run first:
    its verdict, each tested H's seeds' mean fit and interval against the published value, and
    the points' entropy range (H outside it is not tested)."""
    t = inputs[inputs["inputs"].astype(str).str.startswith("training sizes")]
    said = []
    for steps in sorted({int(s) for s in t["steps"]}, reverse=True):
        at = t[t["steps"].astype(int) == steps]
        v = verdicts[
            (verdicts["steps"].astype(int) == steps)
            & verdicts["explanation"].astype(str).str.startswith("(T)")
        ]
        tested = at[at["tested"].astype(str) == "True"]
        fits = "; ".join(
            f"H = {float(r.entropy):g}: seeds' mean fit {float(r.seeds_mean):.2f} "
            f"[{float(r.low):.2f}, {float(r.high):.2f}] vs published {float(r.published):.2f}"
            for r in tested.itertuples()
        )
        said.append(
            f"{steps:,} steps: {v['verdict'].iloc[0] if len(v) else 'no verdict'} ({fits}; "
            f"{len(at) - len(tested)} H outside the points' entropies "
            f"{at['entropy_range'].iloc[0]})"
        )
    if not said:
        return T_PLACE
    return (
        "(T) training-size inputs (n = 2 … 16, 10,000 sets per size, on the default run's "
        "models and the 5,000-step run's; "
        "docs/data/appf_sensitivity): " + "; ".join(said)
    )


def appf_rows(tables: Mapping[str, pd.DataFrame], degree: int = 4) -> list[dict[str, str]]:
    """App. F's row, one of our own tests (:data:`OWN_TEST`; the paper does not claim its
    procedure transfers to other models): :data:`INTERVAL_RULE` on the run's own points (the
    default procedure), with the former max-spread rule's verdict and (G)'s outcome beside it
    (not deciding); n/a for a run without App. F."""
    head = Statement(
        "(F) our test: App. F's procedure, on our models, yields the published polynomial",
        FINDING,
        Q_FIT,
    )
    row = Statement(
        "(F.a) our test: the fit to App. F's points is the published polynomial",
        HEADLINE,
        Q_FIT,
        "ours: App. F's fit (least squares of β* on H, np.polyfit, degree 4; the listing's "
        "use reads it as β, not θ) on each seed's points of the default procedure, against "
        "the listing's poly_fit, at each H inside the 95 % interval of the seeds' mean fit "
        "(rule set after earlier runs were public)",
    )
    points = tables.get("temperature_fit_points")
    if points is None or not len(points):
        return finding(head, [row.judged("the run has no App. F points", _say_interval(), NA)])
    m = interval_table(points, degree)
    n_seeds = int(m["n_seeds"].iloc[0])
    verdict = INTERVAL_RULE(list(m["matches"]), n_seeds)
    old = match_table(points, degree)
    floors = floor_table(points, degree)
    shown = (
        f"{_shown_interval(m)}; {n_seeds} seeds with a fit; readings (not deciding): the "
        f"former rule (within the largest single-seed deviation): "
        f"{judge_published(list(old['matches']), n_seeds)}; θ* raised to a floor of "
        f"0.20 … 0.50 (G): {floor_verdict(floors)}, H the floor's cap decides not counted "
        "(per floor, by the same interval rule on every H / on the H not capped; share of "
        "points capped near H = "
        + "/".join(f"{h:g}" for h in H_AT)
        + "): "
        + ", ".join(
            f"{r.floor:g} {r.verdict} / {r.counted} ("
            + "/".join(f"{getattr(r, f'capped_H{h:g}'):.2f}" for h in H_AT)
            + ")"
            for r in floors.itertuples()
            if r.floor in SHOWN_FLOORS
        )
        + f"; App. F's 'definitely in this range' beside our points: (2.k); {T_PLACE}"
    )
    reason = "" if verdict != NOT_TESTABLE else "fewer seeds with a fit, or no H inside the data"
    return finding(head, [row.judged(shown, _say_interval(), verdict, reason)])
