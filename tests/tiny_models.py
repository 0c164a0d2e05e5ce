"""Tiny random models saved as local directories (with a word-level tokenizer), for end-to-end
tests of code that loads models by path. Nothing is downloaded."""

from __future__ import annotations

import re
from pathlib import Path

import torch
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from transformers import (
    BertConfig,
    BertModel,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)

WORDS = re.findall(r"\w+|[^\w\s]", "the of and to a in he that was it his is with had for as on")


def _tokenizer(text: str, size: int = 400) -> PreTrainedTokenizerFast:
    words: dict[str, int] = {}
    for w in re.findall(r"\w+|[^\w\s]", text[:200_000]):
        words[w] = words.get(w, 0) + 1
    top = sorted(words, key=lambda w: -words[w])[: size - 2]
    vocab = {"[UNK]": 0, "[PAD]": 1} | {w: i + 2 for i, w in enumerate(top)}
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]")


def tiny_model_dir(root: Path, family: str, text: str, *, max_positions: int = 256) -> Path:
    """Save a tiny random ``family`` model ("llama" with GQA, "gpt2", "bert") under ``root``."""
    torch.manual_seed(0)
    tok = _tokenizer(text)
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
