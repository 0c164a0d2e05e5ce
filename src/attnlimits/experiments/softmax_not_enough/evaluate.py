"""Accuracy of a max-retrieval model at the training size and out of distribution (App. A),
the attention profile (Figs. 2/7 analogue) and the tables: intervals and the paired test over
seeds *and* test sets (:mod:`.uncertainty`), beside the paper's paired t-test over seeds."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from attnlimits import theory
from attnlimits.claims.statistics import LEVEL, difference_interval
from attnlimits.experiments.softmax_not_enough.config import EvalConfig, NormSpec
from attnlimits.experiments.softmax_not_enough.model import (
    MaxRetrievalModel,
    make_batch,
    normalise,
    set_generator,
)
from attnlimits.experiments.softmax_not_enough.uncertainty import (
    pack_hits,
    seeds_by_sets,
    unpack_hits,
)

__all__ = [
    "LEVEL",
    "P_BOOT_ROW",
    "P_TTEST_ROW",
    "attention_profile",
    "evaluate",
    "gain_matrix",
    "paired_t",
    "paired_table",
    "pooled_gain",
    "set_attention",
    "summary_table",
]


@torch.no_grad()
def evaluate(
    model: MaxRetrievalModel,
    cfg: EvalConfig,
    norms: Mapping[str, NormSpec] | None = None,
    *,
    progress: bool = False,
) -> pd.DataFrame:
    """Accuracy per (normaliser label, seed, size); one pass over the data serves every
    normaliser and every seed of the stacked model (all see the same sets).

    Sets are drawn in chunks until every (normaliser, seed) cell's binomial SE is at most
    ``cfg.target_se`` (from ``cfg.min_sets`` on) or ``cfg.sets_at(n)`` is reached.
    Returns a tidy table: ``norm, seed, size, n_sets, correct, accuracy, se, hits``; ``se`` is
    the cell's binomial SE, ``hits`` its per-set outcomes in set order, packed
    (:func:`.uncertainty.pack_hits`), for the intervals over seeds and sets.
    """
    norms = dict(norms or {"trained": model.spec})
    device = next(model.parameters()).device
    mc = model.cfg
    model.eval()
    seeds = np.array(model.seeds)
    parts = []
    for n in _progress(cfg.sizes, progress, "eval sizes"):
        gen = set_generator(cfg.seed, n, device)
        per_chunk = max(1, cfg.chunk_items // n)
        cap = cfg.sets_at(n)
        correct = torch.zeros(len(norms), len(seeds), dtype=torch.long)  # (norms, S)
        hits = []  # per chunk (norms, S, b)
        done = 0
        while done < cap:
            b = min(per_chunk, cap - done)
            items, query, target = make_batch(
                b, n, n_classes=mc.n_classes, query_dim=mc.query_dim, generator=gen, device=device
            )
            logits = model.forward_multi(items, query, list(norms.values()))  # each (S, b, C)
            hit = torch.stack([lg.argmax(-1) == target for lg in logits]).cpu()  # (norms, S, b)
            hits.append(hit)
            correct += hit.sum(-1)
            done += b
            if cfg.target_se is not None and done >= cfg.min_sets:
                p = correct.numpy() / done
                if theory.binomial_standard_error(p, done).max() <= cfg.target_se:
                    break
        parts.append(
            pd.DataFrame(
                {
                    "norm": np.repeat(list(norms), len(seeds)),
                    "seed": np.tile(seeds, len(norms)),
                    "size": n,
                    "n_sets": done,
                    "correct": correct.numpy().ravel(),
                    "hits": pack_hits(torch.cat(hits, -1).flatten(0, 1).numpy()),
                }
            )
        )
    df = pd.concat(parts, ignore_index=True)
    df["accuracy"] = df["correct"] / df["n_sets"]
    df["se"] = theory.binomial_standard_error(df["accuracy"].to_numpy(), df["n_sets"].to_numpy())
    return df[[*df.columns.drop("hits"), "hits"]]


@torch.no_grad()
def attention_profile(
    model: MaxRetrievalModel,
    sizes: Sequence[int],
    norms: Mapping[str, NormSpec],
    *,
    n_sets: int = 64,
    seed: int = 0,
    chunk_items: int = 1 << 13,
) -> pd.DataFrame:
    """Mean attention on items ranked by priority (rank 0 = highest) for the Fig. 2/7 analogue.

    Returns ``norm, size, rank, attention`` (mean over ``n_sets`` sets and the model's seeds).
    """
    device = next(model.parameters()).device
    mc = model.cfg
    model.eval()
    parts = []
    for n in sizes:
        gen = set_generator(seed, n, device)
        items, query, _ = make_batch(
            n_sets, n, n_classes=mc.n_classes, query_dim=mc.query_dim, generator=gen, device=device
        )
        order = items[..., 0].argsort(-1, descending=True)  # (B, n)
        per_chunk = max(1, chunk_items // n)  # bounds the [S, sets, n, W] activations
        total = {label: torch.zeros(n, device=device) for label in norms}
        for lo in range(0, n_sets, per_chunk):
            sl = slice(lo, lo + per_chunk)
            _, e = model.encode(items[sl], query[sl])
            for label, spec in norms.items():
                a = normalise(e, spec)  # (S, b, n)
                total[label] += a.gather(-1, order[sl].expand_as(a)).sum((0, 1))
        for label in norms:
            ranked = (total[label] / (n_sets * len(model.seeds))).cpu().numpy()  # (n,)
            parts.append(
                pd.DataFrame({"norm": label, "size": n, "rank": np.arange(n), "attention": ranked})
            )
    return pd.concat(parts, ignore_index=True)


@torch.no_grad()
def set_attention(
    model: MaxRetrievalModel,
    sizes: Sequence[int],
    norms: Mapping[str, NormSpec],
    *,
    n_sets: int = 64,
    seed: int = 0,
    chunk_items: int = 1 << 13,
) -> pd.DataFrame:
    """Per test set, the attention on the desired item (the max-priority one) and Lemma 2.1's
    quantities: the sets of :func:`attention_profile` (same sizes and seed), one row per
    (norm, seed, size, set).

    Columns: ``target`` (the normaliser's attention on the max item), ``top`` (whether the max
    item holds the largest logit: the same for every normaliser, which only rescales the
    logits; Fig. 7's "even in situations where it did not receive the largest logit" is
    ``~top``), ``spread`` (max − min logit of the set, Δ) and ``log_max`` / ``log_min`` (log of
    the largest / smallest softmax coefficient at θ = 1, in float64 from the logits, so that a
    coefficient below float32's range keeps its value: Lemma 2.1's setting, the same on every
    normaliser's rows); ``entropy`` is the normaliser's attention's normalised entropy
    H(α)/log n (0: all on one item, 1: uniform; (1.b)'s statistic), in float64.
    """
    device = next(model.parameters()).device
    mc = model.cfg
    model.eval()
    seeds = np.array(model.seeds)
    parts = []
    for n in sizes:
        gen = set_generator(seed, n, device)
        items, query, _ = make_batch(
            n_sets, n, n_classes=mc.n_classes, query_dim=mc.query_dim, generator=gen, device=device
        )
        per_chunk = max(1, chunk_items // n)  # bounds the [S, sets, n, W] activations
        e = torch.cat(
            [
                model.encode(items[lo : lo + per_chunk], query[lo : lo + per_chunk])[1]
                for lo in range(0, n_sets, per_chunk)
            ],
            dim=1,
        )  # (S, B, n)
        i_max = items[..., 0].argmax(-1)  # (B,): the desired item
        log_a = torch.log_softmax(e.double(), -1)
        common = {
            "seed": np.repeat(seeds, n_sets),
            "size": n,
            "set": np.tile(np.arange(n_sets), len(seeds)),
            "top": (e.argmax(-1) == i_max).cpu().numpy().ravel(),
            "spread": (e.amax(-1) - e.amin(-1)).double().cpu().numpy().ravel(),
            "log_max": log_a.amax(-1).cpu().numpy().ravel(),
            "log_min": log_a.amin(-1).cpu().numpy().ravel(),
        }
        for label, spec in norms.items():
            a = normalise(e, spec)  # (S, B, n)
            target = a.gather(-1, i_max.expand(a.shape[:-1]).unsqueeze(-1)).squeeze(-1)
            on = target.double().cpu().numpy().ravel()
            a64 = a.double()
            h = -torch.special.xlogy(a64, a64).sum(-1) / math.log(n)  # (S, B); 0·log 0 = 0
            parts.append(
                pd.DataFrame(
                    {"norm": label, **common, "target": on, "entropy": h.cpu().numpy().ravel()}
                )
            )
    return pd.concat(parts, ignore_index=True)


def _progress(it: Sequence[Any], on: bool, desc: str) -> Any:
    return tqdm(it, desc=desc, leave=False) if on else it


# ---- tables ------------------------------------------------------------------------------


def summary_table(acc: pd.DataFrame, baseline: str = "softmax") -> pd.DataFrame:
    """Per (norm, mode, size): mean, std and SE over seeds, the paper's paired t-test over
    seeds, and the interval over seeds and test sets (:mod:`.uncertainty`).

    ``acc`` is tidy with columns ``norm, seed, size, accuracy`` (optionally ``mode``, and
    ``n_sets, hits`` from :func:`evaluate` for the intervals over sets). Columns:

    - ``mean``; ``std``, ``se`` = std/√seeds: the spread over seeds only;
    - ``t``, ``p_ttest``: ``scipy.stats.ttest_rel`` against ``baseline``, seeds paired (the
      paper's test; NaN for the baseline or under two paired seeds);
    - ``n_sets``; ``se_seeds_sets``, ``ci_low``, ``ci_high``: the standard error and 95 %
      interval of the mean over seeds and sets (:func:`.uncertainty.seeds_by_sets`);
    - ``diff``, ``diff_low``, ``diff_high``, ``p_value``: the paired difference to
      ``baseline`` on the same seeds and sets, its interval and two-sided p-value.

    Without ``hits`` those columns are NaN.
    """
    acc = acc if "mode" in acc else acc.assign(mode="train")
    base = acc[acc["norm"] == baseline].set_index(["size", "seed"])["accuracy"]
    rows = []
    for (norm, mode, size), grp in acc.groupby(["norm", "mode", "size"], sort=False):
        x = grp.set_index("seed")["accuracy"]
        b = base.xs(size, level="size").reindex(x.index) if size in base.index.levels[0] else None
        p = t = float("nan")
        if norm != baseline and b is not None and b.notna().sum() >= 2:
            ok = b.notna()
            t, p = paired_t(x[ok].to_numpy(float), b[ok].to_numpy(float))
        rows.append(
            {
                "norm": norm,
                "mode": mode,
                "size": size,
                "mean": x.mean(),
                "std": x.std(ddof=1) if len(x) > 1 else float("nan"),
                "se": x.std(ddof=1) / np.sqrt(len(x)) if len(x) > 1 else float("nan"),
                "n_seeds": len(x),
                "n_sets": int(grp["n_sets"].min()) if "n_sets" in grp else -1,
                "t": t,
                "p_ttest": p,
            }
        )
    table = pd.DataFrame(rows)
    sets = _seeds_sets_columns(acc, baseline)
    return table.merge(sets, on=["norm", "mode", "size"], how="left")


def paired_t(x: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The paper's paired t-test over seeds: t and two-sided p of the mean of ``x − b`` on
    its standard error sd/√n and n − 1 degrees of freedom (``scipy.stats.ttest_rel``'s, through
    :func:`attnlimits.claims.statistics.difference_interval`), except where the paired
    differences are equal up to float rounding: there the SD of the differences is taken as 0,
    so t is ±inf and p is 0 (NaN and NaN where every difference is 0). Accuracies are counts
    over n_sets, so seeds that differ by the same count can give differences such as
    0.93 − 0.91 and 0.95 − 0.93 that differ in their last bit, where a t-test divides by
    rounding noise and returns t ≈ 4e14 for inf (issue 54). Real differences between seeds
    differ by at least 1/n_sets, far above the tolerance used here (8 ulp of the largest
    accuracy)."""
    d = np.asarray(x, np.float64) - np.asarray(b, np.float64)
    tol = 8 * np.finfo(float).eps * max(1.0, float(np.abs(x).max()), float(np.abs(b).max()))
    mean = float(d.mean())
    if float(np.abs(d - mean).max()) <= tol:
        return (math.copysign(math.inf, mean), 0.0) if abs(mean) > tol else (math.nan, math.nan)
    r = difference_interval(mean, d.std(ddof=1) / math.sqrt(len(d)), len(d) - 1)
    return float(r.estimate / r.se), float(r.p_value)


_SETS = ["se_seeds_sets", "ci_low", "ci_high", "diff", "diff_low", "diff_high", "p_value"]


def _seeds_sets_columns(acc: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """The intervals over seeds and sets per size (:func:`.uncertainty.seeds_by_sets`), every
    (norm, mode) cell of the size in one call, paired with the baseline cell."""
    keys = ["norm", "mode", "size"]
    if "hits" not in acc:
        return acc[keys].drop_duplicates().assign(**dict.fromkeys(_SETS, np.nan))
    parts = []
    for size, grp in acc.groupby("size", sort=False):
        seeds = np.sort(grp["seed"].unique())
        cells = grp[["norm", "mode"]].drop_duplicates().reset_index(drop=True)
        m = int(grp["n_sets"].max())
        hits = np.zeros((len(cells), len(seeds), m))  # (cells, S, m)
        lens = np.empty(len(cells), int)
        full = True
        for c, cell in enumerate(cells.itertuples(index=False)):  # a handful of cells
            rows = grp[(grp["norm"] == cell.norm) & (grp["mode"] == cell.mode)]
            rows = rows.set_index("seed").reindex(seeds)
            full &= bool(rows["hits"].notna().all()) and rows["n_sets"].nunique() == 1
            if not full:
                break
            lens[c] = int(rows["n_sets"].iloc[0])
            hits[c, :, : lens[c]] = unpack_hits(rows["hits"].to_numpy(), lens[c])
        base = np.flatnonzero(cells["norm"] == baseline)
        if not full:
            parts.append(cells.assign(size=size, **dict.fromkeys(_SETS, np.nan)))
            continue
        r = seeds_by_sets(hits, lens, int(base[0]) if base.size else None, level=LEVEL)
        parts.append(
            cells.assign(
                size=size,
                se_seeds_sets=r.se,
                ci_low=r.low,
                ci_high=r.high,
                diff=r.diff,
                diff_low=r.diff_low,
                diff_high=r.diff_high,
                p_value=r.p_value,
            )
        )
    return pd.concat(parts, ignore_index=True)


#: The paired table's two p-value rows.
P_TTEST_ROW = "p-value (paired t-test over seeds, the paper's test)"
P_BOOT_ROW = "p-value (over seeds and test sets)"


def paired_table(
    summary: pd.DataFrame, baseline: str = "softmax", other: str = "adaptive", id_size: int = 16
) -> pd.DataFrame:
    """The paper's layout from a :func:`summary_table`: rows baseline, other and two p-values;
    columns the ID size then OOD sizes.

    Cells are accuracy in percent, "mean ± std" over seeds (the paper's layout); the p-value
    rows are the paper's paired t-test over seeds (:data:`P_TTEST_ROW`) and the paired
    interval over seeds and test sets (:data:`P_BOOT_ROW`).
    """
    s = summary[summary["norm"].isin([baseline, other])]
    sizes = sorted(s["size"].unique())
    cols = {n: f"{n} (ID)" if n == id_size else str(n) for n in sizes}
    out: dict[str, dict[str, str]] = {baseline: {}, other: {}, P_TTEST_ROW: {}, P_BOOT_ROW: {}}
    for r in s.itertuples():
        out[str(r.norm)][cols[int(r.size)]] = f"{100 * r.mean:.1f} ± {100 * r.std:.1f}"
        if r.norm == other:
            out[P_TTEST_ROW][cols[int(r.size)]] = f"{r.p_ttest:.1e}"
            out[P_BOOT_ROW][cols[int(r.size)]] = f"{r.p_value:.1e}"
    table = pd.DataFrame(out).T[[cols[n] for n in sizes]]
    table.index.name = "model"
    return table.reset_index()


def gain_matrix(
    acc: pd.DataFrame,
    sizes: Sequence[int],
    other: str = "adaptive",
    baseline: str = "softmax",
    n_sets: Mapping[int, int] | None = None,
) -> np.ndarray:
    """The paired gain ``other − baseline`` per seed and test set, pooled over ``sizes``:
    ``[S, M]``, the sets of every size side by side (seeds sorted), each size's sets weighted
    so that the mean over the matrix is the mean over sizes of each size's mean gain (every
    size counts once, however many sets it drew). ``acc`` is :func:`evaluate`'s table (with
    ``hits``); ``n_sets`` caps a size's sets (a common prefix, e.g. across step counts)."""
    blocks = []
    for n in sizes:  # a handful of sizes
        at = acc[acc["size"] == n]
        pair = []
        for norm in (other, baseline):
            rows = at[at["norm"] == norm].sort_values("seed")
            if rows.empty:
                raise ValueError(f"accuracy table has no {norm!r} rows at size {n}")
            m = int(rows["n_sets"].min()) if n_sets is None else int(n_sets[n])
            pair.append(unpack_hits(rows["hits"].to_numpy(), int(rows["n_sets"].min()))[:, :m])
        m = min(p.shape[1] for p in pair)
        blocks.append((pair[0][:, :m].astype(float) - pair[1][:, :m]) / m)
    total = sum(b.shape[1] for b in blocks)
    return np.concatenate(blocks, axis=1) * total / len(blocks)


def pooled_gain(
    acc: pd.DataFrame,
    sizes: Sequence[int],
    other: str = "adaptive",
    baseline: str = "softmax",
) -> tuple[float, float, float]:
    """The mean gain over ``sizes`` (each size once, :func:`gain_matrix`) with its 95 %
    interval over seeds and test sets (:func:`.uncertainty.seeds_by_sets`)."""
    r = seeds_by_sets(gain_matrix(acc, sizes, other, baseline)[None], level=LEVEL)
    return float(r.mean[0]), float(r.low[0]), float(r.high[0])
