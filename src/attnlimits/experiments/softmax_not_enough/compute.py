"""*Softmax is not Enough* (Veličković et al., 2025) end to end: one config, one results folder.

Computes, resumable through one :class:`~attnlimits.experiments.store.ResultStore`:

1. the max-retrieval benchmark, softmax vs adaptive temperature at inference only, over seeds
   (:func:`.seeds.run_max_retrieval`; Figs. 2/7 and 9 analogues);
2. the App. F refit of the adaptive-temperature polynomial on the points of every seed's
   model, pooled (Fig. 6 analogue; per-seed fits beside it);
3. the Fig. 5 analogue: entropy against temperature for logit vectors of growing spread
   (Proposition 3.2: dH/dβ = −β Var_p(e) ≤ 0, so entropy rises monotonically with T);
4. optionally, the ablation (schedule × regulariser × variant, and the training length) and
   the cross-normaliser table (every trainable registry normaliser).

Every setting's label (*paper*, *lost in our copy*, *ours*) goes into ``run.json`` as
``setup`` (:func:`.provenance.provenance_table`).

Dispersion in a real LM is the separate experiment :mod:`attnlimits.experiments.long_context`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from attnlimits.experiments.softmax_not_enough.config import (
    TRAINED,
    Config,
    CrossConfig,
    NormSpec,
    TemperatureFitConfig,
)
from attnlimits.experiments.softmax_not_enough.provenance import provenance_table
from attnlimits.experiments.softmax_not_enough.seeds import (
    run_ablation,
    run_cross_normalizers,
    run_max_retrieval,
    softmax_model,
    trained_model,
)
from attnlimits.experiments.softmax_not_enough.temperature_fit import (
    fold_norms,
    refit_norms,
    run_temperature_fit,
)
from attnlimits.experiments.store import ResultStore
from attnlimits.metrics import entropy_from_scores

__all__ = ["compute", "entropy_vs_temperature"]


def entropy_vs_temperature(
    spreads: tuple[float, ...], n: int = 64, temperatures: np.ndarray | None = None, seed: int = 0
) -> pd.DataFrame:
    """H(softmax(e/T)) over a T grid for n logits drawn uniformly in [0, spread] (Prop. 3.2)."""
    temps = np.logspace(-2, 2, 41) if temperatures is None else temperatures
    gen = torch.Generator().manual_seed(seed)
    base = torch.rand(n, generator=gen, dtype=torch.float64)
    rows = []
    for spread in spreads:
        logits = base * spread
        ent = [float(entropy_from_scores(logits, float(t))) for t in temps]
        rows += [
            {"spread": spread, "T": float(t), "entropy": h} for t, h in zip(temps, ent, strict=True)
        ]
    return pd.DataFrame(rows)


def compute(cfg: Config, store: ResultStore, *, progress: bool = True) -> dict[str, pd.DataFrame]:
    """Everything ``cfg`` asks for, as tables (resumable through checkpoints and parts).

    Order: train every seed (one batched model); the App. F refit on its logits; one
    evaluation pass for softmax, adaptive temperature and adaptive with the refit polynomial;
    then the ablation and the cross-normaliser table if asked for.
    """
    bench = cfg.benchmark()
    quick = cfg.preset == "quick"
    fit_cfg = TemperatureFitConfig(sets_per_size=50) if quick else TemperatureFitConfig()
    store.update_meta(benchmark=bench)
    if cfg.temperature_fit:
        store.update_meta(temperature_fit=fit_cfg)
    meta = store.meta
    setup = provenance_table(meta["benchmark"], meta.get("temperature_fit"), meta.get("params"))
    store.update_meta(setup=setup.to_dict("records"))
    tables: dict[str, pd.DataFrame] = {}
    extra: dict[str, NormSpec] = {}
    if cfg.temperature_fit:
        with store.timed("max_retrieval.train"):
            model, _ = trained_model(bench, store, softmax_model(bench))
        tables |= run_temperature_fit(model, fit_cfg, store, train_cfg=bench.train)
        extra = refit_norms(tables["temperature_fit_coeffs"], fit_cfg.threshold)
        if "temperature_fit_folds" in tables:  # the refits judged on held-out seeds
            extra |= fold_norms(tables["temperature_fit_folds"], fit_cfg.threshold)
    tables |= run_max_retrieval(bench, store, extra_norms=extra)
    tables["entropy_vs_temperature"] = entropy_vs_temperature(cfg.spreads)
    if cfg.ablation:
        tables |= run_ablation(bench, store, cfg.ablation_steps)
    if cfg.normalizers:
        trained = {n: TRAINED.get(n, (n, {})) for n in cfg.normalizers}
        tables |= run_cross_normalizers(CrossConfig(base=bench, trained=trained), store)
    return tables
