"""``attn_implementation="attnlimits_*"`` known to transformers after ``import attnlimits``,
without importing transformers (seconds) when a user never touches it.

If transformers' ``modeling_utils`` (which holds the attention registry) is already imported,
:mod:`attnlimits.kernels` is imported now and registers its names. Otherwise a meta-path hook
waits for ``transformers.modeling_utils`` to finish loading and registers them then; the hook
removes itself after that one module.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

__all__ = ["register_when_transformers_loads"]

_TARGET = "transformers.modeling_utils"


def _register() -> None:
    import attnlimits.kernels  # noqa: F401 - importing it registers the names


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        _register()


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)  # one module, once
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def register_when_transformers_loads() -> None:
    """Register the kernels' names now if transformers' registry is loaded, else when it is."""
    if _TARGET in sys.modules:
        _register()
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
