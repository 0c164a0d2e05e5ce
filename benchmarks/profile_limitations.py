"""Where a limitations run spends its time: one window, per part, per layer.

    python benchmarks/profile_limitations.py [--model smollm2-135m] [--layers 0 5 15 29]
        [--length 1024] [--repeats 3] [--out results/profile_limitations]

Captures the chosen layers of the model on the first ``--length`` tokens of *War and Peace*
(one forward pass, timed with and without the capture hooks), then times each part that
``experiments.limitations.compute_layer`` runs for a layer, with the run's default
:class:`~attnlimits.experiments.limitations.Config`, per x source:

- ``distance grid``: :func:`~attnlimits.metrics.distance_curve` over every N of Alg. 1–3
  (printed and derived E, the Thm 1.1 bound at Alg. 1/2's N) and the row means of every L;
- ``E exact``: the Monte Carlo of Eq. 8 on the stratified rows;
- ``δ``: the pairwise distances of Assumption 2;
- ``Alg. 4``: :func:`~attnlimits.metrics.separability_curve`;
- ``Alg. 5`` (once per layer; logits only): finite differences and the exact Jacobian norm.

Each figure is the median of ``--repeats`` runs. Prints a Markdown table (per layer, mean
over the layers given) and the extrapolation to a whole run (layers × windows), and writes
``profile.{csv,md}`` and ``summary.json`` under ``--out``. Results: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from attnlimits.capture import capture, load_model
from attnlimits.corpus import load_text, token_windows
from attnlimits.experiments import _allocator
from attnlimits.experiments.limitations import Config
from attnlimits.experiments.limitations.exact import exact_means
from attnlimits.experiments.report import markdown_table
from attnlimits.experiments.store import machine_info
from attnlimits.metrics import min_pairwise_distances, normalize_to_sphere, separability_curve

compute = importlib.import_module("attnlimits.experiments.limitations.compute")


def timed(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def stage_parts(cap: Any, cfg: Config, source: str, length: int) -> dict[str, Callable[[], Any]]:
    """The parts ``compute_layer`` runs for one captured layer and x source, as callables
    (the order and grids of a run); ``benchmarks/floors.py`` times them too."""
    attn = cap.weights[0].float()
    mask = cap.mask[0].expand_as(attn)
    top = attn.shape[-1]
    lengths = [n for n in cfg.lengths if n <= length]
    plan = {n: {cfg.n_alg1, *(m for m in cfg.ns_alg3 if m < n)} for n in lengths}
    plan[top] |= {n for n in cfg.ns_alg2 if n < top}
    bound_ns = {cfg.n_alg1} | {n for n in cfg.ns_alg2 if n < top}
    forms = ("derived", "main_text")
    x = compute.per_key_vectors(cap, source)
    xs = normalize_to_sphere(x, 1.0)
    delta = min_pairwise_distances(xs)[1]
    ns4 = [n for n in cfg.ns_alg4 if n < top]
    gen = torch.Generator().manual_seed(0)
    return {
        # a run computes the weights' concentration once per layer and shares it between the x
        # sources; timed here inside each source's grid (an upper bound on its share)
        "distance grid (d̃, E printed + derived, bound, Jensen gap, top-N mass, row means)": (
            lambda: compute._distance_rows(
                attn,
                x,
                mask,
                plan,
                bound_ns,
                forms,
                cfg.gap_forms,
                compute._weight_concentration(attn, mask, plan),
            )
        ),
        "E exact (Monte Carlo)": partial(exact_means, attn, x, mask, plan, cfg, gen),
        "δ (Assumption 2)": partial(min_pairwise_distances, xs),
        "Alg. 4 (separability)": partial(
            separability_curve, attn, xs, ns4, mask=mask, radius=1.0, delta=delta
        ),
    }


def sensitivity_part(cap: Any, cfg: Config) -> Callable[[], Any]:
    """Alg. 5 of one captured layer (once per layer; logits only), as a callable."""
    attn = cap.weights[0]
    return partial(compute._sensitivity_rows, cap, cfg, cap.mask[0].expand_as(attn))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--layers", type=int, nargs="+", default=[0, 5, 15, 29])
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("results/profile_limitations"))
    args = parser.parse_args()
    _allocator.tune()  # as a run does (experiments.skeleton): freed temporaries reused
    cfg = Config.preset(model=args.model)
    loaded = load_model(args.model)
    ids = token_windows(loaded.tokenizer, load_text(), args.length, 1)
    caps: dict[int, Any] = {}

    def hooked() -> None:
        capture(loaded, ids, on_layer=lambda c: caps.__setitem__(c.layer, c), layers=args.layers)

    def hooked_all() -> None:  # every layer captured (maps, q, k, v) and dropped, as a run does
        capture(loaded, ids, on_layer=lambda c: None)

    def plain() -> None:
        with torch.no_grad():
            loaded.model(ids)

    n_layers = loaded.info.n_layers
    rows: list[dict[str, Any]] = [
        {"part": "forward pass, whole model, no hooks", "x": "—", "s": timed(plain, 3) / n_layers},
        {"part": "forward pass capturing every layer (per layer)", "x": "—",
         "s": timed(hooked_all, 3) / n_layers},
    ]  # fmt: skip
    hooked()
    for layer in args.layers:
        cap = caps[layer]
        for source in cfg.x_sources:
            for part, fn in stage_parts(cap, cfg, source, args.length).items():
                rows.append(
                    {"part": part, "x": source, "layer": layer, "s": timed(fn, args.repeats)}
                )
        fn = sensitivity_part(cap, cfg)
        s = timed(fn, args.repeats)
        rows.append({"part": "Alg. 5 (sensitivity, ‖J‖₂)", "x": "—", "layer": layer, "s": s})
    df = pd.DataFrame(rows)
    table = df.groupby(["part", "x"], sort=False)["s"].mean().reset_index()
    table = table.rename(columns={"s": "seconds per layer (mean over layers)"})
    per_layer = float(table.iloc[1:, 2].sum())  # hooked forward + every part
    windows = Config().windows
    summary = {
        "model": args.model,
        "layers": args.layers,
        "length": args.length,
        "repeats": args.repeats,
        "seconds_per_layer": per_layer,
        "estimate_whole_run_s": per_layer * n_layers * windows,
        "windows": windows,
        "machine": machine_info(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "profile.csv", index=False)
    md = markdown_table(table)
    (args.out / "profile.md").write_text(md + "\n")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(md)
    print(
        f"\nper layer {per_layer:.2f} s; × {n_layers} layers × {windows} windows ≈ "
        f"{summary['estimate_whole_run_s'] / 60:.1f} min for {args.model} (plus load and report)"
    )


if __name__ == "__main__":
    main()
