"""What the long-context demo runs: list lengths, prompts, modes, the spread window."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["MODES", "Config", "LongContextConfig", "Mode"]

Mode = Literal["softmax", "adaptive"]
MODES: tuple[Mode, ...] = ("softmax", "adaptive")


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "ns", tuple(int(n) for n in self.ns))
        object.__setattr__(self, "modes", tuple(self.modes))
        if not self.ns or min(self.ns) < 1:
            raise ValueError(f"ns must be positive integers, got {self.ns}")
        if not 0 <= self.low < self.high:
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
        for name in ("prompts", "max_new_tokens", "batch_size", "block_size", "spread_windows"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.spread_length < 0:
            raise ValueError(f"spread_length must be >= 0, got {self.spread_length}")

    @classmethod
    def quick(cls, **fields: Any) -> Config:
        """n ≤ 32, 5 prompts, a 256-token spread window: the CI smoke run (< 60 s on 2 cores)."""
        base: dict[str, Any] = {"ns": (4, 8, 16, 32), "prompts": 5, "spread_length": 256}
        return cls(**{**base, **fields})

    def cache_params(self) -> dict[str, Any]:
        """What one (mode, n) part depends on (not the grid, prompt count or device)."""
        params = asdict(self)
        for key in ("ns", "modes", "prompts", "device", "spread_length", "spread_windows", "text"):
            params.pop(key)
        return params


LongContextConfig = Config  # the name of releases before the experiment skeleton
