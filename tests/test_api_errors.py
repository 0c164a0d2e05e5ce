"""The public API's error contract (docs/conventions.md): bad arguments raise ValueError or
TypeError naming the argument, never a raw IndexError/RuntimeError from deep inside."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

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
    ("distance: empty keys", lambda: metrics.distance_metrics(EMPTY, torch.zeros(2, 0, 3), 1), "attn has an empty key axis"),
    ("distance: x has a key more (issue 32, item 13)", lambda: metrics.distance_metrics(torch.rand(2, 8, 8), torch.rand(2, 9, 4), 3), "disagree on K"),
    ("distance: 1-D (item 14)", lambda: metrics.distance_metrics(torch.rand(5), torch.rand(5), 1), "attn"),
    ("distance: numpy (item 14)", lambda: metrics.distance_metrics(ATTN.numpy(), X.numpy(), 1), "attn must be a torch.Tensor"),
    ("distance: mask list (item 14)", lambda: metrics.distance_metrics(ATTN, X, 1, mask=[[True] * 6] * 4), "mask must be a torch.Tensor"),
    ("separability: radius 0 (item 10)", lambda: metrics.separability_metrics(ATTN, metrics.normalize_to_sphere(X), 1, radius=0), "radius must be positive"),
    ("separability: rtol < 0 (item 10)", lambda: metrics.separability_metrics(ATTN, metrics.normalize_to_sphere(X), 1, rtol=-1), "rtol must be finite and >= 0"),
    ("separability: other sphere", lambda: metrics.separability_metrics(ATTN, metrics.normalize_to_sphere(X), 1, radius=2.0), "not on the sphere of radius 2"),
    ("separability: heads", lambda: metrics.separability_metrics(ATTN, metrics.normalize_to_sphere(X3), 1), "x (3, 6, 3)"),
    ("top eigenvalue: empty keys (API fuzz)", lambda: metrics.jacobian_top_eigenvalue(EMPTY), "weights has an empty key axis"),
    ("top eigenvalue: weight 1e300 (API fuzz)", lambda: metrics.jacobian_top_eigenvalue(torch.tensor([[1e300, 1.0]], dtype=torch.float64)), "weights must lie in [0, 1]"),
    ("min distance: kept entries 1e308 and 1 (API fuzz)", lambda: metrics.min_pairwise_distances(torch.tensor([[[-1.6], [1.7e308], [2.24]]], dtype=torch.float64)), "x spans too many orders of magnitude"),
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
    ("row mean: float valid (item 14)", lambda: metrics.row_mean(torch.zeros(3), torch.ones(3)), "valid must be a boolean tensor"),
    ("row mean: dim 5 (item 14)", lambda: metrics.row_mean(torch.zeros(3), torch.ones(3, dtype=torch.bool), dim=5), "dim=5 is out of range for values"),
    ("row mean: NaN in a valid row", lambda: metrics.row_mean(torch.tensor([1.0, float("nan")]), torch.ones(2, dtype=torch.bool)), "values is NaN"),
    ("sphere: dim 5 (item 14)", lambda: metrics.normalize_to_sphere(X, dim=5), "dim=5 is out of range for x"),
    ("Jacobian: empty keys (item 14)", lambda: metrics.softmax_jacobian_norm(torch.empty(2, 3, 0)), "scores has an empty key axis"),
    ("max weight: mask list (item 14)", lambda: metrics.max_weight(ATTN, mask=[[True] * 6] * 4), "mask must be a torch.Tensor"),
    ("entropy: meta (item 14)", lambda: metrics.attention_entropy(ATTN.to("meta")), "weights is a meta tensor"),
    ("δ: empty", lambda: metrics.min_pairwise_distance(torch.zeros(2, 0, 3)), "x has an empty key axis"),
    ("sphere: radius < 0", lambda: metrics.normalize_to_sphere(X, -1.0), "radius"),
    ("critical N: shapes", lambda: metrics.critical_n([1, 2], torch.zeros(2, 5), torch.zeros(3, 5)), "shape mismatch"),
    ("softmax: empty", lambda: normalizers.softmax(EMPTY), "scores has an empty key axis"),
    ("sparsemax: empty", lambda: normalizers.sparsemax(EMPTY), "scores has an empty key axis"),
    ("softmax: +inf", lambda: normalizers.softmax(POSINF), "scores contains +inf"),
    ("softmax: mask heads", lambda: normalizers.softmax(ATTN, mask=torch.ones(3, 4, 6, dtype=torch.bool)), "mask of shape (3, 4, 6)"),
    ("softmax: T = 0", lambda: normalizers.softmax(ATTN, temperature=0.0), "temperature"),
    ("softmax: float mask", lambda: normalizers.softmax(ATTN, mask=torch.ones(2, 4, 6)), "mask"),
    ("softmax: a list", lambda: normalizers.softmax([[1.0, 2.0]]), "scores must be a torch.Tensor"),
    ("softmax: dim 5", lambda: normalizers.softmax(ATTN, dim=5), "dim=5 is out of range for scores"),
    ("softmax: meta mask, real scores", lambda: normalizers.softmax(ATTN, mask=torch.ones(2, 4, 6, dtype=torch.bool, device="meta")), "mask is a meta tensor"),
    ("registry: not a name", lambda: normalizers.get(["softmax"]), "name must be a str"),
    ("registry: unknown", lambda: normalizers.get("bogus"), "bogus"),
    ("ξ: radius rows", lambda: theory.xi(torch.rand(2, 3), torch.ones(3), 0.1), "radius of shape (3,)"),
    ("ξ: a scalar alpha (item 14)", lambda: theory.xi(torch.tensor(0.5), 1.0, 0.1), "alpha must be weights over I_N"),
    ("Δ: no keys (item 14)", lambda: theory.logit_magnitude_bound(torch.rand(4), torch.randn(0, 4)), "at least one key"),
    ("P(i ∉ I_N): L = 0 (item 14)", lambda: theory.prob_not_selected(0, 1), "n_keys must be an int >= 1"),
    ("P(i ∉ I_N): L < N (item 13)", lambda: theory.prob_not_selected(4, 5), "n_keys (L) = 4 must be >= n = 5"),
    ("Theorem 1.1: L < N (item 13)", lambda: theory.fixed_selection_bound(torch.tensor(0.5), torch.tensor(1.0), torch.tensor(1.0), 2, 5), "n_keys (L) = 2 must be >= n = 5"),
    ("Corollary 2: a list (item 13)", lambda: theory.full_selection_limit([float("nan"), 1.0]), "alpha must be a torch.Tensor"),
    ("Corollary 2: NaN (item 13)", lambda: theory.full_selection_limit(torch.tensor([float("nan"), 1.0])), "alpha contains NaN"),
    ("standard error: accuracy 2 (item 13)", lambda: theory.binomial_standard_error(2.0, 10), "accuracy must lie in [0, 1]"),
    ("E (theory): x has a key more", lambda: theory.expected_distance(torch.rand(8), torch.rand(9, 4), 3), "disagree on K"),
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


# ---------------------------------------------------------------- issue 32, items 12-15


@pytest.mark.parametrize("name", normalizers.available())
def test_every_normaliser_refuses_a_list_mask_and_computes_shapes_on_meta(name: str) -> None:
    """Item 14: a list mask is a TypeError naming mask (not AttributeError); meta scores give
    a meta output of the scores' shape and dtype (docs/conventions.md, "Meta tensors")."""
    f = normalizers.get(name)
    with pytest.raises(TypeError, match=r"mask must be a torch\.Tensor"):
        f(ATTN, mask=[[True] * 6] * 4)
    for mask in (None, torch.ones(4, 6, dtype=torch.bool, device="meta")):
        out = f(torch.empty(2, 4, 6, dtype=torch.bfloat16, device="meta"), mask=mask)
        assert out.is_meta and out.shape == (2, 4, 6) and out.dtype == torch.bfloat16


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", normalizers.available())
def test_every_normaliser_is_finite_at_the_dtype_extremes(name: str, dtype: torch.dtype) -> None:
    """Item 15: [[max, -max, 0]] (a spread beyond the dtype's range) gives finite weights with
    the entry's row sum; yarn and ssa_normalized gave [nan, 0, 0], relu2 inf."""
    big = torch.finfo(dtype).max
    scores = torch.tensor([[big, -big, 0.0], [0.0, big, big]], dtype=dtype)
    out = normalizers.get(name)(scores).double()
    assert torch.isfinite(out).all(), (name, out)
    info = normalizers.info(name)
    if info.row_sum == "one":
        torch.testing.assert_close(
            out.sum(-1), torch.ones(2, dtype=torch.float64), atol=1e-2, rtol=0
        )
    if name in ("softmax", "yarn", "ssmax", "logn", "adaptive", "sparsemax", "entmax15"):
        assert out[0].tolist() == [1.0, 0.0, 0.0] and out[1, 0] == 0.0


