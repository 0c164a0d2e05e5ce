"""What ``attnlimits compare`` measures: normalisers (with parameters), lengths, sequences, probes.

Every setting is *ours*: neither paper swaps normalisers into a pretrained model. Normalisers
are given as specs, ``name`` or ``name:param=value;param=value`` (``logn:train_length=2048``,
``topk:k=64``), each a registry name of :mod:`attnlimits.normalizers`; ``softmax`` is the
model's own attention (SDPA), the baseline every other is compared with.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from attnlimits._checks import check_distinct, check_int_at_least, positive_ints
from attnlimits.capture.precision import check_dtype
from attnlimits.experiments._inputs import check_flag, check_model_name, text_path

__all__ = [
    "BASELINE",
    "Config",
    "check_heads",
    "check_probe_room",
    "parse_normalizer",
    "spec_key",
]

#: The model's own attention: every other normaliser is compared with it.
BASELINE = "softmax"
#: Length scalings whose ``train_length`` follows the model's trained context unless given.
TRAIN_LENGTH_PARAM = ("logn", "ssmax_trained")

_QUICK: dict[str, Any] = {
    "normalizers": ("softmax", "adaptive", "logn:train_length=128"),
    "lengths": (128, 256),
    "sequences": 1,
    "probes_per_length": 2,
    "rows": 4,
}


def _value(spec: str, key: str, text: str) -> Any:
    """A parameter value as typed: JSON (numbers, lists, true/false) or a number Python reads
    (``nan``, ``inf``: refused by the normaliser by name); anything else is refused here."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        try:
            value = float(text)
        except ValueError:
            value = None
    if not _plain(value):
        raise ValueError(
            f"normalizer {spec!r}: {key}={text} is not a number (a value is a number, "
            "true/false, or a list such as [1,2])"
        )
    return value


def _plain(value: Any) -> bool:
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return isinstance(value, (bool, int, float))


def _parameters(name: str) -> list[str]:
    """The parameters a spec may set: the normaliser's keyword-only ones, but not ``mask``."""
    from attnlimits import normalizers as nz

    signature = inspect.signature(nz.get(name))
    return [
        p.name
        for p in signature.parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.name != "mask"
    ]


