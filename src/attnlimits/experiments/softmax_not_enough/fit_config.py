"""App. F's point collection and fit settings (:mod:`.temperature_fit`, :mod:`.fits`); where each
comes from and why: :mod:`.provenance`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnlimits.normalizers.adaptive import ENTROPY_THRESHOLD

__all__ = ["TemperatureFitConfig"]


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