def test_heads_for_coverage_with_a_tiny_p_returns_at_once() -> None:
    """Item 12: 1 − p rounds to 1 at p = 1e-17; the search for H never ended."""
    for p, target in ((1e-17, 0.5), (1e-300, 0.999), (5e-324, 0.5)):
        h = theory.heads_for_coverage(p, target)
        expected = Fraction(math.log1p(-target)) / Fraction(math.log1p(-p))  # beyond floats
        assert abs(h - expected) <= expected / 10**9 + 2, (p, target, h)


def test_edges_that_have_an_answer() -> None:
    """Item 13: N = L selects every key, so P(i ∉ I_N) = 0 is right (the formula (L − N)/L,
    C(L−1, N)/C(L, N) = 0); a target standard error of 1e-300 needs a huge, exact number of
    sets (it divided by zero)."""
    assert theory.prob_not_selected(5, 5) == 0.0
    assert theory.prob_not_selected(torch.tensor([5.0, 6.0], dtype=torch.float64), 5).tolist() == [
        0.0,
        1 / 6,
    ]
    n = theory.sets_for_standard_error(1e-300)
    assert isinstance(n, int) and len(str(n)) == 600  # 0.25 / 1e-600, exactly
    assert theory.sets_for_standard_error(0.1, p=0.0) == 1


