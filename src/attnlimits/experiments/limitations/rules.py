"""The verdict rules of paper A's statements, declared on the claims engine from named
thresholds (:mod:`attnlimits.claims`).

Each rule turns numbers measured on a run into ``"reproduced"``, ``"partly"`` or ``"not
reproduced"`` (a bound either holds or not: :data:`holds` has no "partly"), and ``"n/a"`` only
where the run lacks the numbers (a NaN slope, an empty list). "Not testable" (a precondition of
the statement fails in the data) is decided where the data are read (``findings.py``), with its
reason. Every threshold is a :class:`~attnlimits.claims.Threshold` written once below, with its
provenance and reason; each rule's ``text()`` is what the report's ``rule`` column and the docs
print, formatted from those thresholds, so docstrings name thresholds and never repeat their
values. ``tests/test_limitations_rules.py`` holds known answers for every verdict of every rule
on both sides of each threshold, and changes a threshold to see the text follow.
"""

from __future__ import annotations

from collections.abc import Sequence

from attnlimits.claims import (
    AFTER_RUNS,
    NA,
    NOT,
    OURS,
    PARTLY,
    REPRODUCED,
    Band,
    Graded,
    Holds,
    Rule,
    Share,
    Threshold,
    finite,
)
from attnlimits.experiments.paper_a_readings import (
    ABOUT,
    BAND,
    BAND_HI,
    BAND_LO,
    PAPER_FRACTION,
    about_fraction,
)

__all__ = [
    "ABOUT",
    "BAND",
    "NA",
    "NOT",
    "PAPER_FRACTION",
    "PARTLY",
    "REPRODUCED",
    "RULES",
    "THRESHOLDS",
    "about_fraction",
    "about_most",
    "bound_loose",
    "by_construction",
    "collapses",
    "converges",
    "corollary3",
    "d_collapses",
    "delta_positive",
    "drops",
    "exists",
    "falls",
    "four_fifths",
    "holds",
    "in_band",
    "increases",
    "linear_growth",
    "lower_loose",
    "near_limit",
    "not_run",
    "one_over_t",
    "one_over_t_eps",
    "one_over_t_eps_saturating",
    "one_over_t_saturating",
    "ordered",
    "plateau",
    "safe",
    "saturates",
    "share",
    "small_residual",
    "sub_linear",
    "tightens",
    "tracks_law",
    "tracks_law_saturating",
    "vanishes",
    "within_noise",
]


def _ours(name: str, value: float, reason: str, fmt: str = "g") -> Threshold:
    return Threshold(name, value, OURS, reason, fmt)


#: issue 56 (2026-11-28): thresholds set while the earlier runs' numbers were public
_ISSUE_56 = "set 2026-11-28 (issue 56), after earlier runs were public"


def _after(name: str, value: float, reason: str, fmt: str = "g") -> Threshold:
    return Threshold(name, value, AFTER_RUNS, f"{reason} ({_ISSUE_56})", fmt)


def _referee(name: str, value: float, reason: str, *, point: int, fmt: str = "g") -> Threshold:
    """A threshold set, or applied to a new reading, after the round-3 run was public, on the
    referee's point ``point`` (docs/referee_round3.md)."""
    when = f"round-3 referee point {point}, after the round-3 run was public"
    return Threshold(name, value, AFTER_RUNS, f"{reason} ({when})", fmt)


# ---- the thresholds, each once -----------------------------------------------------------------
ROUGHLY_LO = _ours("ROUGHLY_LO", 0.7, "'roughly linearly' as a log-log slope within 0.3 of 1")
ROUGHLY_HI = _ours("ROUGHLY_HI", 1.3, "'roughly linearly' as a log-log slope within 0.3 of 1")
GROWS = _ours("GROWS", 0.1, "a slope below it is no visible growth over the grid's ×32 in L")
LOOSE = _ours("LOOSE", 2.0, "'conservative': the bound at least twice the distance")
TIGHT = _ours("TIGHT", 1.2, "within 20 % of the distance the bound is tight, not loose")
PLATEAU = _ours("PLATEAU", 0.25, "'plateaus': d̃ moves at most a quarter", ".0%")
PLATEAU_PARTLY = _ours("PLATEAU_PARTLY", 0.5, "up to half: slowing, not flat", ".0%")
TIGHTENS = _ours("TIGHTENS", 0.9, "'tightens': bound / d̃ falls by 10 % or more")
LOOSENS = _ours("LOOSENS", 1.1, "bound / d̃ rising by more than 10 %: the bound loosens")
CONVERGED = _ours("CONVERGED", 0.25, "'converge': E / d̃ within a quarter of 1")
SUB_LINEAR = _ours("SUB_LINEAR", 0.9, "'sub-linearly': a log-log slope clearly below 1")
LINEAR = _ours("LINEAR", 1.0, "a fixed fraction of L has slope 1: linear, not sub-linear")
FALLS = _ours("FALLS", 0.05, "'declines': the median N_s/N drops by 5 points or more")
ANY_DROP = _ours("ANY_DROP", 0.0, "any drop at all, smaller than FALLS")
SATURATED = _ours("SATURATED", 0.05, "'saturates': the median moves at most 5 points")
SATURATED_PARTLY = _ours("SATURATED_PARTLY", 0.15, "up to 15 points: slowing, not flat")
LOWER_LOOSE = _ours("LOWER_LOOSE", 0.3, "the lower bound 0.3 or more below N_s/N: loose")
LOWER_TIGHT = _ours("LOWER_TIGHT", 0.1, "within 0.1 of N_s/N the lower bound is tight")
ONE_OVER_T_LO = _ours(
    "ONE_OVER_T_LO", -1.2, "'follow the theoretical $1/T$ trend': slope within 0.2 of −1"
)
ONE_OVER_T_HI = _ours(
    "ONE_OVER_T_HI", -0.8, "'follow the theoretical $1/T$ trend': slope within 0.2 of −1"
)
RISES = _after(
    "RISES", -0.1, "a curve rising as T falls (GROWS's mirror), not as 1/T: a new partly rung"
)
MIN_T = _after("MIN_T", 4, "a slope through fewer than four T in (ε, 0.1) is not judged")


