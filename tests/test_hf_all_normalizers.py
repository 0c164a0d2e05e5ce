"""Every registry normaliser as ``attn_implementation="attnlimits_<name>"``: the registered
function against the tensor function, and whole tiny Llama (GQA, causal, padding) and BERT
(bidirectional, padding) models running it."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import BertConfig, BertModel

import attnlimits.kernels as K
from attnlimits import normalizers as nz
from attnlimits.hf_bridge import attention_function
from attnlimits.kernels.chunked import chunked_attention
from hf_models import batch, logits, tiny_llama

#: every entry without a name of its own before (softmax_t, ssmax, adaptive): the length
#: scalings stream, the others run chunked
CHUNKED = sorted(n for n in nz.available() if n not in ("softmax", "ssmax", "adaptive"))
STREAMED_SCALINGS = ("logn", "yarn", "llama4_temperature", "ssmax_trained")


def test_every_registry_entry_has_an_attn_implementation():
    assert set(K.HF_NAMES.values()) == set(nz.available())
    for name in K.HF_NAMES:
        attention_function(name)  # registered with transformers


class _Module(torch.nn.Module):
    def __init__(self, causal: bool) -> None:
        super().__init__()
        self.is_causal = causal


@pytest.mark.parametrize("name", CHUNKED)
def test_registered_function_is_the_tensor_function(name: str) -> None:
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 9, 6, generator=gen, dtype=torch.float64)
    k = torch.randn(2, 2, 9, 6, generator=gen, dtype=torch.float64)
    v = torch.randn(2, 2, 9, 5, generator=gen, dtype=torch.float64)
    keep = torch.ones(2, 1, 9, 9, dtype=torch.bool).tril()
    keep[1, ..., :3] = False  # left padding of the second sequence
    keep[1, :, :3, 0] = True  # (its padded rows see one key, as transformers' masks do)
    fn = attention_function(f"attnlimits_{name}")
    out, _ = fn(_Module(True), q, k, v, keep, scaling=0.5)
    scores = q @ k.repeat_interleave(2, 1).transpose(-1, -2) * 0.5
    want = nz.get(name)(scores, mask=keep) @ v.repeat_interleave(2, 1)
    torch.testing.assert_close(out, want.transpose(1, 2))


@pytest.mark.parametrize("name", CHUNKED)
@pytest.mark.parametrize("chunk", [1, 4, 64])
def test_chunks_do_not_change_the_result(name: str, chunk: int) -> None:
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 2, 11, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    a = chunked_attention(q, k, v, name, causal=True, chunk_rows=chunk)
    b = chunked_attention(q, k, v, name, causal=True, chunk_rows=11)
    torch.testing.assert_close(a, b)


@pytest.mark.parametrize("masked", [False, True])
def test_topk_path_has_the_tensor_functions_gradients(masked: bool) -> None:
    """The sparse top-k path (weights summed by ``embedding_bag``) is differentiable and gives
    the dense ``topk_softmax(scores) @ v``'s gradients, causal and with a padding mask."""
    gen = torch.Generator().manual_seed(2)
    q = torch.randn(2, 4, 9, 6, generator=gen, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, 2, 9, 6, generator=gen, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, 2, 9, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    keep = torch.ones(2, 1, 9, 9, dtype=torch.bool).tril()
    if masked:
        keep[1, ..., :3] = False
        keep[1, :, :3, 0] = True
    kw = {"mask": keep} if masked else {"causal": True}
    out = chunked_attention(q, k, v, "topk", chunk_rows=4, k=3, **kw)
    got = torch.autograd.grad(out.square().sum(), (q, k, v))
    scores = q @ k.repeat_interleave(2, 1).transpose(-1, -2) * 6**-0.5
    want = nz.get("topk")(scores, mask=keep, k=3) @ v.repeat_interleave(2, 1)
    for a, b in zip(got, torch.autograd.grad(want.square().sum(), (q, k, v)), strict=True):
        torch.testing.assert_close(a, b)


def _tiny_bert() -> BertModel:
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=4, max_position_embeddings=64)  # fmt: skip
    return BertModel(cfg).eval()


