"""A model's size and shape known without loading it, for the cost estimates of ``budget``.

Private to :mod:`attnlimits.experiments`. The named models are known by heart; a local folder
or a hub id in the local Hugging Face cache by its ``config.json``; a GGUF file by its header.
Anything else (an unreachable hub id, a file that cannot be read) gets SmolLM2-135M's shape:
the estimate is rough there, and loading the model reports what is wrong with it.
"""

from __future__ import annotations

import json
import mmap
import struct
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

__all__ = ["ModelShape", "model_shape"]


@dataclass(frozen=True)
class ModelShape:
    """What the cost of a forward pass depends on."""

    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    d_model: int
    d_ff: int  # the MLP's hidden width
    vocab: int
    causal: bool
    known: bool = True  # False: a stand-in (SmolLM2's shape) for a model not readable here
    #: The precision its weights are stored in (config.json's ``dtype`` or ``torch_dtype``;
    #: float32 where it names none); None for a GGUF, quantised below any of them, or unknown.
    dtype: str | None = "float32"

    @property
    def params(self) -> float:
        """Parameters: embeddings, then per layer q/o, k/v (grouped) and a gated MLP."""
        attn = 2 * self.d_model * self.heads * self.head_dim
        attn += 2 * self.d_model * self.kv_heads * self.head_dim
        return self.vocab * self.d_model + self.layers * (attn + 3 * self.d_model * self.d_ff)

    def attention_flops(self, length: int) -> float:
        """Multiply-adds × 2 of one forward's attention over ``length`` tokens (q·k and
        weights·v; half the map under a causal mask)."""
        flops = 4.0 * self.layers * self.heads * self.head_dim * float(length) ** 2
        return flops / 2 if self.causal else flops

    def forward_flops(self, length: int, *, lm_head: bool = True) -> float:
        """Multiply-adds × 2 of one forward over ``length`` tokens: the linear layers, the
        attention and (a causal LM's) LM head at every position."""
        linear = 2.0 * (self.params - self.vocab * self.d_model) * length
        head = 2.0 * self.vocab * self.d_model * length if lm_head and self.causal else 0.0
        return linear + self.attention_flops(length) + head


SMOLLM2 = ModelShape(30, 9, 3, 64, 576, 1536, 49152, causal=True, dtype=None)  # a GGUF
_NAMED = {
    "smollm2-135m": SMOLLM2,
    "minilm-l6": ModelShape(6, 12, 12, 32, 384, 1536, 30522, causal=False),
    "gpt2": ModelShape(12, 12, 12, 64, 768, 3072, 50257, causal=True),
}
_UNKNOWN = replace(SMOLLM2, known=False)


def _first(cfg: dict[str, Any], *names: str, default: Any = None) -> Any:
    for name in names:
        if isinstance(cfg.get(name), (int, float)) and not isinstance(cfg.get(name), bool):
            return int(cfg[name])
    return default


