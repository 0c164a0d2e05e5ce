"""Model files checked before loading: a truncated or corrupt ``.safetensors`` or ``.gguf`` file
ends in one line naming the file, not in a traceback from deep inside the loader.

Both formats say in their header how long the file must be: safetensors' JSON header gives
each tensor's byte range (https://github.com/huggingface/safetensors, "Format"), and a GGUF's
tensor table gives each tensor's offset, shape and ggml type (ggml's docs/gguf.md). Reading the
headers costs milliseconds; the tensor data is never touched.
"""

from __future__ import annotations

import json
import mmap
import pickle
import struct
from pathlib import Path
from types import TracebackType
from typing import Any

from attnlimits._checks import first_line

__all__ = [
    "LOAD_ERRORS",
    "CorruptModelFileError",
    "ModelUnavailableError",
    "check_gguf",
    "check_model_json",
    "check_safetensors",
    "first_line",
    "needs_remote_code",
    "pickle_error",
]

#: ggml type id -> (elements per block, bytes per block) for the types in common GGUF files;
#: a tensor of another type is checked only for starting inside the file.
_GGML_BLOCK = {
    0: (1, 4),
    1: (1, 2),
    2: (32, 18),
    3: (32, 20),
    6: (32, 22),
    7: (32, 24),
    8: (32, 34),
    9: (32, 36),
    10: (256, 84),
    11: (256, 110),
    12: (256, 144),
    13: (256, 176),
    14: (256, 210),
    15: (256, 292),
    24: (1, 1),
    25: (1, 2),
    26: (1, 4),
    27: (1, 8),
    28: (1, 8),
    30: (1, 2),
}
#: GGUF metadata value types of fixed width -> struct format.
_FIXED = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}


class ModelUnavailableError(OSError):
    """A model could not be loaded (offline hub id, missing package); the message says why."""


class CorruptModelFileError(OSError):
    """A model file is truncated or corrupt; the message names the file."""


def _truncated(path: Path, size: int, need: int) -> CorruptModelFileError:
    return CorruptModelFileError(
        f"model file {path} is truncated: it has {size:,} bytes, its header asks for at "
        f"least {need:,} (an interrupted download or copy?); fetch or copy it again"
    )


def check_safetensors(path: Path) -> None:
    """Raise :class:`CorruptModelFileError` unless ``path``'s header parses and the file is as
    long as the byte ranges it lists."""
    size = path.stat().st_size
    if size == 0:
        raise CorruptModelFileError(f"model file {path} is empty; fetch or copy it again")
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise _truncated(path, size, 8)
        (length,) = struct.unpack("<Q", head)
        if 8 + length > size:
            raise _truncated(path, size, 8 + length)
        try:
            header = json.loads(f.read(length))
            ends = [int(t["data_offsets"][1]) for k, t in header.items() if k != "__metadata__"]
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            raise CorruptModelFileError(
                f"model file {path} is corrupt: its header is not a safetensors header"
            ) from None
    need = 8 + length + max(ends, default=0)
    if need > size:
        raise _truncated(path, size, need)


class _Reader:
    """Little-endian values from a memory map, refusing to read past its end."""

    def __init__(self, data: Any, pos: int) -> None:
        self.data, self.pos = data, pos

    def take(self, fmt: str) -> Any:
        width = struct.calcsize(fmt)
        if self.pos + width > len(self.data):
            raise EOFError
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += width
        return value

    def skip_string(self) -> None:
        length = self.take("<Q")  # (not ``pos += take()``: that reads pos before take moves it)
        self.pos += length
        if self.pos > len(self.data):
            raise EOFError

    def string(self) -> str:
        start = self.pos + 8
        self.skip_string()
        return bytes(self.data[start : self.pos]).decode("utf-8", "replace")

    def value(self, kind: int) -> Any:
        """A metadata value: a number, a string, or an array (walked, not kept)."""
        if kind in _FIXED:
            return self.take(_FIXED[kind])
        if kind == 8:
            return self.string()
        if kind != 9:
            raise ValueError(f"unknown metadata type {kind}")
        element, count = self.take("<I"), self.take("<Q")
        if element in _FIXED:
            self.pos += count * struct.calcsize(_FIXED[element])
        else:
            for _ in range(count):
                self.value(element)
        if self.pos > len(self.data):
            raise EOFError
        return None


