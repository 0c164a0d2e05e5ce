"""What the long-context demo runs: list lengths, prompts, modes, the spread window."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any, Literal

from attnlimits._checks import check_distinct, check_int_at_least, positive_ints
from attnlimits.capture.precision import check_dtype
from attnlimits.experiments._inputs import check_flag
from attnlimits.kernels.spec import resolve_params

__all__ = ["MODES", "Config", "LongContextConfig", "Mode"]

Mode = Literal["softmax", "adaptive"]
MODES: tuple[Mode, ...] = ("softmax", "adaptive")
#: Integer fields and their least value (``seed`` seeds numpy, which refuses negatives).
_INT_FIELDS = {
    "prompts": 1,
    "low": 0,
    "high": 1,
    "seed": 0,
    "max_new_tokens": 1,
    "batch_size": 1,
    "block_size": 1,
    "spread_length": 0,
    "spread_windows": 1,
}


@dataclass(frozen=True)
class Config:
    """Max-finding over n numbers with a pretrained LM; defaults take ~10 min on 2 CPU cores.

    ``softmax_backend``: ``"sdpa"`` (transformers' own attention, equal to eager up to float
    rounding) or ``"kernel"`` (``attnlimits_softmax_t`` at T = 1). ``adaptive_params`` go to
    the adaptive kernel (``coeffs``, ``threshold``; empty = paper B's listing).
    """

    model: str = "smollm2-135m"
    ns: tuple[int, ...] = (4, 8, 16, 32, 64, 128, 256)
    prompts: int = 20  # per n; the same prompts serve every mode (paired)
    low: int = 100  # numbers are distinct integers in [low, high]
    high: int = 999
    seed: int = 0
    modes: tuple[str, ...] = MODES
    softmax_backend: Literal["sdpa", "kernel"] = "sdpa"
    adaptive_params: dict[str, Any] = field(default_factory=dict)
    chat: bool = True  # use the tokenizer's chat template when it has one
    max_new_tokens: int = 4
    batch_size: int = 4  # prompts of equal token length per forward
    block_size: int = 512  # streaming-kernel block
    spread_length: int = 1024  # War and Peace window for the Figure 3 analogue (0 = skip)
    spread_windows: int = 1
    text: Path | None = None
    device: str = "cpu"
    allow_incomplete_weights: bool = False  # weights lacking tensors load; report.md says so
    dtype: str = "auto"  # the weights' precision (maps, statistics: float32); docs/resources.md

    def __post_init__(self) -> None:
        object.__setattr__(self, "ns", positive_ints("ns", self.ns))
        object.__setattr__(self, "modes", tuple(self.modes))
        check_distinct(self.ns, "ns")
        check_distinct(self.modes, "modes")
        check_flag(self.allow_incomplete_weights, "allow_incomplete_weights")
        check_dtype(self.dtype)
        if self.text is not None:
            if not isinstance(self.text, (str, PathLike)):
                raise ValueError(f"text must be a file path or None, got {self.text!r}")
            object.__setattr__(self, "text", Path(self.text))
        for name in ("model", "device"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
        for name, low in _INT_FIELDS.items():
            check_int_at_least(getattr(self, name), name, low)
        if not self.low < self.high:
            raise ValueError(f"need 0 <= low < high, got low={self.low}, high={self.high}")
        if max(self.ns) > self.high - self.low + 1:
            raise ValueError(
                f"n = {max(self.ns)} distinct numbers do not fit in [{self.low}, {self.high}]"
            )
        bad = [m for m in self.modes if m not in MODES]
        if bad or not self.modes:
            raise ValueError(f"modes must be among {MODES}, got {self.modes}")
        if self.softmax_backend not in ("sdpa", "kernel"):
            raise ValueError(f"softmax_backend must be sdpa or kernel, got {self.softmax_backend}")
        if not isinstance(self.adaptive_params, dict):
            raise ValueError(f"adaptive_params must be a dict, got {self.adaptive_params!r}")
        try:  # unknown names, non-finite values
            resolve_params("adaptive", self.adaptive_params)
        except ValueError as err:
            raise ValueError(f"adaptive_params: {err}") from None
        if not isinstance(self.chat, bool):
            raise ValueError(f"chat must be True or False, got {self.chat!r}")

    @classmethod
    def quick(cls, **fields: Any) -> Config:
        """n ≤ 32, 5 prompts, a 256-token spread window: the CI smoke run (< 60 s on 2 cores)."""
        base: dict[str, Any] = {"ns": (4, 8, 16, 32), "prompts": 5, "spread_length": 256}
        return cls(**{**base, **fields})

    def cache_params(self) -> dict[str, Any]:
        """What one (mode, n) part depends on: not the grid or prompt count, but the device's
        kind (:func:`~attnlimits.experiments.store.numerics`)."""
        from attnlimits.experiments.store import numerics

        params = asdict(self)
        for key in ("ns", "modes", "prompts", "device", "spread_length", "spread_windows", "text"):
            params.pop(key)
        return {**params, **numerics(self)}


LongContextConfig = Config  # the name of releases before the experiment skeleton