@pytest.mark.parametrize("name", CHUNKED)
def test_every_entry_runs_in_llama_and_bert(name: str) -> None:
    ids, am = batch()
    llama, bert = tiny_llama(), _tiny_bert()
    before = llama.config._attn_implementation
    with K.patch(llama, name), torch.no_grad():
        out = logits(llama, ids, am)
    with K.patch(bert, name), torch.no_grad():
        hidden = bert(input_ids=ids, attention_mask=am).last_hidden_state
    assert torch.isfinite(out).all() and torch.isfinite(hidden).all()
    assert llama.config._attn_implementation == before  # restored


@pytest.mark.parametrize(
    ("name", "params"),
    [("softcap", {"cap": 1e7}), ("logn", {"train_length": 64}), ("llama4_temperature", {}),
     ("yarn", {"factor": 1.0}), ("topk", {"k": 64})],
)  # fmt: skip
def test_entries_that_reduce_to_softmax_give_eager_logits(name: str, params: dict) -> None:
    """Within the training length (or with a cap far above the logits) these are softmax: the
    whole model through the chunked path gives eager's logits."""
    ids, am = batch()
    model = tiny_llama()
    with torch.no_grad():
        want = logits(model, ids, am)
        with K.patch(model, name, **params):
            got = logits(model, ids, am)
    keep = am.bool()
    torch.testing.assert_close(got[keep], want[keep], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", STREAMED_SCALINGS)
@pytest.mark.parametrize("masked", [False, True])
def test_length_scalings_stream_as_the_tensor_function(name: str, masked: bool) -> None:
    """The streaming kernel (O(L) memory) gives the materialised normaliser's attention, with
    the kept-key counts from the shapes (causal, no mask) or from a padding mask."""
    assert name in K.NORMALIZERS
    gen = torch.Generator().manual_seed(2)
    q = torch.randn(2, 4, 23, 8, generator=gen, dtype=torch.float64) * 2
    k = torch.randn(2, 2, 23, 8, generator=gen, dtype=torch.float64) * 2
    v = torch.randn(2, 2, 23, 5, generator=gen, dtype=torch.float64)
    params = {"logn": {"train_length": 5}, "yarn": {"factor": 16.0},
              "llama4_temperature": {"attn_scale": 0.5, "floor_scale": 4},
              "ssmax_trained": {"train_length": 5}}[name]  # fmt: skip
    keep = torch.ones(2, 1, 23, 23, dtype=torch.bool).tril()
    mask = None
    if masked:
        keep[1, ..., :6] = False
        keep[1, :, :6, 0] = True
        mask = keep
    out = K.streaming_attention(q, k, v, name, mask=mask, causal=not masked, block_size=4,
                                **params)  # fmt: skip
    scores = q @ k.repeat_interleave(2, 1).transpose(-1, -2) * 8**-0.5
    want = nz.get(name)(scores, mask=keep, **params) @ v.repeat_interleave(2, 1)
    torch.testing.assert_close(out, want)
    with pytest.raises(ValueError, match="triton"):
        K.streaming_attention(q, k, v, name, backend="triton")


def test_register_checks_the_normalizers_own_parameters():
    with pytest.raises(ValueError, match="cap"):
        K.register("bad_softcap", "softcap", cap=-1.0)
    assert K.register("logn_4k", "logn", train_length=4096) == "logn_4k"
    with pytest.raises(ValueError):
        K.register("bad_logn", "logn", train_length=math.pi)


def test_the_normalizers_table_lists_every_entry_and_how_it_runs_in_models() -> None:
    """docs/normalizers.md has one row per registry entry; its last column says whether the
    entry streams (kernels.spec.NORMALIZERS) or runs query-chunked."""
    from pathlib import Path

    doc = (Path(__file__).parents[1] / "docs" / "normalizers.md").read_text(encoding="utf-8")
    rows = {
        cells[1].strip("` "): cells[-2].strip()
        for line in doc.splitlines()
        if line.startswith("| `") and (cells := line.split("|"))
    }
    assert set(nz.available()) <= set(rows)
    for name in nz.available():
        want = "streaming, O(L)" if name in K.NORMALIZERS else "query-chunked"
        assert rows[name] == want, name