def _round4(name: str, value: float, reason: str, *, point: int, fmt: str = "g") -> Threshold:
    """A threshold set, or applied to a new reading, on the round-4 referee's point ``point``
    (docs/referee_round4.md), after the round-3 run was public."""
    when = f"round-4 referee point {point}, after the round-3 run was public"
    return Threshold(name, value, AFTER_RUNS, f"{reason} ({when})", fmt)


DROP_ABOUT = _round4(
    "DROP_ABOUT",
    10**1.5,
    "'two orders of magnitude', from T = 0.01 to T = 1 (reading (b)): within half an order; "
    "the value is the one written before the first runs",
    point=3,
    fmt=".0f",
)
DROP_SOME = _round4(
    "DROP_SOME",
    10**0.5,
    "half an order: a drop, not of two orders (the value written before the first runs)",
    point=3,
    fmt=".1f",
)
COLLAPSED = _ours("COLLAPSED", 1.1, "'collapse': the ε curves within 10 % of each other")
ABOUT_80 = _after(
    "ABOUT_80", 0.85, "≈ 80 %: 0.80 and the rounding of ≈, up to the band's 0.85", ".2f"
)
NEAR_LIMIT = _after("NEAR_LIMIT", 0.5, "'close to the theoretical limit': within a factor of 2")
NEAR_SOME = _after("NEAR_SOME", 0.1, "within an order of magnitude: near, not close")
RISE_CLEAR = _after("RISE_CLEAR", 2.0, "'increases': at least doubles from T = 0.1 to the least T")
RISE_ANY = _after("RISE_ANY", 1.0, "any rise at all, smaller than RISE_CLEAR")
VANISHES = _after("VANISHES", 0.5, "E → 0: at the grid's largest N, at most half its peak over N")
MOST_L = _referee(
    "MOST_L",
    0.5,
    "a statement ('fewer than 6 %' or the ≈) must hold at more than this share of the "
    "testable L: partly",
    point=8,
    fmt=".0%",
)
D_COLLAPSED = _referee(
    "D_COLLAPSED",
    0.25,
    "'collapses': d̃ at most a quarter of its peak over N (read at N ≈ 0.9·L until the round-4 "
    "referee's point 6, at N ≈ PROPORTIONAL·L since)",
    point=14,
)
PROPORTIONAL = _round4(
    "PROPORTIONAL",
    0.25,
    "'once N grows proportionally to L': a fixed fraction of L far from N = L, where d̃ = 0 by "
    "definition, and above the paper's critical N ≈ 0.06·L",
    point=6,
    fmt=".2f",
)
_WITHIN_SE_WHY = (
    "loose, and said so (the round-5 referee's point 18): it lets up to 1 % of the cells out, "
    "about 7× the 0.135 % that one one-sided check at 3 standard errors leaves out by chance "
    "on independent normal errors; it is not tied to that rate because the cells are not "
    "independent (one head's cells at each N of a length share its keys and logits) and each SE "
    "is itself estimated; its flip points are in docs/limitations.md's second sensitivity "
    "table, for within_noise and for small_residual. The 99 % level was set before the runs; "
    "its use by small_residual was not (2026-11-28, after the round-3 run, and ε / E exact with "
    "it, was public: the round-8 referee's point 2)"
)
#: on one line, so that benchmarks/limitations_rule_mutants.py moves its value
WITHIN_SE = _ours("WITHIN_SE", 0.99, _WITHIN_SE_WHY, ".0%")
_EPS_SMALL_WHY = (
    "Theorem 1's 'small': |ε| at most a tenth of the exact E it is the remainder of (set on the "
    "round-4 referee's point 20, after the round-3 run was public; mean ε / E exact, 0.22–0.38 "
    "in three columns at N = 100, was one division away in the committed alg2_summary.csv and "
    "e_forms.csv before it was set, though no one had made it: not blind)"
)
#: on one line, so that benchmarks/limitations_rule_mutants.py moves its value
EPS_SMALL = _after("EPS_SMALL", 0.1, _EPS_SMALL_WHY)

