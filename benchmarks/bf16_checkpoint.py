"""Write a random Llama straight to bfloat16 safetensors, shard by shard, for measuring models
in their own precision (docs/benchmarks.md, "Models in their own precision").

No float32 tensor and no whole model is ever in memory: the module tree is built on the meta
device for the tensors' names and shapes only, and each tensor is drawn in bfloat16 and written
in shards of about 2 GB (the 8B shape peaks at 2.5 GB). The tokenizer is SmolLM2's (from the
dequantised GGUF's cache; its ids fit any vocabulary of 49,152 or more).

    python benchmarks/bf16_checkpoint.py /work/tmp8b/llama8b 4096 32 32 8 14336 128256
    python benchmarks/bf16_checkpoint.py /work/tmp8b/small 768 12 12 4 2048 49152
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM

from attnlimits.capture import load_model

SHARD_BYTES = 2e9


def write(out: Path, hidden: int, layers: int, heads: int, kv: int, mlp: int, vocab: int) -> int:
    """Write the checkpoint to ``out``; return its parameter count."""
    cfg = LlamaConfig(
        hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=kv, intermediate_size=mlp, vocab_size=vocab,
        max_position_embeddings=8192, tie_word_embeddings=False, rope_theta=500000.0,
        dtype="bfloat16", architectures=["LlamaForCausalLM"],
    )  # fmt: skip
    with torch.device("meta"):
        shapes = {k: v.shape for k, v in LlamaForCausalLM(cfg).state_dict().items()}
    out.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(0)
    shard: dict[str, torch.Tensor] = {}
    index: dict[str, str] = {}
    size = 0.0

    def flush() -> None:
        nonlocal shard, size
        if shard:
            name = f"model-{len(set(index.values())):05d}.safetensors"
            save_file(shard, out / name, metadata={"format": "pt"})
            index.update(dict.fromkeys(shard, name))
            shard, size = {}, 0.0

    for key, shape in shapes.items():
        if key.endswith("norm.weight"):
            t = torch.ones(shape, dtype=torch.bfloat16)
        else:
            t = torch.empty(shape, dtype=torch.bfloat16).normal_(0, 0.02, generator=gen)
        shard[key] = t
        size += 2 * t.numel()
        if size > SHARD_BYTES:
            flush()
    flush()
    (out / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": index})
    )
    cfg.save_pretrained(out)
    tokenizer = Path(load_model("smollm2-135m").source or "")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer / name, out / name)
    return sum(torch.Size(s).numel() for s in shapes.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    for name in ("hidden", "layers", "heads", "kv_heads", "mlp", "vocab"):
        parser.add_argument(name, type=int)
    a = parser.parse_args()
    n = write(a.out, a.hidden, a.layers, a.heads, a.kv_heads, a.mlp, a.vocab)
    print(f"{a.out}: {n / 1e9:.3f} B parameters in bfloat16")


if __name__ == "__main__":
    main()
