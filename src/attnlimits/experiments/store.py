"""A results folder that survives interruption: atomic files, resumable parts, run metadata.

Every file is written to a temporary name in the same folder and renamed into place, so a run
killed half-way never leaves a half-written file. Long computations save one *part* per unit of
work (for example one model layer) under ``parts/<stage>/``; a rerun with the same parameters
loads the parts it finds and computes only the rest. Parameters are hashed into the part
folder's name, so a rerun with other parameters never mixes in stale parts.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import filelock
import pandas as pd

from attnlimits.experiments import _allocator

__all__ = [
    "FolderBusyError",
    "ResultStore",
    "atomic_write_bytes",
    "atomic_write_text",
    "file_sha256",
    "jsonable",
    "machine_info",
    "package_versions",
    "params_hash",
]

_VERSIONED = ("attnlimits", "torch", "transformers", "numpy", "scipy", "pandas", "matplotlib")


#: Every temporary file of this module ends so; :meth:`ResultStore.open` removes stale ones.
TMP_SUFFIX = ".attnlimits-tmp"
_LOCK_NAME = ".attnlimits.lock"


class FolderBusyError(ValueError):
    """Another process holds the results folder (its lock names the process)."""


def _file_mode() -> int:
    """0666 less the process umask: what ``open(path, "w")`` would give (0644 under 022)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextmanager
def _atomic_target(path: Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it into place if the block succeeds.

    The temporary is hidden, ends in :data:`TMP_SUFFIX` (so a later run can remove what a killed
    one left) and gets the mode an ordinary file would get under the user's umask, not
    ``mkstemp``'s 0600. For writers (pandas, matplotlib) that want a file name rather than bytes.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    os.close(fd)
    os.chmod(tmp, _file_mode())
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and an atomic rename."""
    with _atomic_target(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())


def atomic_write_text(path: Path, text: str) -> None:
    """:func:`atomic_write_bytes` for UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file's bytes, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def jsonable(obj: Any) -> Any:
    """``obj`` as JSON-able values: dataclasses and mappings as dicts, paths as strings."""
    if is_dataclass(obj) and not isinstance(obj, type):
        return jsonable(asdict(obj))
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return repr(obj)


def params_hash(params: Any) -> str:
    """A short stable hash of parameters (dataclass, mapping, or JSON-able value)."""
    blob = json.dumps(jsonable(params), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


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
    cores, torch's thread counts (docs/determinism.md measures what each changes)."""
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
    }


class ResultStore:
    """One results folder: tables, figures, resumable parts and a ``run.json`` of metadata.

    Parameters
    ----------
    root : Path
        The output folder; created if missing. An unwritable folder raises ``ValueError``.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = self.root / ".write-test"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as err:
            raise ValueError(f"output folder {self.root} is not writable: {err}") from err
        self._meta_path = self.root / "run.json"
        self.meta: dict[str, Any] = (
            json.loads(self._meta_path.read_text()) if self._meta_path.exists() else {}
        )

    # ---- exclusive use --------------------------------------------------------------------
    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the folder for this process; a second process gets :class:`FolderBusyError`.

        The lock is ``filelock``'s (released by the OS if the process dies); who holds it is
        written beside it, so the error can name the running process. Holding it, stale
        temporaries of a killed run are removed.
        """
        owner = self.root / f"{_LOCK_NAME}.owner"
        lock = filelock.FileLock(self.root / _LOCK_NAME)
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            who = owner.read_text().strip() if owner.exists() else "another process"
            raise FolderBusyError(
                f"{self.root} is in use by {who}; wait for it, or pass another --out"
            ) from None
        try:
            owner.write_text(f"pid {os.getpid()} on {socket.gethostname()}\n")
            self.remove_temporaries()
            yield
        finally:
            owner.unlink(missing_ok=True)
            lock.release()  # the lock file stays: unlinking it would let two holders race

    def remove_temporaries(self) -> list[Path]:
        """Delete the temporary files a killed run left behind; returns their paths."""
        stale = sorted(self.root.rglob(f".*{TMP_SUFFIX}"))
        for path in stale:
            path.unlink(missing_ok=True)
        return stale

    def n_parts(self) -> int:
        """How many resumable parts the folder holds (what an interrupted run has saved)."""
        return sum(1 for _ in (self.root / "parts").rglob("*.parquet"))

    # ---- metadata -------------------------------------------------------------------------
    def update_meta(self, **fields: Any) -> None:
        """Merge ``fields`` into ``run.json`` (nested mappings merge one level deep)."""
        for key, value in jsonable(fields).items():
            if isinstance(value, dict) and isinstance(self.meta.get(key), dict):
                self.meta[key].update(value)
            else:
                self.meta[key] = value
        self.meta.setdefault("versions", package_versions())
        atomic_write_text(self._meta_path, json.dumps(self.meta, indent=2, sort_keys=True))

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Record the wall time of ``stage`` in ``run.json``, in seconds.

        ``wall_time_s`` holds this invocation's time; ``wall_time_total_s`` adds up every
        invocation, so a run resumed after an interruption still reports its whole cost.
        """
        start = time.perf_counter()
        yield
        took = round(time.perf_counter() - start, 3)
        total = self.meta.get("wall_time_total_s", {}).get(stage, 0.0) + took
        self.update_meta(wall_time_s={stage: took}, wall_time_total_s={stage: round(total, 3)})

    # ---- tables and figures ---------------------------------------------------------------
    def write_table(self, df: pd.DataFrame, name: str) -> Path:
        """Save ``df`` as ``tables/<name>.parquet`` and ``.csv``; return the parquet path."""
        path = self.root / "tables" / f"{name}.parquet"
        with _atomic_target(path) as tmp:
            df.to_parquet(tmp, index=False)
        atomic_write_text(path.with_suffix(".csv"), df.to_csv(index=False))
        return path

    def read_table(self, name: str) -> pd.DataFrame:
        return pd.read_parquet(self.root / "tables" / f"{name}.parquet")

    def save_figure(self, fig: Any, name: str) -> list[Path]:
        """Save a matplotlib figure as ``figures/<name>.png`` and ``.svg``."""
        paths = []
        for ext in ("png", "svg"):
            path = self.root / "figures" / f"{name}.{ext}"
            with _atomic_target(path) as tmp:
                fig.savefig(tmp, format=ext, dpi=150, bbox_inches="tight")
            paths.append(path)
        return paths

    # ---- resumable parts ------------------------------------------------------------------
    def parts_dir(self, stage: str, params: Any) -> Path:
        return self.root / "parts" / f"{stage}-{params_hash(params)}"

    def _part_path(self, stage: str, params: Any, key: str) -> Path:
        return self.parts_dir(stage, params) / f"{key}.parquet"

    def save_part(self, stage: str, params: Any, key: str, df: pd.DataFrame) -> None:
        """Save one unit of work atomically under ``parts/<stage>-<hash>/<key>.parquet``."""
        with _atomic_target(self._part_path(stage, params, key)) as tmp:
            df.to_parquet(tmp, index=False)

    def load_part(self, stage: str, params: Any, key: str) -> pd.DataFrame:
        return pd.read_parquet(self._part_path(stage, params, key))

    def has_part(self, stage: str, params: Any, key: str) -> bool:
        return self._part_path(stage, params, key).exists()

    def part(
        self, stage: str, params: Any, key: str, compute: Callable[[], pd.DataFrame]
    ) -> pd.DataFrame:
        """Load part ``key`` of ``stage`` if a previous run saved it, else compute and save it."""
        if self.has_part(stage, params, key):
            return self.load_part(stage, params, key)
        df = compute()
        self.save_part(stage, params, key, df)
        return df