# ---- the rules ---------------------------------------------------------------------------------

share = Share("share", "it holds", "case")
holds = Holds("holds", "the bound holds", "case")
#: the same shapes, saying what holds in which case (the report prints each)
safe = Holds("safe", "bound ≥ d̃", "(head, L)")
#: (iii.a) a critical N exists: KS accepts below the grid's last N, ⌊0.9·L⌋. Rule change on the
#: round-4 referee's point 5 (2026-11-28, after the round-3 run was public; direction:
#: stricter): a length where KS accepts only at ⌊0.9·L⌋ counted for it; there the top-N and a
#: random N-set share 90 % of the keys, so d̃ and E meet by construction (Corollary 2), and
#: passing at the grid's edge shows no critical N: not reproduced at that L (the test ran and
#: found none before the edge; not testable would say a precondition failed).
exists = Share("exists", "KS accepts at some N below the grid's last, ⌊0.9·L⌋", "L")
#: (iv.f) Theorem 2's bounds (lower ≤ N_s/N ≤ upper) are judged by :data:`by_construction`
#: since the round-5 referee's point 6 (2026-11-28, after the round-3 run was public; a check
#: that could only fail becomes n/a, its shares shown): at N = 1 they fail by arithmetic
#: (N_s/N = 1, the upper bound exp(−r²/16M²) < 1: docs/errata.md, Theorem 2 at N = 1), at
#: N ≥ 2 they are nearly vacuous (the upper bound ≥ e^(−1/4), the lower mostly ≤ 0). The rule
#: that judged them, ``bounds_hold`` (every case holds: reproduced), read not reproduced on
#: any data from round 4's point 7 (N = 1 included) and is gone.
#: (v.b) at each T < 0.1, the curves of the ε below T ordered (not testable where no T has two)
ordered = Share("ordered", "values fall with ε, over the ε < T (n/a: one ε)", "T < 0.1")
corollary3 = Holds("corollary3", "the paper's bound holds on every real head", "T")
delta_positive = Share("delta_positive", "δ > 0", "layer")

#: (i) "grow roughly linearly in L", read as a log-log slope in [ROUGHLY_LO, ROUGHLY_HI]; a slope
#: of at least GROWS outside it grows, but not linearly (partly); below it does not grow.
linear_growth = Graded(
    "linear_growth", "log-log slope", Band(ROUGHLY_LO, ROUGHLY_HI), Band(lo=GROWS)
)
#: (i) "the bound is ... conservative": median over heads of bound / d̃ at least LOOSE (partly
#: from TIGHT; below, the bound is tight, not loose).
bound_loose = Graded("bound_loose", "median bound / d̃", Band(lo=LOOSE), Band(lo=TIGHT))
#: (ii) "d̃ plateaus beyond N ≈ 20": |relative change of mean d̃ from N = 20 to the largest N|
#: at most PLATEAU (partly up to PLATEAU_PARTLY).
plateau = Graded("plateau", "|change|", Band(hi=PLATEAU), Band(hi=PLATEAU_PARTLY), magnitude=True)
#: (ii) "while the bound tightens", read relative to d̃: (bound / d̃ at the largest N) over
#: (bound / d̃ at N = 20) at most TIGHTENS; up to LOOSENS it stays (partly); above, it loosens.
tightens = Graded(
    "tightens", "(bound / d̃) at the largest N over N = 20", Band(hi=TIGHTENS), Band(hi=LOOSENS)
)
#: (iv) "N_s/N falls until N ≈ 16": the median over heads drops by at least FALLS from the first
#: N > 1 to N = 16 (N = 1 is left out: N_s/N = 1 there by definition); any drop below that is
#: partly; none is not reproduced.
falls = Graded("falls", "drop", Band(lo=FALLS), Band(lo=ANY_DROP, open_lo=True))
#: (iv) "then saturates": |change of the median| from N = 16 to the largest N at most SATURATED
#: (partly up to SATURATED_PARTLY).
saturates = Graded(
    "saturates", "|change|", Band(hi=SATURATED), Band(hi=SATURATED_PARTLY), magnitude=True
)
#: (iv) "the lower bound is loose": median over heads and N of N_s/N − lower bound at least
#: LOWER_LOOSE (partly from LOWER_TIGHT), over the (head, N) where the lower bound is > 0 (the
#: caller's reading since the round-4 referee's point 7, after the round-3 run was public;
#: direction: stricter: a bound ≤ 0 lies below any N_s/N and made the row vacuous).
lower_loose = Graded(
    "lower_loose", "median N_s/N − lower bound", Band(lo=LOWER_LOOSE), Band(lo=LOWER_TIGHT)
)
#: (v) "Once T ≥ 1 all curves collapse and drop by two orders of magnitude", read as the drop
#: from the T < 0.1 regime the paragraph's previous sentence describes, counted from T = 0.01 (a
#: decade into it, where 1/T falls 100× by T = 1, so the two sentences agree) to T = 1: reading
#: (b) of docs/errata.md, finding_v_two_orders. The smallest factor over the ε below the lower T
#: (at ε ≥ T, g ≤ √2/ε is capped, flat in T) at least DROP_ABOUT (partly from DROP_SOME: a drop,
#: not of two orders). Rule change on the round-4 referee's point 3 (2026-11-28, after the
#: round-3 run was public; direction: stricter): reading (c), across T ≥ 1, decided from the
#: round-3 referee's point 5 and can hardly fail (the max over a model's heads picks, at each T,
#: a head whose softmax is near uniform there, and its Jacobian falls as 1/T: that max drops
#: about 100× from T = 1 to 100; one head alone need not, the round-5 referee's point 17), so
#: it is the check (v.h), judged by :data:`by_construction`.
drops = Graded(
    "drops",
    "smallest factor over ε < T, T = 0.01 to 1",
    Band(lo=DROP_ABOUT),
    Band(lo=DROP_SOME),
)


