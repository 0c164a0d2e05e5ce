"""What a *Softmax is not Enough* run computes: the benchmark's model, training, evaluation,
the App. F refit and the cross-normaliser table, each a frozen dataclass; :class:`Config` on top.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from attnlimits.normalizers.adaptive import ENTROPY_THRESHOLD

__all__ = [
    "SWAPS",
    "TRAINED",
    "Config",
    "CrossConfig",
    "EvalConfig",
    "MaxRetrievalConfig",
    "ModelConfig",
    "NormSpec",
    "SoftmaxNotEnoughConfig",
    "TemperatureFitConfig",
    "TrainConfig",
]

#: A normaliser by registry name with its parameters, e.g. ``("adaptive", {"coeffs": ...})``.
NormSpec = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class ModelConfig:
    """The Eqs. 9–14 model. ``query_dim`` is ours: the paper only says "a query vector"."""

    n_classes: int = 10
    width: int = 128
    query_dim: int = 11  # 1 + n_classes by default: as wide as an item
    normalizer: str = "softmax"
    normalizer_params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.n_classes < 2 or self.width < 1 or self.query_dim < 1:
            raise ValueError(
                f"need n_classes >= 2, width >= 1, query_dim >= 1, got {self.n_classes}, "
                f"{self.width}, {self.query_dim}"
            )


@dataclass(frozen=True)
class EvalConfig:
    """Accuracy at the training size and OOD sizes on fresh seeded sets.

    Sets are drawn until the binomial standard error √(p(1−p)/n) of every normaliser's
    accuracy is at most ``target_se`` (checked after each chunk, from ``min_sets`` on), or
    ``n_sets`` is reached: ``n_sets = 10_000`` alone bounds it by √(0.25 / 10⁴) = 0.005
    whatever p; the early stop saves sets where p is far from 0.5 (e.g. near chance at large
    n). ``target_se=None`` always uses ``n_sets``. ``chunk_items`` bounds memory: sets are
    processed in chunks of at most that many items (at least one set per chunk).
    """

    sizes: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
    n_sets: int = 10_000
    target_se: float | None = 0.005
    min_sets: int = 1000
    seed: int = 12345
    chunk_items: int = 1 << 14

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", tuple(int(s) for s in self.sizes))
        if not self.sizes or min(self.sizes) < 1:
            raise ValueError(f"sizes must be a non-empty list of positive ints, got {self.sizes}")
        if self.target_se is not None and not 0 < self.target_se < 1:
            raise ValueError(f"target_se must be in (0, 1) or None, got {self.target_se}")
        if self.n_sets < 1 or self.chunk_items < 1 or self.min_sets < 1:
            raise ValueError(
                f"n_sets, chunk_items and min_sets must be >= 1, got {self.n_sets}, "
                f"{self.chunk_items}, {self.min_sets}"
            )


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings; defaults from the measured plateau (docs/max_retrieval.md).

    ``decoupled=True`` (default) is AdamW; ``False`` is Adam with the L2 term added to the
    gradient, the literal reading of the paper's "cross-entropy plus L2 weight decay". With
    coupled L2 at 1e-3 one seed in six sat near chance for 3,000 steps; with AdamW every seed
    we tried left the plateau within 750 steps (docs/max_retrieval.md).
    """

    steps: int = 5000
    batch: int = 128
    lr: float = 1e-3
    weight_decay: float = 1e-3
    decoupled: bool = True
    min_size: int = 1
    max_size: int = 16
    log_every: int = 100
    ckpt_every: int = 1000
    device: str = "cpu"

    def __post_init__(self) -> None:
        if self.steps < 0 or self.batch < 1 or self.log_every < 1 or self.ckpt_every < 1:
            raise ValueError(
                f"need steps >= 0 and batch, log_every, ckpt_every >= 1, got {self.steps}, "
                f"{self.batch}, {self.log_every}, {self.ckpt_every}"
            )
        if not 1 <= self.min_size <= self.max_size:
            raise ValueError(
                f"need 1 <= min_size <= max_size, got {self.min_size}, {self.max_size}"
            )
        if self.lr <= 0 or self.weight_decay < 0:
            raise ValueError(
                f"need lr > 0 and weight_decay >= 0, got {self.lr}, {self.weight_decay}"
            )


@dataclass(frozen=True)
class TemperatureFitConfig:
    """Where to collect (H, β*) points and how to search β.

    ``beta_grid()`` is geometric from ``beta_min`` to ``beta_max`` (default 1..50, 200 points,
    about 2 % apart): β < 1 is never used by the rule, and the published polynomial stays
    below 2.5, so 50 leaves ample head-room while keeping the relative resolution uniform.
    """

    sizes: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024, 2048)
    sets_per_size: int = 2000
    beta_min: float = 1.0
    beta_max: float = 50.0
    n_beta: int = 200
    degree: int = 4
    threshold: float = ENTROPY_THRESHOLD
    only_errors: bool = True
    seed: int = 777
    chunk_items: int = 1 << 15

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", tuple(int(s) for s in self.sizes))
        if not self.sizes or min(self.sizes) < 2:
            raise ValueError(f"sizes must be ints >= 2, got {self.sizes}")
        if not 0 < self.beta_min < self.beta_max or self.n_beta < 2:
            raise ValueError(
                f"need 0 < beta_min < beta_max and n_beta >= 2, got "
                f"{self.beta_min}, {self.beta_max}, {self.n_beta}"
            )
        if self.degree < 0 or self.sets_per_size < 1 or self.chunk_items < 1:
            raise ValueError("degree must be >= 0, sets_per_size and chunk_items >= 1")

    def beta_grid(self) -> np.ndarray:
        return np.geomspace(self.beta_min, self.beta_max, self.n_beta)


