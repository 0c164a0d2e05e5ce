"""Each workload beside its floor, measured in the same run: time, floor, ratio (issue 45).

    python benchmarks/floors.py                       # every workload; writes the CSV table
    python benchmarks/floors.py --only compare scan   # some; their rows replace theirs in the CSV
    python benchmarks/floors.py --quick --out /tmp/floors.csv   # small shapes, seconds
    python benchmarks/floors.py --only paper-b --neighbours 1     # beside a busy neighbour
    python benchmarks/floors.py --doc                 # docs/benchmarks.md's block from the CSV
    python benchmarks/floors.py --doc --check         # exit 1 if the block is stale

Workloads (``--only`` names) and their floors:

- ``paper-b``: paper B's training per step against the paper's listing in JAX (``_floors_b``);
- ``compare``: each normaliser's forward against the same forward through SDPA (``_floors_lm``);
- ``limitations``: paper A's per-layer stages against their arithmetic floors (``_floors_a``);
- ``backward``: the streamed forward + backward against SDPA's (``_floors_lm``);
- ``scan``: one window's pass against one SDPA forward per length (``_floors_lm``).

Every row of the CSV (docs/data/benchmarks/floors.csv) carries the machine: its kind (AVX2 or
AVX-512, from /proc/cpuinfo's flags), CPU model, cores, torch version, threads, OpenMP's wait
policy, the load average when the run started and ended, and the date. Like the ``attnlimits``
command, the run waits passively for OpenMP threads unless ``OMP_WAIT_POLICY`` is set
(src/attnlimits/_openmp.py). Timings are best-of-N, interleaved with their floor where both
are whole forwards, so a ratio compares calls that shared the machine's load.

``--neighbours N`` runs the workloads beside N busy-loop processes (``neighbour.py``'s), the
loaded machine of issue 45: a workload and its floor then share the cores with them alike. Its
rows carry ``neighbours = N`` and join the table beside the same workload's unloaded rows.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the _floors_* helpers

import pandas as pd

import _floors_a
import _floors_b
import _floors_lm
from _floors_common import COLUMNS, machine
from neighbour import beside

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "docs" / "data" / "benchmarks" / "floors.csv"
DOC = ROOT / "docs" / "benchmarks.md"
WORKLOADS: dict[str, Callable[[bool], list[dict[str, Any]]]] = {
    "paper-b": _floors_b.rows,
    "compare": _floors_lm.compare_rows,
    "limitations": _floors_a.rows,
    "backward": _floors_lm.backward_rows,
    "scan": _floors_lm.scan_rows,
}


def measure(names: list[str], quick: bool, neighbours: int = 0) -> pd.DataFrame:
    """Run each named workload (beside ``neighbours`` busy loops); one table, every row with
    the machine's columns."""
    start = machine(os.getloadavg()[0])
    rows = []
    with beside(neighbours):
        for name in names:
            for r in WORKLOADS[name](quick):
                rows.append(r | {"name": name})
                print(f"{r['workload']:20} {r['stage']:42} {r['time_s']:9.4f} s  floor "
                      f"{r['floor_s']:9.4f} s  ratio {r['ratio']:6.2f}", flush=True)  # fmt: skip
    df = pd.DataFrame(rows)
    for key, value in start.items():
        df[key] = value
    df["load_end"] = round(os.getloadavg()[0], 2)
    df["quick"] = quick
    df["neighbours"] = neighbours
    return df[COLUMNS]


def merged(new: pd.DataFrame, path: Path) -> pd.DataFrame:
    """``new`` with the rows of the (workload, neighbours) pairs it did not run kept from
    ``path``'s table: a loaded run replaces only the loaded rows of its workloads."""
    if not path.is_file():
        return new
    old = pd.read_csv(path)
    if "neighbours" not in old:  # a table written before --neighbours: every run unloaded
        old["neighbours"] = 0
    order = {n: i for i, n in enumerate(WORKLOADS)}
    ran = set(zip(new["name"], new["neighbours"], strict=True))
    keep = [(n, k) not in ran for n, k in zip(old["name"], old["neighbours"], strict=True)]
    both = pd.concat([old[keep], new], ignore_index=True)
    both["order"] = both["name"].map(order)
    return both.sort_values(["order", "neighbours"], kind="stable")[COLUMNS]


def render(df: pd.DataFrame) -> str:
    """docs/benchmarks.md's floors block: the machine lines, then one row per stage."""
    lines = []
    runs = df.drop_duplicates(["date", "kind", "cpu", "load_start", "load_end", "quick",
                               "neighbours"])  # fmt: skip
    for r in runs.itertuples():
        names = ", ".join(df.loc[df["date"].eq(r.date) & df["load_start"].eq(r.load_start),
                                 "name"].unique())  # fmt: skip
        lines.append(
            f"- {names}: {r.date}, {r.kind} ({r.cpu}), {r.cores} cores, torch {r.torch}, "
            f"{r.threads} threads, OMP_WAIT_POLICY {r.omp_wait_policy}, load average "
            f"{r.load_start:.2f} at the start and {r.load_end:.2f} at the end"
            + (f" — **beside {r.neighbours} busy neighbour(s)**" if r.neighbours else "")
            + (" — **quick shapes** (`--quick`), not the workloads' own" if r.quick else "")
        )
    lines += ["", "| workload | stage | time (s) | floor (s) | ratio | the floor | note |",
              "|---|---|---:|---:|---:|---|---|"]  # fmt: skip
    for r in df.itertuples():
        note = "" if pd.isna(r.note) else r.note
        stage = r.stage + (f", beside {r.neighbours} busy neighbour(s)" if r.neighbours else "")
        lines.append(f"| {r.workload} | {stage} | {r.time_s:.4g} | {r.floor_s:.4g} | "
                     f"{r.ratio:.2f} | {r.floor} | {note} |")  # fmt: skip
    return "\n".join(lines)


def write_doc(csv: Path, doc: Path, check: bool) -> int:
    from attnlimits.experiments.report import fill

    text = doc.read_text()
    new = fill(text, {"floors": render(pd.read_csv(csv))})
    if check:
        if new != text:
            print(f"stale: python benchmarks/floors.py --doc (from {csv})", file=sys.stderr)
        return int(new != text)
    doc.write_text(new)
    return 0


def main() -> None:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads, as the command does
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    ap.add_argument("--quick", action="store_true", help="small shapes: seconds, not minutes")
    ap.add_argument("--out", type=Path, default=None, help=f"the CSV (default {CSV})")
    ap.add_argument("--doc", action="store_true", help="write docs/benchmarks.md's block only")
    ap.add_argument("--check", action="store_true", help="with --doc: exit 1 if stale")
    ap.add_argument("--neighbours", type=int, default=0, metavar="N",
                    help="run beside N busy-loop processes (a loaded machine)")  # fmt: skip
    a = ap.parse_args()
    if a.neighbours < 0:
        ap.error("--neighbours must be 0 or more")
    out = a.out or (CSV if not a.quick else Path("results/floors/quick.csv"))
    if a.doc:
        raise SystemExit(write_doc(a.out or CSV, DOC, a.check))
    table = merged(measure(a.only, a.quick, a.neighbours), out)
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False)
    print(f"wrote {out}" + ("; docs: python benchmarks/floors.py --doc" if out == CSV else ""))


if __name__ == "__main__":
    main()
