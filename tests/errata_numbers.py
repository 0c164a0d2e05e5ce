"""Reading the numbers an errata script prints, and the numpy pieces the errata tests check them
against (tests/test_errata*.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?%?")


def nums(text: str) -> list[float]:
    """Every number in ``text``; a trailing % divides by 100."""
    out = []
    for tok in NUMBER.findall(text):
        out.append(float(tok[:-1]) / 100 if tok.endswith("%") else float(tok))
    return out


def lines_matching(out: str, pattern: str) -> list[str]:
    return [line for line in out.splitlines() if re.match(pattern, line)]


def lower_median(v: np.ndarray) -> float:
    """torch.median's convention: the lower of the two middle values."""
    return float(np.sort(v)[(v.size - 1) // 2])


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def close(printed: float, value: float, decimals: int) -> bool:
    """``printed`` is ``value`` rounded to ``decimals`` places (with a hair of slack)."""
    return abs(printed - value) <= 0.5 * 10**-decimals + 1e-9


def close_sig(printed: float, value: float, digits: int) -> bool:
    """``printed`` is ``value`` to ``digits`` significant digits (format ``.{digits}g``)."""
    return float(f"{value:.{digits}g}") == pytest.approx(printed, rel=1e-12, abs=1e-300)
