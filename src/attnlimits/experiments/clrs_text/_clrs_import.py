"""The CLRS-Text generators of ``dm-clrs`` without TensorFlow.

``clrs/__init__.py`` imports every baseline (haiku, optax, TensorFlow, tfds); the text generators
need only ``clrs._src.samplers`` (numpy, jax, absl), ``clrs._src.specs``, ``clrs._src.probing``
(attrs, jax; its one TensorFlow use is ``isinstance(x, tf.Tensor)``, never true for the numpy
samples) and ``clrs._src.algorithms`` (chex). So :func:`load_generators` loads those modules
from the installed package's files under empty stand-in parent packages, with a stand-in
``tensorflow`` whose ``Tensor`` nothing is an instance of, and then takes every ``clrs*`` and
stand-in entry back out of ``sys.modules``: the process afterwards imports the real ``clrs`` (or
TensorFlow) as if this had not happened, and the functions returned keep their own modules.

How robust: it depends on the module paths and imports of dm-clrs 2.0.3 (pinned by the
``clrs`` extra); a real TensorFlow already imported is used as is. ``tests/test_clrs_text_data``
checks the loaded generator against the text format and that ``sys.modules`` is left clean.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import random
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["INSTALL_HINT", "load_generators"]

#: How to get the extra, in the one line a missing one ends with.
INSTALL_HINT = (
    "CLRS-Text data needs the optional extra: pip install 'attnlimits[clrs]' (without "
    "TensorFlow: pip install jax chex absl-py attrs && pip install --no-deps dm-clrs==2.0.3)"
)
_PACKAGES = ("clrs", "clrs._src", "clrs._src.clrs_text")
_NEEDED = ("jax", "chex", "absl", "attr", "numpy")


def _stand_in(name: str, path: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = [path]
    return module


_Loaded = tuple[Callable[..., Iterator[dict[str, Any]]], tuple[str, ...]]
_LOADED: _Loaded | None = None  # loaded once per process (about 2 s: jax's import)


def load_generators() -> _Loaded:
    """(``clrs_generator``, the thirty algorithm names) of dm-clrs, without TensorFlow.

    Raises ``ModuleNotFoundError`` with :data:`INSTALL_HINT` when dm-clrs or one of the
    libraries its text generators need is missing.
    """
    global _LOADED
    if _LOADED is None:
        _LOADED = _load()
    return _LOADED


def _load() -> _Loaded:
    spec = importlib.util.find_spec("clrs") if "clrs" not in sys.modules else None
    missing = [m for m in _NEEDED if importlib.util.find_spec(m) is None]
    if "clrs" not in sys.modules and (spec is None or not spec.submodule_search_locations):
        missing.insert(0, "dm-clrs")
    if missing:
        raise ModuleNotFoundError(f"{INSTALL_HINT}; missing: {', '.join(missing)}")
    if "clrs" in sys.modules and hasattr(sys.modules["clrs"], "__file__"):  # the real one
        generators = importlib.import_module("clrs._src.clrs_text.huggingface_generators")
        specs = importlib.import_module("clrs._src.specs")
        return generators.clrs_generator, tuple(specs.CLRS_30_ALGS)
    assert spec is not None and spec.submodule_search_locations is not None
    root = next(iter(spec.submodule_search_locations))
    before = set(sys.modules)
    for name in _PACKAGES:
        sys.modules[name] = _stand_in(name, root + name[4:].replace(".", "/"))
    if "tensorflow" not in sys.modules:
        tf = types.ModuleType("tensorflow")
        tf.Tensor = type("Tensor", (), {})  # type: ignore[attr-defined]
        sys.modules["tensorflow"] = tf
    try:
        generators = importlib.import_module("clrs._src.clrs_text.huggingface_generators")
        specs = importlib.import_module("clrs._src.specs")
    finally:
        for name in set(sys.modules) - before:
            if name == "tensorflow" or name == "clrs" or name.startswith("clrs."):
                del sys.modules[name]
    return generators.clrs_generator, tuple(specs.CLRS_30_ALGS)


def generate(
    algorithm: str, length: int, samples: int, seed: int, use_hints: bool = True
) -> list[dict[str, Any]]:
    """``samples`` CLRS-Text examples of one algorithm at one length, seeded; ``use_hints``:
    the trace format (the question ends ``initial_trace: … trace | <output>:``, the answer is
    the trace, `` | ``, the result), else the answer only. Floats keep dm-clrs's default of 3
    decimals (truncated). The caller's ``random`` state and absl's log level are left as they
    were."""
    clrs_generator, _ = load_generators()
    state = random.getstate()
    absl = logging.getLogger("absl")
    level = absl.level
    absl.setLevel(logging.ERROR)  # "Ignoring kwargs {'use_padding'}" once per sampler
    try:
        return list(
            clrs_generator(
                {algorithm: [length]}, num_samples=samples, seed=seed, use_hints=use_hints
            )
        )
    finally:
        random.setstate(state)
        absl.setLevel(level)
