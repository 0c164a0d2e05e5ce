"""Tiny random models saved as local directories (with a word-level tokenizer), for end-to-end
tests of code that loads models by path. Nothing is downloaded."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import (
    BertConfig,
    BertModel,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
)

from attnlimits.corpus import word_tokenizer


def tiny_model_dir(
    root: Path, family: str, text: str, *, max_positions: int = 256, digits: bool = False
) -> Path:
    """Save a tiny random ``family`` model ("llama" with GQA, "gpt2", "bert") under ``root``;
    ``digits``: its tokenizer splits numbers into digits (:func:`word_tokenizer`)."""
    torch.manual_seed(0)
    tok = word_tokenizer(text, digits=digits)
    vocab = len(tok)
    if family == "llama":
        cfg = LlamaConfig(
            vocab_size=vocab,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=max_positions,
        )
        model: torch.nn.Module = LlamaForCausalLM(cfg)
    elif family == "gpt2":
        cfg = GPT2Config(
            vocab_size=vocab, n_embd=32, n_layer=2, n_head=4, n_positions=max_positions
        )
        model = GPT2LMHeadModel(cfg)
    elif family == "bert":
        cfg = BertConfig(
            vocab_size=vocab,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=max_positions,
        )
        model = BertModel(cfg)
    else:
        raise ValueError(family)
    out = root / family
    model.save_pretrained(out)  # type: ignore[operator]
    tok.save_pretrained(out)
    return out