def test_a_dropped_key_plays_no_part_in_the_pairwise_distances() -> None:
    """Found by the API fuzz: a dropped key holding 1.7e308 set the head's power-of-two scale,
    the kept keys' difference (3.84) underflowed when squared, and δ over distinct pairs was NaN."""
    x = torch.tensor([[[-1.6], [1.7e308], [2.24]]], dtype=torch.float64)
    both = metrics.min_pairwise_distances(x, torch.tensor([[True, False, True]]))
    for delta in both:
        torch.testing.assert_close(delta, torch.tensor([3.84], dtype=torch.float64))


@pytest.mark.parametrize(
    ("attn_shape", "x_shape"),
    [((3, 0, 12), (3, 12, 8)), ((0, 12, 12), (0, 12, 8)), ((2, 3, 0, 12), (3, 12, 8))],
)
@pytest.mark.parametrize("fused", [True, False])
def test_no_query_rows_or_no_heads_give_empty_results(
    attn_shape: tuple[int, ...], x_shape: tuple[int, ...], fused: bool, monkeypatch
) -> None:
    """Issue 58, item 8: an empty query axis or batch (distance_metrics raised IndexError,
    separability_metrics "cannot reshape tensor of 0 elements"): empty in, empty out, each
    field shaped as the rows (and the N grid), ``valid`` boolean, like the other metrics."""
    from attnlimits.metrics import _fused

    if not fused:
        monkeypatch.setattr(_fused, "enabled", lambda *args, **kwargs: False)
    attn = torch.rand(attn_shape)
    x = metrics.normalize_to_sphere(torch.randn(x_shape))
    rows = torch.broadcast_shapes(attn_shape[:-1], (*x_shape[:-2], 1))
    for result, shape in [
        (metrics.distance_metrics(attn, x, 2), rows),
        (metrics.distance_metrics(attn, x, 2, mask=torch.ones(12, dtype=torch.bool)), rows),
        (metrics.separability_metrics(attn, x, 2), rows),
        (metrics.separability_curve(attn, x, [1, 2, 4]), (*rows, 3)),
    ]:
        assert [tuple(f.shape) for f in result] == [tuple(shape)] * len(result)
        assert result.valid.dtype == torch.bool
        assert all(f.dtype == torch.float32 for f in result[:-1])