def _converges(ratio_lo: float, ratio_hi: float) -> str:
    if not (finite(ratio_lo) and finite(ratio_hi)):
        return NA
    lo, hi = 1 - CONVERGED.value, 1 + CONVERGED.value
    if lo <= ratio_lo and ratio_hi <= hi:
        return REPRODUCED
    return NOT if ratio_hi < lo or ratio_lo > hi else PARTLY


#: (ii) "true and expected distances converge" as N approaches 100: the 95 % interval
#: [``ratio_lo``, ``ratio_hi``] of E / d̃ at N = 100 lies within 1 ± CONVERGED (reproduced),
#: across its edge (partly: the data cannot tell), or wholly outside it (not reproduced).
#: Rule change on the round-4 referee's point 1 (2026-11-28, after the round-3 run was public;
#: direction: stricter): the partly rung for a ratio wholly outside the band but moving towards
#: 1 at every step over the grid's N (``TOWARDS_N``, added on the round-3 referee's point 6) is
#: gone: E / d̃ → 1 as N → L on any head (Corollary 2), so the rung credited something near
#: certain. The trend over N is still shown in the row's measured text, not judged.
converges = Rule(
    "converges",
    _converges,
    lambda: (
        f"95 % interval of E / d̃ within [{1 - CONVERGED.value:g}, "
        f"{1 + CONVERGED.value:g}]: reproduced; across its edge: partly; wholly outside: not "
        "reproduced (a ratio moving towards 1 over N is shown, not judged: E / d̃ → 1 as N → L "
        "on any head)"
    ),
    (CONVERGED,),
)


def _sub_linear(slope_min: float, slope_max: float) -> str:
    if not (finite(slope_min) and finite(slope_max)):
        return NA
    if slope_max <= SUB_LINEAR.value:
        return REPRODUCED
    return NOT if slope_min >= LINEAR.value else PARTLY


def _about_most(
    fractions: Sequence[float | None],
    limits: Sequence[tuple[float, float]] | None = None,
    floors: Sequence[float] | None = None,
) -> str:
    ends = limits or [(PAPER_FRACTION.value, PAPER_FRACTION * ABOUT)] * len(fractions)
    lows = floors or [PAPER_FRACTION / ABOUT] * len(fractions)
    known = [f if f is not None and finite(f) else None for f in fractions]
    # per L: 'fewer than 6 %' (no floor) and the ≈ (two-sided), each on its own
    fewer = [f is not None and f <= lo for f, (lo, _) in zip(known, ends, strict=True)]
    near = [
        f is not None and low <= f <= hi for f, (_, hi), low in zip(known, ends, lows, strict=True)
    ]
    if not fewer:
        return NA
    if all(a and b for a, b in zip(fewer, near, strict=True)):
        return REPRODUCED
    most = MOST_L.value * len(fewer)
    return PARTLY if sum(fewer) > most or sum(near) > most else NOT


