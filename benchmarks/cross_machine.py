"""What agrees across CPUs: the quick reproductions under emulated instruction sets, cell by cell.

    python benchmarks/cross_machine.py [--out results/cross_machine] [--commands limitations ...]
        [--rtol 1e-5] [--atol 1e-8]

A second machine differs from this one in the vector instructions its kernels use: torch's own
kernels (softmax, reductions, elementwise; ``ATEN_CPU_CAPABILITY``), MKL's GEMMs
(``MKL_ENABLE_INSTRUCTIONS``) and oneDNN's (``ONEDNN_MAX_CPU_ISA``), and in its thread count.
Each profile below runs each command in a fresh process with those variables set, which makes
this machine compute as a CPU with only those instructions would (the same torch and MKL
build: another build is not covered). Every table of each run is then compared with the
``native`` run's cell by cell: float columns to ``rtol``/``atol`` (``numpy.isclose``), every
other column (counts, labels, verdicts) exactly. Writes ``cells.csv`` (one row per profile ×
command × table × column) and ``summary.md``; docs/determinism.md quotes them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

#: Environment of each emulated CPU; ``native`` is this machine as it is.
PROFILES: dict[str, dict[str, str]] = {
    "native": {},
    "native, 1 thread": {"OMP_NUM_THREADS": "1"},
    "AVX2 CPU": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
                 "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "AVX2 CPU, 1 thread": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
                           "ONEDNN_MAX_CPU_ISA": "AVX2", "OMP_NUM_THREADS": "1"},
    "no-AVX x86-64": {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
                      "ONEDNN_MAX_CPU_ISA": "SSE41"},
}  # fmt: skip
COMMANDS: dict[str, list[str]] = {
    "limitations": ["reproduce", "limitations", "--quick"],
    "softmax-not-enough": ["reproduce", "softmax-not-enough", "--quick"],
    "compare": ["compare", "--quick"],
}
#: Columns that measure time, not the computation: left out of the comparison.
TIMES = ("seconds", "time", "wall")


def _run(args: list[str], env: dict[str, str], out: Path) -> float:
    if (out / "report.md").is_file():
        return float("nan")  # done by an earlier call: resumed
    cmd = [sys.executable, "-m", "attnlimits.cli", *args, "--out", str(out)]
    start = time.perf_counter()
    res = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{res.stderr[-3000:]}")
    return time.perf_counter() - start


def _same(p: object, q: object) -> bool:
    if isinstance(p, (list, tuple, np.ndarray)) or isinstance(q, (list, tuple, np.ndarray)):
        return bool(np.array_equal(np.asarray(p), np.asarray(q), equal_nan=True))
    return bool(p == q or (pd.isna(p) and pd.isna(q)))


def compare_tables(a: Path, b: Path, rtol: float, atol: float) -> list[dict[str, object]]:
    """One row per table and column of two results folders: how many cells differ, by how much."""
    rows: list[dict[str, object]] = []
    for path in sorted(a.glob("**/tables/*.parquet")):  # a run's and its models' sub-runs'
        x, y = pd.read_parquet(path), pd.read_parquet(b / path.relative_to(a))
        name = str(path.relative_to(a).with_suffix("")).replace("/tables/", "/")
        if x.shape != y.shape or list(x.columns) != list(y.columns):
            rows.append({"table": name, "column": "(shape)", "cells": x.size,
                         "differ": x.size, "max_abs": np.nan, "max_rel": np.nan})  # fmt: skip
            continue
        for col in x.columns:
            if any(t in col for t in TIMES):
                continue
            u, v = x[col].to_numpy(), y[col].to_numpy()
            if np.issubdtype(u.dtype, np.floating):
                same = np.isclose(u, v, rtol=rtol, atol=atol, equal_nan=True)
                diff = np.abs(u - v)
                diff = np.where(np.isnan(u) & np.isnan(v), 0.0, diff)
                scale = np.maximum(np.abs(u), np.abs(v))
                rel = np.divide(diff, scale, out=np.zeros_like(diff), where=scale > 0)
                big, biggest = np.nanmax(diff, initial=0.0), np.nanmax(rel, initial=0.0)
            else:  # counts, labels, verdicts; lists (object cells) compared whole
                same = np.array([_same(p, q) for p, q in zip(u, v, strict=True)], dtype=bool)
                big = biggest = np.nan
            rows.append({"table": name, "column": col, "cells": len(u),
                         "differ": int((~same).sum()), "bitwise": bool(x[col].equals(y[col])),
                         "max_abs": big, "max_rel": biggest})  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("results/cross_machine"))
    ap.add_argument("--commands", nargs="+", default=list(COMMANDS), choices=list(COMMANDS))
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--atol", type=float, default=1e-8)
    args = ap.parse_args()
    cells = []
    for command in args.commands:
        for profile, env in PROFILES.items():
            folder = args.out / command / profile.replace(", ", "-").replace(" ", "_")
            took = _run(COMMANDS[command], env, folder)
            print(f"{command} / {profile}: {took:.1f} s", flush=True)
            if profile == "native":
                continue
            native = args.out / command / "native"
            for row in compare_tables(native, folder, args.rtol, args.atol):
                cells.append({"command": command, "profile": profile, **row})
    df = pd.DataFrame(cells)
    df.to_csv(args.out / "cells.csv", index=False)
    lines = [
        f"rtol {args.rtol}, atol {args.atol}; against the native run of the same command",
        "",
        "| command | profile | tables bitwise equal | cells | cells beyond tolerance | "
        "largest relative difference | columns beyond tolerance |",
        "|---|---|---|---|---|---|---|",
    ]
    for (command, profile), g in df.groupby(["command", "profile"], sort=False):
        bad = g[g["differ"] > 0]
        names = ", ".join(f"{r.table}.{r.column} ({r.differ})" for r in bad.itertuples()) or "–"
        bitwise = g.groupby("table")["bitwise"].all()
        lines.append(
            f"| {command} | {profile} | {int(bitwise.sum())} of {len(bitwise)} | "
            f"{int(g['cells'].sum())} | {int(g['differ'].sum())} | {g['max_rel'].max():.1e} | "
            f"{names} |"
        )
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