def _gguf_need(data: Any) -> int | None:
    """Bytes a GGUF's header says the file holds (None: a version this check does not read)."""
    r = _Reader(data, 4)  # after the magic bytes
    version = r.take("<I")
    if version not in (2, 3):
        return None
    tensors, entries = r.take("<Q"), r.take("<Q")
    if tensors == 0:
        raise ValueError("it holds no tensors (a GGUF of metadata only?)")
    alignment = 32  # ggml's default
    for _ in range(entries):
        key, kind = r.string(), r.take("<I")
        value = r.value(kind)
        if key == "general.alignment" and isinstance(value, int) and value > 0:
            alignment = value
    ends = []
    for _ in range(tensors):
        r.skip_string()
        dims = [r.take("<Q") for _ in range(r.take("<I"))]
        kind, offset = r.take("<I"), r.take("<Q")
        elements = 1
        for d in dims:
            elements *= d
        block, nbytes = _GGML_BLOCK.get(kind, (elements or 1, 1))
        ends.append(offset + elements // block * nbytes)
    start = (r.pos + alignment - 1) // alignment * alignment
    return start + max(ends, default=0)


def check_gguf(path: Path) -> None:
    """Raise :class:`CorruptModelFileError` unless ``path`` is a GGUF file whose header parses
    and which is as long as its tensor table says."""
    size = path.stat().st_size
    if size == 0:
        raise CorruptModelFileError(f"model file {path} is empty; fetch or copy it again")
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise CorruptModelFileError(
                f"model file {path} is not a GGUF file (it does not start with the bytes GGUF)"
            )
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            try:
                need = _gguf_need(data)
            except EOFError:
                raise CorruptModelFileError(
                    f"model file {path} is truncated: its header runs past its end "
                    f"({size:,} bytes); fetch or copy it again"
                ) from None
            except (ValueError, struct.error) as err:
                raise CorruptModelFileError(f"model file {path} is corrupt: {err}") from None
    if need is not None and need > size:
        raise _truncated(path, size, need)


#: Fields of a model's config.json that size it: where present (and not null) each must be a
#: whole number >= 1 (a 0 or a string ends in a ZeroDivisionError or a validation error deep in
#: transformers, naming neither the file nor the field).
_SIZES = (
    "num_hidden_layers num_attention_heads num_key_value_heads hidden_size intermediate_size "
    "head_dim vocab_size max_position_embeddings n_layer n_head n_embd n_positions n_ctx"
).split()
#: Keys transformers' fast tokenizer reads from tokenizer.json without a default.
_TOKENIZER_KEYS = ("added_tokens", "model")


def _json_object(path: Path) -> dict[str, Any]:
    """``path`` read as a JSON object, or :class:`CorruptModelFileError` naming the file."""
    try:
        data = json.loads(path.read_bytes())
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError
        raise CorruptModelFileError(
            f"model file {path} is not valid JSON ({first_line(err)})"
        ) from None
    if not isinstance(data, dict):
        raise CorruptModelFileError(
            f"model file {path} is not a JSON object (it holds a {type(data).__name__})"
        )
    return data


def check_model_json(folder: Path) -> None:
    """Raise :class:`CorruptModelFileError` naming the file and the field where a model folder's
    ``config.json`` or ``tokenizer.json`` is not JSON, sizes the model by a number that is not
    a whole number >= 1, or lacks a key the tokenizer cannot do without."""
    config = _json_object(folder / "config.json")
    for name in _SIZES:
        value = config.get(name)
        if value is not None and (type(value) is not int or value < 1):
            raise CorruptModelFileError(
                f"model file {folder / 'config.json'}: {name} must be a whole number >= 1, "
                f"got {value!r}"
            )
    if (tokenizer := folder / "tokenizer.json").is_file():
        data = _json_object(tokenizer)
        for key in _TOKENIZER_KEYS:
            if key not in data:
                raise CorruptModelFileError(f"model file {tokenizer} has no {key!r} field")


def _pickle_file(tb: TracebackType | None) -> str | None:
    """The file transformers was reading when unpickling failed (its ``checkpoint_file``)."""
    found = None
    while tb is not None:
        found = tb.tb_frame.f_locals.get("checkpoint_file", found)
        tb = tb.tb_next
    return None if found is None else str(found)


def pickle_error(err: pickle.UnpicklingError, source: str = "the model") -> CorruptModelFileError:
    """One line for a pickled weights file (``pytorch_model.bin``) that is not plain tensors.

    Such files are read with ``torch.load(weights_only=True)``, which unpickles tensors and
    plain containers only and runs no code; this says so, instead of torch's page that advises
    ``weights_only=False`` (which would run whatever code the pickle holds)."""
    where = _pickle_file(err.__traceback__)
    what = f"model file {where}" if where else f"a pickled weights file of {source}"
    return CorruptModelFileError(
        f"{what} holds more than plain tensors (or is not a torch file), and attnlimits reads "
        "pickled weights as plain tensors only, never running code in them: use the model's "
        ".safetensors files instead"
    )


def _load_errors() -> tuple[type[BaseException], ...]:
    """What loading a broken model raises: transformers' own errors, safetensors' (a Rust
    error class), and the parsers' struct and end-of-file errors."""
    errors: list[type[BaseException]] = [OSError, ValueError, RuntimeError, EOFError, struct.error]
    errors += [KeyError, ArithmeticError]  # a field a model file lacks, a size of 0
    try:
        from huggingface_hub.errors import StrictDataclassError  # a config field's wrong type

        errors.append(StrictDataclassError)
    except ImportError:  # pragma: no cover - older huggingface_hub
        pass
    try:
        from safetensors import SafetensorError

        errors.append(SafetensorError)
    except ImportError:  # pragma: no cover - a dependency of transformers
        pass
    return tuple(errors)


#: Caught around a loader and turned into one line naming the model.
LOAD_ERRORS = _load_errors()


def needs_remote_code(err: BaseException) -> bool:
    """Whether transformers refused a model because it needs the model's own Python code (an
    ``auto_map`` with no class in transformers), which attnlimits never runs: transformers
    words this as advice to pass ``trust_remote_code=True``."""
    return isinstance(err, ValueError) and "trust_remote_code=True" in str(err)