#: (iii) paper A's reading of Fig. 2c's "fewer than 6 %" with the finding's "≈ 0.06L": per L,
#: critical N / L at most PAPER_FRACTION and at least PAPER_FRACTION / ABOUT meets both; within
#: [PAPER_FRACTION / ABOUT, PAPER_FRACTION·ABOUT] the '≈' only; each limit at the N grid's
#: resolution (:func:`grid_limits`, :func:`grid_floor`: the first tested N at or above it,
#: where a true critical N of that size is measured). Every testable L meeting both: reproduced;
#: '≈' at more than MOST_L of them: partly (one length passing is not "about 0.06·L": the
#: round-3 referee's point 8); else not reproduced. Rule change on the round-4 referee's point 5
#: (2026-11-28, after the round-3 run was public; direction: stricter): the band is two-sided.
#: 'fewer than 6 %' alone set no floor, so a critical N 15× below 0.06·L (SmolLM2's hidden
#: states under the printed E: 1–4 at L = 32 … 1024) read reproduced; '≈ 0.06L' is two-sided,
#: its lower end ABOUT below as its upper end is ABOUT above. Rule change on the round-5
#: referee's point 4 (2026-11-28, after the round-3 run was public; direction: lenient): the
#: partly rung is symmetric. Each of the two statements met alone gives partly: 'fewer than
#: 6 %' (critical N / L at most PAPER_FRACTION, no floor; the row's own quote) at more than
#: MOST_L of the testable L, or the ≈ (within [PAPER_FRACTION / ABOUT, PAPER_FRACTION·ABOUT])
#: at more than MOST_L of them; each statement counted over the lengths on its own. Until then
#: the ≈ alone earned partly and 'fewer than 6 %' alone read not reproduced, an asymmetry no
#: reason supported. :data:`about_fraction` (no floor, partly at any one L) stays the scan's
#: rule.
about_most = Rule(
    "about_most",
    _about_most,
    lambda: (
        f"critical N / L in [{PAPER_FRACTION / ABOUT:g}, {PAPER_FRACTION:g}] ('fewer than "
        f"6 %' and the ≈) at every testable L: reproduced; either statement alone at more "
        f"than {MOST_L} of them, ≤ {PAPER_FRACTION:g} ('fewer than 6 %', no floor) or in "
        f"[{PAPER_FRACTION / ABOUT:g}, {PAPER_FRACTION * ABOUT:g}] (the ≈): partly; else not "
        "reproduced; each limit at the N grid's resolution where the grid is known (the first "
        f"tested N ≥ {PAPER_FRACTION / ABOUT:g}·L, ≥ {PAPER_FRACTION:g}·L, "
        f"≥ {PAPER_FRACTION * ABOUT:g}·L: where a true critical N of that size is measured)"
    ),
    (PAPER_FRACTION, ABOUT, MOST_L),
)


#: (iii) "grows sub-linearly": the log-log slope of critical N against L, as the interval
#: [``slope_min``, ``slope_max``] the censored lengths leave (a length that never accepts has a
#: critical N somewhere in (0.9·L, L]). At most SUB_LINEAR at its top: reproduced; at least
#: LINEAR (linear, as a fixed fraction of L is, or faster) at its bottom: not reproduced;
#: otherwise partly.
sub_linear = Rule(
    "sub_linear",
    _sub_linear,
    lambda: (
        f"slope ≤ {SUB_LINEAR} (at the censored lengths' worst): reproduced; ≥ {LINEAR} "
        "(linear or faster) at their best: not reproduced; else partly"
    ),
    (SUB_LINEAR, LINEAR),
)

#: (iv) "between 0.7 and 0.85": the median over heads in [BAND_LO, BAND_HI] at every N ≥ 16 /
#: some / none.
in_band = Rule(
    "in_band",
    lambda medians: share([BAND_LO.value <= m <= BAND_HI.value for m in medians]),
    lambda: (
        f"in [{BAND_LO}, {BAND_HI}] at every N ≥ 16: reproduced; some: partly; none: not reproduced"
    ),
    (BAND_LO, BAND_HI),
)


#: (v) "follow 1/T", per ε: the log-log slope over the T in (ε, 0.1) in [ONE_OVER_T_LO,
#: ONE_OVER_T_HI] (1/T); at most RISES (the curve rises as T falls, not as 1/T): partly; else
#: (flat or falling) not reproduced. The mirror of (i)'s rung from GROWS. A slope in
#: (ONE_OVER_T_HI, RISES] is read as rising, slower than 1/T, in every (v) row: (v.f)'s
#: "saturates" asks for a flatter one (:data:`tracks_law`; the round-5 referee's point 1).
one_over_t_eps = Graded(
    "one_over_t_eps", "slope", Band(ONE_OVER_T_LO, ONE_OVER_T_HI), Band(hi=RISES)
)
#: The alternative reading of the round-5 referee's point 1, shown beside the headline's and
#: never deciding it: a slope in (ONE_OVER_T_HI, RISES] saturates (what (v.f) read until then),
#: so no partly rung: in [ONE_OVER_T_LO, ONE_OVER_T_HI] reproduced, else not reproduced.
one_over_t_eps_saturating = Graded(
    "one_over_t_eps_saturating", "slope", Band(ONE_OVER_T_LO, ONE_OVER_T_HI)
)


