"""attnlimits: where softmax attention runs out of resolution, and the normalisers that go further.

Modules, one per idea (see README):

- :mod:`attnlimits.normalizers`: attention normalisers ``f(scores, dim=-1, *, mask=None, **params)``
- :mod:`attnlimits.theory`: closed-form bounds of both papers, as pure functions
- :mod:`attnlimits.metrics`: batched diagnostics of attention maps

After ``import attnlimits``, transformers knows the ``attn_implementation`` names of
:mod:`attnlimits.kernels` (``attnlimits_softmax_t``, ``attnlimits_ssmax``,
``attnlimits_adaptive``), registered when transformers loads its attention registry.

The three modules load on first use (``attnlimits.metrics`` imports them then), so that
``import attnlimits`` and commands that need no torch (``attnlimits view``) start in a blink.
"""

from attnlimits._openmp import passive_waiting_for_the_cli

# before anything imports torch: OpenMP reads its wait policy once, when it loads (_openmp.py)
passive_waiting_for_the_cli()

import importlib  # noqa: E402
from typing import Any  # noqa: E402

from attnlimits._registration import register_when_transformers_loads  # noqa: E402

# attn_implementation="attnlimits_adaptive" (and the other kernels) work after `import attnlimits`
register_when_transformers_loads()

__version__ = "0.1.0"

__all__ = ["__version__", "metrics", "normalizers", "theory"]
_LAZY = ("metrics", "normalizers", "theory")


def __getattr__(name: str) -> Any:
    """``attnlimits.metrics`` (and ``normalizers``, ``theory``): imported on first use."""
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
