"""What drives App. F's β* away from the published polynomial: training length, θ grid, seed.

Paper B's App. F polynomial gives β = 1.27 / 2.10 / 2.25 / 2.39 at H = 1 / 2 / 3 / 4 nats;
the medians of our β* (1/θ*) are two to six times that at H ≥ 2. This script collects App. F's
points (:func:`attnlimits.experiments.softmax_not_enough.temperature_fit.collect_points`) on the
trained softmax models of a steps ablation (``benchmarks/steps_ablation.py``: the default
combination, one batched model of ten seeds per training length, read from its checkpoints;
nothing is trained here) on several θ grids, and prints, per (training length, grid), the
median β* of the points within ±0.25 nats of H = 1 … 4 (seeds pooled), the smallest and the
largest per-seed median, and the median logit spread of the kept inputs (max − min logit),
beside the published polynomial::

    python benchmarks/appf_sensitivity.py results/steps_ablation [--out docs/data/appf]

The grids (all linear, as App. F; its bounds are lost in our copy): the default
0.005 … 2 in steps of 0.005; a lower bound of 0.05 (β* ≤ 20); 0.001 … 2 in steps of 0.001
(β* ≤ 1000, 5× the search); an upper bound of 10 (θ* of inputs whose optimum lies above 2).

``--rule`` instead applies the rule written before its run (docs/max_retrieval.md, "The θ
grid's floor and training-size inputs"; ``softmax_not_enough.appf_match``; since round 4's
point 17 the (F) row's interval rule) to each training length's model: (G) the default
grid's points with θ* raised to each floor 0.20 … 0.50 (``floors.csv``), and (T) App. F's
points collected at the training sizes 2 … 16 only, beside the default procedure's
(``inputs.csv``, one row per inputs and H; ``verdicts.csv``, one row per explanation;
``points.csv``, the points both read, so that a changed rule can be re-judged on them)::

    python benchmarks/appf_sensitivity.py RESULTS --rule --steps 20000 \\
        --out docs/data/appf_sensitivity

RESULTS may be any folder with the default combination's checkpoints (the default run's too).

``--rejudge DIR`` re-judges (G) on the points a ``--rule`` run committed (``DIR/points.csv``,
θ* on the default grid, exact to its step), with no model: it rewrites ``floors.csv`` and the
(G) rows of ``verdicts.csv`` under the rule as it stands (round 6's point 1)::

    python benchmarks/appf_sensitivity.py --rejudge docs/data/appf_sensitivity
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from attnlimits.experiments.softmax_not_enough.appf_match import (
    INTERVAL_RULE,
    SHOWN_FLOORS,
    TRAINING_SETS,
    TRAINING_SIZES,
    floor_table,
    floor_verdict,
    interval_table,
)
from attnlimits.experiments.softmax_not_enough.config import Config, TemperatureFitConfig
from attnlimits.experiments.softmax_not_enough.fits import poly_beta
from attnlimits.experiments.softmax_not_enough.model import make_batch, set_generator
from attnlimits.experiments.softmax_not_enough.seeds import softmax_model
from attnlimits.experiments.softmax_not_enough.temperature_fit import collect_points
from attnlimits.experiments.softmax_not_enough.train import checkpoint_path, train
from attnlimits.normalizers.adaptive import POLY_COEFFS

GRIDS = {
    "0.005…2 step 0.005 (default)": {},
    "0.05…2 step 0.005": {"theta_min": 0.05, "alt_theta_min": None},
    "0.001…2 step 0.001": {"theta_min": 0.001, "theta_step": 0.001, "alt_theta_min": None},
    "0.005…10 step 0.005": {"theta_max": 10.0},
}
H_AT = (1.0, 2.0, 3.0, 4.0)
HALF = 0.25


def _medians(points: pd.DataFrame) -> dict[str, float]:
    out = {}
    for h in H_AT:
        near = points[(points["entropy"] - h).abs() < HALF]
        per_seed = near.groupby("seed")["beta_star"].median()
        out[f"H{h:g}"] = float(near["beta_star"].median()) if len(near) else float("nan")
        out[f"H{h:g} seeds"] = (
            f"{per_seed.min():.3g}–{per_seed.max():.3g}" if len(per_seed) else "—"
        )
    return out


@torch.no_grad()
def _spread(model: torch.nn.Module, fit: TemperatureFitConfig) -> float:
    """Median over the seeds and App. F's sets at n = 512 of max − min attention logit."""
    gen = set_generator(fit.seed, 512, "cpu")
    mc = model.cfg  # type: ignore[attr-defined]
    items, query, _ = make_batch(64, 512, n_classes=mc.n_classes, query_dim=mc.query_dim,
                                 generator=gen, device="cpu")  # fmt: skip
    _, e = model.encode(items, query)  # type: ignore[operator]
    return float((e.amax(-1) - e.amin(-1)).median())


