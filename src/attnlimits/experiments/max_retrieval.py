"""Max retrieval (Veličković et al., *Softmax is not Enough*, §4.1, App. A): data, model, eval.

Task: a set of ``n`` items, item ``i`` has a priority ρ_i ~ U(0, 1) and a class c_i uniform
over ``C`` classes; features ``[ρ_i, one_hot(c_i)]``. A query ~ U(0, 1) carries no
information. Target: the class of the highest-priority item.

Model (Eqs. 9–14, Deep Sets style)::

    h_i = φ_x(x_i)                        item encoder, 2-layer GELU MLP, width W = 128
    u   = φ_q(query)                      query encoder, same shape
    e_i = (W_q u) · (W_k h_i) / √W        one dot-product head; the 1/√W scaling is ours
    α   = normaliser(e)                   any registry entry (softmax, adaptive, ssmax, ...)
    y   = ψ(Σ_i α_i W_v h_i)              2-layer GELU MLP -> C class logits

Training lives in :mod:`attnlimits.experiments.max_retrieval_train`; the App. F temperature
fit in :mod:`attnlimits.experiments.temperature_fit`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from scipy.stats import ttest_rel
from torch import Tensor, nn
from tqdm.auto import tqdm

from attnlimits import normalizers

__all__ = [
    "EvalConfig",
    "MaxRetrievalModel",
    "ModelConfig",
    "NormSpec",
    "accuracy_se",
    "attention_profile",
    "evaluate",
    "make_batch",
    "paired_table",
    "required_sets",
    "summary_table",
]

#: A normaliser by registry name with its parameters, e.g. ``("adaptive", {"coeffs": ...})``.
NormSpec = tuple[str, dict[str, Any]]


@dataclass
class ModelConfig:
    """The Eqs. 9–14 model. ``query_dim`` is ours: the paper only says "a query vector"."""

    n_classes: int = 10
    width: int = 128
    query_dim: int = 11  # 1 + n_classes by default: as wide as an item
    normalizer: str = "softmax"
    normalizer_params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.n_classes < 2 or self.width < 1 or self.query_dim < 1:
            raise ValueError(
                f"need n_classes >= 2, width >= 1, query_dim >= 1, got {self.n_classes}, "
                f"{self.width}, {self.query_dim}"
            )


@dataclass
class EvalConfig:
    """Accuracy at the training size and OOD sizes on fresh seeded sets.

    Sets are drawn until the binomial standard error √(p(1−p)/n) of every normaliser's
    accuracy is at most ``target_se`` (checked after each chunk, from ``min_sets`` on), or
    ``n_sets`` is reached: ``n_sets = 10_000`` alone bounds it by √(0.25 / 10⁴) = 0.005
    whatever p; the early stop saves sets where p is far from 0.5 (e.g. near chance at large
    n). ``target_se=None`` always uses ``n_sets``. ``chunk_items`` bounds memory: sets are
    processed in chunks of at most that many items (at least one set per chunk).
    """

    sizes: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
    n_sets: int = 10_000
    target_se: float | None = 0.005
    min_sets: int = 1000
    seed: int = 12345
    chunk_items: int = 1 << 14

    def __post_init__(self) -> None:
        self.sizes = tuple(int(s) for s in self.sizes)
        if not self.sizes or min(self.sizes) < 1:
            raise ValueError(f"sizes must be a non-empty list of positive ints, got {self.sizes}")
        if self.target_se is not None and not 0 < self.target_se < 1:
            raise ValueError(f"target_se must be in (0, 1) or None, got {self.target_se}")
        if self.n_sets < 1 or self.chunk_items < 1 or self.min_sets < 1:
            raise ValueError(
                f"n_sets, chunk_items and min_sets must be >= 1, got {self.n_sets}, "
                f"{self.chunk_items}, {self.min_sets}"
            )


# ---- data --------------------------------------------------------------------------------


def make_batch(
    batch: int,
    n: int,
    *,
    n_classes: int = 10,
    query_dim: int = 11,
    generator: torch.Generator,
    device: str | torch.device = "cpu",
) -> tuple[Tensor, Tensor, Tensor]:
    """One batch of ``batch`` sets of ``n`` items, drawn from ``generator`` on ``device``.

    Returns
    -------
    items : Tensor ``[batch, n, 1 + n_classes]``
        ``[ρ_i, one_hot(c_i)]``.
    query : Tensor ``[batch, query_dim]``
        U(0, 1), independent of everything else.
    target : Tensor ``[batch]`` (long)
        ``c_{argmax_i ρ_i}``.
    """
    if batch < 1 or n < 1:
        raise ValueError(f"batch and n must be >= 1, got {batch}, {n}")
    kw: dict[str, Any] = {"generator": generator, "device": device}
    prio = torch.rand(batch, n, **kw)  # (B, n)
    cls = torch.randint(n_classes, (batch, n), **kw)  # (B, n)
    query = torch.rand(batch, query_dim, **kw)  # (B, dq)
    items = torch.zeros(batch, n, 1 + n_classes, device=device)  # (B, n, 1 + C)
    items[..., 0] = prio
    items[..., 1:].scatter_(-1, cls.unsqueeze(-1), 1.0)  # one-hot class
    target = cls.gather(1, prio.argmax(1, keepdim=True)).squeeze(1)  # (B,)
    return items, query, target


# ---- model -------------------------------------------------------------------------------


def _mlp(d_in: int, width: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, width), nn.GELU(), nn.Linear(width, d_out))


def _normalise(scores: Tensor, spec: NormSpec) -> Tensor:
    name, params = spec
    return normalizers.get(name)(scores, dim=-1, **dict(params))


class MaxRetrievalModel(nn.Module):
    """Deep Sets style classifier with one attention head (Eqs. 9–14).

    q/k/v projections carry no bias, so Prop. 3.1's spread bound
    2·σ_max(W_q)·σ_max(W_k)·‖u‖·max_i‖h_i‖ applies to the raw logits ``(W_q u)·(W_k h_i)``.

    :meth:`forward` computes Eqs. 9–14 re-associated, at O(n·W) cost per set instead of
    O(n·W²): φ_x's last layer (W2, b2) and W_k, W_v are linear, so with g_i the GELU hidden
    layer of φ_x, e_i = g_i·(W2ᵀW_kᵀq) + b2·W_kᵀq and Σα_i W_v h_i = W_v(W2 Σα_i g_i + b2 Σα_i).
    :meth:`reference_forward` is the literal form; the two agree to float rounding (tested).
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        C, W = cfg.n_classes, cfg.width
        self.phi_x = _mlp(1 + C, W, W)
        self.phi_q = _mlp(cfg.query_dim, W, W)
        self.W_q = nn.Linear(W, W, bias=False)
        self.W_k = nn.Linear(W, W, bias=False)
        self.W_v = nn.Linear(W, W, bias=False)
        self.psi = _mlp(W, W, C)
        self.scale = 1.0 / math.sqrt(W)  # scores are (W_q u)·(W_k h_i) / √W

    def _layers(self) -> tuple[nn.Linear, nn.Linear]:
        """φ_x's first and last linear layers."""
        return cast(nn.Linear, self.phi_x[0]), cast(nn.Linear, self.phi_x[2])

    @property
    def spec(self) -> NormSpec:
        return self.cfg.normalizer, self.cfg.normalizer_params

    def encode(self, items: Tensor, query: Tensor) -> tuple[Tensor, Tensor]:
        """Hidden item layer g ``[B, n, W]``, scaled scores e ``[B, 1, n]`` (batch, query, key)."""
        l1, l2 = self._layers()
        g = F.gelu(l1(items))  # (B, n, W)
        kq = self.W_q(self.phi_q(query)) @ self.W_k.weight  # (B, W): W_kᵀ q per set
        r = kq @ l2.weight  # (B, W): W2ᵀ W_kᵀ q
        c = kq @ l2.bias  # (B,)
        # r @ gᵀ rather than g @ r: torch's batched matrix-vector product is slow on CPU.
        e = r.unsqueeze(1) @ g.transpose(1, 2) + c.view(-1, 1, 1)  # (B, 1, n)
        return g, e * self.scale  # (B, n, W), (B, 1, n)

    def readout(self, g: Tensor, a: Tensor) -> Tensor:
        """Class logits ``[B, C]`` from hidden items ``[B, n, W]`` and attention ``[B, 1, n]``."""
        _, l2 = self._layers()
        pooled = (a @ g).squeeze(1)  # (B, W): Σ α_i g_i
        h = l2(pooled) + (a.sum(-1) - 1.0) * l2.bias  # (B, W): W2 Σα_i g_i + b2 Σα_i
        return self.psi(self.W_v(h))  # (B, C)

    def forward(
        self,
        items: Tensor,
        query: Tensor,
        *,
        norm: NormSpec | None = None,
        return_attention: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor, Tensor]:
        """Class logits ``[B, C]``; with ``return_attention`` also attention, scores ``[B, 1, n]``.

        ``norm`` swaps the normaliser (e.g. at inference only); default: the trained one.
        """
        g, e = self.encode(items, query)
        a = _normalise(e, norm or self.spec)  # (B, 1, n)
        logits = self.readout(g, a)
        return (logits, a, e) if return_attention else logits

    def forward_multi(
        self, items: Tensor, query: Tensor, norms: Sequence[NormSpec]
    ) -> list[Tensor]:
        """Class logits ``[B, C]`` per normaliser, sharing one encoding of the items."""
        g, e = self.encode(items, query)
        return [self.readout(g, _normalise(e, spec)) for spec in norms]

    def reference_forward(self, items: Tensor, query: Tensor) -> tuple[Tensor, Tensor]:
        """Literal Eqs. 9–14, trained normaliser: logits ``[B, C]``, scores ``[B, 1, n]``."""
        h = self.phi_x(items)  # (B, n, W)
        q = self.W_q(self.phi_q(query)).unsqueeze(1)  # (B, 1, W)
        k, v = self.W_k(h), self.W_v(h)  # (B, n, W)
        e = (q @ k.transpose(1, 2)) * self.scale  # (B, 1, n)
        a = _normalise(e, self.spec)
        return self.psi((a @ v).squeeze(1)), e

    @torch.no_grad()
    def spread_bound(self, items: Tensor, query: Tensor) -> tuple[float, float]:
        """Largest logit spread in the batch and Prop. 3.1's bound on it (both on scaled scores).

        Bound: 2·σ_max(W_q)·σ_max(W_k)·‖u‖·max_i‖h_i‖ / √W, maximised over the batch.
        """
        _, e = self.encode(items, query)
        spread = float((e.amax(-1) - e.amin(-1)).max())
        u_norm = self.phi_q(query).norm(dim=-1)  # (B,)
        h_norm = self.phi_x(items).norm(dim=-1).amax(-1)  # (B,)
        sq = torch.linalg.matrix_norm(self.W_q.weight, ord=2)
        sk = torch.linalg.matrix_norm(self.W_k.weight, ord=2)
        return spread, float(2 * sq * sk * (u_norm * h_norm).max() * self.scale)


