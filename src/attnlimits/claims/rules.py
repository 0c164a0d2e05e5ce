"""The shapes of verdict rules, declared from named thresholds, that judge and state themselves.

Most of the papers' statements are judged by one of three shapes:

- :class:`Graded`: a statistic in one band is reproduced, in a second band partly, elsewhere not
  (a log-log slope "roughly linear" in [0.7, 1.3], partly from 0.1);
- :class:`Share`: a statement made for every case (head, L, ε) holds in all / some / none;
- :class:`Holds`: a bound as a theorem states it, which holds everywhere or is not a bound.

Each is callable on the measured value(s) and returns a verdict of :mod:`.verdicts`; ``text()``
is the rule as reports and docs print it, formatted from the thresholds, never retyped; and
:meth:`Graded.flips` says at what value each threshold would change a verdict (the sensitivity
line a referee asks for). A rule of another shape stays a small function beside its thresholds,
with its text formatted from them in one place.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from attnlimits.claims.thresholds import Threshold
from attnlimits.claims.verdicts import NA, NOT, PARTLY, REPRODUCED

__all__ = ["Band", "Graded", "Holds", "Rule", "Share", "finite"]


def finite(value: float | None) -> bool:
    """Whether ``value`` is a number a rule can judge (not None, NaN or infinite)."""
    return value is not None and math.isfinite(value)


@dataclass(frozen=True)
class Band:
    """The values from ``lo`` to ``hi`` (either may be None: unbounded), ends included unless
    ``open_lo`` / ``open_hi``."""

    lo: Threshold | None = None
    hi: Threshold | None = None
    open_lo: bool = False
    open_hi: bool = False

    def __post_init__(self) -> None:
        if self.lo is None and self.hi is None:
            raise ValueError("a band needs a lower or an upper end")
        if self.lo is not None and self.hi is not None and self.lo.value > self.hi.value:
            raise ValueError(f"band {self.lo.name} = {self.lo} > {self.hi.name} = {self.hi}")

    def __contains__(self, x: float) -> bool:
        if self.lo is not None and (x <= self.lo.value if self.open_lo else x < self.lo.value):
            return False
        return self.hi is None or (x < self.hi.value if self.open_hi else x <= self.hi.value)

    def text(self) -> str:
        """ "in [0.7, 1.3]", "≥ 2", "> 0", "≤ 25%"."""
        if self.lo is not None and self.hi is not None:
            left, right = "(" if self.open_lo else "[", ")" if self.open_hi else "]"
            return f"in {left}{self.lo}, {self.hi}{right}"
        if self.lo is not None:
            return f"{'>' if self.open_lo else '≥'} {self.lo}"
        assert self.hi is not None
        return f"{'<' if self.open_hi else '≤'} {self.hi}"

    def ends(self) -> tuple[Threshold, ...]:
        return tuple(t for t in (self.lo, self.hi) if t is not None)


@dataclass(frozen=True)
class _Named:
    """A rule's name, read as a function's ``__name__`` (the tests' known-answer tables name
    rules by it)."""

    name: str

    @property
    def __name__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Graded(_Named):
    """``statistic`` in ``reproduced``: reproduced; else in ``partly``: partly; else not
    reproduced; not a finite number: n/a (the run lacks it). ``magnitude``: judge |x| (the
    statistic's name then says so). ``name``: the rule's name (as a function's)."""

    statistic: str
    reproduced: Band
    partly: Band | None = None
    magnitude: bool = False

    def __call__(self, value: float | None) -> str:
        if value is None or not finite(value):
            return NA
        x = abs(value) if self.magnitude else value
        if x in self.reproduced:
            return REPRODUCED
        return PARTLY if self.partly is not None and x in self.partly else NOT

    def text(self) -> str:
        """The rule as a report prints it."""
        parts = [f"{self.statistic} {self.reproduced.text()}: reproduced"]
        if self.partly is not None:
            parts.append(f"{self.partly.text()}: partly")
        parts.append("else not reproduced")
        return "; ".join(parts)

    @property
    def thresholds(self) -> tuple[Threshold, ...]:
        """The thresholds its bands are built from."""
        bands = (self.reproduced,) if self.partly is None else (self.reproduced, self.partly)
        return tuple(t for band in bands for t in band.ends())

    def flips(self, value: float | None) -> dict[str, float]:
        """For each threshold, the value at which it would change the verdict on ``value``: the
        measured statistic itself (a threshold moved past it puts it in another band), where
        moving that threshold alone changes the verdict; {} for a value the rule cannot judge."""
        if value is None or not finite(value):
            return {}
        x = abs(value) if self.magnitude else value
        now, out = self(value), {}
        for t in self.thresholds:
            for nudge in (-1, 1):  # the threshold just past the value, on either side
                moved = _moved(self, t, math.nextafter(x, nudge * math.inf))
                if moved(value) != now:
                    out[t.name] = x
        return out


def _moved(rule: Graded, t: Threshold, value: float) -> Graded:
    def band(b: Band | None) -> Band | None:
        if b is None:
            return None
        lo = Threshold(t.name, value, t.provenance, t.reason, t.fmt) if b.lo is t else b.lo
        hi = Threshold(t.name, value, t.provenance, t.reason, t.fmt) if b.hi is t else b.hi
        if lo is not None and hi is not None and lo.value > hi.value:
            return Band(hi, hi, b.open_lo, b.open_hi)  # an empty-ish band: judged as moved
        return Band(lo, hi, b.open_lo, b.open_hi)

    reproduced = band(rule.reproduced)
    assert reproduced is not None
    return Graded(rule.name, rule.statistic, reproduced, band(rule.partly), rule.magnitude)


@dataclass(frozen=True)
class Share(_Named):
    """A statement made for every case: ``condition`` holds in every ``unit`` (reproduced), in
    some (partly), in none (not reproduced); no cases: n/a."""

    condition: str
    unit: str

    #: a share or a bound compares to no number of ours
    thresholds: ClassVar[tuple[Threshold, ...]] = ()

    def __call__(self, flags: Sequence[bool]) -> str:
        if len(flags) == 0:
            return NA
        if all(flags):
            return REPRODUCED
        return PARTLY if any(flags) else NOT

    def text(self) -> str:
        return (
            f"{self.condition} in every {self.unit}: reproduced; in some: partly; in none: "
            "not reproduced"
        )


@dataclass(frozen=True)
class Holds(_Named):
    """A bound as a theorem states it: ``condition`` in every case (the share of cases where it
    holds is 1) is reproduced, anywhere less is not (a bound that fails somewhere is no bound,
    so there is no "partly"); not a finite share: n/a."""

    condition: str
    unit: str

    #: a share or a bound compares to no number of ours
    thresholds: ClassVar[tuple[Threshold, ...]] = ()

    def __call__(self, fraction: float | None) -> str:
        if fraction is None or not finite(fraction):
            return NA
        return REPRODUCED if fraction >= 1.0 else NOT

    def text(self) -> str:
        return f"{self.condition} in every {self.unit}: reproduced; else not (a bound)"


@dataclass(frozen=True)
class Rule(_Named):
    """A rule of another shape: ``judge`` turns the measured values into a verdict, ``say``
    formats its text from ``thresholds`` (the only place its numbers are written)."""

    judge: Callable[..., str]
    say: Callable[[], str]
    thresholds: tuple[Threshold, ...] = ()

    def __call__(self, *values: Any) -> str:
        return self.judge(*values)

    def text(self) -> str:
        return self.say()
