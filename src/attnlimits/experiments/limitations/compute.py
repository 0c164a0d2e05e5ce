"""Algorithms 1–5 of *Limitations of Normalization in Attention* (Mudarisov et al., NeurIPS 2025).

One capture pass per token window serves all five algorithms: under a causal mask the attention
of the first L tokens of a window is exactly the top-left L×L block of the window's map (a
causal token never sees later ones), so L ∈ {32, …, 1024} needs one forward pass, not six.
Bidirectional encoders get one pass per L. Each layer is reduced to per-head row means as soon
as it is captured, so memory holds one layer's maps at a time.

Tables (one row per window/layer/head/L/N/T/ε), see :func:`compute`:

- ``distance_grid``: d̃ (Eq. 7), E (Thm 1.2: printed and derived forms; exact, the Monte Carlo
  of Eq. 8), and the Thm 1.1 bound where asked; Alg. 1 is its N = 5 slice, Alg. 2 its
  L = L_max slice, Alg. 3 runs the KS test over it (:mod:`.critical`), on ``ns_alg3`` over
  every row and beyond it, up to 0.9·L, on stratified rows (``rows_sampled``);
- ``alg4``: N_s/N and the Theorem 2 bounds, x on the unit sphere (Assumptions 1–2);
- ``alg5``: finite-difference sensitivity g(T, ε) and the exact Jacobian norm.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import numpy as np
import pandas as pd
import torch
from torch import Tensor
from tqdm.auto import tqdm

from attnlimits.capture import LayerCapture, capture, load_model
from attnlimits.capture.precision import dtype_name
from attnlimits.corpus import describe_text, load_text, spread_windows, text_sha256, token_windows
from attnlimits.experiments._inputs import check_text_room, model_record
from attnlimits.experiments._precision import load_dtype
from attnlimits.experiments.limitations.config import E_FORMS, Config, XSource
from attnlimits.experiments.limitations.cost import estimate
from attnlimits.experiments.limitations.critical import critical_n_table, head_draws_table
from attnlimits.experiments.limitations.exact import exact_means, extension_means
from attnlimits.experiments.store import ResultStore
from attnlimits.metrics import (
    distance_curve,
    finite_difference_sensitivity,
    max_weight,
    min_pairwise_distances,
    normalize_to_sphere,
    row_mean,
    separability_curve,
    softmax_jacobian_norms,
    top_mass,
)
from attnlimits.theory.distance import ExpectedForm, GapForm

__all__ = ["compute", "compute_layer", "critical_n_table", "per_key_vectors"]

# ---- per layer ---------------------------------------------------------------------------------


def per_key_vectors(cap: LayerCapture, source: XSource) -> Tensor:
    """x_i per query head: ``[head, pos, d]`` (values/keys mapped through GQA) or hidden states."""
    if source == "hidden":
        return cap.hidden_in[0].unsqueeze(0).float()  # (1, pos, d_model), shared by every head
    kv = cap.v if source == "values" else cap.k
    return kv[0, cap.kv_head_of].float()  # (head, pos, d)


def _head_rows(values: Tensor, valid: Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row means per head (last axis = rows), with the rows averaged and excluded."""
    rm = row_mean(values, valid)
    return rm.mean.cpu().numpy(), rm.n_rows.cpu().numpy(), rm.n_excluded.cpu().numpy()


def _weight_concentration(
    attn: Tensor, mask: Tensor, plan: dict[int, set[int]]
) -> tuple[Tensor, Tensor]:
    """(ᾱ_N per row over the plan's N grid, sorted as :func:`_distance_rows` grids it; max α_i
    per row): how concentrated a layer's weights are, whatever the x source."""
    ns = sorted(set().union(*plan.values()))
    return top_mass(attn, ns, mask=mask), max_weight(attn, mask=mask)


