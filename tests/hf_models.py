"""Tiny random GPT-2 and GQA Llama models and their batches, for the streaming kernels'
tests inside transformers (tests/test_hf_attention.py, test_hf_all_normalizers.py,
test_kernels_sdpa.py)."""

from __future__ import annotations

import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

VOCAB = 97


def tiny_gpt2() -> GPT2LMHeadModel:
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_head=4, n_embd=32, vocab_size=VOCAB, n_positions=64)
    cfg.bos_token_id = cfg.eos_token_id = None
    return GPT2LMHeadModel(cfg).eval()


def tiny_llama() -> LlamaForCausalLM:
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        bos_token_id=None, eos_token_id=None, pad_token_id=None,
    )  # fmt: skip
    return LlamaForCausalLM(cfg).eval()


def batch(seed: int = 0, L: int = 13):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB, (2, L), generator=g)
    am = torch.ones(2, L, dtype=torch.long)
    am[1, :5] = 0  # left padding in the second sequence
    return ids, am


def logits(model, ids, am=None):
    with torch.no_grad():
        return model(ids, attention_mask=am).logits
