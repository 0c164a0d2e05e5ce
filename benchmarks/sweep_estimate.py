"""How long a large sweep would take over N workers, from the cell times of a measured one.

    python benchmarks/sweep_estimate.py SWEEP_DIR [--repeat 128] [--kinds streamed=6 chunked=6]
        [--workers 1 8 64 256 1536]

SWEEP_DIR is the folder of a finished ``attnlimits sweep`` whose cells each ran one
normaliser (``[axes] normalizers = [["adaptive"], ["topk:k=64"]]``: one streamed, one
query-chunked, see docs/normalizers.md). Each measured cell stands for its kind; the large
sweep has ``--kinds`` normalisers of each kind, each run ``--repeat`` times (models ×
windows: 8 × 16 = 128 for "8 models × 16 windows × 12 normalisers", every model taken to
cost what the measured one did). The cells' times are scheduled longest first over each
worker count (:func:`attnlimits.experiments.sweep.scaling_table`); a worker is one slot of
the measured machine (here 2 cores running one cell with 2 threads).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from attnlimits.experiments.sweep import scaling_table
from attnlimits.kernels.spec import NORMALIZERS as STREAMED


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep", type=Path)
    ap.add_argument("--repeat", type=int, default=8 * 16)
    ap.add_argument("--kinds", nargs="+", default=["streamed=6", "chunked=6"])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 8, 64, 256, 1536])
    args = ap.parse_args()
    cells = json.loads((args.sweep / "run.json").read_text())["cells"]
    seconds: dict[str, float] = {}
    for cell in cells:
        names = [n for n in cell["axes"]["normalizers"] if n != "softmax"]
        kind = "streamed" if names[0].split(":")[0] in STREAMED else "chunked"
        seconds[kind] = cell["wall_time_s"]
        print(f"measured: {names[0]} ({kind}) {cell['wall_time_s']} s per cell")
    counts = dict(item.split("=") for item in args.kinds)
    times = [seconds[k] for k, n in counts.items() for _ in range(int(n) * args.repeat)]
    print(f"{len(times)} cells, {sum(times) / 3600:.1f} cell-hours")
    table = scaling_table(times, args.workers)
    table["wall_h"] = (table["wall_s"] / 3600).round(2)
    print("| workers | wall time | speed-up | efficiency |\n|---|---|---|---|")
    for r in table.itertuples():
        print(f"| {r.workers} | {r.wall_h} h | {r.speedup} | {r.efficiency} |")


if __name__ == "__main__":
    main()
