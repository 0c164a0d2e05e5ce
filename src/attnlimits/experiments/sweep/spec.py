"""A sweep's spec: one experiment, settings every cell shares, and the axes of its grid.

A spec is a TOML file (or the same keys in YAML, for a ``.yaml``/``.yml`` file)::

    experiment = "compare"        # a key of skeleton.EXPERIMENTS
    quick = true                  # optional: the experiment's quick preset first
    [fixed]                       # settings of every cell
    lengths = [128, 256]
    [axes]                        # each a list of values; the cells are their cartesian product
    seed = [0, 1]
    normalizers = [["softmax", "adaptive"], ["softmax", "logn:train_length=128"]]
    [resources]                   # optional: what one cell needs, for Ray to place it
    cpus = 1                      # default 1
    gpus = 0                      # default 1 where a cell runs on a cuda device, else 0
    memory_gb = 4                 # default: no reservation
    retries = 2                   # tries after a worker dies (killed, out of memory); default 2

Every cell's ``Config`` is built (``Config.preset(quick=..., **settings)``) when the spec is
loaded, so a bad value in any cell fails before any work, in one line naming the file. Before
that the file is bounded (``_specfile``: a key given twice, deep nesting, recursive or
exploding YAML aliases) and so is the grid: its cell count, the product of the axis lengths,
at most :data:`MAX_CELLS`.
"""

from __future__ import annotations

import inspect
import itertools
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from attnlimits.experiments.store import params_hash
from attnlimits.experiments.sweep._specfile import read_data

__all__ = ["MAX_CELLS", "Cell", "Spec", "label", "load_spec"]

#: Cells a spec may hold: each is built and estimated before the first runs (10,000 take
#: seconds; a million would take half an hour before ``--yes`` could refuse them).
MAX_CELLS = 10_000

_TOP_KEYS = ("experiment", "quick", "fixed", "axes", "resources")
_RESOURCES = ("cpus", "gpus", "memory_gb", "retries")  # the keys of [resources]
#: Settings naming a file or folder: a relative path is made absolute when the spec is loaded,
#: so a Ray worker started in another folder finds the same file.
_PATH_SETTINGS = ("text", "model")


@dataclass(frozen=True)
class Cell:
    """One point of the grid: its axis values and the Config built from them."""

    id: str  # a short hash of the experiment and the whole Config: the cell's folder name
    name: str  # the axis values, readable: "normalizers=softmax,adaptive;seed=1"
    axes: dict[str, Any]  # axis name -> this cell's value (as in the spec)
    config: Any  # the experiment's Config


@dataclass(frozen=True)
class Spec:
    """A loaded, checked spec: every cell's Config is already built."""

    path: Path
    text: str  # the spec as written, TOML or YAML (recorded in the sweep's run.json)
    experiment: str
    quick: bool
    fixed: dict[str, Any]
    axes: dict[str, list[Any]]
    cells: tuple[Cell, ...]
    #: What one cell asks Ray for: cpus, gpus, memory_gb (absent: none reserved), retries.
    resources: dict[str, float] = field(default_factory=dict)


def label(value: Any) -> Any:
    """An axis value as one table cell: scalars as they are, lists joined by commas."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(label(v)) for v in value)
    return value


def _tuples(value: Any) -> Any:
    """TOML lists as tuples, nested ones too: the Configs' list-like fields are tuples."""
    if isinstance(value, (list, tuple)):
        return tuple(_tuples(v) for v in value)
    return value


def _absolute(name: str, value: Any) -> Any:
    if name in _PATH_SETTINGS and isinstance(value, str) and Path(value).exists():
        return str(Path(value).resolve())
    return value


def _build(config_type: Any, quick: bool, settings: dict[str, Any]) -> Any:
    """The Config of one cell: the preset (if ``quick``), then ``settings``, as the CLI does."""
    given = {k: _absolute(k, _tuples(v)) for k, v in settings.items()}
    if inspect.ismethod(getattr(config_type, "preset", None)):
        return config_type.preset(quick=quick, **given)
    return config_type.quick(**given) if quick else config_type(**given)


