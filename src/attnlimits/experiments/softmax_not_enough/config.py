"""What a *Softmax is not Enough* run computes: the benchmark's model, training, evaluation,
the App. F refit and the cross-normaliser table, each a frozen dataclass; :class:`Config` on top.

Where each setting comes from (paper, lost in our copy, ours) and why is written once,
in :data:`.provenance.SETTINGS`: every report prints it and docs/max_retrieval.md its default
run's table. The docstrings here say what a setting does, not where it comes from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from attnlimits._checks import check_distinct
from attnlimits.normalizers import REGISTRY, available
from attnlimits.normalizers.adaptive import ENTROPY_THRESHOLD

__all__ = [
    "ABLATION",
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
    """The Eqs. 9–14 model (:mod:`.model`); labels and reasons: :mod:`.provenance`.

    ``variant``: ``"listing"`` (App. A's Flax listing) or ``"ours"`` (the model of earlier
    releases; :mod:`.model` lists the differences). ``query_dim``: the width of the U(0, 1)
    query. ``normalizer``, ``normalizer_params``: the trained head's normaliser.
    """

    n_classes: int = 10
    width: int = 128
    query_dim: int = 11
    normalizer: str = "softmax"
    normalizer_params: dict[str, Any] = field(default_factory=dict)
    variant: Literal["listing", "ours"] = "listing"

    def __post_init__(self) -> None:
        if self.n_classes < 2 or self.width < 1 or self.query_dim < 1:
            raise ValueError(
                f"need n_classes >= 2, width >= 1, query_dim >= 1, got {self.n_classes}, "
                f"{self.width}, {self.query_dim}"
            )
        if self.variant not in ("listing", "ours"):
            raise ValueError(f"variant must be 'listing' or 'ours', got {self.variant!r}")


@dataclass(frozen=True)
class EvalConfig:
    """Accuracy at the training size and OOD sizes on fresh seeded sets.

    Labels and reasons: :mod:`.provenance`. At size n at most ``sets_at(n) = min(n_sets, max(1,
    max_items // n))`` sets are drawn (``max_items=None``: ``n_sets``), and drawing stops early
    once the binomial standard error √(p(1−p)/sets) of every (normaliser, seed) cell is at most
    ``target_se`` (checked after each chunk, from ``min_sets`` on). ``n_sets = 10,000`` alone
    bounds the SE by √(0.25 / 10⁴) = 0.005 whatever p. ``max_items`` caps the work at the
    largest sizes, which dominate the cost (16,384 items cost as much as all sizes up to 8,192
    together); there the seed-to-seed spread and the few sets together decide the error of a
    mean over ten seeds. Every seed sees the same sets, so the report's intervals resample seeds
    *and* sets (:mod:`.uncertainty`, :mod:`attnlimits.claims.statistics`).
    ``chunk_items`` bounds memory: sets are processed in chunks of at most that many items per
    seed (at least one set per chunk).
    """

    sizes: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
    n_sets: int = 10_000
    target_se: float | None = 0.005
    min_sets: int = 1000
    max_items: int | None = 1 << 19
    seed: int = 12345
    chunk_items: int = 1 << 13

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
        if self.max_items is not None and self.max_items < 1:
            raise ValueError(f"max_items must be >= 1 or None, got {self.max_items}")

    def sets_at(self, n: int) -> int:
        """The most sets drawn at size ``n``."""
        if self.max_items is None:
            return self.n_sets
        return min(self.n_sets, max(1, self.max_items // n))


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings (:mod:`.train`); labels and reasons: :mod:`.provenance`.

    ``regularizer``: ``"coupled"`` is Adam with the L2 term (λ/2)‖θ‖² in the loss
    (``torch.optim.Adam(weight_decay=λ)``), ``"decoupled"`` AdamW; λ is ``weight_decay``.
    ``schedule``: ``"cosine"`` decays ``lr`` to zero over ``steps`` after ``warmup`` steps,
    ``"constant"`` keeps it. Each step's set size is uniform in ``min_size`` … ``max_size``,
    one size per batch, drawn from one stream (``size_seed``) shared by every seed, so all
    seeds train as one batched model; each seed's items come from its own generator, exactly
    as in a run of that seed alone. ``log_every``, ``ckpt_every``, ``device``: bookkeeping (a
    device's random streams differ, so a GPU run draws other data).
    """

    steps: int = 20000
    batch: int = 128
    lr: float = 1e-3
    weight_decay: float = 1e-3
    regularizer: Literal["coupled", "decoupled"] = "coupled"
    schedule: Literal["cosine", "constant"] = "cosine"
    warmup: int = 0
    min_size: int = 1
    max_size: int = 16
    size_seed: int = 0
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
        if self.regularizer not in ("coupled", "decoupled"):
            raise ValueError(
                f"regularizer must be 'coupled' or 'decoupled', got {self.regularizer!r}"
            )
        if self.schedule not in ("cosine", "constant"):
            raise ValueError(f"schedule must be 'cosine' or 'constant', got {self.schedule!r}")
        if not 0 <= self.warmup <= self.steps:
            raise ValueError(f"need 0 <= warmup <= steps, got {self.warmup}, {self.steps}")


@dataclass(frozen=True)
class TemperatureFitConfig:
    """App. F's point collection and fit (:mod:`.temperature_fit`); labels and reasons:
    :mod:`.provenance`.

    - ``sizes``, ``sets_per_size``: the sets drawn per size. Every seed of the model sees the
      same sets: one generator per size, seeded from ``seed``, and the fit pools the seeds
      (the paper fits one model; ten seeds × 300 sets cost as much as one seed × 3,000, and
      :func:`.temperature_fit.seed_fits` shows the spread).
    - ``thetas()``: the temperature grid, linear from ``theta_min`` to ``theta_max`` in steps
      of ``theta_step`` ("we perform a simple grid search" over θ "in increments of", our
      copy losing the numbers); 0.005 … 2.0 in steps of 0.005 (400 points, θ = 1 on the
      grid), because:
      on a softmax model trained 1,500 steps (3 seeds, sizes 16 … 2048) the continuous
      optimum θ* has 1st / 50th / 99.9th percentiles 0.011 / 0.10 / 1.56, so this grid puts
      0.5 % of the kept inputs on its lower edge and 0.04 % on its upper one, and resolves
      the median θ* to 5 %; a lower bound of 0.01 put 1.7 % on the edge, 0.002 puts 0.1 % at
      2.5× the search cost. Above θ = 2 (β < 0.5) the rule clamps β to 1 anyway. The upper
      edge also holds the inputs whose optimum is θ = ∞ (maximal item's logit at or below the
      mean logit), which no finite grid resolves: none on the trained model, 55 % on an
      untrained one, whose logits are nearly equal). The lower bound moves the least-squares
      fit: ``alt_theta_min`` (None: skip) refits with every θ* below it raised
      to it (what the narrower grid would find: w is unimodal in θ) to show how far.
    - ``degree``: np.polyfit's degree. ``threshold``: the listing's entropy threshold.
    - ``bin_width``: the entropy bins of the medians-and-quartiles table.
    - ``chunk_items``: sets are processed in chunks of at most this many items (at
      least one set), which bounds the model's activations to S × ``chunk_items`` × width.
    """

    sizes: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024, 2048)
    sets_per_size: int = 300
    theta_min: float = 0.005
    theta_max: float = 2.0
    theta_step: float = 0.005
    degree: int = 4
    threshold: float = ENTROPY_THRESHOLD
    seed: int = 777
    chunk_items: int = 1 << 13
    alt_theta_min: float | None = 0.05
    bin_width: float = 0.25

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", tuple(int(s) for s in self.sizes))
        if not self.bin_width > 0 or not math.isfinite(self.bin_width):
            raise ValueError(f"bin_width must be a finite number > 0, got {self.bin_width}")
        if not self.sizes or min(self.sizes) < 2:
            raise ValueError(f"sizes must be a non-empty list of ints >= 2, got {self.sizes}")
        if self.sets_per_size < 1 or self.chunk_items < 1:
            raise ValueError(
                f"sets_per_size and chunk_items must be >= 1, got {self.sets_per_size}, "
                f"{self.chunk_items}"
            )
        bounds = (self.theta_min, self.theta_max, self.theta_step)
        if not all(math.isfinite(v) for v in bounds):
            raise ValueError(f"theta_min, theta_max, theta_step must be finite, got {bounds}")
        if not 0 < self.theta_min < self.theta_max or self.theta_step <= 0:
            raise ValueError(
                "need 0 < theta_min < theta_max and theta_step > 0 (θ is a temperature), got "
                f"theta_min={self.theta_min}, theta_max={self.theta_max}, "
                f"theta_step={self.theta_step}"
            )
        steps = (self.theta_max - self.theta_min) / self.theta_step
        if abs(steps - round(steps)) > 1e-6 * max(1.0, steps):
            raise ValueError(
                f"theta_max - theta_min = {self.theta_max - self.theta_min:g} must be a whole "
                f"number of theta_step = {self.theta_step:g} steps (a linear grid with both "
                "bounds on it)"
            )
        alt = self.alt_theta_min
        if alt is not None and not (
            alt > self.theta_min and np.isclose(self.thetas(), alt, rtol=0, atol=1e-9).any()
        ):
            raise ValueError(
                f"alt_theta_min must be a point of the θ grid above theta_min, or None, got "
                f"{alt} (grid {self.theta_min:g} … {self.theta_max:g} in steps of "
                f"{self.theta_step:g})"
            )
        if self.degree < 0:
            raise ValueError(f"degree must be >= 0, got {self.degree}")
        if not math.isfinite(self.threshold):
            raise ValueError(f"threshold must be finite, got {self.threshold}")

    def thetas(self) -> np.ndarray:
        """The linear temperature grid, ``theta_min`` … ``theta_max`` inclusive."""
        k = round((self.theta_max - self.theta_min) / self.theta_step)
        return np.round(self.theta_min + self.theta_step * np.arange(k + 1), 12)


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
    """Softmax vs adaptive temperature (applied at inference only): every seed trained
    together in one batched model (:mod:`.train`).

    ``adaptive_params``: empty for the published polynomial; ``profile_sizes``: the sizes
    of the attention-profile figure. Labels and reasons: :mod:`.provenance`.
    """

    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    seeds: tuple[int, ...] = tuple(range(10))
    adaptive_params: dict[str, Any] = field(default_factory=dict)  # e.g. refit coeffs
    profile_sizes: tuple[int, ...] = (16, 128, 1024, 8192)

    def __post_init__(self) -> None:
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be a non-empty list of distinct ints, got {self.seeds}")


def _quick_benchmark() -> MaxRetrievalConfig:
    """2 seeds, 600 steps, sizes up to 1024, 500 sets per size: the CI smoke run."""
    return MaxRetrievalConfig(
        train=TrainConfig(steps=600, ckpt_every=200),
        eval=EvalConfig(sizes=(16, 64, 256, 1024), n_sets=500, min_sets=500),
        seeds=(0, 1),
        profile_sizes=(16, 128, 1024),
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


#: The ablation's axes (issue: LR schedule × regulariser × model variant).
ABLATION: dict[str, tuple[str, ...]] = {
    "schedule": ("cosine", "constant"),
    "regularizer": ("coupled", "decoupled"),
    "variant": ("listing", "ours"),
}


@dataclass(frozen=True)
class Config:
    """What to run; the benchmark's own parameters live in :class:`MaxRetrievalConfig`.

    ``model_variant``, ``schedule``, ``regularizer``, ``seeds``, ``device`` and ``steps``
    (if given) override the benchmark's (:data:`.provenance.ALIASES`; ``quick()`` trains 600
    steps). ``ablation`` also trains every combination of :data:`ABLATION` (8 × ``seeds``
    models) and the default combination for each of ``ablation_steps`` (``quick()``: 600,
    1,200, 2,400); the ablation trains ``steps`` as well. Labels and reasons:
    :mod:`.provenance`.
    """

    preset: Literal["paper", "quick"] = "paper"  # "quick": short training, sizes ≤ 1024
    seeds: int = 10
    #: cross table, trained from scratch with the registry's default parameters: () skips
    #: it; any registry names with softmax, e.g. ("softmax", "ssmax"), or ("all",) for every
    #: registry normaliser; :data:`TRAINED` is the documented table's eight
    normalizers: tuple[str, ...] = ()
    device: str = "cpu"
    temperature_fit: bool = True
    model_variant: Literal["listing", "ours"] = "listing"
    schedule: Literal["cosine", "constant"] = "cosine"
    regularizer: Literal["coupled", "decoupled"] = "coupled"
    ablation: bool = False
    ablation_steps: tuple[int, ...] = (5000, 10000, 20000)
    steps: int | None = None  # training steps; None: the preset's (20,000; quick: 600)
    spreads: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0)  # Fig. 5 analogue

    def __post_init__(self) -> None:
        object.__setattr__(self, "normalizers", tuple(self.normalizers))
        object.__setattr__(self, "spreads", tuple(float(s) for s in self.spreads))
        object.__setattr__(self, "ablation_steps", tuple(self.ablation_steps))
        steps = self.ablation_steps
        if not steps or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in steps
        ):
            raise ValueError(f"ablation_steps must be ints >= 1, got {steps}")
        check_distinct(steps, "ablation_steps")
        if self.steps is not None and (
            isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 1
        ):
            raise ValueError(f"steps must be an int >= 1, got {self.steps!r}")
        if self.preset not in ("paper", "quick"):
            raise ValueError(f"preset must be paper or quick, got {self.preset!r}")
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or self.seeds < 2:
            raise ValueError(f"seeds must be >= 2 for the paired t-test, got {self.seeds}")
        if not self.spreads or not all(math.isfinite(s) and s > 0 for s in self.spreads):
            raise ValueError(f"spreads must be finite numbers > 0, got {self.spreads}")
        check_distinct(self.spreads, "spreads")
        names = self.normalizers
        if names == ("all",):  # every registry normaliser, softmax first
            names = ("softmax", *(n for n in available() if n != "softmax"))
        elif "all" in names:
            raise ValueError("'all' stands alone: it already names every registry normaliser")
        check_distinct(names, "normalizers")
        object.__setattr__(self, "normalizers", tuple(names))
        unknown = [n for n in self.normalizers if n not in REGISTRY]
        if unknown:
            raise ValueError(
                f"unknown normalizers {unknown}; the registry has {available()} (or 'all')"
            )
        if self.normalizers and "softmax" not in self.normalizers:
            raise ValueError("normalizers must include softmax: it is the baseline")
        for name, allowed in ABLATION.items():
            field_name = "model_variant" if name == "variant" else name
            value = getattr(self, field_name)
            if value not in allowed:
                raise ValueError(f"{field_name} must be one of {', '.join(allowed)}, got {value!r}")

    @classmethod
    def quick(cls, **given: Any) -> Config:
        """2 seeds, short training, sizes up to 1024 (the CI smoke run); ``given`` values win."""
        return cls(**{"preset": "quick", "seeds": 2, "ablation_steps": (600, 1200, 2400), **given})

    def benchmark(self) -> MaxRetrievalConfig:
        base = _quick_benchmark() if self.preset == "quick" else MaxRetrievalConfig()
        train_cfg = replace(
            base.train,
            device=self.device,
            schedule=self.schedule,
            regularizer=self.regularizer,
            steps=base.train.steps if self.steps is None else self.steps,
        )
        model_cfg = replace(base.model, variant=self.model_variant)
        return replace(base, seeds=tuple(range(self.seeds)), train=train_cfg, model=model_cfg)


SoftmaxNotEnoughConfig = Config  # the name of releases before the experiment skeleton
