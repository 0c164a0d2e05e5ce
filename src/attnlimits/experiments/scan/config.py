"""What ``attnlimits scan`` measures: lengths, windows, sampled rows and the N grid.

Every setting is *ours* (neither paper scans a model head by head); where a setting borrows a
paper's value it says which.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from attnlimits._checks import check_distinct, check_int_at_least, positive_ints
from attnlimits.capture.precision import check_dtype
from attnlimits.experiments._inputs import check_flag, check_model_name, text_path

__all__ = ["Config", "analysed_lengths", "band"]

_QUICK: dict[str, Any] = {"lengths": (128, 256), "windows": 1, "rows": 12}


@dataclass(frozen=True)
class Config:
    """The scan of one model; defaults: SmolLM2-135M, L = 256 … 4096, four windows."""

    model: str = "smollm2-135m"
    text: Path | None = None
    device: str = "cpu"
    lengths: tuple[int, ...] = (256, 512, 1024, 2048, 4096)
    windows: int = 4  # token windows spread over the book; mean and spread over them
    rows: int = 16  # query rows per window and length sampled for Alg. 3-5 (materialised rows)
    ns: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)  # N grid of the per-head critical N
    n_separability: int = 16  # N of N_s/N (paper A, Fig. 3: saturates from N ≈ 16)
    ks_alpha: float = 0.01  # paper A's text
    critical_fraction: float = 0.06  # paper A: critical N ≈ 0.06 L ("fewer than 6% of tokens")
    analysis_max_length: int = 1024  # Alg. 3-5 (materialised rows) up to paper A's largest L
    induction_period: int = 128  # random tokens repeated once: 2 × 128 tokens
    beyond_context: bool = False  # lengths past the model's context: a warning, not an error
    allow_incomplete_weights: bool = False  # weights lacking tensors load; report.md says so
    dtype: str = "auto"  # the weights' precision (maps, statistics: float32); docs/resources.md
    block_size: int = 512  # query rows and key columns per block of the streamed statistics
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("lengths", "ns"):  # each value once, sorted
            values = positive_ints(name, getattr(self, name))
            check_distinct(values, name)
            object.__setattr__(self, name, tuple(sorted(values)))
        object.__setattr__(self, "text", text_path(self.text))
        check_model_name(self.model)
        for name, least in (
            ("windows", 1),
            ("rows", 2),
            ("n_separability", 1),
            ("analysis_max_length", 2),
            ("induction_period", 2),
            ("block_size", 1),
            ("seed", 0),
        ):
            check_int_at_least(getattr(self, name), name, least)
        if min(self.lengths) < 4:
            raise ValueError(f"every length must be >= 4, got lengths {self.lengths}")
        if not 0 < self.ks_alpha < 1:
            raise ValueError(f"ks_alpha must lie in (0, 1), got {self.ks_alpha}")
        if not (math.isfinite(self.critical_fraction) and 0 < self.critical_fraction < 1):
            raise ValueError(f"critical_fraction must lie in (0, 1), got {self.critical_fraction}")
        if not isinstance(self.beyond_context, bool):
            raise ValueError(f"beyond_context must be true or false, got {self.beyond_context!r}")
        check_flag(self.allow_incomplete_weights, "allow_incomplete_weights")
        check_dtype(self.dtype)

    @property
    def max_length(self) -> int:
        return max(self.lengths)

    @classmethod
    def quick(cls, **given: Any) -> Config:
        """L = 128, 256, one window, 12 rows (the CI smoke run); ``given`` values win."""
        return cls.preset(quick=True, **given)

    @classmethod
    def preset(cls, *, quick: bool = False, **given: Any) -> Config:
        """The defaults or the quick preset, then the caller's values (None = not given).

        A named model with a short context (MiniLM-L6: 512) keeps the default lengths up to it
        unless the caller gave lengths.
        """
        from attnlimits.experiments.skeleton import preset_values

        values, _ = preset_values(cls, _QUICK if quick else {}, given, "scan")
        return cls(**values)

    def cache_params(self, model_id: str, text_sha: str) -> dict[str, object]:
        """What a window's per-layer results depend on, the device's kind
        (:func:`~attnlimits.experiments.store.numerics`) and the window count included (window
        i's tokens move with the count)."""
        from attnlimits.experiments.store import numerics

        params = asdict(self)
        for key in ("device", "text", "model", "beyond_context"):
            params.pop(key)
        return {**params, **numerics(self), "model_id": model_id, "text_sha256": text_sha}


def band(length: int, causal: bool) -> tuple[int, int]:
    """The query rows that stand for length L: under a causal mask the rows that see between
    L/2 + 1 and L keys, ``[L // 2, L)`` (a row's weights are the same in every window longer
    than it); in a bidirectional model every row of its own L-token window, ``[0, L)``."""
    return (length // 2, length) if causal else (0, length)


def analysed_lengths(cfg: Config) -> tuple[int, ...]:
    """The lengths at which Alg. 3-5 run (materialised rows; up to ``analysis_max_length``)."""
    return tuple(n for n in cfg.lengths if n <= cfg.analysis_max_length)