def _per_eps(per_eps: Graded, slopes: Sequence[float]) -> str:
    per = [per_eps(s) for s in slopes if finite(s)]
    if not per:
        return NA
    if all(v == REPRODUCED for v in per):
        return REPRODUCED
    return NOT if all(v == NOT for v in per) else PARTLY


# each reads its per-ε rule at call time (flip_points.moved and the mutants rebind it)
def _one_over_t(slopes: Sequence[float]) -> str:
    return _per_eps(one_over_t_eps, slopes)


def _one_over_t_saturating(slopes: Sequence[float]) -> str:
    return _per_eps(one_over_t_eps_saturating, slopes)


#: (v) "for T < 0.1 the curves follow 1/T": each ε with at least MIN_T temperatures in (ε, 0.1)
#: judged by :data:`one_over_t_eps` (an ε with fewer is not testable, named, left out, where the
#: data are read); every such ε reproduced: reproduced; every one not reproduced: not
#: reproduced; else partly.
one_over_t = Rule(
    "one_over_t",
    _one_over_t,
    lambda: (
        f"per ε with at least {MIN_T:g} T in (ε, 0.1) (others not testable, named): "
        f"{one_over_t_eps.text()}; every ε reproduced: reproduced; every ε not: not reproduced; "
        "else partly"
    ),
    (ONE_OVER_T_LO, ONE_OVER_T_HI, RISES, MIN_T),
)
#: (v.a) under the alternative reading (a slope in (ONE_OVER_T_HI, RISES] saturates):
#: :data:`one_over_t` with :data:`one_over_t_eps_saturating` per ε.
one_over_t_saturating = Rule(
    "one_over_t_saturating",
    _one_over_t_saturating,
    lambda: (
        f"per ε with at least {MIN_T:g} T in (ε, 0.1) (others not testable, named): "
        f"{one_over_t_eps_saturating.text()} (a slope in ({ONE_OVER_T_HI}, {RISES}] "
        "saturates); every ε reproduced: reproduced; every ε not: not reproduced; else partly"
    ),
    (ONE_OVER_T_LO, ONE_OVER_T_HI, MIN_T),
)
#: (v) "once T ≥ 1 all curves collapse": at each T ≥ 1 where some ε ≥ T (the caller passes
#: those only), max / min over ε of the curves at most COLLAPSED (they meet). Every T / some /
#: none; n/a without such a T (or with one ε). Rule change on the round-4 referee's point 3
#: (2026-11-28, after the round-3 run was public; direction: stricter): where every ε < T the
#: finite differences all approximate the derivative, so the curves meet by construction; those
#: T are shown and no longer judged.
collapses = Rule(
    "collapses",
    lambda spreads: share([s <= COLLAPSED.value for s in spreads if finite(s)]),
    lambda: (
        f"≤ {COLLAPSED} at every T ≥ 1 with some ε ≥ T (where every ε < T they meet by "
        "construction: shown, not judged): reproduced; some: partly; none: not (n/a: one ε)"
    ),
    (COLLAPSED,),
)
#: (iv) "no more than ≈ 80 % of the selected tokens can be geometrically distinguished": the
#: maximum over heads of N_s/N at every N ≥ 16 at most ABOUT_80 (a limit: no partly).
four_fifths = Graded("four_fifths", "max over heads of N_s/N (N ≥ 16)", Band(hi=ABOUT_80))
#: (v) "GPT-2 operates close to the theoretical limit when T < 10^{-1}": at each T < 0.1 the
#: Fig. 4 curve (max over heads and ε of g) over the printed bound min{1/(4T), √2}; the largest
#: such ratio (the curve reaches near the limit somewhere below 0.1; at every T < 0.1 would
#: contradict "follow 1/T" there, the bound being flat at √2) at least NEAR_LIMIT (partly from
#: NEAR_SOME).
near_limit = Graded(
    "near_limit", "largest over T < 0.1 of g / bound", Band(lo=NEAR_LIMIT), Band(lo=NEAR_SOME)
)


def _tracks(slope_high: float, slope_low: float, flat: Threshold) -> str:
    if not (finite(slope_high) and finite(slope_low)):
        return NA
    follows = ONE_OVER_T_LO.value <= slope_high <= ONE_OVER_T_HI.value
    return share([follows, slope_low > flat.value])


# each reads its threshold at call time (flip_points.moved and the mutants rebind it)
def _tracks_law(slope_high: float, slope_low: float) -> str:
    return _tracks(slope_high, slope_low, RISES)


def _tracks_law_saturating(slope_high: float, slope_low: float) -> str:
    return _tracks(slope_high, slope_low, ONE_OVER_T_HI)


