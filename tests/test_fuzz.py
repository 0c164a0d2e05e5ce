"""Fuzz: every registry normaliser and the row metrics over random shapes, dtypes, masks and
extreme logits (up to the dtype's largest value). The contract holds (finite, masked entries 0,
rows summing as the registry says); a clear ValueError where the input is invalid.
tests/test_api_fuzz.py fuzzes the arguments of every public function; this file fuzzes values."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from api_fuzz_roles import assert_normaliser_contract
from attnlimits import metrics, normalizers

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
EXTREMES = (0.0, 1.0, -1.0, 1e4, -1e4, 30.0, -30.0, -math.inf, "max", "-max")


@st.composite
def maps(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores [heads, query, key] with extreme values and -inf, and a keep-mask (any rows
    all-masked, single-key rows included)."""
    h, q, k = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 7))
    dtype = draw(st.sampled_from(DTYPES))
    seed = draw(st.integers(0, 2**16))
    gen = torch.Generator().manual_seed(seed)
    scale = draw(st.sampled_from((1.0, 10.0, 1e3)))
    scores = torch.randn(h, q, k, generator=gen) * scale
    n_extreme = draw(st.integers(0, h * q * k))
    scores = scores.to(torch.float64).clamp(-1e4, 1e4)
    if n_extreme:
        big = torch.finfo(dtype).max  # the dtype's own extremes: spreads beyond its range
        table = torch.tensor(
            [big if v == "max" else -big if v == "-max" else v for v in EXTREMES],
            dtype=torch.float64,
        )
        idx = torch.randint(0, h * q * k, (n_extreme,), generator=gen)
        scores.view(-1)[idx] = table[torch.randint(0, len(table), (n_extreme,), generator=gen)]
    mask = torch.rand(h, q, k, generator=gen) < draw(st.sampled_from((0.0, 0.3, 0.7, 1.0)))
    mask = mask | draw(st.booleans())  # sometimes everything kept
    return scores.to(dtype), mask


@pytest.mark.parametrize("name", normalizers.available())
@settings(max_examples=25, deadline=None)
@given(case=maps())
def test_normalizers_keep_their_contract(
    name: str, case: tuple[torch.Tensor, torch.Tensor]
) -> None:
    scores, mask = case
    assert_normaliser_contract(name, scores, mask, normalizers.get(name)(scores, mask=mask))


@pytest.mark.parametrize("name", normalizers.available())
@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_normalizers_refuse_nan_and_plus_inf(name: str, bad: float) -> None:
    scores = torch.zeros(2, 3)
    scores[1, 2] = bad
    with pytest.raises(ValueError, match="scores contains"):
        normalizers.get(name)(scores)


@settings(max_examples=40, deadline=None)
@given(case=maps())
def test_row_metrics_never_invent_nan(case: tuple[torch.Tensor, torch.Tensor]) -> None:
    scores, mask = case
    kept = mask & ~torch.isneginf(scores)
    attn = normalizers.softmax(scores, mask=mask)
    rows_ok = kept.any(-1)
    for name, value in {
        "entropy": metrics.attention_entropy(attn, mask=kept),
        "max_weight": metrics.max_weight(attn, mask=kept),
        "spread": metrics.logit_spread(scores, mask=mask),
        "jacobian": metrics.softmax_jacobian_norm(scores, mask=mask).values,
    }.items():
        assert value.shape == scores.shape[:-1], name
        assert not torch.isnan(value[rows_ok]).any(), (name, scores, mask)
