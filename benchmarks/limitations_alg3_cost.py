"""What Alg. 3's grid beyond ``ns_alg3`` (up to 0.9·L) costs a limitations run, as ratios.

    python benchmarks/limitations_alg3_cost.py [--layers 3] [--repeats 3]

Two parts of the run grow with the longer grid (paper A, Alg. 3):

- per layer, ``compute_layer`` adds d̃ and the closed forms on the stratified rows and a second
  Monte Carlo of E exact at the extended N (``exact.extension_means``, ``exact_means``);
- after the layers, the KS tests run at more N, and again on seeded draws of 144 heads.

The script captures ``--layers`` layers of SmolLM2 on the run's first window (L = 1024) and
times ``compute_layer`` with the default Config against the same Config without the extension,
interleaved, best of ``--repeats``; then ``critical_n_table`` over every layer's grid with the
extended grid against ``ns_alg3`` alone, and ``head_draws_table``. It prints ratios (with the
absolute best times, which mean little on a shared machine: compare the ratios).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import pandas as pd
import torch

from attnlimits.capture import LayerCapture, capture, load_model
from attnlimits.corpus import load_text, spread_windows
from attnlimits.experiments.limitations import Config, compute_layer
from attnlimits.experiments.limitations.critical import critical_n_table, head_draws_table


class _BaseGrid(Config):
    """The default Config with Alg. 3's grid cut to ``ns_alg3`` (the grid before the
    extension)."""

    def alg3_grid(self, length: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return super().alg3_grid(length)[0], ()


def best(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(2)
    cfg, base = Config(), _BaseGrid()
    loaded = load_model(cfg.model)
    ids = spread_windows(loaded.tokenizer, load_text(), cfg.max_length, cfg.windows).ids
    caps: list[LayerCapture] = []
    capture(loaded, ids[0:1], on_layer=caps.append, layers=list(range(args.layers)))
    lengths = tuple(cfg.lengths)
    t = {"extended": 0.0, "base": 0.0}
    grids: list[pd.DataFrame] = []
    for cap in caps:  # interleaved: each layer timed both ways, best of the repeats
        t["base"] += best(lambda c=cap: compute_layer(c, base, lengths), args.repeats)
        t["extended"] += best(lambda c=cap: compute_layer(c, cfg, lengths), args.repeats)
        grid = compute_layer(cap, cfg, lengths)["distance_grid"].assign(layer=cap.layer, window=0)
        grids.append(grid)
    grid = pd.concat(grids, ignore_index=True)
    grid = grid[grid["x_source"] == cfg.x_sources[0]]
    ext = {length: sum(cfg.alg3_grid(length), ()) for length in lengths}
    old = {length: base.alg3_grid(length)[0] for length in lengths}
    ks = {"extended": 0.0, "base": 0.0}
    for _ in range(args.repeats):
        ks["base"] += best(lambda: critical_n_table(grid, old, cfg.ks_alpha), 1)
        ks["extended"] += best(lambda: critical_n_table(grid, ext, cfg.ks_alpha), 1)
    heads = 12  # fewer heads than the grid holds, so the draws run (144 on the whole model)
    draws = best(
        lambda: head_draws_table(grid, ext, cfg.ks_alpha, heads, cfg.alg3_draws, 0), args.repeats
    )
    print(f"compute_layer, {len(caps)} layers of {cfg.model} at L = {cfg.max_length}:")
    print(f"  base grid {t['base']:.2f} s, extended {t['extended']:.2f} s, "
          f"ratio {t['extended'] / t['base']:.2f}")  # fmt: skip
    print(f"critical_n_table over those layers, {len(cfg.x_sources[:1])} x source:")
    print(f"  base grid {ks['base']:.3f} s, extended {ks['extended']:.3f} s, "
          f"ratio {ks['extended'] / ks['base']:.2f}")  # fmt: skip
    print(f"head_draws_table ({cfg.alg3_draws} draws): {draws:.3f} s")


if __name__ == "__main__":
    main()
