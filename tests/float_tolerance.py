"""How close a float32 kernel must come to a float64 reference: within a few times the error of
plain float32 torch arithmetic on the same inputs (issue 54).

A fixed 1e-5 is not what float32 gives: with SSMax's scale 0.8·ln 1500 ≈ 5.9 the logits reach
~70, a rounding of 70·eps32 ≈ 8e-6 in a logit moves its weight by as much, and a plain float32
torch attention missed a float64 reference by up to 2.5e-5 (20 of 44,800 outputs, issue 54).
So the tolerance is measured, not guessed: the largest error of a float32 torch reference
(``naive_attention`` in float32) against float64, times :data:`FACTOR`, with a floor of
:data:`FLOOR_ULPS` float32 ulps of the result's magnitude for results the float32 reference
happens to get exact. The message keeps torch.testing's mismatch figures.
"""

from __future__ import annotations

import torch

EPS32 = torch.finfo(torch.float32).eps
#: how many times the float32 torch reference's largest error a kernel may make (its blocks
#: sum in another order and rescale by running maxima, so it rounds differently, not worse)
FACTOR = 4.0
#: the floor, in float32 ulps of the largest |reference| value
FLOOR_ULPS = 8.0


def float32_atol(ref32: torch.Tensor, ref64: torch.Tensor, factor: float = FACTOR) -> float:
    """Absolute tolerance: ``factor`` × max|ref32 − ref64|, at least FLOOR_ULPS·eps32·max|ref64|."""
    err = float((ref32.double() - ref64.double()).abs().max()) if ref64.numel() else 0.0
    scale = float(ref64.double().abs().max()) if ref64.numel() else 0.0
    return max(factor * err, FLOOR_ULPS * EPS32 * scale)


def assert_float32_close(
    got: torch.Tensor,
    ref64: torch.Tensor,
    ref32: torch.Tensor,
    name: str,
    factor: float = FACTOR,
) -> None:
    """``got`` (float32) within :func:`float32_atol` of ``ref64``; the failure names ``name``,
    the float32 reference's own error and the tolerance, then torch.testing's figures
    (mismatched elements, greatest absolute and relative difference and where)."""
    atol = float32_atol(ref32, ref64, factor)
    own = float((ref32.double() - ref64.double()).abs().max()) if ref64.numel() else 0.0

    def message(default: str) -> str:
        return (
            f"{name}: beyond {factor:g}x the float32 torch reference's error against float64 "
            f"(its error {own:.2e}, tolerance {atol:.2e})\n{default}"
        )

    torch.testing.assert_close(got.double(), ref64.double(), rtol=0.0, atol=atol, msg=message)