def _distance_rows(
    attn: Tensor,
    x: Tensor,
    mask: Tensor,
    plan: dict[int, set[int]],
    bound_ns: set[int],
    forms: tuple[ExpectedForm, ...],
    gap_forms: tuple[GapForm, ...],
    concentration: tuple[Tensor, Tensor],
) -> pd.DataFrame:
    """Row-mean d̃, E (each form) and, for N in ``bound_ns``, the Thm 1.1 bound, per head.
    ``concentration``: :func:`_weight_concentration` of ``attn`` on the same grid of N (it does
    not depend on x, so a layer computes it once for every x source).

    ``plan`` maps each L to its N values. The grid is computed once over all rows; the row
    means at L average the first L rows, which is exact under a causal mask: row t's weights
    and keys are the same in every window longer than t (``compute_layer`` checks causality).
    """
    all_ns = sorted(set().union(*plan.values()))
    curve = distance_curve(
        attn, x, all_ns, mask=mask, forms=forms, bound_ns=sorted(bound_ns), gap_forms=gap_forms
    )
    cols = {"distance": curve.distance, "bound": curve.bound}
    # how concentrated the weights are (Theorem 1's remark on ε; the round-4 referee's point
    # 20): ᾱ_N, the top-N mass, and ᾱ_1 = max α_i, row means over the same rows as d̃
    mass, largest = concentration
    cols["top_mass"] = mass.expand_as(curve.distance)
    cols["max_weight"] = largest.unsqueeze(-1).expand_as(curve.distance)
    cols |= {f"gap_bound_{f}": g for f, g in (curve.gap or {}).items()}
    cols |= {c: curve.expected[f] for c, f in E_FORMS.items() if f in forms}
    # row means of the first L rows for every L at once: running sums along the rows, float64
    counts = curve.valid.cumsum(-2)  # (head, Q, n_N)
    sums = {
        k: torch.where(curve.valid, v, torch.zeros_like(v)).double().cumsum(-2)
        for k, v in cols.items()
    }
    heads = attn.shape[0]
    frames = []
    for length, ns in plan.items():
        js = [j for j, n in enumerate(curve.n_values) if n in ns]
        n_rows = counts[:, length - 1, js].cpu()  # (head, n_J)
        block = {
            "L": np.full(n_rows.numel(), length),
            "N": np.tile(np.asarray(curve.n_values)[js], heads),
            "head": np.repeat(np.arange(heads), len(js)),
            "n_rows": n_rows.reshape(-1).numpy(),
            "n_excluded": (length - n_rows).reshape(-1).numpy(),
        }
        for k, v in sums.items():
            block[k] = (v[:, length - 1, js].cpu() / n_rows).reshape(-1).numpy()
        frames.append(pd.DataFrame(block))
    return pd.concat(frames, ignore_index=True)


def compute_layer(
    cap: LayerCapture, cfg: Config, lengths: Iterable[int]
) -> dict[str, pd.DataFrame]:
    """Reduce one captured layer to the rows of the three tables (per head, row-averaged)."""
    attn = cap.weights[0].float()  # (head, Q, K)
    mask = cap.mask[0].expand_as(attn)  # (head, Q, K), True = attend
    top = attn.shape[-1]
    lengths = sorted(lengths)
    if lengths[-1] != top or (len(lengths) > 1 and not cap.causal):
        raise ValueError(
            f"lengths {lengths} need a window of the longest L (got {top}) and, for more than "
            "one L, a causal model (prefix rows); run bidirectional models once per L"
        )
    plan = {length: {cfg.n_alg1, *cfg.alg3_grid(length)[0]} for length in lengths}
    plan[top] |= {n for n in cfg.ns_alg2 if n < top}
    bound_ns = {cfg.n_alg1} | {n for n in cfg.ns_alg2 if n < top}
    # Alg. 3 beyond ns_alg3 (to 0.9·L): per-head means from the stratified rows of E exact
    ext = {length: set(cfg.alg3_grid(length)[1]) - plan[length] for length in lengths}
    ext = {length: ns for length, ns in ext.items() if ns}
    n_keys = mask[0].sum(-1).cpu().numpy()  # (Q,): kept keys per row, the same in every head

    grid: list[pd.DataFrame] = []
    sep: list[dict[str, object]] = []
    forms = cast(tuple[ExpectedForm, ...], tuple(f for f in cfg.e_forms if f != "exact"))
    weights = _weight_concentration(attn, mask, plan)  # the same for every x source
    for si, source in enumerate(cfg.x_sources):
        x = per_key_vectors(cap, source)
        rows = _distance_rows(attn, x, mask, plan, bound_ns, forms, cfg.gap_forms, weights)
        rows["rows_sampled"] = False
        if ext:
            more = extension_means(attn, x, mask, ext, cfg, forms).assign(rows_sampled=True)
            # rows of the first L with ≥ N + 1 keys, as the row means over every row count them
            ok = n_keys[None, :] >= more["N"].to_numpy()[:, None] + 1  # (grid rows, Q)
            ok &= np.arange(n_keys.size)[None, :] < more["L"].to_numpy()[:, None]
            more["n_rows"] = ok.sum(1)
            more["n_excluded"] = more["L"] - more["n_rows"]
            rows = pd.concat([rows, more], ignore_index=True)
        if "exact" in cfg.e_forms:
            seed = cfg.seed + 7919 * cap.layer + 104729 * si + 1
            gen = torch.Generator(device=attn.device).manual_seed(seed)
            exact = [exact_means(attn, x, mask, plan, cfg, gen)]
            if ext:  # fewer draws: at large N the rows, not the draws, make the noise
                exact.append(exact_means(attn, x, mask, ext, cfg, gen, cfg.alg3_mc_samples))
            both = pd.concat(exact, ignore_index=True)
            rows = rows.merge(both, on=["L", "N", "head"], how="left", validate="one_to_one")
        grid.append(rows.assign(x_source=source))

        x_sphere = normalize_to_sphere(x, 1.0)
        # δ per head (Assumption 2) over distinct vectors; Assumption 2 holds iff no duplicate
        delta_all, delta = min_pairwise_distances(x_sphere)
        holds = delta_all > 0
        ns4 = [n for n in cfg.ns_alg4 if n < top]
        sc = separability_curve(attn, x_sphere, ns4, mask=mask, radius=1.0, delta=delta)
        delta_h = delta.reshape(-1).expand(attn.shape[0]).tolist()  # hidden: one δ for all
        holds_h = holds.reshape(-1).expand(attn.shape[0]).tolist()
        for j, n in enumerate(sorted(set(ns4))):
            keys = ("ratio", "lower", "upper")
            means = {k: _head_rows(getattr(sc, k)[..., j], sc.valid[..., j])[0] for k in keys}
            for h in range(attn.shape[0]):
                sep.append(
                    {"x_source": source, "L": top, "N": n, "head": h}
                    | {k: float(v[h]) for k, v in means.items()}
                    | {"delta": delta_h[h], "assumption2": holds_h[h]}
                )

    sens = _sensitivity_rows(cap, cfg, mask)
    columns = ["x_source", *(c for c in grid[0].columns if c != "x_source")]
    return {
        "distance_grid": pd.concat(grid, ignore_index=True)[columns],
        "alg4": pd.DataFrame(sep),
        "alg5": pd.DataFrame(sens),
    }


