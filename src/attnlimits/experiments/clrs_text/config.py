"""What a CLRS-Text run computes (paper B §4.2, Figure 8), as one frozen :class:`Config`.

Where each setting comes from (paper, lost in our copy, ours) and why: :mod:`.provenance`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from attnlimits._checks import check_distinct
from attnlimits.capture.precision import check_dtype
from attnlimits.experiments.clrs_text.data import (
    FORMATS,
    PAPER_TEST_LENGTHS,
    PAPER_TEST_SEEDS,
    PAPER_TRAIN_LENGTHS,
    check_algorithms,
    check_lengths,
)
from attnlimits.normalizers import REGISTRY, available

__all__ = [
    "ARMS",
    "DEFAULT_ALGORITHMS",
    "MODELS",
    "REGIMES",
    "Config",
    "attn_implementation",
    "regime",
]

#: ours: a search, a sort and a graph task (the issue's minimum, insertion_sort, bfs): bfs is
#: the graph task with the shortest traces (benchmarks/clrs_text_trace_lengths.py).
DEFAULT_ALGORITHMS = ("minimum", "insertion_sort", "bfs")
#: Where a test length lies against the training lengths: one of them, between two of them
#: (interpolation), or outside their range (extrapolation).
REGIMES = ("in distribution", "interpolation", "extrapolation")
#: The two arms of paper B §4.2: softmax, and adaptive temperature in every head.
ARMS = ("softmax", "adaptive")
#: ``tiny``: our Llama-style decoder from a config; ``smollm2-135m``: the pretrained SmolLM2
#: fine-tuned (slow on CPU: for a GPU or a cluster).
MODELS = ("tiny", "smollm2-135m")
#: ours (issue 57): a pretrained ``model``'s learning rate where none is given, a fine-tuning
#: rate (``--quick``'s, set before any learning was seen); the tiny model's grid (1e-3, 3e-3)
#: is for training from scratch and would overwrite pretrained weights
PRETRAINED_LRS = (1e-4,)
#: ours: the tiny model's grid from scratch (docs/clrs_text.md, "Sizing the default")
TINY_LRS = (1e-3, 3e-3)


def attn_implementation(arm: str) -> str:
    """The ``attn_implementation`` an arm trains and infers with: softmax is ``"sdpa"``, every
    other registry normaliser ``"attnlimits_<name>"`` (``adaptive``: paper B's listing)."""
    return "sdpa" if arm == "softmax" else f"attnlimits_{arm}"


def regime(length: int, train_lengths: tuple[int, ...]) -> str:
    """One of :data:`REGIMES`: ``length`` among ``train_lengths``, inside their range, outside."""
    if length in train_lengths:
        return REGIMES[0]
    return REGIMES[1] if min(train_lengths) < length < max(train_lengths) else REGIMES[2]


@dataclass(frozen=True)
class Config:
    """One CLRS-Text comparison of attention normalisers, trained and evaluated per seed.

    - ``algorithms``: CLRS-Text names, or ``("all",)`` for the thirty.
    - ``format``: ``"trace"`` (CLRS-Text's: the answer is the trace, then the result; exact
      match of the whole answer) or ``"answer"`` (the result only).
    - ``lengths``: ``"ours"`` (every algorithm trains at ``train_lengths`` and is tested at
      ``test_lengths``: in distribution, by interpolation, by extrapolation) or ``"paper"``
      (CLRS-Text's per-algorithm training lengths, 4–31, and validation lengths, 4 up to 64,
      with all five of its test seeds: far beyond two CPU cores; for a GPU or a cluster).
    - ``arms``: registry normalisers, softmax first; each trains one model per seed on every
      algorithm of the run together.
    - ``lrs``: the learning-rate grid; each arm takes the one whose seed-0 model scores best on
      the validation split. ``steps`` is a cap: a model stops once its validation exact match
      reaches ``stop_at`` (checked every ``eval_every`` steps), or, with ``patience`` ≥ 1,
      once its score has not improved over its last ``patience`` checks while above the
      trivial answer's validation score (:func:`.compute.trivial_validation_score`).
    - ``positions``: the tiny model's positional encoding, the same in every arm.
    - ``dataset``: a Parquet file of :func:`.data.build_dataset` (e.g. the tests' fixture);
      None generates (or reuses from the cache) the one the settings describe.
    """

    preset: Literal["default", "quick"] = "default"
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    format: Literal["trace", "answer"] = "trace"
    lengths: Literal["ours", "paper"] = "ours"
    train_lengths: tuple[int, ...] = (4, 5, 7)
    test_lengths: tuple[int, ...] = (4, 5, 6, 7, 8, 10, 14)
    train_samples: int = 2000
    validation_samples: int = 50
    test_samples: int = 100
    arms: tuple[str, ...] = ARMS
    seeds: int = 5
    model: str = "tiny"
    layers: int = 2
    width: int = 64
    heads: int = 4
    steps: int = 800  # ours: a cap sized to 45 min on 2 CPU cores (docs/clrs_text.md, "Sizing")
    batch: int = 32
    #: empty: :data:`TINY_LRS` for the tiny model, :data:`PRETRAINED_LRS` for a pretrained one
    lrs: tuple[float, ...] = ()
    stop_at: float = 0.98
    eval_every: int = 500
    #: ours (issue 57): also stop once the validation score has not improved over this many
    #: checks (converged); 0: only ``stop_at`` and the cap stop a model
    patience: int = 0
    #: ``"rope"`` (Llama's) or ``"none"`` (NoPE, in every arm; ours, issue 57)
    positions: Literal["rope", "none"] = "rope"
    #: the pretrained ``model``'s precision while it is fine-tuned: ``auto`` is float32 here (a
    #: training run keeps float32 weights and optimiser state unless asked; half precision
    #: without float32 master weights rounds every update); the tiny model is float32 always
    dtype: str = "auto"
    device: str = "cpu"
    dataset: str | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "algorithms", check_algorithms(tuple(self.algorithms)))
        check_distinct(self.algorithms, "algorithms")
        set_(self, "train_lengths", check_lengths(tuple(self.train_lengths), "train_lengths"))
        set_(self, "test_lengths", check_lengths(tuple(self.test_lengths), "test_lengths"))
        check_distinct(self.train_lengths, "train_lengths")
        check_distinct(self.test_lengths, "test_lengths")
        if self.preset not in ("default", "quick"):
            raise ValueError(f"preset must be default or quick, got {self.preset!r}")
        if self.format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {self.format!r}")
        if self.lengths not in ("ours", "paper"):
            raise ValueError(f"lengths must be ours or paper, got {self.lengths!r}")
        missing = [n for n in self.train_lengths if n not in self.test_lengths]
        if self.lengths == "ours" and missing:
            raise ValueError(
                f"test_lengths must hold every training length (in distribution), missing {missing}"
            )
        set_(self, "arms", tuple(self.arms))
        check_distinct(self.arms, "arms")
        unknown = [a for a in self.arms if a not in REGISTRY]
        if unknown:
            raise ValueError(f"unknown arms {unknown}; the registry has {available()}")
        if not self.arms or self.arms[0] != "softmax" or len(self.arms) < 2:
            got = list(self.arms)
            raise ValueError(f"arms must start with softmax (the baseline) and name another: {got}")
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {', '.join(MODELS)}, got {self.model!r}")
        if check_dtype(self.dtype) not in ("auto", "float32") and self.model == "tiny":
            raise ValueError(
                f"dtype {self.dtype} is for fine-tuning a pretrained network (smollm2-135m); the "
                "tiny one is trained from scratch in float32"
            )
        for name in (
            "train_samples",
            "validation_samples",
            "test_samples",
            "seeds",
            "layers",
            "width",
            "heads",
            "steps",
            "batch",
            "eval_every",
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a whole number ≥ 1, got {v!r}")
        if self.width % self.heads:
            raise ValueError(
                f"width must be a multiple of heads, got width {self.width}, heads {self.heads}"
            )
        set_(self, "lrs", tuple(self.lrs))
        if not self.lrs:
            set_(self, "lrs", TINY_LRS if self.model == "tiny" else PRETRAINED_LRS)
        bad = [
            v
            for v in self.lrs
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1
        ]
        if not self.lrs or bad:
            raise ValueError(f"lrs must be numbers in (0, 1), got {list(self.lrs)}")
        check_distinct(self.lrs, "lrs")
        if (
            isinstance(self.patience, bool)
            or not isinstance(self.patience, int)
            or self.patience < 0
        ):
            raise ValueError(f"patience must be a whole number ≥ 0, got {self.patience!r}")
        if self.positions not in ("rope", "none"):
            raise ValueError(f"positions must be rope or none, got {self.positions!r}")
        if self.positions != "rope" and self.model != "tiny":
            raise ValueError(
                f"positions {self.positions} is for the tiny model only, not {self.model}"
            )
        if not (isinstance(self.stop_at, (int, float)) and 0 < self.stop_at <= 1):
            raise ValueError(f"stop_at must be a number in (0, 1], got {self.stop_at!r}")
        if self.dataset is not None and not str(self.dataset).strip():
            raise ValueError("dataset is empty; give a Parquet file or leave it out")
        if self.dataset is not None and not Path(self.dataset).is_file():
            raise ValueError(f"dataset {self.dataset} is not a file")

    @classmethod
    def quick(cls, **given: Any) -> Config:
        """Smoke run (learns little): one algorithm, 2 seeds, 100 steps, one learning rate;
        with a pretrained ``model`` (SmolLM2 on a CPU), one seed, 4 steps of 2 texts at a
        fine-tuning rate, 3 questions a cell at lengths 4, 5, 6 and 8; ``given`` values win."""
        preset = {
            "preset": "quick",
            "algorithms": ("minimum",),
            "train_samples": 300,
            "validation_samples": 20,
            "test_samples": 30,
            "train_lengths": (4, 6),
            "test_lengths": (4, 5, 6, 8, 12),
            "seeds": 2,
            "steps": 100,
            "lrs": (3e-3,),
            "eval_every": 50,
        }
        if given.get("model") not in (None, "tiny"):
            # ours (issue 57: "--quick at most 2 minutes"): one seed, 4 steps of 2 texts, one
            # check, 3 questions a cell at 4 lengths; on two CPU cores a SmolLM2 step is about
            # 2.5 s of CPU a text and a decoded answer 1-3 s, so this is the most that fits
            preset |= {
                "seeds": 1,
                "steps": 4,
                "batch": 2,
                "eval_every": 4,
                "lrs": (1e-4,),
                "test_lengths": (4, 5, 6, 8),
                "validation_samples": 3,
                "test_samples": 3,
            }
        return cls(**{**preset, **{k: v for k, v in given.items() if v is not None}})

    def test_seeds(self) -> tuple[int, ...]:
        """CLRS-Text's test seeds: all five with ``lengths="paper"``, else the first."""
        return PAPER_TEST_SEEDS if self.lengths == "paper" else PAPER_TEST_SEEDS[:1]

    def split_lengths(self) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]]:
        """(training lengths, test lengths) per algorithm."""
        if self.lengths == "paper":
            train = {a: PAPER_TRAIN_LENGTHS[a] for a in self.algorithms}
            return train, {a: PAPER_TEST_LENGTHS[a] for a in self.algorithms}
        return (
            {a: self.train_lengths for a in self.algorithms},
            {a: self.test_lengths for a in self.algorithms},
        )
