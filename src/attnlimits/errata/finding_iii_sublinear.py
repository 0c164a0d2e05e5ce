"""Paper A (Mudarisov et al., NeurIPS 2025), §3, finding (iii): "sub-linear" or "≈ 0.06L"?

Printed, in our copy (mathematics as its text extraction renders it):

- finding (iii): "The critical-N\\displaystyle N curve grows sub-linearly
  (0.06L\\displaystyle\\approx 0.06L)";
- the conclusions: "The critical-N\\displaystyle N curve in Fig. 2 grows roughly like
  0.06L\\displaystyle 0.06L" and "limit the top-k\\displaystyle k set to a sub-linear function of
  the context length".

A fixed fraction of L, N_c = 0.06·L, is linear: its log-log slope is exactly 1. A sub-linear curve
N_c = c·L^a (a < 1) is a falling fraction of L. The two descriptions fit one curve only where a
is close to 1: matched to 0.06·L at the middle of Alg. 3's lengths (geometric mean), the power
law's N_c/L at the two ends is 0.06·(L_end/L_mid)^(a−1). This prints that fraction for a few
exponents over L = 32 … 1024, and the smallest exponent that stays within ±20 % of 0.06·L there.
Pure arithmetic, no randomness.

``python -m attnlimits.errata finding_iii_sublinear``
"""

from __future__ import annotations

import math

from attnlimits.claims import statistics

#: The paper's words, as in our copy (../shared/papers; a test finds each there).
QUOTES = (
    r"The critical-N\displaystyle N curve grows sub-linearly (0.06L\displaystyle\approx 0.06L)",
    r"The critical-N\displaystyle N curve in Fig. 2 grows roughly like 0.06L\displaystyle 0.06L",
    r"limit the top-k\displaystyle k set to a sub-linear function of the context length",
)
LENGTHS = (32, 64, 128, 256, 512, 1024)  # Alg. 3's lengths in the reproduction
FRACTION = 0.06  # the printed "≈ 0.06L"
EXPONENTS = (1.0, 0.9, 0.75, 0.5)


def fractions(a: float, lengths: tuple[int, ...] = LENGTHS) -> list[float]:
    """N_c / L of c·L^a matched to 0.06·L at the geometric mean of ``lengths``."""
    mid = math.exp(sum(math.log(n) for n in lengths) / len(lengths))
    return [FRACTION * (n / mid) ** (a - 1.0) for n in lengths]


def loglog_slope(a: float, lengths: tuple[int, ...] = LENGTHS) -> float:
    """Least-squares log-log slope of c·L^a over ``lengths`` (= a: a check of the arithmetic)."""
    y = [f * n for f, n in zip(fractions(a, lengths), lengths, strict=True)]
    return float(statistics.loglog_slope(list(lengths), y).estimate)


def smallest_exponent(within: float = 0.2, lengths: tuple[int, ...] = LENGTHS) -> float:
    """The smallest a whose matched power law stays within ±``within`` of 0.06·L at both ends."""
    # the ends sit at (L_max/L_min)^(±(1−a)/2) of the middle: solve (L_max/L_min)^((1−a)/2) = 1+w
    span = math.log(max(lengths) / min(lengths))
    return 1.0 - 2.0 * math.log1p(within) / span


def main() -> None:
    print('Paper A, finding (iii): "grows sub-linearly (≈ 0.06L)" -- a fixed fraction is linear\n')
    print(f"N_c = c·L^a matched to {FRACTION}·L at the geometric mean of L = {LENGTHS}:")
    print(f"{'a':>6}{'slope':>8}" + "".join(f"{'L=' + str(n):>9}" for n in LENGTHS))
    for a in EXPONENTS:
        row = "".join(f"{f:>9.3f}" for f in fractions(a))
        print(f"{a:>6.2f}{loglog_slope(a):>8.2f}{row}")
    print("(cells: N_c / L)")
    a_min = smallest_exponent()
    print(
        f"\nWithin ±20 % of {FRACTION}·L over L = {LENGTHS[0]} … {LENGTHS[-1]} needs a ≥ "
        f"{a_min:.3f}:\n'≈ 0.06L' describes a linear curve (a = 1) or one barely below it; "
        "'sub-linear' as a\nrecommendation (a top-k set that grows slower than L) means a < 1. "
        "The two phrases\nagree only for 0.895 ≤ a < 1, which neither names. The reproduction's "
        "reading of (iii)\nis in docs/limitations.md."
    )


if __name__ == "__main__":
    main()
