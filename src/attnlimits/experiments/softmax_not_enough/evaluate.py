"""Accuracy of a max-retrieval model at the training size and out of distribution (App. A),
the attention profile (Figs. 2/7 analogue) and the paper's tables with the paired t-test."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy.stats import ttest_rel
from tqdm.auto import tqdm

from attnlimits import theory
from attnlimits.experiments.softmax_not_enough.config import EvalConfig, NormSpec
from attnlimits.experiments.softmax_not_enough.model import (
    MaxRetrievalModel,
    make_batch,
    normalise,
    set_generator,
)

__all__ = ["attention_profile", "evaluate", "paired_table", "summary_table"]


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
    Returns a tidy table: ``norm, seed, size, n_sets, correct, accuracy, se``.
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
        done = 0
        while done < cap:
            b = min(per_chunk, cap - done)
            items, query, target = make_batch(
                b, n, n_classes=mc.n_classes, query_dim=mc.query_dim, generator=gen, device=device
            )
            logits = model.forward_multi(items, query, list(norms.values()))  # each (S, b, C)
            hits = torch.stack([(lg.argmax(-1) == target).sum(-1) for lg in logits])
            correct += hits.cpu()
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
                }
            )
        )
    df = pd.concat(parts, ignore_index=True)
    df["accuracy"] = df["correct"] / df["n_sets"]
    df["se"] = theory.binomial_standard_error(df["accuracy"].to_numpy(), df["n_sets"].to_numpy())
    return df


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


def _progress(it: Sequence[Any], on: bool, desc: str) -> Any:
    return tqdm(it, desc=desc, leave=False) if on else it


# ---- tables ------------------------------------------------------------------------------


def summary_table(acc: pd.DataFrame, baseline: str = "softmax") -> pd.DataFrame:
    """Mean, std, SE (std/√seeds) over seeds and a paired t-test against ``baseline`` per
    (norm, mode, size).

    ``acc`` is tidy with columns ``norm, seed, size, accuracy`` (and optionally ``mode``).
    The test pairs seeds (``scipy.stats.ttest_rel``); NaN where fewer than two seeds pair up
    or for the baseline itself.
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
            with np.errstate(all="ignore"):
                res = ttest_rel(x[ok], b[ok])
            t, p = float(res.statistic), float(res.pvalue)
        rows.append(
            {
                "norm": norm,
                "mode": mode,
                "size": size,
                "mean": x.mean(),
                "std": x.std(ddof=1) if len(x) > 1 else float("nan"),
                "se": x.std(ddof=1) / np.sqrt(len(x)) if len(x) > 1 else float("nan"),
                "n_seeds": len(x),
                "t": t,
                "p_value": p,
            }
        )
    return pd.DataFrame(rows)


def paired_table(
    acc: pd.DataFrame, baseline: str = "softmax", other: str = "adaptive", id_size: int = 16
) -> pd.DataFrame:
    """The paper's layout: rows baseline, other, p-value; columns the ID size then OOD sizes.

    Cells are accuracy in percent, "mean ± std" over seeds; the p-value row is the paired
    t-test of ``other`` against ``baseline`` over seeds.
    """
    s = summary_table(acc[acc["norm"].isin([baseline, other])], baseline)
    sizes = sorted(s["size"].unique())
    cols = {n: f"{n} (ID)" if n == id_size else str(n) for n in sizes}
    out: dict[str, dict[str, str]] = {baseline: {}, other: {}, "p-value": {}}
    for r in s.itertuples():
        out[str(r.norm)][cols[int(r.size)]] = f"{100 * r.mean:.1f} ± {100 * r.std:.1f}"
        if r.norm == other:
            out["p-value"][cols[int(r.size)]] = f"{r.p_value:.1e}"
    table = pd.DataFrame(out).T[[cols[n] for n in sizes]]
    table.index.name = "model"
    return table.reset_index()