#: (v) "the empirical Jacobian norm tracks the theoretical 1/(4T) law, saturating at low
#: temperature": Fig. 4's curve (max over heads and ε of g) against T has a log-log slope in
#: [ONE_OVER_T_LO, ONE_OVER_T_HI] over 0.1 ≤ T ≤ 1 (tracks 1/T) and one above RISES over the
#: grid's lowest decade of T (no visible rise as T falls: saturates, as the bound's √2 cap
#: does). Both: reproduced; one: partly; none: not. Rule change on the round-4 referee's point
#: 3 (2026-11-28, after the round-3 run was public; direction: stricter): "tracks" was read over
#: T ≥ 0.1, two of whose three decades (T ≥ 1) fall as 1/T for any softmax (the check (v.h)).
#: Rule change on the round-5 referee's point 1 (2026-11-28, after the round-4 run was public;
#: direction: stricter): "saturates" was a slope above ONE_OVER_T_HI, so a slope in
#: (ONE_OVER_T_HI, RISES] read as saturating here and as rising, slower than 1/T, in (v.a)'s
#: partly rung. One reading now holds in both rows, rising: the paper's own "saturates" is a
#: level, not a slower rise (Fig. 3's caption, "Geometric separability saturates at 70–85%.",
#: says next that the fraction "quickly plateaus"), as is the bound's cap √2 that this sentence
#: compares the curve to; so the lowest decade saturates only where it does not visibly rise,
#: above RISES (GROWS's mirror).
#: The old reading is :data:`tracks_law_saturating`, judged beside it as an alternative.
tracks_law = Rule(
    "tracks_law",
    _tracks_law,
    lambda: (
        f"slope over 0.1 ≤ T ≤ 1 in [{ONE_OVER_T_LO}, {ONE_OVER_T_HI}] (tracks; over T ≥ 1 "
        f"the max over heads does) and over the lowest decade of T > {RISES} (saturates: no "
        f"visible rise; in ({ONE_OVER_T_HI}, {RISES}] it rises, slower than 1/T): both: "
        "reproduced; one: partly; none: not reproduced"
    ),
    (ONE_OVER_T_LO, ONE_OVER_T_HI, RISES),
)
#: (v.f) under the alternative reading of the round-5 referee's point 1 (a slope in
#: (ONE_OVER_T_HI, RISES] saturates; the rule until then): saturates above ONE_OVER_T_HI.
tracks_law_saturating = Rule(
    "tracks_law_saturating",
    _tracks_law_saturating,
    lambda: (
        f"slope over 0.1 ≤ T ≤ 1 in [{ONE_OVER_T_LO}, {ONE_OVER_T_HI}] (tracks) and over the "
        f"lowest decade of T > {ONE_OVER_T_HI} (saturates, a slope in ({ONE_OVER_T_HI}, "
        f"{RISES}] included): both: reproduced; one: partly; none: not reproduced"
    ),
    (ONE_OVER_T_LO, ONE_OVER_T_HI, RISES),
)
#: (v) "Lowering T below 10^{-1} increases Jacobian norms": the exact ‖J‖₂ (max over heads of
#: the row mean) at the smallest T over at T = 0.1 at least RISE_CLEAR; above RISE_ANY: partly.
increases = Graded(
    "increases",
    "‖J‖₂ at the smallest T / at T = 0.1",
    Band(lo=RISE_CLEAR),
    Band(lo=RISE_ANY, open_lo=True),
)
#: Corollary 2(ii) "E → 0" as N → L: E exact (mean over heads) at the largest N of the grid at
#: L_max over its largest value over N at most VANISHES (a check: E = 0 at N = L by
#: definition; the grid ends at 0.9·L).
vanishes = Graded("vanishes", "E at the largest N / its peak over N", Band(hi=VANISHES))
_d_band = Graded(
    "d_collapses",
    "d̃ at N ≈ PROPORTIONAL·L / its peak over N",
    Band(hi=D_COLLAPSED),
    Band(hi=VANISHES),
)
#: the conclusions' "the representation distance collapses once N grows proportionally to L":
#: d̃ (mean over heads) at L_max at the grid's N nearest PROPORTIONAL·L over its peak over N at
#: most D_COLLAPSED; up to VANISHES partly (it falls, not to a quarter); else not reproduced.
#: Rule change on the round-4 referee's point 6 (2026-11-28, after the round-3 run was public;
#: direction: stricter): it was read at the grid's largest N (≈ 0.9·L), where d̃ → 0 by
#: definition (d̃ = 0 at N = L) and so could not fail; the row, a check until then, is
#: supporting. Its value at 0.06·L and at 0.9·L and where d̃ peaks are shown beside it.
d_collapses = Rule(
    "d_collapses",
    lambda ratio: _d_band(ratio),  # looked up at call time: flip_points moves its thresholds
    lambda: (
        f"d̃ at the grid's N nearest {PROPORTIONAL}·L / its peak over N ≤ {D_COLLAPSED}: "
        f"reproduced; ≤ {VANISHES}: partly; else not reproduced"
    ),
    (PROPORTIONAL, D_COLLAPSED, VANISHES),
)
#: a statement no run of ours can test (no such model): n/a, with the reason in the row
not_run = Rule("not_run", lambda: NA, lambda: "no run of ours has the numbers: n/a")
#: a reading that cannot fail, or can hardly (by definition, or by the max over a model's
#: heads, the round-5 referee's point 17), or that cannot pass (false by arithmetic, its
#: point 6): a check, its numbers shown and never judged (n/a), the reason in the row's
#: reading (the round-4 referee's points 3 and 6: a row that cannot fail is not evidence; nor
#: is one that cannot pass)
by_construction = Rule(
    "by_construction",
    lambda *_: NA,
    lambda: (
        "true (or false) by construction (the reading says why): numbers shown, not judged (n/a)"
    ),
)

