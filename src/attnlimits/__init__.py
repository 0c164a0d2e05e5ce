"""attnlimits: where softmax attention runs out of resolution, and the normalisers that go further.

Modules, one per idea (see README):

- :mod:`attnlimits.normalizers`: attention normalisers ``f(scores, dim=-1, *, mask=None, **params)``
- :mod:`attnlimits.theory`: closed-form bounds of both papers, as pure functions
- :mod:`attnlimits.metrics`: batched diagnostics of attention maps
"""

from attnlimits import metrics, normalizers, theory

__version__ = "0.1.0"

__all__ = ["__version__", "metrics", "normalizers", "theory"]
