"""Where a model's files come from, named by their content: a GGUF dequantised once into the
user cache (keyed by the GGUF's sha256, never by its name, size or mtime), and the key of the
results computed from a model (:func:`content_of`)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import torch

from attnlimits._paths import write_error
from attnlimits.capture._content import file_sha256, folder_sha256
from attnlimits.capture._files import (
    LOAD_ERRORS,
    ModelUnavailableError,
    check_gguf,
    first_line,
)
from attnlimits.capture._weights import checked_load, refuse
from attnlimits.corpus.text import cache_dir, check_cache

__all__ = ["GGUF_NOTE", "content_of", "gguf_dir", "gguf_note"]

#: In a GGUF's cache entry: the GGUF's sha256 and the tensors it lacked (if allowed).
GGUF_NOTE = ".attnlimits-gguf.json"


def _write_errors() -> tuple[type[Exception], ...]:
    """What writing a cache entry raises: ``OSError``, and safetensors' own error class (a
    full disk while it writes the weights is a ``SafetensorError``, not an ``OSError``)."""
    try:
        from safetensors import SafetensorError
    except ImportError:  # pragma: no cover - a dependency of transformers
        return (OSError,)
    return (OSError, SafetensorError)


_WRITE_ERRORS = _write_errors()


def _os_error(err: Exception) -> OSError:
    """``err`` as an ``OSError``: safetensors' error carries Rust's ``Os { code: 28, ...,
    message: "No space left on device" }`` in its text; its errno and words are kept."""
    if isinstance(err, OSError):
        return err
    code = re.search(r"\bcode: (\d+)", str(err))
    words = re.search(r'message: "([^"]*)"', str(err))
    return OSError(int(code[1]) if code else None, words[1] if words else first_line(err))


def gguf_dir(gguf: Path, *, allow: bool = False) -> Path:
    """A GGUF file dequantised to a float32 transformers directory, built once and cached.

    The cache entry is keyed by the GGUF's content (its sha256, :mod:`._content`) and the
    transformers version, not by its name, size or mtime, which two different files can share.
    It is written to a temporary directory and renamed into place, so an interrupted run leaves
    no half entry. A GGUF whose tensors do not fit its model is refused unless ``allow``; then
    its entry's note (:data:`GGUF_NOTE`) names them, and each load of it is refused in turn.
    """
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    sha = file_sha256(gguf, remember=False)  # remembered once the entry exists
    key = hashlib.sha256(f"{sha}:{transformers.__version__}".encode()).hexdigest()[:16]
    root = cache_dir() / "models"
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", gguf.stem)
    target = root / f"{stem}-{key}"
    if (target / "config.json").is_file():
        file_sha256(gguf)
        return target
    check_gguf(gguf)  # truncated or corrupt: one line naming the file, before transformers
    check_cache("models")  # a cache that cannot take the entry: refused before the slow load
    try:  # loaded before the cache is touched: a file it cannot read leaves nothing there
        # never the folder's own code: a GGUF's folder may hold anything beside it
        safe = {"gguf_file": gguf.name, "trust_remote_code": False}
        tok = AutoTokenizer.from_pretrained(gguf.parent, **safe)
        load = partial(AutoModelForCausalLM.from_pretrained, gguf.parent)
        model, problems = checked_load(load, dtype=torch.float32, **safe)
    except LOAD_ERRORS as err:  # what the header check cannot see
        raise ModelUnavailableError(f"could not read GGUF file {gguf}: {first_line(err)}") from err
    refuse(f"GGUF file {gguf}", model, problems, allow=allow)
    # The weights are plain float32 now; drop the GGUF marker so save_pretrained accepts them.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{stem}-", dir=root))
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        note = {"gguf": str(gguf), "sha256": sha, "incomplete": problems}
        (tmp / GGUF_NOTE).write_text(json.dumps(note, indent=1))
        try:
            os.replace(tmp, target)
        except OSError:  # another process filled the entry first
            if not (target / "config.json").is_file():
                raise
    except _WRITE_ERRORS as err:  # a full disk: the entry named, not only an errno
        raise write_error(target, _os_error(err)) from err
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    file_sha256(gguf)
    return target


def gguf_note(source: str) -> dict[str, Any]:
    """A GGUF cache entry's note (``sha256``: the GGUF's; ``incomplete``: the tensors it
    lacked, by kind), or {} for any other folder or a hub id."""
    note = Path(source) / GGUF_NOTE
    return dict(json.loads(note.read_text())) if note.is_file() else {}


def content_of(source: str) -> str | None:
    """What names ``source``'s content (``LoadedModel.content``): the sha256 of a GGUF (its
    cache entry's note says) or of a folder's files (a hub id's: its snapshot in the local
    Hugging Face cache); None where the hub id is not in that cache."""
    folder = Path(source)
    if note := gguf_note(source):
        return str(note["sha256"])
    if folder.is_dir():
        return folder_sha256(folder)
    from huggingface_hub import try_to_load_from_cache  # a hub id: its snapshot folder

    config = try_to_load_from_cache(source, "config.json")
    return folder_sha256(Path(config).parent) if isinstance(config, str) else None
