"""Tiny random models saved as local directories (with a word-level tokenizer), for end-to-end
tests of code that loads models by path. Nothing is downloaded."""

from __future__ import annotations

import struct
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
    root: Path,
    family: str,
    text: str,
    *,
    max_positions: int = 256,
    digits: bool = False,
    hidden_size: int = 32,
) -> Path:
    """Save a tiny random ``family`` model ("llama" with GQA, "gpt2", "bert") under ``root``;
    ``digits``: its tokenizer splits numbers into digits (:func:`word_tokenizer`);
    ``hidden_size``: a multiple of 4 (the heads)."""
    torch.manual_seed(0)
    tok = word_tokenizer(text, digits=digits)
    vocab = len(tok)
    if family == "llama":
        cfg = LlamaConfig(
            vocab_size=vocab,
            hidden_size=hidden_size,
            intermediate_size=2 * hidden_size,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=max_positions,
        )
        model: torch.nn.Module = LlamaForCausalLM(cfg)
    elif family == "gpt2":
        cfg = GPT2Config(
            vocab_size=vocab, n_embd=hidden_size, n_layer=2, n_head=4, n_positions=max_positions
        )
        model = GPT2LMHeadModel(cfg)
    elif family == "bert":
        cfg = BertConfig(
            vocab_size=vocab,
            hidden_size=hidden_size,
            intermediate_size=2 * hidden_size,
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


def tiny_gguf(path: Path, *, cut: int | None = None) -> int:
    """Write a minimal GGUF v3 file (one 4 × 4 float32 tensor, llama metadata only) to ``path``,
    cut to its first ``cut`` bytes if given; return the whole file's length."""

    def string(s: str) -> bytes:
        return struct.pack("<Q", len(s)) + s.encode()

    head = b"GGUF" + struct.pack("<IQQ", 3, 1, 1)  # version, tensors, metadata entries
    head += string("general.architecture") + struct.pack("<I", 8) + string("llama")
    head += string("w") + struct.pack("<IQQ", 2, 4, 4) + struct.pack("<IQ", 0, 0)  # F32 at 0
    data = head + b"\0" * (-len(head) % 32) + b"\0" * 64  # aligned to 32, then 16 floats
    path.write_bytes(data if cut is None else data[:cut])
    return len(data)


_LAYER_TENSORS = "attn_norm ffn_norm attn_q attn_k attn_v attn_output ffn_gate ffn_up ffn_down"
#: The GGUF names of every tensor :func:`tiny_llama_gguf` writes (``drop`` them all: a GGUF of
#: metadata only).
LLAMA_GGUF_TENSORS = (
    "token_embd.weight",
    "output_norm.weight",
    "output.weight",
    *(f"blk.{i}.{part}.weight" for i in range(2) for part in _LAYER_TENSORS.split()),
)


def tiny_llama_gguf(path: Path, *, seed: int = 0, drop: tuple[str, ...] = ()) -> Path:
    """Write a tiny Llama that transformers loads from GGUF (float32 tensors, a 16-token
    byte-level vocabulary) to ``path``: 2 layers, 4 query and 2 key/value heads of 8. Its size
    does not depend on ``seed``; ``drop`` leaves those tensors out (GGUF names,
    ``blk.0.ffn_down.weight``)."""
    import gguf
    import numpy as np

    V, D, F, L, H, KV = 16, 32, 64, 2, 4, 2
    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(64)
    w.add_embedding_length(D)
    w.add_block_count(L)
    w.add_feed_forward_length(F)
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_rope_dimension_count(D // H)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(["<s>", "</s>", "ab"] + [chr(ord("a") + i) for i in range(V - 3)])
    w.add_token_types([1] * V)
    w.add_token_scores([0.0] * V)
    w.add_token_merges(["a b"])
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    shapes = {"token_embd.weight": (V, D), "output_norm.weight": (D,), "output.weight": (V, D)}
    for i in range(L):
        shapes |= {
            f"blk.{i}.attn_norm.weight": (D,),
            f"blk.{i}.ffn_norm.weight": (D,),
            f"blk.{i}.attn_q.weight": (D, D),
            f"blk.{i}.attn_k.weight": (D * KV // H, D),
            f"blk.{i}.attn_v.weight": (D * KV // H, D),
            f"blk.{i}.attn_output.weight": (D, D),
            f"blk.{i}.ffn_gate.weight": (F, D),
            f"blk.{i}.ffn_up.weight": (F, D),
            f"blk.{i}.ffn_down.weight": (D, F),
        }
    rng = np.random.default_rng(seed)
    for name, shape in shapes.items():
        if name not in drop:
            w.add_tensor(name, rng.standard_normal(shape).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
