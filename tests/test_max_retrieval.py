"""Max retrieval (paper B §4.1, App. A): the data and the model (training:
tests/test_max_retrieval_training.py; evaluation, tables and intervals:
tests/test_max_retrieval_evaluation.py)."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
import torch
from scipy import stats

from attnlimits.experiments.softmax_not_enough import (
    MaxRetrievalModel,
    ModelConfig,
    make_batch,
    make_seed_batches,
)
from max_retrieval_models import small

# the module, which the package's ``train`` (the function) hides
train_module = importlib.import_module("attnlimits.experiments.softmax_not_enough.train")


# ---- data --------------------------------------------------------------------------------


def test_batch_shapes_and_target(gen: torch.Generator) -> None:
    items, query, target = make_batch(64, 9, generator=gen)
    assert items.shape == (64, 9, 11) and query.shape == (64, 11) and target.shape == (64,)
    assert target.dtype == torch.long
    prio, onehot = items[..., 0], items[..., 1:]
    assert torch.all(onehot.sum(-1) == 1) and torch.all((prio >= 0) & (prio < 1))
    best = prio.argmax(1)
    assert torch.equal(target, onehot[torch.arange(64), best].argmax(-1))


def test_batch_is_seeded() -> None:
    a = make_batch(8, 5, generator=torch.Generator().manual_seed(3))
    b = make_batch(8, 5, generator=torch.Generator().manual_seed(3))
    c = make_batch(8, 5, generator=torch.Generator().manual_seed(4))
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not torch.equal(a[0], c[0])


def test_query_is_uninformative(gen: torch.Generator) -> None:
    _, query, target = make_batch(20_000, 4, generator=gen)
    assert 0 <= float(query.min()) and float(query.max()) < 1
    assert abs(float(query.mean()) - 0.5) < 0.01
    # the target is a function of the items alone: no query coordinate correlates with it
    onehot = torch.nn.functional.one_hot(target, 10).double()
    corr = np.corrcoef(query.double().T.numpy(), onehot.T.numpy())[:11, 11:]
    assert np.abs(corr).max() < 0.05


def test_classes_uniform(gen: torch.Generator) -> None:
    _, _, target = make_batch(50_000, 3, generator=gen)
    freq = torch.bincount(target, minlength=10).double() / 50_000
    assert torch.allclose(freq, torch.full((10,), 0.1, dtype=torch.float64), atol=0.01)


# ---- model -------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["listing", "ours"])
def test_forward_shapes_and_reference(variant: str, gen: torch.Generator) -> None:
    model = MaxRetrievalModel(ModelConfig(variant=variant), seeds=(0, 5)).double()
    items, query, _ = make_batch(5, 7, generator=gen)
    logits, a, e = model(items.double(), query.double(), return_attention=True)
    assert logits.shape == (2, 5, 10) and a.shape == e.shape == (2, 5, 7)
    assert torch.allclose(a.sum(-1), torch.ones(2, 5, dtype=torch.float64))
    ref_logits, ref_e = model.reference_forward(items.double(), query.double())
    assert torch.allclose(logits, ref_logits, atol=1e-10)
    assert torch.allclose(e, ref_e, atol=1e-10)
    # per-seed inputs [S, B, n, d] give each seed its own rows
    per_seed = make_seed_batches([gen, gen], 3, 4)
    logits = model(per_seed[0].double(), per_seed[1].double())
    ref = model.reference_forward(per_seed[0].double(), per_seed[1].double())[0]
    assert torch.allclose(logits, ref, atol=1e-10)


def test_listing_model_is_the_flax_listing() -> None:
    """Biases everywhere, zero at init; LeCun-normal weights; output projection; tanh GELU."""
    listing = MaxRetrievalModel(ModelConfig(), seeds=(0,))
    ours = MaxRetrievalModel(ModelConfig(variant="ours"), seeds=(0,))
    layers = dict(listing.dense.items())
    assert "w_o" in layers and "w_o" not in dict(ours.dense.items())
    for name, layer in layers.items():
        assert layer.bias is not None and torch.all(layer.bias == 0), name
        fan_in = layer.weight.shape[-1]
        std = float(
            layer.weight.detach().std()
        )  # truncated N(0, 1/fan_in), rescaled: std = 1/√fan_in
        assert std == pytest.approx(fan_in**-0.5, rel=0.15), name
        assert float(layer.weight.detach().abs().max()) <= 2 * fan_in**-0.5 / 0.8796 + 1e-6
    for name in ("w_q", "w_k", "w_v"):
        assert dict(ours.dense.items())[name].bias is None
    x = torch.linspace(-3, 3, 7)
    assert torch.allclose(listing.act(x), torch.nn.functional.gelu(x, approximate="tanh"))
    assert torch.allclose(ours.act(x), torch.nn.functional.gelu(x))


# An independent implementation of App. A's Flax listing, written from the listing and Flax's
# documented defaults, sharing nothing with the model's code but the weights it is handed.


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """``flax.linen.gelu`` (approximate=True): 0.5 x (1 + tanh(√(2/π)(x + 0.044715 x³)))."""
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _dense(p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """``nn.Dense``: x @ kernel + bias, kernel ``[in, out]``."""
    return x @ p["kernel"] + p["bias"]


def flax_listing(params: dict, items: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """Class logits of the listing for items ``[B, n, 1 + C]`` and query ``[B, dq]``."""
    h = _gelu_tanh(_dense(params["Dense_1"], _gelu_tanh(_dense(params["Dense_0"], items))))
    u = _dense(params["Dense_3"], _gelu_tanh(_dense(params["Dense_2"], query)))[:, None, :]
    mha = params["MultiHeadDotProductAttention_0"]  # num_heads=1, qkv_features=128
    heads, depth = 1, mha["query"]["kernel"].shape[-1]

    def project(p: dict, x: torch.Tensor) -> torch.Tensor:  # DenseGeneral to (heads, depth)
        return _dense(p, x).reshape(*x.shape[:-1], heads, depth)  # (B, L, h, d)

    q = project(mha["query"], u) / math.sqrt(depth)  # Flax scales the query by 1/√depth
    k, v = project(mha["key"], h), project(mha["value"], h)
    logits = torch.einsum("bqhd,bkhd->bhqk", q, k)
    w = torch.exp(logits - logits.amax(-1, keepdim=True))
    w = w / w.sum(-1, keepdim=True)  # softmax over the items
    o = torch.einsum("bhqk,bkhd->bqhd", w, v).reshape(u.shape[0], 1, heads * depth)
    o = _dense(mha["out"], o)[:, 0]  # DenseGeneral over (heads, depth) back to 128; squeeze
    return _dense(params["Dense_5"], _gelu_tanh(_dense(params["Dense_4"], o)))


_FLAX_NAMES = {"item1": "Dense_0", "item2": "Dense_1", "query1": "Dense_2", "query2": "Dense_3",
               "out1": "Dense_4", "out2": "Dense_5", "w_q": "query", "w_k": "key",
               "w_v": "value", "w_o": "out"}  # fmt: skip


def _flax_params(model: MaxRetrievalModel, s: int) -> dict:
    """Seed ``s``'s weights in the listing's layout (kernels ``[in, out]``)."""
    params: dict = {"MultiHeadDotProductAttention_0": {}}
    for name, layer in model.dense.items():
        p = {"kernel": layer.weight[s].detach().T, "bias": layer.bias[s].detach()}
        flax = _FLAX_NAMES[name]
        (params["MultiHeadDotProductAttention_0"] if name.startswith("w_") else params)[flax] = p
    return params


def test_listing_model_equals_an_independent_flax_listing(gen: torch.Generator) -> None:
    model = MaxRetrievalModel(ModelConfig(), seeds=(0, 4)).double()
    with torch.no_grad():  # non-zero biases, so a missing or misplaced one shows
        for layer in model.dense.values():
            layer.bias.normal_(0.0, 0.3, generator=gen)
    items, query, _ = make_batch(6, 9, generator=gen)
    logits = model(items.double(), query.double())
    for s in range(2):
        ref = flax_listing(_flax_params(model, s), items.double(), query.double())
        torch.testing.assert_close(logits[s], ref, rtol=1e-10, atol=1e-10)


def test_listing_initialisation_is_flax_lecun_normal() -> None:
    """Flax's Dense default: kernel ~ lecun_normal = variance_scaling(1, fan_in,
    truncated_normal), i.e. N(0, σ²) truncated to ±2σ with σ = 1/(0.8796·√fan_in), so the
    kernel's variance is 1/fan_in; bias zero. Checked against scipy's truncated normal."""
    model = MaxRetrievalModel(ModelConfig(), seeds=(0, 1))
    fan_ins = {"item1": 11, "query1": 11}  # every other layer reads 128 features
    z = []
    for name, layer in model.dense.items():
        w = layer.weight.detach().double()  # (S, out, in)
        assert w.shape[-1] == fan_ins.get(name, 128), name
        assert torch.all(layer.bias == 0), name
        z.append((w * math.sqrt(w.shape[-1])).flatten().numpy())  # unit variance if right
    x = np.concatenate(z)
    sigma = 1 / stats.truncnorm(-2, 2).std()  # 1/0.8796: the variance-preserving correction
    assert stats.kstest(x, stats.truncnorm(-2, 2, scale=sigma).cdf).pvalue > 1e-3
    assert np.abs(x).max() <= 2 * sigma + 1e-9 and x.var() == pytest.approx(1.0, rel=0.02)


def test_seed_slices_are_independent_models(gen: torch.Generator) -> None:
    """Slice s of a stacked model is the model of seed s alone, inputs and outputs alike."""
    stacked = MaxRetrievalModel(ModelConfig(width=16), seeds=(3, 1, 7))
    alone = MaxRetrievalModel(ModelConfig(width=16), seeds=(1,))
    for p, q in zip(stacked.parameters(), alone.parameters(), strict=True):
        assert torch.equal(p[1:2], q)
    items, query, _ = make_batch(4, 9, generator=gen)
    assert torch.allclose(stacked(items, query)[1], alone(items, query)[0], atol=1e-6)


@pytest.mark.parametrize("norm", ["sigmoid", "stick_breaking"])
@pytest.mark.parametrize("variant", ["listing", "ours"])
def test_reassociation_holds_for_unnormalised_rows(
    norm: str, variant: str, gen: torch.Generator
) -> None:
    model = MaxRetrievalModel(ModelConfig(width=32, normalizer=norm, variant=variant)).double()
    items, query, _ = make_batch(4, 6, generator=gen)
    logits = model(items.double(), query.double())
    assert torch.allclose(logits, model.reference_forward(items.double(), query.double())[0])


def test_inference_swap_changes_only_normaliser(gen: torch.Generator) -> None:
    model = MaxRetrievalModel(small(), seeds=(0, 1))
    items, query, _ = make_batch(4, 50, generator=gen)
    multi = model.forward_multi(items, query, [("softmax", {}), ("topk", {"k": 1})])
    assert torch.allclose(multi[0], model(items, query))
    assert torch.allclose(multi[1], model(items, query, norm=("topk", {"k": 1})))


@pytest.mark.parametrize("variant", ["listing", "ours"])
def test_spread_bound_holds(variant: str, gen: torch.Generator) -> None:
    model = MaxRetrievalModel(ModelConfig(width=32, variant=variant), seeds=(0, 1, 2))
    torch.nn.init.normal_(model.dense["w_q"].weight, std=1.0)  # large, varied logits
    spread, bound = model.spread_bound(*make_batch(16, 12, generator=gen)[:2])
    assert spread.shape == bound.shape == (3,)
    assert torch.all(spread > 0) and torch.all(spread <= bound)


def test_bad_inputs_raise(gen: torch.Generator) -> None:
    model = MaxRetrievalModel(small(), seeds=(0, 1))
    items, query, _ = make_batch(2, 3, generator=gen)
    with pytest.raises(ValueError, match="seed axis"):
        model(items.unsqueeze(0).expand(3, -1, -1, -1), query.unsqueeze(0).expand(3, -1, -1))
    with pytest.raises(ValueError, match="features"):
        model(items[..., :5], query)
    with pytest.raises(ValueError, match="distinct"):
        MaxRetrievalModel(small(), seeds=(1, 1))