# ---- evaluation --------------------------------------------------------------------------


def accuracy_se(accuracy: float | np.ndarray, n: int | np.ndarray) -> Any:
    """Binomial standard error √(p(1−p)/n) of an accuracy measured on ``n`` independent sets."""
    p = np.asarray(accuracy, dtype=float)
    return np.sqrt(p * (1.0 - p) / np.asarray(n, dtype=float))


def required_sets(target_se: float, p: float = 0.5) -> int:
    """Sets needed for SE ≤ ``target_se`` at accuracy ``p`` (worst case p = 0.5)."""
    if not 0 < target_se < 1:
        raise ValueError(f"target_se must be in (0, 1), got {target_se}")
    return math.ceil(p * (1.0 - p) / target_se**2 - 1e-9)


def _size_generator(seed: int, n: int, device: str | torch.device) -> torch.Generator:
    # One stream per (eval seed, size): every model and normaliser sees the same sets.
    return torch.Generator(device=device).manual_seed(seed * 1_000_003 + n)


@torch.no_grad()
def evaluate(
    model: MaxRetrievalModel,
    cfg: EvalConfig,
    norms: Mapping[str, NormSpec] | None = None,
    *,
    progress: bool = False,
) -> pd.DataFrame:
    """Accuracy per (normaliser label, size); one pass over the data serves every normaliser.

    Returns a tidy table: ``norm, size, n_sets, correct, accuracy, se``.
    """
    norms = dict(norms or {"trained": model.spec})
    device = next(model.parameters()).device
    mc = model.cfg
    model.eval()
    rows = []
    for n in _progress(cfg.sizes, progress, "eval sizes"):
        gen = _size_generator(cfg.seed, n, device)
        per_chunk = max(1, cfg.chunk_items // n)
        correct = dict.fromkeys(norms, 0)
        done = 0
        while done < cfg.n_sets:
            b = min(per_chunk, cfg.n_sets - done)
            items, query, target = make_batch(
                b, n, n_classes=mc.n_classes, query_dim=mc.query_dim, generator=gen, device=device
            )
            for label, logits in zip(
                norms, model.forward_multi(items, query, list(norms.values())), strict=True
            ):
                correct[label] += int((logits.argmax(-1) == target).sum())
            done += b
            if cfg.target_se is not None and done >= cfg.min_sets:
                p = np.array(list(correct.values())) / done
                if accuracy_se(p, done).max() <= cfg.target_se:
                    break
        for label in norms:
            rows.append({"norm": label, "size": n, "n_sets": done, "correct": correct[label]})
    df = pd.DataFrame(rows)
    df["accuracy"] = df["correct"] / df["n_sets"]
    df["se"] = accuracy_se(df["accuracy"].to_numpy(), df["n_sets"].to_numpy())
    return df


@torch.no_grad()
def attention_profile(
    model: MaxRetrievalModel,
    sizes: Sequence[int],
    norms: Mapping[str, NormSpec],
    *,
    n_sets: int = 64,
    seed: int = 0,
) -> pd.DataFrame:
    """Mean attention on items ranked by priority (rank 0 = highest) for the Fig. 2/7 analogue.

    Returns ``norm, size, rank, attention`` (mean over ``n_sets`` sets).
    """
    device = next(model.parameters()).device
    mc = model.cfg
    model.eval()
    rows = []
    for n in sizes:
        gen = _size_generator(seed, n, device)
        items, query, _ = make_batch(
            n_sets, n, n_classes=mc.n_classes, query_dim=mc.query_dim, generator=gen, device=device
        )
        order = items[..., 0].argsort(-1, descending=True)  # (B, n)
        for label, spec in norms.items():
            _, a, _ = model(items, query, norm=spec, return_attention=True)  # (B, 1, n)
            ranked = a.squeeze(1).gather(1, order).mean(0).cpu().numpy()  # (n,)
            rows += [
                {"norm": label, "size": n, "rank": i, "attention": float(x)}
                for i, x in enumerate(ranked)
            ]
    return pd.DataFrame(rows)


def _progress(it: Sequence[Any], on: bool, desc: str) -> Any:
    return tqdm(it, desc=desc, leave=False) if on else it


# ---- tables ------------------------------------------------------------------------------


def summary_table(acc: pd.DataFrame, baseline: str = "softmax") -> pd.DataFrame:
    """Mean, std over seeds and a paired t-test against ``baseline`` per (norm, mode, size).

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
