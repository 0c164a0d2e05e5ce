"""The float32 tolerance of the kernel tests (tests/float_tolerance.py) passes float32
arithmetic's own error and catches more: it is derived, not so loose it cannot fail."""

from __future__ import annotations

import pytest
import torch

from attnlimits.kernels import naive_attention
from float_tolerance import FACTOR, assert_float32_close, float32_atol


def _ssmax_outputs() -> tuple[torch.Tensor, torch.Tensor]:
    """SSMax over 1500 keys (scale 0.8·ln 1500 ≈ 5.9): float64, float32 outputs."""
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, 512, 16, generator=gen) * 3
    k, v = torch.randn(1, 2, 1500, 16, generator=gen), torch.randn(1, 2, 1500, 16, generator=gen)
    ref64 = naive_attention(q.double(), k.double(), v.double(), "ssmax", s=0.8)
    return ref64, naive_attention(q, k, v, "ssmax", s=0.8)


def test_float32_itself_passes_the_derived_tolerance_where_a_fixed_one_is_tight() -> None:
    """float32 torch misses float64 by 1.3e-5 here (AVX2 kind: 2 of 16,384 outputs beyond a
    fixed 1e-5; logits up to ~110), and passes the derived tolerance (5e-5)."""
    ref64, ref32 = _ssmax_outputs()
    assert float((ref32.double() - ref64).abs().max()) > 5e-6  # rounding of large logits
    assert_float32_close(ref32, ref64, ref32, "output")
    assert float32_atol(ref32, ref64) < 1e-3  # a tolerance, not a pass for anything


@pytest.mark.parametrize("times", [2 * FACTOR, 100.0])
def test_an_error_beyond_factor_times_the_references_is_caught(times: float) -> None:
    ref64, ref32 = _ssmax_outputs()
    bad = (ref64 + times * (ref32.double() - ref64)).float()
    with pytest.raises(AssertionError) as err:
        assert_float32_close(bad, ref64, ref32, "output")
    text = str(err.value)  # the name, the reference's error, and torch's mismatch figures
    assert text.startswith("output: beyond") and "tolerance" in text
    assert "Mismatched elements" in text and "Greatest absolute difference" in text


def test_the_floor_stands_where_float32_is_exact() -> None:
    exact = torch.tensor([1.0, 2.0, 4.0])
    assert float32_atol(exact, exact.double()) == pytest.approx(8 * 4.0 * 2.0**-23)
    with pytest.raises(AssertionError):
        assert_float32_close(exact + 1e-4, exact.double(), exact, "n_keys")
