"""The public API's error contract (docs/conventions.md): bad arguments raise ValueError or
TypeError naming the argument, never a raw IndexError/RuntimeError from deep inside."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from attnlimits import kernels, metrics, normalizers, theory

G = torch.Generator().manual_seed(0)
ATTN = torch.softmax(torch.randn(2, 4, 6, generator=G), -1)  # [head, query, key]
X = torch.randn(2, 6, 3, generator=G)  # [head, key, d]
X3 = torch.randn(3, 6, 3, generator=G)  # three heads: does not match ATTN's two
EMPTY = torch.zeros(2, 4, 0)
NAN = ATTN.clone().index_fill_(-1, torch.tensor([2]), float("nan"))
POSINF = ATTN.clone().index_fill_(-1, torch.tensor([2]), float("inf"))
Q = torch.randn(1, 2, 4, 8, generator=G)
KV = torch.randn(1, 2, 5, 8, generator=G)

# (what, call, the words the message must contain)
CASES: list[tuple[str, Callable[[], object], str]] = [
    ("distance: heads 2 vs 3", lambda: metrics.distance_metrics(ATTN, X3, 1), "attn (2, 4, 6) and x (3, 6, 3)"),
    ("distance curve: heads 2 vs 3", lambda: metrics.distance_curve(ATTN, X3, [1]), "attn (2, 4, 6) and x (3, 6, 3)"),
    ("distance: keys 6 vs 5", lambda: metrics.distance_metrics(ATTN, X[:, :5], 1), "disagree on K"),
    ("distance: empty keys", lambda: metrics.distance_metrics(EMPTY, torch.zeros(2, 0, 3), 1), "number of keys (0)"),
    ("separability: heads", lambda: metrics.separability_metrics(ATTN, metrics.normalize_to_sphere(X3), 1), "x (3, 6, 3)"),
    ("separability curve: empty", lambda: metrics.separability_curve(EMPTY, torch.zeros(2, 0, 3), [1]), "attn has an empty key axis"),
    ("expectation (theory): heads", lambda: theory.expected_distance(ATTN, X3, 1), "alpha (2, 4, 6) and x (3, 6, 3)"),
    ("expectation (exact): heads", lambda: metrics.expected_distance_exact(ATTN, X3, 1), "attn (2, 4, 6)"),
    ("expectation (MC): heads", lambda: metrics.expected_distance_monte_carlo(ATTN, X3, 1), "attn (2, 4, 6)"),
    ("max weight: empty", lambda: metrics.max_weight(EMPTY), "weights has an empty key axis"),
    ("entropy: empty", lambda: metrics.attention_entropy(EMPTY), "weights has an empty key axis"),
    ("logit spread: empty", lambda: metrics.logit_spread(EMPTY), "scores has an empty key axis"),
    ("sensitivity: empty", lambda: metrics.finite_difference_sensitivity(EMPTY, [1.0], [0.1]), "scores has an empty key axis"),
    ("sensitivity: T = 0", lambda: metrics.finite_difference_sensitivity(ATTN, [0.0], [0.1]), "temperatures"),
    ("Jacobian: NaN", lambda: metrics.softmax_jacobian_norm(NAN), "scores contains NaN"),
    ("row mean: rows 2 vs 3", lambda: metrics.row_mean(torch.zeros(2, 4), torch.ones(3, 4, dtype=torch.bool)), "valid of shape (3, 4)"),
    ("δ: empty", lambda: metrics.min_pairwise_distance(torch.zeros(2, 0, 3)), "x has an empty key axis"),
    ("sphere: radius < 0", lambda: metrics.normalize_to_sphere(X, -1.0), "radius"),
    ("critical N: shapes", lambda: metrics.critical_n([1, 2], torch.zeros(2, 5), torch.zeros(3, 5)), "shape mismatch"),
    ("softmax: empty", lambda: normalizers.softmax(EMPTY), "scores has an empty key axis"),
    ("sparsemax: empty", lambda: normalizers.sparsemax(EMPTY), "scores has an empty key axis"),
    ("softmax: +inf", lambda: normalizers.softmax(POSINF), "scores contains +inf"),
    ("softmax: mask heads", lambda: normalizers.softmax(ATTN, mask=torch.ones(3, 4, 6, dtype=torch.bool)), "mask of shape (3, 4, 6)"),
    ("softmax: T = 0", lambda: normalizers.softmax(ATTN, temperature=0.0), "temperature"),
    ("softmax: float mask", lambda: normalizers.softmax(ATTN, mask=torch.ones(2, 4, 6)), "mask"),
    ("registry: unknown", lambda: normalizers.get("bogus"), "bogus"),
    ("ξ: radius rows", lambda: theory.xi(torch.rand(2, 3), torch.ones(3), 0.1), "radius of shape (3,)"),
    ("Corollary 3: T < 0", lambda: theory.softmax_jacobian_norm_bound(-1.0), "temperature"),
    ("kernel: heads 3 vs 2", lambda: kernels.streaming_attention(Q[:, :1].expand(1, 3, 4, 8), KV, KV), "query heads (3)"),
    ("kernel: d 8 vs 4", lambda: kernels.streaming_attention(Q, KV[..., :4], KV), "shape mismatch"),
    ("kernel: unknown normaliser", lambda: kernels.streaming_attention(Q, KV, KV, "bogus"), "bogus"),
    ("kernel: bad parameter", lambda: kernels.streaming_attention(Q, KV, KV, "softmax", s=1.0), "unknown ['s']"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "call", "words"), CASES, ids=[c[0] for c in CASES])
def test_bad_arguments_raise_a_clear_error(what: str, call: Callable[[], object], words: str):
    with pytest.raises((ValueError, TypeError)) as err:
        call()
    assert words in str(err.value), (what, str(err.value))


def test_every_public_subpackage_is_exercised():
    """Each subpackage whose contract this file states has cases here."""
    names = {c[0].split(":")[0] for c in CASES}
    assert {"softmax", "distance", "kernel", "ξ", "row mean"} <= names