#: Theorem 1.2's ε = E exact − E derived: each check (ε ≥ 0, ε ≤ each printed bound) holds to 3
#: standard errors of E exact in at least WITHIN_SE of the cells. Every check / some / none.
within_noise = Rule(
    "within_noise",
    lambda shares: share([s >= WITHIN_SE.value for s in shares if finite(s)]),
    lambda: (
        f"each check (ε ≥ 0, ε ≤ each bound) holds to 3 SE in ≥ {WITHIN_SE} of the cells "
        "(loose: chance alone leaves about 0.1 % out): all: reproduced; some: partly"
    ),
    (WITHIN_SE,),
)


def _small_residual(
    eps: Sequence[float],
    exact: Sequence[float],
    se: Sequence[float],
    concentration: Sequence[float] | None = None,
) -> str:
    cells = [
        (e, x, s, c)
        for e, x, s, c in zip(
            eps,
            exact,
            se,
            [0.0] * len(eps) if concentration is None else concentration,
            strict=True,
        )
        if finite(e) and finite(x) and finite(s) and finite(c)
    ]
    if not cells:
        return NA
    if concentration is not None:  # the cells whose weights are not too concentrated
        median = sorted(c for *_, c in cells)[(len(cells) - 1) // 2]
        cells = [cell for cell in cells if cell[3] <= median]
    small = sum(abs(e) <= EPS_SMALL.value * x + 3 * s for e, x, s, _ in cells)
    if small >= WITHIN_SE.value * len(cells):
        return REPRODUCED
    return NA if concentration is None else NOT


#: Theorem 1's "the residual ε ... is small whenever the individual weights α_i are not too
#: concentrated": per cell (window, layer, head, L, N) |ε| = |E exact − E derived| at most
#: EPS_SMALL times E exact, to 3 standard errors of E exact (``se``). With ``concentration``
#: (the cell's row-mean max α_i, stored by Alg. 1 since 2026-11-28), the cells whose weights
#: are not too concentrated are those at or below the median concentration over the cells
#: (ours: the paper gives no level, so "not too concentrated" is read relative to the run,
#: half the cells, the lower median); in at least WITHIN_SE of them: reproduced, else not
#: reproduced. Without it (a run from before the statistic was stored): in at least WITHIN_SE
#: of all the cells, reproduced (small whatever the weights), else n/a (the 'whenever' cannot
#: be judged). Rule changes: the round-5 referee's point 9 (2026-11-28, after the round-3 run
#: was public; stricter): |ε| in place of ε; then (2026-11-28, written before the first run
#: that stores max α_i, after ε / E exact was public; direction: stricter, since a run with
#: the statistic can now read not reproduced where it read n/a) the median split on max α_i.
small_residual = Rule(
    "small_residual",
    _small_residual,
    lambda: (
        f"|ε| ≤ {EPS_SMALL:g}·E exact (to 3 SE) in ≥ {WITHIN_SE} of the cells whose weights "
        "are not too concentrated (row-mean max α_i at most the median over the cells; ours): "
        "reproduced, else not reproduced; a run that stores no max α_i: in ≥ "
        f"{WITHIN_SE} of all the cells, reproduced, else n/a (the 'whenever' cannot be judged)"
    ),
    (EPS_SMALL, WITHIN_SE),
)

#: Every rule, in the order the findings use them (the docs' rules table).
RULES = (
    linear_growth,
    safe,
    bound_loose,
    plateau,
    tightens,
    converges,
    exists,
    about_most,
    sub_linear,
    falls,
    saturates,
    in_band,
    lower_loose,
    four_fifths,
    one_over_t,
    one_over_t_eps,
    one_over_t_saturating,
    one_over_t_eps_saturating,
    ordered,
    drops,
    collapses,
    near_limit,
    tracks_law,
    tracks_law_saturating,
    increases,
    corollary3,
    delta_positive,
    within_noise,
    small_residual,
    vanishes,
    d_collapses,
    not_run,
    by_construction,
)
#: Every threshold of paper A's rules, by name, in the order the rules use them: derived from
#: the rules, so none is listed that no rule reads (the docs' provenance table is drawn from it).
THRESHOLDS = {t.name: t for rule in RULES for t in rule.thresholds}
