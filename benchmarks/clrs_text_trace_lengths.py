"""Tokens of a CLRS-Text question and answer per algorithm, length and format (issue 41).

    python benchmarks/clrs_text_trace_lengths.py [--algorithms all] [--samples 20]
        [--out docs/data/clrs_text/trace_lengths.csv]

Our tokenizer is bytes, so tokens are the bytes of question + answer, mean over ``--samples`` (10)
questions of dm-clrs 2.0.3's generator (training seed 0), in the trace format
(``use_hints=True``, CLRS-Text's) and the answer format. The CSV feeds docs/clrs_text.md's
table; ``--fit`` prints, per algorithm, the cubic in the length (coefficients ≥ 0) that cost.py's
``_TRACE_BYTES`` holds.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from attnlimits.experiments.clrs_text._clrs_import import generate
from attnlimits.experiments.clrs_text.data import ALGORITHMS, check_algorithms

LENGTHS = (4, 5, 6, 7, 8, 10, 12, 14, 16)


def measure(algorithms: tuple[str, ...], lengths: tuple[int, ...], samples: int) -> pd.DataFrame:
    rows = []
    for a in algorithms:
        for n in lengths:
            for fmt in ("trace", "answer"):
                got = generate(a, n, samples, 0, use_hints=fmt == "trace")
                tokens = [len(g["question"]) + len(g["answer"]) for g in got]
                rows.append({"algorithm": a, "length": n, "format": fmt,
                             "tokens": round(float(np.mean(tokens)))})  # fmt: skip
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algorithms", default="all")
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path("docs/data/clrs_text/trace_lengths.csv"))
    ap.add_argument("--fit", action="store_true")
    args = ap.parse_args()
    algos = check_algorithms(args.algorithms.split(","))
    table = measure(algos if algos != ("all",) else ALGORITHMS, LENGTHS, args.samples)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    wide = table.pivot_table(index=["algorithm", "format"], columns="length", values="tokens")
    print(wide.to_string())
    if args.fit:
        for (a, fmt), g in table.groupby(["algorithm", "format"]):
            if fmt == "trace":
                n = g["length"].to_numpy(float)
                c, _ = nnls(np.stack([n**0, n, n**2, n**3], 1), g["tokens"].to_numpy(float))
                print(f'    "{a}": ({c[0]:.1f}, {c[1]:.2f}, {c[2]:.3f}, {c[3]:.4f}),')


if __name__ == "__main__":
    main()
