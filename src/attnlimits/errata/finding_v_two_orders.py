"""Paper A (Mudarisov et al., NeurIPS 2025), §3, finding (v): "follow 1/T" and "drop by two
orders of magnitude" between T < 0.1 and T ≥ 1?

Printed, in our copy (mathematics as its text extraction renders it): "For
T<0.1\\displaystyle T\\!<\\!0.1 the empirical curves follow the theoretical 1/T\\displaystyle
1/T trend of Corollary 3" and "Once T1\\displaystyle T\\!\\geq\\!1 all curves collapse and drop by
two orders of magnitude".

A curve that follows 1/T falls by a factor 10 per decade of T. Three readings of "drop by two
orders of magnitude": (a) from T = 0.1, where the 1/T range is said to end, to T = 1: 1/T falls
10× and Corollary 3's printed reference min{1/(4T), √2} 5.7×, so 100× would need a log-log slope
of −2, twice the stated trend: the statements contradict; (b) from T ≈ 0.01 to T = 1: 1/T falls
100×; (c) across the range T ≥ 1 (T = 1 to 100): 1/T falls 100×. Under (b) and (c) they agree.
Which the authors meant the text does not say; this prints each, and δ(1)/δ(100) on the rows.
"Collapse" (the ε curves meeting for T ≥ 1) is a third, separate statement: this prints the
spread of δ over Alg. 5's three ε at each T ≥ 1 on the rows of ``figure4_low_temperature``.

``python -m attnlimits.errata finding_v_two_orders`` (seeded, CPU, under a second)
"""

from __future__ import annotations

import numpy as np
import torch

from attnlimits.errata.figure4_low_temperature import EPSILONS, TEMPERATURES, curves
from attnlimits.theory.sensitivity import corollary3_bound_as_printed

#: The paper's words, as in our copy (../shared/papers; a test finds each there).
QUOTES = (
    r"For T<0.1\displaystyle T\!<\!0.1 the empirical curves follow the theoretical "
    r"1/T\displaystyle 1/T trend of Corollary 3",
    r"Once T1\displaystyle T\!\geq\!1 all curves collapse and drop by two orders of magnitude",
)


def drops() -> dict[str, float]:
    """Factor by which each reference falls from T = 0.1 (and from T = 0.01) to T = 1."""
    bound = corollary3_bound_as_printed(torch.tensor([0.01, 0.1, 1.0], dtype=torch.float64))
    b = torch.as_tensor(bound).tolist()
    return {
        "1/T, from T = 0.1": 0.1**-1 / 1.0,
        "1/T, from T = 0.01": 0.01**-1 / 1.0,
        "printed min{1/(4T), sqrt 2}, from T = 0.1": b[1] / b[2],
        "printed min{1/(4T), sqrt 2}, from T = 0.01": b[0] / b[2],
    }


def slope_for(factor: float, decades: float = 1.0) -> float:
    """The log-log slope that falls by ``factor`` over ``decades`` of T."""
    return -float(np.log10(factor)) / decades


def drop_across_high() -> dict[str, list[float]]:
    """δ(T = 1) / δ(T = 100) per row, one value per ε of Alg. 5 (reading (c))."""
    t = np.asarray(TEMPERATURES)
    i1, i100 = int(np.argmin(abs(t - 1.0))), int(np.argmin(abs(t - 100.0)))
    out: dict[str, list[float]] = {}
    for c in curves():
        out.setdefault(c.row, []).append(float(c.values[i1] / c.values[i100]))
    return out


def collapse_spread() -> dict[str, list[float]]:
    """max/min of δ over the three ε at each T ≥ 1, per row (1.0: the curves meet)."""
    t = np.asarray(TEMPERATURES)
    high = t >= 1.0 - 1e-12
    by_row: dict[str, list[np.ndarray]] = {}
    for c in curves():
        by_row.setdefault(c.row, []).append(c.values[high])
    out = {}
    for row, vals in by_row.items():
        v = np.stack(vals)  # (ε, T ≥ 1)
        out[row] = [float(x) for x in v.max(0) / np.maximum(v.min(0), 1e-300)]
    return out


def main() -> None:
    print('Paper A, finding (v): "follow 1/T" for T < 0.1, then "drop by two orders" at T >= 1\n')
    for name, f in drops().items():
        print(f"  {name:<45} falls {f:7.2f}x to T = 1")
    print(f"\n  a drop of 100x over the decade T = 0.1 ... 1 needs slope {slope_for(100):.1f}")
    print("  (the stated 1/T trend is slope -1.0)")
    print(
        "  reading (c), across T >= 1: 1/T falls 100.00x from T = 1 to T = 100; delta(1)/delta(100)"
    )
    print(f"  per row for eps = {EPSILONS}:")
    for row, drops_ in drop_across_high().items():
        print(f"    {row:<22}" + "".join(f"{d:>10.3g}" for d in drops_))
    print()
    t = [x for x in TEMPERATURES if x >= 1.0 - 1e-12]
    print(f"'collapse': max/min of delta over eps = {EPSILONS} at each T >= 1 (1.00: they meet)")
    print(f"{'row':<22}" + "".join(f"{x:>10.3g}" for x in t))
    for row, spread in collapse_spread().items():
        print(f"{row:<22}" + "".join(f"{s:>10.3g}" for s in spread))
    print(
        "\nVerdict: read as a drop at T = 1 from the end of the 1/T range (T = 0.1), the two "
        "statements\ncontradict: 1/T gives 10x, the printed bound 5.7x, not 100x. Read as a drop "
        "counted from\nT = 0.01, or across T >= 1 (T = 1 to 100), they agree. The text does not "
        "say which; the\nreproduction's reading of (v) is in docs/limitations.md."
    )


if __name__ == "__main__":
    main()
