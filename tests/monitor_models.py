"""Tiny random models and inputs for the monitor's tests (tests/test_monitor*.py, the view's
monitor page, the data-safety tests of the monitor's table)."""

from __future__ import annotations

from typing import Any

import torch
import transformers
from transformers import GPT2Config, LlamaConfig

VOCAB, SEQ = 100, 12


def tiny(family: str, impl: str, *, sharpen: float = 10.0) -> Any:
    """A tiny random model; q and k projections scaled by ``sharpen`` so heads differ."""
    torch.manual_seed(0)
    if family == "gpt2":
        cfg: Any = GPT2Config(
            n_layer=2, n_head=2, n_embd=32, n_positions=64, vocab_size=VOCAB,
            bos_token_id=0, eos_token_id=0, pad_token_id=0,
        )  # fmt: skip
        model: Any = transformers.GPT2LMHeadModel(cfg)
        with torch.no_grad():
            for block in model.transformer.h:
                block.attn.c_attn.weight[:, : 2 * 32] *= sharpen
    else:
        cfg = LlamaConfig(
            vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
            bos_token_id=0, eos_token_id=0, pad_token_id=0,
        )  # fmt: skip
        model = transformers.LlamaForCausalLM(cfg)
        with torch.no_grad():
            for layer in model.model.layers:
                layer.self_attn.q_proj.weight *= sharpen
                layer.self_attn.k_proj.weight *= sharpen
    model.set_attn_implementation(impl)
    return model


def batch(seed: int = 0, pad: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """input_ids [2, SEQ] and a padding mask with the last ``pad`` tokens of row 1 padded."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (2, SEQ), generator=g)
    mask = torch.ones(2, SEQ, dtype=torch.long)
    if pad:
        mask[1, -pad:] = 0
    return ids, mask


class WordTokenizer:
    """A tokenizer's ``batch_decode``: token id i as " t<i>"."""

    def batch_decode(self, ids: Any, clean_up_tokenization_spaces: bool = False) -> list[str]:
        return [f" t{int(i[0])}" for i in ids]


class Tokens(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        ids = batch(seed=i, pad=0)[0][0]
        return {"input_ids": ids, "labels": ids}
