"""What ``run.json`` records besides a run's settings: package versions and the machine.

Kept apart from :mod:`attnlimits.experiments.store`, which re-exports both functions."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from attnlimits import _openmp
from attnlimits.experiments import _allocator

__all__ = ["machine_info", "package_versions"]

_VERSIONED = ("attnlimits", "torch", "transformers", "numpy", "scipy", "pandas", "matplotlib")


def package_versions() -> dict[str, str]:
    """Versions of Python and the packages whose behaviour the numbers depend on."""
    out = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    """What the numbers may depend on besides versions: CPU, the vector instructions torch's
    kernels use (``ATEN_CPU_CAPABILITY`` lowers them) and MKL's (``MKL_ENABLE_INSTRUCTIONS``),
    cores, torch's thread counts (docs/determinism.md measures what each changes), and how
    OpenMP's threads wait (:mod:`attnlimits._openmp`)."""
    import torch

    return {
        "cpu": _cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "mkl_instructions": os.environ.get("MKL_ENABLE_INSTRUCTIONS"),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "cuda": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
        "platform": platform.platform(),
        "allocator": _allocator.state(),
        "openmp_waiting": _openmp.state(),
    }