def _table(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ValueError(f"{where}: [{key}] must be a table of settings, got {value!r}")
    return value


def _resources(given: dict[str, Any], cells: list[Cell], where: str) -> dict[str, float]:
    """[resources] checked, with the defaults filled in: 1 CPU; 1 GPU if a cell uses cuda."""
    unknown = sorted(set(given) - set(_RESOURCES))
    if unknown:
        raise ValueError(
            f"{where}: unknown [resources] key(s) {unknown}; known: {', '.join(_RESOURCES)}"
        )
    for key, value in given.items():
        number = isinstance(value, int) if key == "retries" else isinstance(value, (int, float))
        if (
            not number
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value < 0
            or (key == "cpus" and value == 0)
        ):
            kind = {"retries": "a whole number >= 0", "cpus": "a number > 0"}.get(key, ">= 0")
            raise ValueError(f"{where}: [resources] {key} must be {kind}, got {value!r}")
    cuda = any(str(getattr(c.config, "device", "cpu")).startswith("cuda") for c in cells)
    return {"cpus": 1.0, "gpus": 1.0 if cuda else 0.0, "retries": 2} | {
        k: float(v) if k != "retries" else int(v) for k, v in given.items()
    }


def _load(path: Path, text: str) -> dict[str, Any]:
    """The spec's top-level table: TOML, or YAML for a ``.yaml``/``.yml`` file (plain data
    only). Either way a parse error or a bound crossed names the file and the line."""
    data = read_data(path, text)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError(
            f"{path}: a spec is a mapping of experiment, quick, fixed, axes, resources; "
            f"got {type(data).__name__}"
        )
    return data


def _parse(
    path: Path, text: str
) -> tuple[str, bool, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The spec's five parts, checked for shape (names and values are checked by the Config)."""
    from attnlimits.experiments import skeleton

    where = str(path)
    data = _load(path, text)
    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; a spec has {', '.join(_TOP_KEYS)}")
    experiment = data.get("experiment")
    if experiment not in skeleton.EXPERIMENTS:
        known = ", ".join(skeleton.EXPERIMENTS)
        raise ValueError(f"{where}: experiment must be one of {known}; got {experiment!r}")
    quick = data.get("quick", False)
    if not isinstance(quick, bool):
        raise ValueError(f"{where}: quick must be true or false, got {quick!r}")
    fixed, axes = _table(data, "fixed", where), _table(data, "axes", where)
    for name, values in axes.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"{where}: axis {name!r} must be a non-empty list, got {values!r}")
    cells = math.prod(len(values) for values in axes.values())  # before any cell is built
    if cells > MAX_CELLS:
        sizes = " × ".join(f"{name} {len(values):,}" for name, values in axes.items())
        raise ValueError(
            f"{where}: the grid has {cells:,} cells ({sizes}), over the {MAX_CELLS:,} a sweep "
            "may hold; split it into several specs"
        )
    for name, values in axes.items():
        if len({repr(_tuples(v)) for v in values}) != len(values):
            raise ValueError(f"{where}: axis {name!r} repeats a value: {values!r}")
    both = sorted(set(fixed) & set(axes))
    if both:
        raise ValueError(f"{where}: {both} both fixed and an axis; keep one")
    return str(experiment), quick, fixed, axes, _table(data, "resources", where)


def load_spec(path: Path | str) -> Spec:
    """Read and check the spec at ``path``; build every cell's Config (``ValueError`` if any
    cell is bad, naming the file, the setting and, for a bad value, the cell)."""
    from attnlimits.experiments import skeleton

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read sweep spec {path}: {err}") from None
    experiment, quick, fixed, axes, given = _parse(path, text)
    config_type = skeleton.get(experiment).config
    names = {f.name for f in fields(config_type)}
    unknown = sorted((set(fixed) | set(axes)) - names)
    if unknown:
        raise ValueError(
            f"{path}: unknown {experiment} setting(s) {unknown}; known: {', '.join(sorted(names))}"
        )
    cells: list[Cell] = []
    seen: dict[str, str] = {}  # cell id -> the first cell's name (a dict: 10⁴ cells are quick)
    for values in itertools.product(*axes.values()):  # the first axis varies slowest
        point = dict(zip(axes, values, strict=True))
        name = ";".join(f"{k}={label(v)}" for k, v in point.items()) or "all"
        try:
            config = _build(config_type, quick, {**fixed, **point})
        except (ValueError, TypeError) as err:
            raise ValueError(f"{path}: cell {name}: {err}") from None
        cell_id = params_hash({"experiment": experiment, "config": config})
        if cell_id in seen:  # e.g. normalizers ["adaptive"] and ["softmax", "adaptive"]
            raise ValueError(f"{path}: cells {seen[cell_id]} and {name} have the same settings")
        seen[cell_id] = name
        cells.append(Cell(id=cell_id, name=name, axes=point, config=config))
    resources = _resources(given, cells, str(path))
    return Spec(path, text, experiment, quick, fixed, dict(axes), tuple(cells), resources)
