"""Paper A (Mudarisov et al., NeurIPS 2025), appendix Eq. 21 (Theorem 1.2): P(i ∉ I_N).

Printed: P(i ∉ I_N) = (L − N)/N for I_N uniform over the C(L, N) subsets. Derivation:
C(L−1, N)/C(L, N) = (L − N)/L.

``python -m attnlimits.errata theorem1_probability`` counts the N-subsets of {0..L−1} that miss
key 0, for every 2 ≤ L ≤ 12 and 1 ≤ N < L (66 pairs), in exact fractions.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import NamedTuple

from attnlimits.theory.distance import prob_not_selected

LENGTHS = range(2, 13)
SHOWN = (4, 12)  # lengths printed in full (and L = 6, N = 3)


class Row(NamedTuple):
    length: int
    n: int
    counted: Fraction  # #{subsets missing key 0} / C(L, N)
    derived: Fraction  # prob_not_selected(L, N), i.e. (L − N)/L
    appendix: Fraction  # (L − N)/N


def compute() -> list[Row]:
    """One row per (L, N): the counted probability beside both printed forms."""
    rows = []
    for length in LENGTHS:
        for n in range(1, length):
            subsets = list(itertools.combinations(range(length), n))
            p = Fraction(sum(0 not in s for s in subsets), len(subsets))
            derived = Fraction(float(prob_not_selected(length, n))).limit_denominator(10**6)
            rows.append(Row(length, n, p, derived, Fraction(length - n, n)))
    return rows


def main() -> None:
    rows = compute()
    print(f"{'L':>3} {'N':>3} {'count/C(L,N)':>13} {'(L-N)/L':>9} {'(L-N)/N':>9}")
    for r in rows:
        if r.length in SHOWN or (r.length, r.n) == (6, 3):
            print(
                f"{r.length:>3} {r.n:>3} {float(r.counted):13.4f} {float(r.derived):9.4f}"
                f" {float(r.appendix):9.4f}"
            )
    worst_derived = max(abs(r.counted - r.derived) for r in rows)
    worst_appendix = max(abs(r.counted - r.appendix) for r in rows)
    print(f"max |count − (L−N)/L| = {float(worst_derived):.3g} over {len(rows)} (L, N) pairs")
    print(f"max |count − (L−N)/N| = {float(worst_appendix):.3g}  (equal only when N = L/2)")
    print("Verdict: P(i ∉ I_N) = C(L−1, N)/C(L, N) = (L−N)/L; Eq. 21's (L−N)/N is a typo.")


if __name__ == "__main__":
    main()