def _from_config(cfg: dict[str, Any]) -> ModelShape:
    """The shape from a transformers ``config.json`` (GPT-2's names or the newer ones)."""
    d = _first(cfg, "hidden_size", "n_embd", "d_model")
    heads = _first(cfg, "num_attention_heads", "n_head")
    layers = _first(cfg, "num_hidden_layers", "n_layer")
    if not (d and heads and layers):
        return _UNKNOWN
    archs = cfg.get("architectures") or []
    causal = any(str(a).endswith(("ForCausalLM", "LMHeadModel")) for a in archs) or bool(
        cfg.get("is_decoder", False)
    )
    return ModelShape(
        layers=layers,
        heads=heads,
        kv_heads=_first(cfg, "num_key_value_heads", default=heads),
        head_dim=_first(cfg, "head_dim", default=max(1, d // heads)),
        d_model=d,
        d_ff=_first(cfg, "intermediate_size", "n_inner", default=4 * d),
        vocab=_first(cfg, "vocab_size", default=32000),
        causal=causal,
        dtype=_stored_dtype(cfg),
    )


def _stored_dtype(cfg: dict[str, Any]) -> str:
    """The precision a config says its weights are stored in (transformers 5 writes ``dtype``,
    older ones ``torch_dtype``); float32 where it says none or names another."""
    named = cfg.get("dtype") or cfg.get("torch_dtype")
    return named if named in ("bfloat16", "float16") else "float32"


#: GGUF value types: scalar sizes (struct formats), 8 = string, 9 = array.
_GGUF_SCALARS = {
    0: "B",
    1: "b",
    2: "H",
    3: "h",
    4: "I",
    5: "i",
    6: "f",
    7: "?",
    10: "Q",
    11: "q",
    12: "d",
}


def _gguf_metadata(path: Path) -> dict[str, Any]:
    """A GGUF file's key-value header (scalars and strings; an array as its length), read
    without its tensors (``gguf.GGUFReader`` maps every tensor: seconds for a small model)."""
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        if buf[:4] != b"GGUF":
            raise ValueError(f"{path} is not a GGUF file")
        pos = 24  # magic, version (uint32), tensor count and key count (uint64)
        (count,) = struct.unpack_from("<Q", buf, 16)

        def string(at: int) -> tuple[str, int]:
            (n,) = struct.unpack_from("<Q", buf, at)
            return bytes(buf[at + 8 : at + 8 + n]).decode("utf-8", "replace"), at + 8 + n

        def value(kind: int, at: int) -> tuple[Any, int]:
            if kind in _GGUF_SCALARS:
                fmt = "<" + _GGUF_SCALARS[kind]
                return struct.unpack_from(fmt, buf, at)[0], at + struct.calcsize(fmt)
            if kind == 8:
                return string(at)
            if kind != 9:
                raise ValueError(f"unknown GGUF value type {kind}")
            item, n = struct.unpack_from("<IQ", buf, at)
            at += 12
            if item in _GGUF_SCALARS:
                return n, at + n * struct.calcsize("<" + _GGUF_SCALARS[item])
            for _ in range(n):
                _, at = value(item, at)
            return n, at

        meta: dict[str, Any] = {}
        for _ in range(count):
            key, pos = string(pos)
            (kind,) = struct.unpack_from("<I", buf, pos)
            meta[key], pos = value(kind, pos + 4)
        return meta


def _from_gguf(path: Path) -> ModelShape:
    """The shape from a GGUF header (``<arch>.block_count`` and friends)."""
    meta = _gguf_metadata(path)
    arch = meta.get("general.architecture")
    cfg = {
        "hidden_size": meta.get(f"{arch}.embedding_length"),
        "num_attention_heads": meta.get(f"{arch}.attention.head_count"),
        "num_key_value_heads": meta.get(f"{arch}.attention.head_count_kv"),
        "num_hidden_layers": meta.get(f"{arch}.block_count"),
        "intermediate_size": meta.get(f"{arch}.feed_forward_length"),
        "vocab_size": meta.get("tokenizer.ggml.tokens", meta.get(f"{arch}.vocab_size")),
        "architectures": ["ForCausalLM"],
    }
    return replace(_from_config(cfg), dtype=None)


def _cached_config(hub_id: str) -> Path | None:
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(hub_id, "config.json")
    except Exception:  # not a valid repo id, no cache: unknown
        return None
    return Path(found) if isinstance(found, str) else None


def model_shape(name: str) -> ModelShape:
    """The shape of the model ``name`` (named, folder, GGUF file or cached hub id), without
    loading it; SmolLM2-135M's shape with ``known=False`` where it cannot be read. Never
    raises: a model that cannot be loaded is reported by the loader, not here."""
    if name in _NAMED:
        return _NAMED[name]
    try:
        path = Path(name).expanduser()
        if path.is_file() and path.suffix.lower() == ".gguf":
            return _from_gguf(path)
        config = path / "config.json" if path.is_dir() else _cached_config(name)
        if config is not None and config.is_file():
            return _from_config(json.loads(config.read_text(encoding="utf-8")))
    except Exception:  # unreadable, truncated, not JSON: the loader says what is wrong
        return _UNKNOWN
    return _UNKNOWN
