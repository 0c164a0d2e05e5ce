"""What a CLRS-Text run computes (paper B §4.2, Figure 8), as one frozen :class:`Config`.

Every setting is labelled in :mod:`.setup` as the paper's, lost in our copy, or ours (why).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from attnlimits._checks import check_distinct
from attnlimits.experiments.clrs_text.data import (
    PAPER_TEST_LENGTHS,
    PAPER_TRAIN_LENGTHS,
    check_algorithms,
    check_lengths,
)
from attnlimits.normalizers import REGISTRY, available

__all__ = ["ARMS", "DEFAULT_ALGORITHMS", "MODELS", "Config", "attn_implementation"]

#: ours: algorithms whose answers are one or two indices, which a two-layer byte-level decoder
#: trained from scratch on two CPU cores learns above chance (both arms at 3,000 steps; see
#: docs/clrs_text.md).
DEFAULT_ALGORITHMS = ("minimum", "binary_search", "find_maximum_subarray_kadane")
#: The two arms of paper B §4.2: softmax, and adaptive temperature in every head.
ARMS = ("softmax", "adaptive")
#: ``tiny``: our Llama-style decoder from a config; ``smollm2-135m``: the pretrained SmolLM2
#: fine-tuned (slow on CPU: for a GPU or a cluster).
MODELS = ("tiny", "smollm2-135m")


def attn_implementation(arm: str) -> str:
    """The ``attn_implementation`` an arm trains and infers with: softmax is ``"sdpa"``, every
    other registry normaliser ``"attnlimits_<name>"`` (``adaptive``: paper B's listing)."""
    return "sdpa" if arm == "softmax" else f"attnlimits_{arm}"


@dataclass(frozen=True)
class Config:
    """One CLRS-Text comparison of attention normalisers, trained and evaluated per seed.

    - ``algorithms``: CLRS-Text names, or ``("all",)`` for the thirty.
    - ``lengths``: ``"ours"`` (every algorithm trains at ``train_lengths`` and is tested at
      ``test_lengths``) or ``"paper"`` (CLRS-Text's per-algorithm training lengths, 4–31, and
      validation lengths, 4 up to 64: far beyond two CPU cores; for a GPU or a cluster).
    - ``arms``: registry normalisers, softmax first; each trains its own models.
    - ``dataset``: a Parquet file of :func:`.data.build_dataset` (e.g. the tests' fixture);
      None generates (or reuses from the cache) the one the settings describe.
    """

    preset: Literal["default", "quick"] = "default"
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    lengths: Literal["ours", "paper"] = "ours"
    train_lengths: tuple[int, ...] = (4, 5)
    test_lengths: tuple[int, ...] = (4, 5, 6, 8)
    train_samples: int = 3000
    test_samples: int = 100
    arms: tuple[str, ...] = ARMS
    seeds: int = 3
    model: str = "tiny"
    layers: int = 2
    width: int = 64
    heads: int = 4
    steps: int = 3000  # ours: the shortest tried at which both arms learn all three (docs)
    batch: int = 32
    lr: float = 3e-3
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
        for name in (
            "train_samples",
            "test_samples",
            "seeds",
            "layers",
            "width",
            "heads",
            "steps",
            "batch",
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a whole number ≥ 1, got {v!r}")
        if self.width % self.heads:
            raise ValueError(
                f"width must be a multiple of heads, got width {self.width}, heads {self.heads}"
            )
        if not (isinstance(self.lr, (int, float)) and 0 < self.lr < 1):
            raise ValueError(f"lr must be a number in (0, 1), got {self.lr!r}")
        if self.dataset is not None and not str(self.dataset).strip():
            raise ValueError("dataset is empty; give a Parquet file or leave it out")
        if self.dataset is not None and not Path(self.dataset).is_file():
            raise ValueError(f"dataset {self.dataset} is not a file")

    @classmethod
    def quick(cls, **given: Any) -> Config:
        """Smoke run (learns little): one algorithm, 2 seeds, 100 steps; ``given`` values win."""
        preset = {
            "preset": "quick", "algorithms": ("minimum",), "train_samples": 300,
            "test_samples": 30, "test_lengths": (4, 5, 8), "seeds": 2, "steps": 100,
        }  # fmt: skip
        return cls(**{**preset, **given})

    def split_lengths(self) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]]:
        """(training lengths, test lengths) per algorithm."""
        if self.lengths == "paper":
            train = {a: PAPER_TRAIN_LENGTHS[a] for a in self.algorithms}
            return train, {a: PAPER_TEST_LENGTHS[a] for a in self.algorithms}
        return (
            {a: self.train_lengths for a in self.algorithms},
            {a: self.test_lengths for a in self.algorithms},
        )
