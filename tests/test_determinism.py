"""The metrics give the same bits at 1 and 2 threads and on every repeat (docs/determinism.md),
on inputs built to expose order dependence: rows with exactly tied weights (attention sinks,
uniform prefixes), a hidden-state x shared by every head (the sparse Gram route), per-head x."""

from __future__ import annotations

import pytest
import torch

from attnlimits.metrics import (
    distance_curve,
    expected_distance_curve_mc,
    min_pairwise_distances,
    separability_curve,
)


def _tied_map(heads: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """Causal softmax maps ``[head, query, key]`` whose rows hold many exactly equal weights."""
    logits = torch.randn(heads, length, length, generator=generator).round()  # integers: ties
    logits[:, :, 0] = 6.0  # a sink on the first key
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    return logits.masked_fill(~causal, -torch.inf).softmax(-1)  # (head, Q, K)


def _run(threads: int, attn: torch.Tensor, xs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        mask = torch.ones_like(attn, dtype=torch.bool).tril()
        out: list[torch.Tensor] = []
        for x in xs.values():
            curve = distance_curve(
                attn, x, [1, 2, 5, 16, 40], mask=mask, bound_ns=[5],
                gap_forms=("main_text", "appendix"),
            )  # fmt: skip
            out += [curve.distance, curve.bound, *curve.expected.values()]
            out += list((curve.gap or {}).values())
            gen = torch.Generator().manual_seed(7)  # E exact: the same draws give the same bits
            out += list(expected_distance_curve_mc(attn, x, [1, 5, 16], mask=mask, generator=gen))
            sphere = x / x.norm(dim=-1, keepdim=True)
            sep = separability_curve(attn, sphere, [1, 4, 16], mask=mask, radius=1.0)
            out += [sep.ratio, sep.lower, sep.upper, *min_pairwise_distances(sphere)]
        return out
    finally:
        torch.set_num_threads(old)


@pytest.mark.parametrize("seed", [0, 1])
def test_metrics_are_bit_identical_across_thread_counts_and_repeats(seed):
    g = torch.Generator().manual_seed(seed)
    heads, length = 3, 96
    attn = _tied_map(heads, length, g)
    ties = (attn[:, -1, :, None] == attn[:, -1, None, :]).sum() - heads * length
    assert ties > 0  # the input really has tied weights
    xs = {
        "per_head": torch.randn(heads, length, 16, generator=g),  # values: one x per head
        "shared": torch.randn(1, length, 512, generator=g),  # hidden states: the Gram route
    }
    runs = [_run(t, attn, xs) for t in (1, 2, 1, 2)]
    for other in runs[1:]:
        for a, b in zip(runs[0], other, strict=True):
            assert torch.equal(a.isnan(), b.isnan())
            assert torch.equal(a.nan_to_num(), b.nan_to_num())  # every bit, NaN where invalid