def parse_normalizer(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name"`` or ``"name:p=v;q=w"`` → (registry name, parameters), checked now.

    Raises ``ValueError`` quoting the spec as given for an unknown name, a malformed,
    unknown, repeated or non-numeric parameter, or values the normaliser refuses (checked by
    calling it on a tiny input).
    """
    import torch

    from attnlimits import normalizers as nz
    from attnlimits.kernels.spec import NORMALIZERS, resolve_params

    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"a normalizer spec must be a non-empty string, got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    name = name.strip()
    if name not in nz.available():
        where = f" in {spec!r}" if spec.strip() != name else ""
        raise ValueError(
            f"unknown normalizer {name!r}{where}; choose from {', '.join(nz.available())}"
        )
    params: dict[str, Any] = {}
    allowed = list(NORMALIZERS[name]) if name in NORMALIZERS else _parameters(name)
    for item in filter(None, (s.strip() for s in rest.split(";"))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ValueError(f"normalizer {spec!r}: parameters are name=value, got {item!r}")
        if key in params:
            raise ValueError(f"normalizer {spec!r}: {key} is given twice; give it once")
        if key not in allowed and name != BASELINE:
            takes = f"takes {', '.join(allowed)}" if allowed else "takes no parameters"
            raise ValueError(f"normalizer {spec!r}: {name} {takes}, not {key!r}")
        params[key] = _value(spec, key, value.strip())
    if name == BASELINE and params:
        raise ValueError(
            f"{spec!r}: softmax is the baseline, the attention the network was trained with, "
            "and takes no parameters; for a temperature use another spec, e.g. a length scaling"
        )
    try:
        if name in NORMALIZERS:  # streamed: the kernel's checks (a sink list per head, ...)
            resolve_params(name, params)
        else:
            nz.get(name)(torch.zeros(1, 4), **params)
    except (TypeError, ValueError) as err:
        raise ValueError(f"normalizer {spec!r}: {err}") from None
    return name, params


def spec_key(spec: str) -> tuple[str, str]:
    """What a spec means, whatever its spelling (``topk:k=4`` and ``topk: k=4`` are one):
    its registry name and parameters; ``ValueError`` as :func:`parse_normalizer`."""
    name, params = parse_normalizer(spec)
    return name, json.dumps(params, sort_keys=True)


@dataclass(frozen=True)
class Config:
    """One comparison; defaults: SmolLM2-135M, seven normalisers, L = 512 … 8192, 3 sequences."""

    model: str = "smollm2-135m"
    text: Path | None = None
    device: str = "cpu"
    normalizers: tuple[str, ...] = (
        "softmax",
        "adaptive",
        "ssmax_trained",
        "logn",
        "softcap",
        "softmax1",
        "topk:k=64",
    )
    lengths: tuple[int, ...] = (512, 1024, 2048, 4096, 8192)
    sequences: int = 3  # book stretches spread over the text, one forward each per normaliser
    probes_per_length: int = 4  # retrieval queries ending in each length's band, per sequence
    rows: int = 8  # query rows per length band sampled for the per-head entropy
    train_length: int | None = None  # for logn / ssmax_trained; None: the model's context
    beyond_context: bool = False  # lengths past the model's context: a warning, not an error
    allow_incomplete_weights: bool = False  # weights lacking tensors load; report.md says so
    dtype: str = "auto"  # the weights' precision (maps, statistics: float32); docs/resources.md
    block_size: int = 512  # query rows and key columns per block of the streaming kernels
    seed: int = 0

    def __post_init__(self) -> None:
        lengths = positive_ints("lengths", self.lengths)
        check_distinct(lengths, "lengths")
        object.__setattr__(self, "lengths", tuple(sorted(lengths)))
        specs = self.normalizers
        if isinstance(specs, str):
            specs = tuple(s for s in specs.split(",") if s.strip())
        specs = tuple(s.strip() if isinstance(s, str) else s for s in specs)
        if not specs:
            raise ValueError("give at least one normalizer")
        seen: dict[tuple[str, str], str] = {}
        for spec in specs:
            key = spec_key(spec)
            if key in seen:
                same = f" as {spec!r}" if spec != seen[key] else ""
                raise ValueError(
                    f"normalizers repeats {seen[key]!r}{same}; give each normalizer once"
                )
            seen[key] = spec
        if BASELINE not in specs:
            specs = (BASELINE, *specs)  # the baseline is always measured, first
        object.__setattr__(self, "normalizers", specs)
        object.__setattr__(self, "text", text_path(self.text))
        check_model_name(self.model)
        for name, least in (
            ("sequences", 1),
            ("probes_per_length", 1),  # 0 probes: the tables would lack their columns
            ("rows", 1),
            ("block_size", 1),
            ("seed", 0),
        ):
            check_int_at_least(getattr(self, name), name, least)
        if self.train_length is not None:
            check_int_at_least(self.train_length, "train_length", 2)
        if min(self.lengths) < 16:
            raise ValueError(f"every length must be >= 16, got lengths {self.lengths}")
        if not isinstance(self.beyond_context, bool):
            raise ValueError(f"beyond_context must be true or false, got {self.beyond_context!r}")
        check_flag(self.allow_incomplete_weights, "allow_incomplete_weights")
        check_dtype(self.dtype)

    @property
    def max_length(self) -> int:
        return max(self.lengths)

    def specs(self, context: int | None) -> dict[str, tuple[str, dict[str, Any]]]:
        """Spec → (registry name, parameters), ``train_length`` filled in for the length
        scalings that take it from ``self.train_length``, else the model's ``context``."""
        train = self.train_length or context
        out = {}
        for spec in self.normalizers:
            name, params = parse_normalizer(spec)
            if name in TRAIN_LENGTH_PARAM and "train_length" not in params and train:
                params["train_length"] = int(train)
            out[spec] = (name, params)
        return out

    @classmethod
    def quick(cls, **given: Any) -> Config:
        """Three normalisers, L = 128, 256, one sequence (the CI smoke run); ``given`` wins."""
        return cls.preset(quick=True, **given)

    @classmethod
    def preset(cls, *, quick: bool = False, **given: Any) -> Config:
        """The defaults or the quick preset, then the caller's values (None = not given)."""
        from attnlimits.experiments.skeleton import preset_values

        values, _ = preset_values(cls, _QUICK if quick else {}, given, "compare")
        return cls(**values)

    def cache_params(self, model_id: str, text_sha: str) -> dict[str, object]:
        """What one (normaliser, sequence) forward's results depend on, the device's kind
        (:func:`~attnlimits.experiments.store.numerics`) included."""
        from attnlimits.experiments.store import numerics

        params = asdict(self)
        for key in ("device", "text", "model", "beyond_context", "normalizers", "block_size"):
            params.pop(key)
        return {**params, **numerics(self), "model_id": model_id, "text_sha256": text_sha}


def check_probe_room(cfg: Config, query_tokens: int) -> None:
    """Each length's probes end in its band ``[L/2, L)``: refuse lengths too short for them."""
    need = 2 * cfg.probes_per_length * query_tokens
    short = [n for n in cfg.lengths if n < need]
    if short and cfg.probes_per_length:
        raise ValueError(
            f"lengths {short} are too short for {cfg.probes_per_length} retrieval probe(s) of "
            f"{query_tokens} tokens in their second half (need L >= {need}); give longer "
            "lengths or fewer --probes-per-length"
        )


def check_heads(specs: dict[str, tuple[str, dict[str, Any]]], heads: int) -> None:
    """A per-head parameter (``sink_softmax:sink=[...]``) has one value per query head of the
    model: checked when the model is known, before any forward; the error quotes the spec."""
    from attnlimits.kernels.spec import NORMALIZERS, resolve_params, sink_logits

    for spec, (name, params) in specs.items():
        if name in NORMALIZERS:
            try:
                sink_logits(name, resolve_params(name, params), heads)
            except ValueError as err:
                raise ValueError(f"normalizer {spec!r}: {err}") from None
