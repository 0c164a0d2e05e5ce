"""A results folder that survives interruption: atomic files, resumable parts, run metadata.

Every file is written to a temporary name in the same folder and renamed into place, so a run
killed half-way never leaves a half-written file. Long computations save one *part* per unit of
work (for example one model layer) under ``parts/<stage>/``; a rerun with the same parameters
loads the parts it finds and computes only the rest. Parameters are hashed into the part
folder's name, so a rerun with other parameters never mixes in stale parts; and each part
records its stage, that hash and its columns, checked before it is reused
(:mod:`attnlimits.experiments._parts`), so a part copied from elsewhere is refused by name, not
concatenated into a table of the wrong shape. Every file written
is first listed in the folder's manifest (:mod:`attnlimits.experiments._owned`), and only listed
files are ever deleted: a user's files in the folder are never touched. Nothing is written,
renamed or deleted through a symbolic link (:func:`attnlimits._paths.inside`): taking the
folder's lock refuses a link where a run writes, in one line, before any work.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import filelock
import pandas as pd

from attnlimits._files import (
    TMP_SUFFIX,
    atomic_target,
    atomic_write_bytes,
    atomic_write_text,
    recording,
)
from attnlimits._paths import inside, open_no_follow, probe_write, refuse_links
from attnlimits.experiments import _owned, _parts
from attnlimits.experiments._machine import machine_info, package_versions
from attnlimits.experiments._owned import LOCK_NAME, OWNER_NAME, Manifest

__all__ = [
    "FolderBusyError",
    "ResultStore",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_out",
    "foreign_files",
    "jsonable",
    "listing",
    "machine_info",
    "numerics",
    "package_versions",
    "params_hash",
    "read_run_json",
]

_LOCK_NAME = LOCK_NAME  # the name tests and older callers know it by


class FolderBusyError(ValueError):
    """Another process holds the results folder (its lock names the process)."""


def check_out(out: Any, what: str = "out", *, here: bool = False) -> Path:
    """``out`` as a results folder's path; an empty path raises ``ValueError``, and so does one
    naming the current folder unless ``here`` (a run's results want a folder of their own, and
    ``Path("")`` is ``Path(".")``: a command line's empty ``--out`` arrives as ``"."``)."""
    if not isinstance(out, (str, os.PathLike)) or isinstance(os.fspath(out), bytes):
        raise TypeError(f"{what} must be a folder path (str or Path), got {type(out).__name__}")
    text = os.fspath(out)
    if not text.strip():
        raise ValueError(f"{what} is empty ({text!r}); name a results folder, e.g. results/run")
    if Path(text) == Path(".") and not here:
        raise ValueError(
            f"{what} {text!r} is the current folder (an empty --out is too); name a results "
            "folder of its own, e.g. results/run"
        )
    return Path(text)


def foreign_files(root: Path, places: tuple[str, ...], limit: int = 3) -> list[str]:
    """Up to ``limit`` + 1 files at ``places`` in ``root`` that attnlimits did not write (none
    where ``root`` does not exist); creates nothing, unlike :class:`ResultStore`."""
    return _owned.Manifest(Path(root)).foreign(places, limit) if Path(root).is_dir() else []


def listing(files: list[str], limit: int = 3) -> str:
    """``files`` for a message: the first ``limit``, then ", and more" where there are more
    (lists from :func:`foreign_files` stop at ``limit`` + 1, so no count is claimed)."""
    return ", ".join(files[:limit]) + (", and more" if len(files) > limit else "")


def read_run_json(path: Path) -> dict[str, Any]:
    """A ``run.json``'s contents ({} where there is none); ``ValueError`` naming the file and
    what is wrong when it is not a JSON object (cut short, edited, or not ours)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{path} cannot be read: {err}") from None
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(
            f"{path} is not valid JSON ({err.msg}: line {err.lineno} column {err.colno}); it was "
            "cut short or edited (attnlimits writes it whole): restore it, or use another folder"
        ) from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path} holds a JSON {type(meta).__name__}, not a run's record")
    return meta


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


def numerics(config: Any) -> dict[str, str]:
    """What a run's numbers depend on beyond its own settings, for its parts' key: the kind of
    device (``cpu``, ``cuda``, ``mps``), whose kernels round differently and whose random
    generators draw other numbers from the same seed (the limitations experiment's Monte Carlo
    estimate of exact E, for one). A cache key holds this beside its settings, so results
    computed on one device are never resumed into a run on another. The device's index is left
    out: ``cuda:0`` and ``cuda:1`` compute alike."""
    return {"device": str(config.device).split(":")[0]}


class ResultStore:
    """One results folder: tables, figures, resumable parts and a ``run.json`` of metadata.

    Parameters
    ----------
    root : Path
        The output folder; created if missing. An unwritable folder raises ``ValueError``.
    """

    #: Where a run writes (names in the root; folders searched through).
    PLACES = ("run.json", "report.md", "report.html", "tables", "figures", "parts", "checkpoints")

    def __init__(self, root: Path) -> None:
        self.root = check_out(root, "root", here=True)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe_write(self.root, suffix=TMP_SUFFIX)  # a leftover is a temporary of ours
        except OSError as err:
            raise ValueError(f"output folder {self.root} is not writable: {err}") from err
        self._meta_path = self.root / "run.json"
        inside(self.root, self._meta_path)  # not read through a link: refused, naming it
        self.meta: dict[str, Any] = read_run_json(self._meta_path)
        self.manifest = Manifest(self.root)

    # ---- exclusive use --------------------------------------------------------------------
    @contextmanager
    def lock(self, places: tuple[str, ...] | None = None) -> Iterator[None]:
        """Hold the folder for this process; a second process gets :class:`FolderBusyError`.

        The lock is ``filelock``'s (released by the OS if the process dies); who holds it is
        written beside it, so the error can name the running process. Holding it, a symbolic
        link at or below ``places`` (default :attr:`PLACES`: where a run writes), at a listed
        file, the manifest, the lock or its note is refused in one line (``ValueError``) before
        anything is written; stale temporaries of a killed run are removed, and every file
        written below the folder (by the store or by :func:`atomic_write_text`) is listed in its
        manifest.
        """
        owner = self.root / OWNER_NAME
        refuse_links(self.root, (LOCK_NAME, OWNER_NAME))  # before opening either
        lock = filelock.FileLock(self.root / LOCK_NAME)
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            who = owner.read_text().strip() if owner.exists() else "another process"
            raise FolderBusyError(
                f"{self.root} is in use by {who}; wait for it, or pass another --out"
            ) from None
        try:
            fd = open_no_follow(owner, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            with os.fdopen(fd, "w") as f:
                f.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
            self.meta = read_run_json(self._meta_path)  # as they are now that this process
            self.manifest = Manifest(self.root)  # holds the folder
            self.manifest.refuse_links(self.PLACES if places is None else places)
            self.remove_temporaries()
            self.manifest.prune()
            with recording(self.manifest):
                yield
        finally:
            # a note that cannot be removed (a read-only folder) is harmless, and its error
            # would replace the one that ended the block
            with suppress(OSError):
                if not owner.is_symlink():
                    owner.unlink(missing_ok=True)
            lock.release()  # the lock file stays: unlinking it would let two holders race

    def remove_temporaries(self) -> list[Path]:
        """Delete the temporary files a killed run left behind; returns their paths."""
        return self.manifest.remove_temporaries(self.PLACES)

    def foreign_files(self, places: tuple[str, ...] = PLACES, limit: int = 3) -> list[str]:
        """Up to ``limit`` + 1 files where a run writes that attnlimits did not write."""
        return self.manifest.foreign(places, limit)

    def unlisted(self, rels: Iterable[str]) -> list[str]:
        """Those of ``rels`` (paths relative to the folder) that exist, or are links, and that
        the manifest does not list: a user's files, which a writer must not replace. Sorted."""
        here = [rel for rel in rels if (self.root / rel).exists() or (self.root / rel).is_symlink()]
        return sorted(rel for rel in here if rel not in self.manifest.listed)

    def remove_listed(self) -> list[str]:
        """Delete every file the manifest lists (``--fresh``: a previous run's results, and
        nothing else); returns what was deleted. Hold :meth:`lock`."""
        removed = self.manifest.remove(set(self.manifest.listed))
        self.meta = read_run_json(self._meta_path)
        return removed

    def discard(self, new_folders: list[Path]) -> None:
        """After a failure (holding :meth:`lock`): delete the files this store wrote, and the
        folder with them if it is among ``new_folders`` (the ones this process created) and
        holds nothing else."""
        self.manifest.discard(new_folders)

    def n_parts(self) -> int:
        """How many resumable parts the folder holds (what an interrupted run has saved)."""
        return sum(1 for _ in (self.root / "parts").rglob("*.parquet"))

    def n_checkpoints(self) -> int:
        """How many training checkpoints the folder holds (``checkpoints/*.pt``, saved by an
        interrupted run as much as its parts are)."""
        return sum(1 for _ in (self.root / "checkpoints").rglob("*.pt"))

    # ---- metadata -------------------------------------------------------------------------
    def update_meta(self, **fields: Any) -> None:
        """Merge ``fields`` into ``run.json`` (nested mappings merge one level deep)."""
        for key, value in jsonable(fields).items():
            if isinstance(value, dict) and isinstance(self.meta.get(key), dict):
                self.meta[key].update(value)
            else:
                self.meta[key] = value
        self.meta.setdefault("versions", package_versions())
        text = json.dumps(self.meta, indent=2, sort_keys=True)
        atomic_write_bytes(self._meta_path, text.encode("utf-8"), manifest=self.manifest)

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
        with atomic_target(path, self.manifest) as tmp:
            df.to_parquet(tmp, index=False)
        csv = df.to_csv(index=False).encode("utf-8")
        atomic_write_bytes(path.with_suffix(".csv"), csv, manifest=self.manifest)
        return path

    def read_table(self, name: str) -> pd.DataFrame:
        return pd.read_parquet(self.root / "tables" / f"{name}.parquet")

    def save_figure(self, fig: Any, name: str) -> list[Path]:
        """Save a matplotlib figure as ``figures/<name>.png`` and ``.svg``."""
        paths = []
        for ext in ("png", "svg"):
            path = self.root / "figures" / f"{name}.{ext}"
            with atomic_target(path, self.manifest) as tmp:
                fig.savefig(tmp, format=ext, dpi=150, bbox_inches="tight")
            paths.append(path)
        return paths

    # ---- resumable parts ------------------------------------------------------------------
    def parts_dir(self, stage: str, params: Any) -> Path:
        return self.root / "parts" / f"{stage}-{params_hash(params)}"

    def _part_path(self, stage: str, params: Any, key: str) -> Path:
        return self.parts_dir(stage, params) / f"{key}.parquet"

    def save_part(self, stage: str, params: Any, key: str, df: pd.DataFrame) -> None:
        """Save one unit of work atomically under ``parts/<stage>-<hash>/<key>.parquet``, with
        its stage, settings hash and columns in its metadata (:mod:`._parts`)."""
        with atomic_target(self._part_path(stage, params, key), self.manifest) as tmp:
            _parts.write_part(df, tmp, stage, params_hash(params))

    def load_part(self, stage: str, params: Any, key: str) -> pd.DataFrame:
        """A saved part; ``ValueError`` naming it where it was not saved for this stage and
        these settings, or was changed since."""
        path = self._part_path(stage, params, key)
        _parts.check_part(path, stage, params_hash(params))
        return pd.read_parquet(path)

    def has_part(self, stage: str, params: Any, key: str) -> bool:
        """Whether part ``key`` was saved; ``ValueError`` naming it where the file there is not
        a part of this stage and these settings (checked before the run relies on it)."""
        path = self._part_path(stage, params, key)
        if not path.exists():
            return False
        _parts.check_part(path, stage, params_hash(params))
        return True

    def part(
        self, stage: str, params: Any, key: str, compute: Callable[[], pd.DataFrame]
    ) -> pd.DataFrame:
        """Load part ``key`` of ``stage`` if a previous run saved it, else compute and save it."""
        if self.has_part(stage, params, key):
            return self.load_part(stage, params, key)
        df = compute()
        self.save_part(stage, params, key, df)
        return df
