"""Contract of every registered normaliser: masks, -inf padding, dtypes, gradients, errors."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlimits import normalizers as nz

NAMES = nz.available()
EXPECTED_NAMES = [
    "softmax",
    "sparsemax",
    "entmax15",
    "entmax_bisect",
    "ssmax",
    "ssa",
    "ssa_normalized",
    "adaptive",
    "topk",
    "sigmoid",
    "stick_breaking",
    "softmax1",
    "sink_softmax",
    "softpick",
    "softcap",
    "relu",
    "relu2",
    "logn",
    "yarn",
    "llama4_temperature",
    "ssmax_trained",
    "as_entmax",
    "stieltjes",
]
# half-precision tolerance (absolute, plus relative for the unbounded ones)
HALF_TOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def _scores_and_mask(gen: torch.Generator, shape=(2, 3, 7), dtype=torch.float64):
    x = torch.randn(shape, generator=gen, dtype=dtype) * 2
    mask = torch.rand(shape, generator=gen) > 0.3
    mask[0, 0] = False  # one all-masked row
    mask[1, 2] = False
    mask[1, 2, 3] = True  # one row with a single kept key
    return x, mask


# ---------------------------------------------------------------- registry


def test_registry_names_are_a_contract() -> None:
    assert nz.available() == EXPECTED_NAMES
    assert list(nz.REGISTRY) == EXPECTED_NAMES == list(nz.INFO)
    assert nz.get("adaptive") is nz.adaptive_softmax
    assert nz.get("topk") is nz.topk_softmax
    for name in EXPECTED_NAMES:
        assert nz.get(name) is nz.REGISTRY[name] is nz.info(name).fn
        assert getattr(nz, nz.get(name).__name__) is nz.get(name)  # exported at package level


def test_registry_metadata() -> None:
    normalised = {"softmax", "sparsemax", "entmax15", "entmax_bisect", "ssmax", "adaptive", "topk",
                  "softcap", "logn", "yarn", "llama4_temperature", "ssmax_trained", "as_entmax",
                  "stieltjes"}  # fmt: skip
    assert {n for n in NAMES if nz.sums_to_one(n)} == normalised
    assert nz.info("stick_breaking").row_sum == "at_most_one"
    assert nz.info("ssa_normalized").row_sum == "at_most_one"
    assert nz.info("sigmoid").row_sum == "unbounded"
    assert {nz.info(n).row_sum for n in ("softmax1", "sink_softmax", "softpick")} == {"at_most_one"}
    assert nz.info("relu2").row_sum == "unbounded" and nz.info("softpick").sparse
    assert not nz.info("ssa").nonnegative
    assert nz.info("as_entmax").sparse and not nz.info("stieltjes").sparse
    assert "cosine_logits" not in nz.REGISTRY  # makes logits from q and k: not a normaliser


def test_registry_unknown_name_lists_available() -> None:
    with pytest.raises(ValueError, match="stick_breaking"):
        nz.get("softermax")
    with pytest.raises(ValueError, match="unknown"):
        nz.sums_to_one("softermax")


def test_registry_is_read_only() -> None:
    with pytest.raises(TypeError):
        nz.REGISTRY["mine"] = nz.softmax  # type: ignore[index]


# ---------------------------------------------------------------- values


@pytest.mark.parametrize("name", NAMES)
def test_row_sums_and_signs(name: str, gen: torch.Generator) -> None:
    x, mask = _scores_and_mask(gen)
    out = nz.get(name)(x, mask=mask)
    meta = nz.info(name)
    kept_rows = mask.any(-1)
    sums = out.sum(-1)
    if meta.row_sum == "one":
        torch.testing.assert_close(sums[kept_rows], torch.ones_like(sums[kept_rows]))
    elif meta.row_sum == "at_most_one":
        assert (sums <= 1 + 1e-12).all()
    if meta.nonnegative:
        assert (out >= 0).all()
    assert (sums[~kept_rows] == 0).all()


@pytest.mark.parametrize("name", NAMES)
def test_masked_entries_exactly_zero(name: str, gen: torch.Generator) -> None:
    x, mask = _scores_and_mask(gen)
    out = nz.get(name)(x, mask=mask)
    assert torch.isfinite(out).all()
    assert (out[~mask] == 0).all()
    assert (out[0, 0] == 0).all()


@pytest.mark.parametrize("name", NAMES)
def test_neg_inf_counts_as_masked(name: str, gen: torch.Generator) -> None:
    x, mask = _scores_and_mask(gen)
    f = nz.get(name)
    torch.testing.assert_close(f(x.masked_fill(~mask, -math.inf)), f(x, mask=mask))


@pytest.mark.parametrize("name", NAMES)
def test_mask_broadcasts(name: str, gen: torch.Generator) -> None:
    x = torch.randn(2, 3, 5, 5, generator=gen, dtype=torch.float64)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    f = nz.get(name)
    torch.testing.assert_close(f(x, mask=causal), f(x, mask=causal.expand_as(x)))


@settings(max_examples=15, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("name", NAMES)
def test_padding_equals_truncation(name: str, data: st.DataObject) -> None:
    """Extra -inf or masked key columns, anywhere along ``dim``, change nothing."""
    n_keys = data.draw(st.integers(1, 8), label="n_keys")
    n_pad = data.draw(st.integers(1, 4), label="n_pad")
    rows = data.draw(st.integers(1, 3), label="rows")
    dim = data.draw(st.sampled_from([0, 1]), label="dim")
    seed = data.draw(st.integers(0, 2**31 - 1), label="seed")
    use_mask = data.draw(st.booleans(), label="pad with mask")
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, n_keys, generator=g, dtype=torch.float64) * 3
    is_pad = torch.zeros(n_keys + n_pad, dtype=torch.bool)
    is_pad[torch.randperm(n_keys + n_pad, generator=g)[:n_pad]] = True
    padded = torch.full((rows, n_keys + n_pad), -math.inf, dtype=torch.float64)
    padded[:, ~is_pad] = x
    keep = (~is_pad).expand(rows, -1)
    if use_mask:
        padded = torch.where(keep, padded, torch.randn(padded.shape, generator=g).double())
    if dim == 0:  # the same check along the other axis
        x, padded, keep = x.T, padded.T, keep.T
    f = nz.get(name)
    out = f(padded, dim, mask=keep if use_mask else None)
    ref = f(x, dim)
    assert (out[~keep] == 0).all()
    torch.testing.assert_close(out[keep].reshape(ref.shape), ref)


# ---------------------------------------------------------------- dtypes


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", NAMES)
def test_half_precision_close_to_float32(
    name: str, dtype: torch.dtype, gen: torch.Generator
) -> None:
    x, mask = _scores_and_mask(gen, shape=(2, 4, 16), dtype=torch.float32)
    xh = x.to(dtype)
    f = nz.get(name)
    out = f(xh, mask=mask)
    assert out.dtype == dtype
    assert torch.isfinite(out).all()
    tol = HALF_TOL[dtype]
    torch.testing.assert_close(out.float(), f(xh.float(), mask=mask), atol=tol, rtol=tol)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", NAMES)
def test_half_precision_large_logits_and_grads(
    name: str, dtype: torch.dtype, gen: torch.Generator
) -> None:
    x, mask = _scores_and_mask(gen, shape=(2, 3, 64), dtype=torch.float32)
    xh = (x * 150).to(dtype).requires_grad_()  # spread of ~1000: exp overflows in half
    out = nz.get(name)(xh, mask=mask)
    assert torch.isfinite(out).all()
    out.float().mul(torch.randn(out.shape, generator=gen)).sum().backward()
    assert xh.grad is not None and torch.isfinite(xh.grad).all()


# ---------------------------------------------------------------- gradients


@pytest.mark.parametrize("dim", [-1, 0, 1])
@pytest.mark.parametrize("name", NAMES)
def test_gradcheck(name: str, dim: int, gen: torch.Generator) -> None:
    x = torch.randn(3, 4, 5, generator=gen, dtype=torch.float64).requires_grad_()
    mask = torch.rand(3, 4, 5, generator=gen) > 0.25
    f = nz.get(name)
    assert torch.autograd.gradcheck(lambda t: f(t, dim, mask=mask), (x,))
    assert torch.autograd.gradcheck(lambda t: f(t, dim), (x,))


@pytest.mark.parametrize("name", NAMES)
def test_grads_finite_with_masks_and_empty_rows(name: str, gen: torch.Generator) -> None:
    x, mask = _scores_and_mask(gen)
    x = x.masked_fill(torch.rand(x.shape, generator=gen) > 0.8, -math.inf).requires_grad_()
    out = nz.get(name)(x, mask=mask)
    (out * torch.randn(out.shape, generator=gen, dtype=out.dtype)).sum().backward()
    assert x.grad is not None
    assert torch.isfinite(x.grad).all()
    dropped = ~mask | torch.isneginf(x.detach())
    assert (x.grad[dropped] == 0).all()


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("name", NAMES)
def test_nan_and_posinf_raise(name: str) -> None:
    f = nz.get(name)
    with pytest.raises(ValueError, match="NaN"):
        f(torch.tensor([[0.0, math.nan, 1.0]]))
    with pytest.raises(ValueError, match=r"\+inf"):
        f(torch.tensor([[0.0, math.inf, 1.0]]))


@pytest.mark.parametrize("name", NAMES)
def test_bad_masks_and_inputs_raise(name: str) -> None:
    f = nz.get(name)
    x = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="boolean"):
        f(x, mask=torch.ones(2, 3))
    with pytest.raises(ValueError, match="broadcast"):
        f(x, mask=torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="out of range"):
        f(x, 2)
    with pytest.raises(ValueError, match="floating"):
        f(torch.zeros(2, 3, dtype=torch.long))


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("softmax", {"temperature": 0.0}),
        ("softmax", {"temperature": -1.0}),
        ("softmax", {"temperature": math.inf}),
        ("topk", {"k": 0}),
        ("topk", {"k": 1.5}),
        ("topk", {"k": True}),
        ("entmax_bisect", {"alpha": 1.0}),
        ("entmax_bisect", {"alpha": 0.5}),
        ("entmax_bisect", {"alpha": math.nan}),
        ("entmax_bisect", {"n_iter": 0}),
        ("ssmax", {"s": 0.0}),
        ("ssmax", {"s": -0.4}),
        ("adaptive", {"coeffs": ()}),
        ("adaptive", {"coeffs": (1.0, math.inf)}),
        ("adaptive", {"threshold": math.nan}),
        ("sigmoid", {"bias": -math.inf}),
        ("sink_softmax", {"sink": math.nan}),
        ("sink_softmax", {"sink": torch.zeros(3)}),
        ("softpick", {"eps": 0.0}),
        ("softcap", {"cap": 0.0}),
        ("relu", {"power": 0}),
        ("logn", {"train_length": 1}),
        ("yarn", {"factor": 0.5}),
        ("llama4_temperature", {"attn_scale": -0.1}),
        ("llama4_temperature", {"floor_scale": 0}),
        ("ssmax_trained", {"train_length": 1}),
        ("ssmax_trained", {"train_length": 4096.0}),
        ("as_entmax", {"alpha": 1.0}),
        ("as_entmax", {"n_iter": 0}),
        ("as_entmax", {"delta": -1.0}),
        ("as_entmax", {"beta": -0.5}),
        ("as_entmax", {"delta": 0.0, "beta": 0.0}),
        ("as_entmax", {"gamma": math.nan}),
        ("as_entmax", {"gamma": True}),
        ("as_entmax", {"beta": torch.ones(3)}),
        ("as_entmax", {"beta": torch.tensor([[1.0], [-1.0]])}),
        ("stieltjes", {"q": 0.0}),
        ("stieltjes", {"q": -1.0}),
        ("stieltjes", {"q": math.inf}),
        ("stieltjes", {"n_iter": 0}),
        ("stieltjes", {"n_iter": 2.5}),
    ],
)
def test_bad_params_raise(name: str, params: dict) -> None:
    with pytest.raises(ValueError):
        nz.get(name)(torch.zeros(2, 3), **params)


def test_adaptive_stats_checks_params() -> None:
    with pytest.raises(ValueError):
        nz.adaptive_stats(torch.zeros(2, 3), coeffs=())


def test_general_rejects_non_positive_or_non_elementwise_f() -> None:
    x = torch.randn(2, 3)
    with pytest.raises(ValueError, match="positive"):
        nz.general(x, lambda t: t)  # negative at some scores
    with pytest.raises(ValueError, match="elementwise"):
        nz.general(x, lambda t: t.exp().sum(-1))
    with pytest.raises(ValueError, match="NaN"):
        nz.general(torch.tensor([math.nan]), torch.exp)
