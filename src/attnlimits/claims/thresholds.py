"""Named thresholds with their provenance: the numbers a verdict rule compares a statistic to.

A :class:`Threshold` is written once, where its rule is declared; the rule's text in reports and
docs is formatted from it (:mod:`.rules`), so a changed value changes every sentence that states
it. Its ``provenance`` says whose number it is:

- :data:`PAPER`: the paper's own number (its words are quoted in the statement);
- :data:`LOST`: the paper gives a number that is lost in our copy of it; the value is our choice,
  and ``reason`` says why, in words that stand on their own;
- :data:`OURS`: a reading of ours, fixed before the runs it decides;
- :data:`AFTER_RUNS`: ours, set or changed after earlier runs were public (``reason`` gives the
  direction and date): a referee should weigh these most.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["AFTER_RUNS", "LOST", "OURS", "PAPER", "PROVENANCES", "Threshold"]

PAPER, LOST, OURS = "paper", "lost in our copy", "ours"
AFTER_RUNS = "ours, set after earlier runs were public"
PROVENANCES = (PAPER, LOST, OURS, AFTER_RUNS)


@dataclass(frozen=True)
class Threshold:
    """One number a rule compares a statistic to.

    ``name``: the constant's name (what the docs and sensitivity lines call it); ``value``: the
    number; ``provenance``: one of :data:`PROVENANCES`; ``reason``: why this value (required
    unless the paper gives it); ``fmt``: how the rule's text prints it (a format spec:
    ``"g"``, ``".0%"``, ``".2f"``)."""

    name: str
    value: float
    provenance: str
    reason: str = ""
    fmt: str = "g"

    def __post_init__(self) -> None:
        if self.provenance not in PROVENANCES:
            raise ValueError(
                f"threshold {self.name}: provenance {self.provenance!r} is none of {PROVENANCES}"
            )
        if not math.isfinite(self.value):
            raise ValueError(f"threshold {self.name} must be a finite number, got {self.value}")
        if self.provenance != PAPER and not self.reason.strip():
            raise ValueError(f"threshold {self.name} ({self.provenance}) needs its reason")

    # A threshold reads as its number where code computes with it (``PAPER_FRACTION * ABOUT``,
    # ``f"{GROWS:.2f}"``), so a rule's code and its text use the same object.
    def __str__(self) -> str:
        return format(self.value, self.fmt)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec or self.fmt)

    def __float__(self) -> float:
        return float(self.value)

    def __mul__(self, other: object) -> float:
        return float(self.value) * float(other)  # type: ignore[arg-type]

    __rmul__ = __mul__

    def __truediv__(self, other: object) -> float:
        return float(self.value) / float(other)  # type: ignore[arg-type]

    def __rtruediv__(self, other: object) -> float:
        return float(other) / float(self.value)  # type: ignore[arg-type]

    def __lt__(self, other: object) -> bool:
        return float(self.value) < float(other)  # type: ignore[arg-type]

    def __le__(self, other: object) -> bool:
        return float(self.value) <= float(other)  # type: ignore[arg-type]

    def __gt__(self, other: object) -> bool:
        return float(self.value) > float(other)  # type: ignore[arg-type]

    def __ge__(self, other: object) -> bool:
        return float(self.value) >= float(other)  # type: ignore[arg-type]
