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
import struct
from pathlib import Path
from typing import Any

__all__ = [
    "LOAD_ERRORS",
    "CorruptModelFileError",
    "ModelUnavailableError",
    "check_gguf",
    "check_safetensors",
    "first_line",
    "needs_remote_code",
]

#: ggml type id -> (elements per block, bytes per block) for the types in common GGUF files;
#: a tensor of another type is checked only for starting inside the file.
_GGML_BLOCK = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
    9: (32, 36), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176),
    14: (256, 210), 15: (256, 292), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8),
    28: (1, 8), 30: (1, 2),
}  # fmt: skip
#: GGUF metadata value types of fixed width -> struct format.
_FIXED = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
          11: "<q", 12: "<d"}  # fmt: skip


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


def _load_errors() -> tuple[type[BaseException], ...]:
    """What loading a broken model raises: transformers' own errors, safetensors' (a Rust
    error class), and the parsers' struct and end-of-file errors."""
    errors: list[type[BaseException]] = [OSError, ValueError, RuntimeError, EOFError, struct.error]
    try:
        from safetensors import SafetensorError

        errors.append(SafetensorError)
    except ImportError:  # pragma: no cover - a dependency of transformers
        pass
    return tuple(errors)


#: Caught around a loader and turned into one line naming the model.
LOAD_ERRORS = _load_errors()


def first_line(err: BaseException) -> str:
    """An exception's first line (a loader's message can run to a page)."""
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__


def needs_remote_code(err: BaseException) -> bool:
    """Whether transformers refused a model because it needs the model's own Python code (an
    ``auto_map`` with no class in transformers), which attnlimits never runs: transformers
    words this as advice to pass ``trust_remote_code=True``."""
    return isinstance(err, ValueError) and "trust_remote_code=True" in str(err)