def _sensitivity_rows(cap: LayerCapture, cfg: Config, mask: Tensor) -> list[dict[str, object]]:
    """Alg. 5 on ``alg5_rows`` evenly spaced rows per head: g(T, ε) (the mean over rows, the
    paper's statistic, and the max over rows, another reading) and the exact ‖J‖₂."""
    scores = cap.scores[0].float()  # (head, Q, K): the model's q·kᵀ·scaling
    logits = scores / cap.scaling if cfg.logits == "raw" else scores
    q = logits.shape[-2]
    rows_idx = torch.linspace(1, q - 1, min(cfg.alg5_rows, q - 1)).round().long().unique()
    logits, mask = logits[:, rows_idx], mask[:, rows_idx]
    gen = torch.Generator(device=logits.device).manual_seed(cfg.seed + 7919 * cap.layer)
    fd = finite_difference_sensitivity(
        logits, cfg.temperatures, cfg.epsilons, mask=mask, generator=gen
    )  # values: (head, rows, n_T, n_eps)
    jac = softmax_jacobian_norms(logits, cfg.temperatures, mask=mask)  # (head, rows, n_T)
    out: list[dict[str, object]] = []
    for ti, t in enumerate(cfg.temperatures):
        norms = jac.values[..., ti]
        jac_mean, _, _ = _head_rows(norms, jac.valid)
        jac_max = torch.where(jac.valid, norms, torch.zeros_like(norms)).amax(-1)
        for ei, eps in enumerate(cfg.epsilons):
            values = fd.values[..., ti, ei]  # (head, rows)
            g, n_rows, _ = _head_rows(values, fd.valid)
            g_max = torch.where(fd.valid, values, torch.zeros_like(values)).amax(-1)
            for h in range(logits.shape[0]):
                out.append(
                    {
                        "T": t,
                        "eps": eps,
                        "head": h,
                        "sensitivity": float(g[h]),
                        "sensitivity_row_max": float(g_max[h]),
                        "jacobian_norm": float(jac_mean[h]),
                        "jacobian_norm_max": float(jac_max[h]),
                        "n_rows": int(n_rows[h]),
                    }
                )
    return out


# ---- the run -----------------------------------------------------------------------------------


