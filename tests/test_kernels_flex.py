"""kernels/flex.py: FlexAttention's score_mods and post-processing against the materialised
definition, in eager mode on the CPU (the compiled kernel computes the same function)."""

from __future__ import annotations

import pytest
import torch

from attnlimits.kernels import naive_attention
from attnlimits.kernels.flex import (
    adaptive_beta_flex,
    flex_available,
    flex_normalized_attention,
    sink_rescale,
)
from attnlimits.kernels.spec import NORMALIZERS, resolve_params
from kernel_inputs import PARAMS, inputs

pytestmark = [
    pytest.mark.skipif(flex_available() is not None, reason=str(flex_available())),
    pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile"),
]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("normalizer", sorted(NORMALIZERS))
def test_matches_the_materialised_definition(gen, normalizer, causal):
    """Every streamed normaliser, GQA (4 query heads on 2), a causal decode offset (Lk > Lq)."""
    q, k, v = (x.double() for x in inputs(gen))
    got = flex_normalized_attention(q, k, v, normalizer, causal=causal, **PARAMS[normalizer])
    want = naive_attention(q, k, v, normalizer, causal=causal, **PARAMS[normalizer])
    assert got.dtype == q.dtype
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_adaptive_beta_from_one_launch_with_keys_as_values(gen):
    """H = LSE − scale·q·Σ p k gives the listing's β, including rows with β > 1."""
    q, k, v = (x.double() for x in inputs(gen, spread=0.5))
    want = naive_attention(q, k, v, "adaptive", return_stats=True).beta
    assert bool((want > 1.05).any())
    from torch.nn.attention.flex_attention import flex_attention

    got = adaptive_beta_flex(
        q, k, resolve_params("adaptive", {}), block_mask=None, scale=8**-0.5, kernel=flex_attention
    )
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_sink_rescale_is_the_sink_softmax():
    """softmax over [σ, l] restricted to l equals softmax(l)·sigmoid(LSE − σ)."""
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(1, 2, 3, 5, generator=g, dtype=torch.float64)
    v = torch.randn(1, 2, 5, 4, generator=g, dtype=torch.float64)
    sink = torch.tensor([0.5, -2.0], dtype=torch.float64)
    full = torch.cat([sink[None, :, None, None].expand(1, 2, 3, 1), logits], -1).softmax(-1)
    plain = logits.softmax(-1) @ v
    got = sink_rescale(plain, logits.logsumexp(-1), sink)
    torch.testing.assert_close(got, full[..., 1:] @ v)


def test_bad_input_names_the_argument(gen):
    q, k, v = inputs(gen)
    with pytest.raises(ValueError, match="unknown normalizer"):
        flex_normalized_attention(q, k, v, "sparsemax")
    with pytest.raises(ValueError, match="cap"):
        flex_normalized_attention(q, k, v, "softcap", cap=-1.0)