#: Normalisers trained from scratch in the cross-normaliser table (label -> registry spec).
TRAINED: dict[str, NormSpec] = {
    name: (name, {})
    for name in (
        "softmax",
        "adaptive",
        "ssmax",
        "sparsemax",
        "entmax15",
        "topk",
        "sigmoid",
        "stick_breaking",
    )
}
#: Inference-only swaps onto the softmax-trained model. Sigmoid and stick-breaking are left
#: out: they do not sum to one, so the readout MLP would see inputs of another scale.
SWAPS: dict[str, NormSpec] = {
    name: (name, {}) for name in ("adaptive", "ssmax", "sparsemax", "entmax15", "topk")
}


@dataclass(frozen=True)
class MaxRetrievalConfig:
    """Softmax vs adaptive temperature (applied at inference only), one model per seed."""

    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    seeds: tuple[int, ...] = tuple(range(10))
    adaptive_params: dict[str, Any] = field(default_factory=dict)  # e.g. refit coeffs
    profile_sizes: tuple[int, ...] = (16, 128, 1024, 8192)
    workers: int = 1  # processes, one seed each; each uses one thread

    def __post_init__(self) -> None:
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be a non-empty list of distinct ints, got {self.seeds}")
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")


def _quick_benchmark() -> MaxRetrievalConfig:
    """2 seeds, short training, sizes up to 1024: the CI smoke run (< 3 min on 2 cores).

    Two single-threaded worker processes: one process with two intra-op threads was 5×
    slower on the shared 2-core machine (these ops are too small to split).
    """
    return MaxRetrievalConfig(
        train=TrainConfig(steps=1500, ckpt_every=500),
        eval=EvalConfig(sizes=(16, 32, 64, 128, 256, 512, 1024), n_sets=2000),
        seeds=(0, 1),
        profile_sizes=(16, 128, 1024),
        workers=2,
    )


@dataclass(frozen=True)
class CrossConfig:
    """Every trainable normaliser trained from scratch, plus inference swaps onto softmax."""

    base: MaxRetrievalConfig = field(default_factory=MaxRetrievalConfig)
    trained: dict[str, NormSpec] = field(default_factory=lambda: dict(TRAINED))
    swaps: dict[str, NormSpec] = field(default_factory=lambda: dict(SWAPS))

    def __post_init__(self) -> None:
        if "softmax" not in self.trained:
            raise ValueError("trained must include 'softmax': it is the baseline and swap host")


@dataclass(frozen=True)
class Config:
    """What to run; the benchmark's own parameters live in :class:`MaxRetrievalConfig`."""

    preset: Literal["paper", "quick"] = "paper"  # "quick": short training, sizes ≤ 1024
    seeds: int = 10
    normalizers: tuple[str, ...] = ()  # cross table: () skips it, e.g. ("softmax", "ssmax")
    device: str = "cpu"
    temperature_fit: bool = True
    spreads: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0)  # Fig. 5 analogue

    def __post_init__(self) -> None:
        object.__setattr__(self, "normalizers", tuple(self.normalizers))
        object.__setattr__(self, "spreads", tuple(float(s) for s in self.spreads))
        if self.preset not in ("paper", "quick"):
            raise ValueError(f"preset must be paper or quick, got {self.preset!r}")
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or self.seeds < 2:
            raise ValueError(f"seeds must be >= 2 for the paired t-test, got {self.seeds}")
        if not self.spreads or not all(math.isfinite(s) and s > 0 for s in self.spreads):
            raise ValueError(f"spreads must be finite numbers > 0, got {self.spreads}")
        unknown = [n for n in self.normalizers if n not in TRAINED]
        if unknown:
            raise ValueError(f"unknown normalizers {unknown}; trainable ones: {sorted(TRAINED)}")
        if self.normalizers and "softmax" not in self.normalizers:
            raise ValueError("normalizers must include softmax: it is the baseline")

    @classmethod
    def quick(cls, **given: Any) -> Config:
        """2 seeds, short training, sizes up to 1024 (the CI smoke run); ``given`` values win."""
        return cls(**{"preset": "quick", "seeds": 2, **given})

    def benchmark(self) -> MaxRetrievalConfig:
        base = _quick_benchmark() if self.preset == "quick" else MaxRetrievalConfig()
        train_cfg = replace(base.train, device=self.device)
        # one single-threaded process per seed on CPU: 5x faster than one process with two
        # threads on 2 cores (docs/max_retrieval.md); one process on a GPU
        workers = min(2, os.cpu_count() or 1) if self.device == "cpu" else 1
        return replace(base, seeds=tuple(range(self.seeds)), train=train_cfg, workers=workers)


SoftmaxNotEnoughConfig = Config  # the name of releases before the experiment skeleton
