"""Appendix Eq. 21: P(i ∉ I_N) for I_N uniform over the C(L, N) subsets — (L−N)/N or (L−N)/L?

Counts the N-subsets of {0..L−1} that miss key 0, for every 2 ≤ L ≤ 12 and 1 ≤ N < L.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

from attnlimits.theory.distance import prob_not_selected


def main() -> None:
    print(f"{'L':>3} {'N':>3} {'count/C(L,N)':>13} {'(L-N)/L':>9} {'(L-N)/N':>9}")
    worst_derived, worst_appendix = Fraction(0), Fraction(0)
    for length in range(2, 13):
        for n in range(1, length):
            subsets = list(itertools.combinations(range(length), n))
            p = Fraction(sum(0 not in s for s in subsets), len(subsets))
            derived = Fraction(float(prob_not_selected(length, n))).limit_denominator(10**6)
            appendix = Fraction(length - n, n)
            worst_derived = max(worst_derived, abs(p - derived))
            worst_appendix = max(worst_appendix, abs(p - appendix))
            if length in (4, 12) or (length, n) == (6, 3):
                print(
                    f"{length:>3} {n:>3} {float(p):13.4f} {float(derived):9.4f}"
                    f" {float(appendix):9.4f}"
                )
    print(f"max |count − (L−N)/L| = {float(worst_derived):.3g} over 66 (L, N) pairs")
    print(f"max |count − (L−N)/N| = {float(worst_appendix):.3g}  (equal only when N = L/2)")
    print("Verdict: P(i ∉ I_N) = C(L−1, N)/C(L, N) = (L−N)/L; Eq. 21's (L−N)/N is a typo.")