def compute(cfg: Config, store: ResultStore, *, progress: bool = True) -> dict[str, pd.DataFrame]:
    """Algorithms 1–5 over the run's windows; per-layer parts make an interrupted run resumable."""
    text = load_text(cfg.text)  # a bad text fails before the model loads
    sha = text_sha256(text)
    source = describe_text(cfg.text)
    check_text_room(text, source, cfg.max_length, cfg.windows, "window")  # as scan and compare
    allow = cfg.allow_incomplete_weights  # else weights lacking tensors are refused by name
    dtype = load_dtype(cfg, estimate)  # auto: float32 where it fits (one line on stderr if not)
    loaded = load_model(cfg.model, device=cfg.device, dtype=dtype, allow_incomplete_weights=allow)
    info = loaded.info
    if info.max_context is not None and cfg.max_length > info.max_context:
        raise ValueError(
            f"L = {cfg.max_length} exceeds {cfg.model}'s context of {info.max_context} tokens"
        )
    windows: dict[str, object] = {"placement": cfg.placement}
    if cfg.placement == "spread":
        spread = spread_windows(loaded.tokenizer, text, cfg.max_length, cfg.windows, source=source)
        ids = spread.ids
        windows["char_starts"] = list(spread.char_starts)
        windows["first_lines"] = list(spread.first_lines)
    else:
        ids = token_windows(loaded.tokenizer, text, cfg.max_length, cfg.windows, source=source)
        windows |= {"token_starts": [w * cfg.max_length for w in range(cfg.windows)]}
    windows["token_sha256"] = [text_sha256(",".join(map(str, r)).encode()) for r in ids.tolist()]
    params = cfg.cache_params(cfg.model, sha) | {"model_content": loaded.content}
    params["dtype"] = dtype_name(loaded.model.dtype)  # the weights' precision, auto resolved
    store.update_meta(
        model=model_record(cfg.model, loaded),
        text={"sha256": sha, "source": source, "chars": len(text)},
        windows=windows,
    )
    # one forward per window for causal models (prefix blocks), one per L otherwise
    passes = [(w, cfg.max_length, tuple(cfg.lengths)) for w in range(cfg.windows)]
    if not info.causal:
        passes = [(w, length, (length,)) for w in range(cfg.windows) for length in cfg.lengths]
    tables: dict[str, list[pd.DataFrame]] = {"distance_grid": [], "alg4": [], "alg5": []}
    bar = tqdm(total=len(passes) * info.n_layers, desc="layers", disable=not progress, unit="layer")
    with store.timed("capture_and_metrics"):
        for w, length, served in passes:
            key = f"w{w}-L{length}"
            todo = [
                i for i in range(info.n_layers) if not store.has_part("alg5", params, f"{key}-l{i}")
            ]

            def on_layer(
                cap: LayerCapture, w: int = w, served: tuple[int, ...] = served, key: str = key
            ) -> None:
                for name, df in compute_layer(cap, cfg, served).items():
                    df.insert(0, "layer", cap.layer)
                    df.insert(0, "window", w)
                    store.save_part(name, params, f"{key}-l{cap.layer}", df)
                bar.update(1)

            bar.update(info.n_layers - len(todo))
            if todo:
                capture(loaded, ids[w : w + 1, :length], on_layer=on_layer, layers=todo)
            for name in tables:
                tables[name] += [
                    store.load_part(name, params, f"{key}-l{i}") for i in range(info.n_layers)
                ]
    bar.close()
    grid = pd.concat(tables["distance_grid"], ignore_index=True)
    results = {
        "distance_grid": grid,
        "alg1": grid[grid["N"] == cfg.n_alg1].reset_index(drop=True),
        "alg2": grid[(grid["L"] == cfg.max_length) & grid["N"].isin(cfg.ns_alg2)].reset_index(
            drop=True
        ),
        "alg4": pd.concat(tables["alg4"], ignore_index=True),
        "alg5": pd.concat(tables["alg5"], ignore_index=True),
    }
    grids = {length: sum(cfg.alg3_grid(length), ()) for length in cfg.lengths}
    with store.timed("critical_n"):  # windows pooled (window −1), then each window alone
        alg3 = {
            (s, -1): critical_n_table(g, grids, cfg.ks_alpha) for s, g in grid.groupby("x_source")
        }
        if cfg.windows > 1:
            alg3 |= {
                (s, int(w)): critical_n_table(g, grids, cfg.ks_alpha)
                for (s, w), g in grid.groupby(["x_source", "window"])
            }
        for i, name in enumerate(("alg3", "alg3_tests")):
            results[name] = pd.concat(
                [t[i].assign(x_source=s, window=w) for (s, w), t in alg3.items()],
                ignore_index=True,
            )
    with store.timed("critical_n_head_draws"):  # the paper's head count, windows pooled
        draws = [
            head_draws_table(
                g, grids, cfg.ks_alpha, cfg.alg3_heads, cfg.alg3_draws, cfg.seed
            ).assign(x_source=s)
            for s, g in grid.groupby("x_source")
        ]
        results["alg3_heads"] = pd.concat(draws, ignore_index=True)
    for df in results.values():
        df.insert(0, "model", cfg.model)
    return results
