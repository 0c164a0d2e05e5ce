"""What a limitations run computes: the parameters of paper A's Algorithms 1–5."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from attnlimits._checks import check_distinct, check_int_at_least
from attnlimits.capture.precision import check_dtype
from attnlimits.experiments._inputs import check_flag
from attnlimits.theory.distance import ExpectedForm, GapForm

__all__ = [
    "ALG3_FRACTIONS",
    "E_COLUMNS",
    "E_FORMS",
    "Config",
    "EForm",
    "LimitationsConfig",
    "LogitSource",
    "XSource",
]

XSource = Literal["values", "keys", "hidden"]
#: Grid column -> form of E (Theorem 1.2; docs/errata.md, theorem1_expectation).
E_FORMS: dict[str, ExpectedForm] = {
    "expectation": "derived",
    "expectation_main_text": "main_text",
    "expectation_rms": "rms",
}
#: A form of E in a run: Theorem 1.2's closed forms, or ``exact`` (Monte Carlo of Eq. 8).
EForm = Literal["derived", "main_text", "rms", "exact"]
#: Grid column -> form of E, the Monte Carlo one included.
E_COLUMNS: dict[str, str] = {**E_FORMS, "expectation_exact": "exact"}
#: How the report names each form (the issue's and docs' words).
E_LABELS = {"derived": "derived", "main_text": "printed", "rms": "rms", "exact": "exact"}
LogitSource = Literal["raw", "scaled"]
Placement = Literal["spread", "start"]
#: The N grids, and the lengths they must stay below (Alg. 2 and 4 run at the longest L).
_N_GRIDS = ("ns_alg2", "ns_alg3", "ns_alg4")
#: The list settings of numbers (each a tuple, each value once).
_LISTS = ("lengths", *_N_GRIDS, "temperatures", "epsilons")
_NS_ALG3 = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128)
#: Alg. 3's grid beyond ``ns_alg3``, as fractions of L (the resolution the base grid has at
#: L = 128: …, 64, 80, 96), up to ``alg3_top``·L; computed on the stratified rows of E exact.
ALG3_FRACTIONS = (0.125, 0.1875, 0.25, 0.375, 0.5, 0.625, 0.75)
_QUICK: dict[str, Any] = {
    "windows": 1,
    "mc_rows": 8,
    "mc_samples": 8,
    "lengths": (32, 64, 128),
    "ns_alg2": (1, 5, 10, 20, 64),
    "ns_alg3": (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32),
    "ns_alg4": (1, 2, 4, 8, 16),
    "temperatures": (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0),
    "alg5_rows": 32,
}


def _positive_ints(name: str, values: tuple[int, ...]) -> None:
    if not values or any(isinstance(v, bool) or int(v) != v or v < 1 for v in values):
        raise ValueError(f"{name} must be positive integers, got {values}")


def _positive_floats(name: str, values: tuple[float, ...]) -> None:
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise ValueError(f"every {name} must be a finite number > 0, got {values}")


@dataclass(frozen=True)
class Config:
    """Parameters of the five algorithms; where each default comes from (paper A's or ours) and
    why: :mod:`.provenance`."""

    model: str = "smollm2-135m"
    text: Path | None = None
    device: str = "cpu"
    # ours: the paper does not say how many. Two keep the default run within 5 minutes on two
    # cores; what --windows 4 changes is generated in docs/limitations.md, "Windows"
    windows: int = 2
    placement: Placement = "spread"  # ours: spread evenly over the book ("start": consecutive)
    lengths: tuple[int, ...] = (32, 64, 128, 256, 512, 1024)  # Alg. 1 and 3
    n_alg1: int = 5
    ns_alg2: tuple[int, ...] = (1, 5, 10, 20, 100)
    ns_alg3: tuple[int, ...] = _NS_ALG3
    ks_alpha: float = 0.01  # the text's level; the pseudocode says 0.05
    alg3_top: float = 0.9  # ours: Alg. 3's N grid goes on (sampled rows) until N = 0.9·L
    alg3_mc_samples: int = 4  # ours: random I_N per row for E exact on the extended grid
    alg3_heads: int = 144  # ours: the KS again on this many heads (paper's GPT-2: 12 × 12) ...
    alg3_draws: int = 20  # ... drawn without replacement this many times (seeded)
    ns_alg4: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    # half-decade steps over [10⁻³, 10²], and quarter-decade ones below 0.1, so that ε = 10⁻³
    # has seven T in (ε, 0.1) over 1.5 decades where 1/T is judged (issue 56: at least four)
    temperatures: tuple[float, ...] = tuple(
        sorted({float(t) for t in (*np.logspace(-3, 2, 11), *np.logspace(-2.75, -1.25, 4))})
    )
    epsilons: tuple[float, ...] = (1e-3, 1e-1, 10.0)
    alg5_rows: int = 128  # rows per head for Alg. 5, evenly spaced over the window
    x_sources: tuple[XSource, ...] = ("values", "hidden")  # the first drives the figures
    e_forms: tuple[EForm, ...] = ("derived", "main_text", "exact")  # "rms" too: ~2x the E cost
    gap_forms: tuple[GapForm, ...] = ("main_text", "appendix")  # ε bounds, at Alg. 1/2's N
    mc_rows: int = 16  # ours: rows per band of L for E exact (Monte Carlo)
    mc_samples: int = 16  # ours: random I_N per row for E exact
    logits: LogitSource = "raw"
    seed: int = 0
    allow_incomplete_weights: bool = False  # weights lacking tensors load; report.md says so
    dtype: str = "auto"  # the weights' precision (maps, statistics: float32); docs/resources.md

    def __post_init__(self) -> None:
        for name in _LISTS:
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "x_sources", tuple(self.x_sources))
        object.__setattr__(self, "e_forms", tuple(self.e_forms))
        object.__setattr__(self, "gap_forms", tuple(self.gap_forms))
        check_flag(self.allow_incomplete_weights, "allow_incomplete_weights")
        check_dtype(self.dtype)
        for name in (*_LISTS, "x_sources", "e_forms", "gap_forms"):  # each value once
            check_distinct(getattr(self, name), name)
        if not set(self.gap_forms) <= {"main_text", "appendix", "sharp"}:
            raise ValueError(
                f"gap_forms must be among main_text, appendix, sharp; got {self.gap_forms}"
            )
        if self.text is not None:
            object.__setattr__(self, "text", Path(self.text))
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError(f"model must be a name, hub id or folder, got {self.model!r}")
        for name in ("windows", "alg5_rows", "n_alg1", "mc_rows", "alg3_heads", "alg3_draws"):
            check_int_at_least(getattr(self, name), name, 1)
        check_int_at_least(self.mc_samples, "mc_samples", 2)
        check_int_at_least(self.alg3_mc_samples, "alg3_mc_samples", 2)
        if self.placement not in ("spread", "start"):
            raise ValueError(f"placement must be spread or start, got {self.placement!r}")
        bad = [x for x in self.x_sources if x not in ("values", "keys", "hidden")]
        if bad or not self.x_sources:
            raise ValueError(f"x_sources must be among values, keys, hidden; got {self.x_sources}")
        if self.logits not in ("raw", "scaled"):
            raise ValueError(f"logits must be raw or scaled, got {self.logits!r}")
        _positive_floats("temperature T", self.temperatures)
        _positive_floats("ε", self.epsilons)
        if not 0 < self.ks_alpha < 1:
            raise ValueError(f"ks_alpha must lie in (0, 1), got {self.ks_alpha}")
        if not 0 < self.alg3_top < 1:
            raise ValueError(f"alg3_top must lie in (0, 1), got {self.alg3_top}")
        if "derived" not in self.e_forms or not set(self.e_forms) <= set(E_COLUMNS.values()):
            raise ValueError(f"e_forms must include 'derived', among {list(E_COLUMNS.values())}")
        for name in ("lengths", *_N_GRIDS):
            _positive_ints(name, getattr(self, name))
        if min(self.lengths) < 2:
            raise ValueError(f"every L must be >= 2, got lengths {self.lengths}")
        if self.n_alg1 >= min(self.lengths):
            raise ValueError(f"N = {self.n_alg1} must be smaller than every L {self.lengths}")
        if max(self.ns_alg2) >= max(self.lengths):
            raise ValueError(
                f"N = {max(self.ns_alg2)} must be smaller than L = {max(self.lengths)}"
            )

    @property
    def max_length(self) -> int:
        return max(self.lengths)

    def alg3_grid(self, length: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Alg. 3's N at ``length``: (``ns_alg3`` below L, over every row; the extension over
        the stratified rows). The extension holds ⌊f·L⌋ for f in :data:`ALG3_FRACTIONS` and
        ``alg3_top``, above the base grid's largest N and at most ``alg3_top``·L, so the test
        goes on until it accepts or N reaches ``alg3_top``·L (a critical N beyond: "> N_max")."""
        top = math.floor(self.alg3_top * length)
        base = tuple(sorted({n for n in self.ns_alg3 if n <= top}))
        start = max(base, default=0)
        ext = {math.floor(f * length) for f in (*ALG3_FRACTIONS, self.alg3_top)}
        return base, tuple(sorted(n for n in ext if start < n <= top and n >= 1))

    @classmethod
    def quick(cls, **given: Any) -> Config:
        """One window, L ≤ 128, small grids (the CI smoke run); ``given`` values win."""
        return cls.preset(quick=True, **given)

    @classmethod
    def preset(cls, *, quick: bool = False, **given: Any) -> Config:
        """The paper's defaults or the quick preset, then the caller's values (None = not given).

        N grids the caller did not give are cut to the N below the longest L (Alg. 2 and 4 run
        there), so ``quick(lengths=(32, 64))`` works; N values the caller gave are checked as
        given, and an error names the caller's own option.
        """
        from attnlimits.experiments.skeleton import preset_values

        values, given = preset_values(cls, _QUICK if quick else {}, given, "limitations")
        top = max(values.get("lengths", cls.lengths))
        for name in _N_GRIDS:
            if name not in given:
                grid = values.get(name, getattr(cls, name))
                values[name] = tuple(n for n in grid if n < top) or (1,)
        return cls(**values)

    def cache_params(self, model_id: str, text_sha: str) -> dict[str, object]:
        """What the per-layer results depend on: the settings, the device's kind
        (:func:`~attnlimits.experiments.store.numerics`), and the window count only when the
        windows are spread, since consecutive windows do not move with their count."""
        from attnlimits.experiments.store import numerics

        params = asdict(self)
        dropped = ("device", "text", "model", "windows")
        for key in dropped if self.placement == "start" else dropped[:-1]:
            params.pop(key)
        return {**params, **numerics(self), "model_id": model_id, "text_sha256": text_sha}


LimitationsConfig = Config  # the name of releases before the experiment skeleton