def _rule(
    model: torch.nn.Module, fit: TemperatureFitConfig, steps: int
) -> tuple[pd.DataFrame, ...]:
    """(G) and (T) on one model: the floors' table, the per-H table of both inputs, and the
    verdicts."""
    default = collect_points(model, fit)  # type: ignore[arg-type]
    floors = floor_table(default).assign(steps=steps)
    training_cfg = replace(fit, sizes=TRAINING_SIZES, sets_per_size=TRAINING_SETS)
    training = collect_points(model, training_cfg)  # type: ignore[arg-type]
    inputs, verdicts, kept = [], [], []
    for name, pts in (
        ("default: n = 16 … 2,048, 300 sets per size", default),
        (f"training sizes: n = 2 … 16, {TRAINING_SETS:,} sets per size", training),
    ):
        m = interval_table(pts)  # the (F) row's rule since round 4's point 17
        v = INTERVAL_RULE(list(m["matches"]), int(m["n_seeds"].iloc[0]))
        h = f"{pts['entropy'].min():.2f}–{pts['entropy'].max():.2f}" if len(pts) else "—"
        inputs.append(m.assign(steps=steps, inputs=name, points=len(pts), entropy_range=h))
        cols = ["seed", "size", "set", "entropy", "theta_star"]  # β* = 1/θ*
        kept.append(pts[cols].assign(steps=steps, inputs=name.split(":")[0]))
        verdicts.append({"steps": steps, "explanation": f"rule on {name}", "verdict": v})
    shown = floors[floors["floor"].isin(SHOWN_FLOORS)]
    verdicts.append(
        {
            "steps": steps,
            "explanation": "(G) grid floor 0.20 … 0.50",
            "verdict": floor_verdict(floors),
        }
    )
    verdicts[-2]["explanation"] = "(T) " + verdicts[-2]["explanation"]
    print(shown.to_markdown(index=False, floatfmt=".3g"), flush=True)
    points = pd.concat(kept, ignore_index=True).round({"entropy": 6, "theta_star": 3})
    return floors, pd.concat(inputs, ignore_index=True), pd.DataFrame(verdicts), points


def rejudge(folder: Path) -> pd.DataFrame:
    """(G) re-judged on ``folder``'s committed points: floors.csv rewritten, the (G) rows of
    verdicts.csv replaced; returns the verdicts."""
    points = pd.read_csv(folder / "points.csv")
    points = points[points["inputs"] == "default"].assign(
        beta_star=lambda p: 1.0 / p["theta_star"], edge=""
    )
    floors, rows = [], []
    for steps, pts in points.groupby("steps", sort=True):
        table = floor_table(pts).assign(steps=steps)
        floors.append(table)
        rows.append({"steps": steps, "verdict": floor_verdict(table)})
    pd.concat(floors, ignore_index=True).to_csv(folder / "floors.csv", index=False)
    verdicts = pd.read_csv(folder / "verdicts.csv")
    for r in rows:
        at = (verdicts["steps"] == r["steps"]) & verdicts["explanation"].str.startswith("(G)")
        verdicts.loc[at, "verdict"] = r["verdict"]
    verdicts.to_csv(folder / "verdicts.csv", index=False)
    return verdicts


def main(argv: list[str] | None = None) -> pd.DataFrame:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--rejudge"] and len(argv) == 2:
        verdicts = rejudge(Path(argv[1]))
        print(verdicts.to_markdown(index=False))
        return verdicts
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="the folder of benchmarks/steps_ablation.py")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--steps", type=int, nargs="+", default=[5000, 10000, 20000])
    ap.add_argument("--out", type=Path, default=None, help="write the CSVs here")
    ap.add_argument("--rule", action="store_true", help="the floors and training-size rule")
    args = ap.parse_args(argv)
    base = Config(seeds=args.seeds).benchmark()
    fit = TemperatureFitConfig()
    paper = poly_beta(np.asarray(H_AT), POLY_COEFFS)
    rows = [
        {"steps": "—", "grid": "published polynomial (App. F listing)", "kept": "—", "spread": "—"}
        | {f"H{h:g}": float(b) for h, b in zip(H_AT, paper, strict=True)}
    ]
    found: list[tuple[pd.DataFrame, ...]] = []
    for steps in args.steps:
        cfg = replace(base, train=replace(base.train, steps=steps))
        mcfg = softmax_model(cfg)
        ckpt = checkpoint_path(args.results / "checkpoints", mcfg, cfg.train, cfg.seeds)
        if not ckpt.is_file():
            raise SystemExit(f"no checkpoint for {steps} steps: {ckpt} (run steps_ablation.py)")
        model, _ = train(mcfg, cfg.train, cfg.seeds, ckpt=ckpt)
        if args.rule:
            found.append(_rule(model, fit, steps))
            continue
        spread = _spread(model, fit)
        for name, change in GRIDS.items():
            points = collect_points(model, replace(fit, **change))
            rows.append({"steps": steps, "grid": name, "kept": len(points),
                         "spread": round(spread, 1)} | _medians(points))  # fmt: skip
            print(rows[-1], flush=True)
    if args.rule:
        names = ("floors", "inputs", "verdicts", "points")
        tables = {
            n: pd.concat([f[i] for f in found], ignore_index=True) for i, n in enumerate(names)
        }
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            for n, t in tables.items():
                t.to_csv(args.out / f"{n}.csv", index=False)
        print(tables["verdicts"].to_markdown(index=False))
        return tables["verdicts"]
    table = pd.DataFrame(rows)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out / "sensitivity.csv", index=False)
    print(table.to_markdown(index=False, floatfmt=".3g"))
    return table


if __name__ == "__main__":
    main()
