"""Max retrieval (Veličković et al., *Softmax is not Enough*, §4.1, App. A): data and model.

Task: a set of ``n`` items, item ``i`` has a priority ρ_i ~ U(0, 1) and a class c_i uniform
over ``C`` classes; features ``[ρ_i, one_hot(c_i)]``. A query ~ U(0, 1) carries no
information. Target: the class of the highest-priority item.

Model (Eqs. 9–14, Deep Sets style), in two variants (:class:`ModelConfig.variant`):

``"listing"`` (default): the paper's Flax listing (App. A) with Flax's defaults::

    h_i = GELU(Dense(GELU(Dense(x_i))))       item encoder, ends in a GELU
    u   = Dense(GELU(Dense(query)))           query encoder, no final GELU
    q = W_q u + b_q,  k_i = W_k h_i + b_k,  v_i = W_v h_i + b_v     (width 128)
    e_i = q·k_i / √128,  α = normaliser(e)
    o   = W_o Σ_i α_i v_i + b_o               MultiHeadDotProductAttention's output projection
    y   = Dense_C(GELU(Dense(o)))

  every Dense has a bias; weights LeCun-normal (truncated normal, variance 1/fan_in), biases
  zero; GELU is the tanh approximation (``flax.linen.gelu``'s default).
``"ours"``: the model of earlier releases: the item encoder ends without a GELU, q/k/v carry
  no bias, no output projection, exact (erf) GELU, PyTorch's default initialisation.

Every parameter has a leading **seed axis**: one :class:`MaxRetrievalModel` holds S
independently initialised models (seed ``s`` initialised exactly as a model of that seed
alone), so one training step advances every seed in one set of batched GEMMs. Items and
queries either carry the seed axis (``[S, B, n, d]``: each seed its own data, as in training)
or not (``[B, n, d]``: the same sets for every seed, as in evaluation).

Training lives in :mod:`.train`, evaluation in :mod:`.evaluate`, the App. F temperature fit
in :mod:`.temperature_fit`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlimits import normalizers, theory
from attnlimits.experiments.softmax_not_enough.config import ModelConfig, NormSpec

__all__ = ["MaxRetrievalModel", "make_batch", "make_seed_batches", "normalise", "set_generator"]

#: truncated-normal std correction: the std of N(0, 1) truncated to [−2, 2] is 0.8796…, so
#: jax's ``variance_scaling(1, "fan_in", "truncated_normal")`` divides by it.
_TRUNC_STD = 0.87962566103423978


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


def set_generator(seed: int, n: int, device: str | torch.device = "cpu") -> torch.Generator:
    """The generator of the evaluation sets of size ``n`` under evaluation seed ``seed``: one
    stream per (seed, size), so every model, seed and normaliser sees the same sets."""
    return torch.Generator(device=device).manual_seed(seed * 1_000_003 + n)


def make_seed_batches(
    generators: Sequence[torch.Generator],
    batch: int,
    n: int,
    *,
    n_classes: int = 10,
    query_dim: int = 11,
    device: str | torch.device = "cpu",
) -> tuple[Tensor, Tensor, Tensor]:
    """One :func:`make_batch` per seed's generator, stacked: ``[S, batch, n, ·]``.

    Seed ``s``'s batch is exactly what :func:`make_batch` draws from ``generators[s]`` alone,
    so a batched run sees each seed's data stream unchanged. The loop runs over the S
    generators (torch has no vectorised per-stream generator); each call is one batch.
    """
    drawn = [
        make_batch(batch, n, n_classes=n_classes, query_dim=query_dim, generator=g, device=device)
        for g in generators
    ]
    items, query, target = zip(*drawn, strict=True)
    return torch.stack(items), torch.stack(query), torch.stack(target)


# ---- model -------------------------------------------------------------------------------


def normalise(scores: Tensor, spec: NormSpec) -> Tensor:
    """Attention from scores ``[..., n]`` with a registry normaliser ``(name, params)``."""
    name, params = spec
    return normalizers.get(name)(scores, dim=-1, **dict(params))


class _Dense(nn.Module):
    """S stacked affine maps ``y = x Wᵀ + b``: weight ``[S, out, in]``, bias ``[S, out]``."""

    def __init__(self, weight: Tensor, bias: Tensor | None) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight)
        self.bias = None if bias is None else nn.Parameter(bias)

    def forward(self, x: Tensor, shared: bool = False) -> Tensor:
        """``x``: ``[S, ..., in]``, or ``[..., in]`` with ``shared`` (one input for all S)."""
        S, d_out, d_in = self.weight.shape
        lead = x.shape[:-1] if shared else x.shape[1:-1]
        flat = x.reshape(-1, d_in) if shared else x.reshape(S, -1, d_in)
        wt = self.weight.transpose(1, 2)  # (S, in, out)
        if self.bias is None:
            y = flat @ wt  # (S, M, out); a 2-D input broadcasts over S
        elif shared:
            y = flat @ wt + self.bias.unsqueeze(1)
        else:
            y = torch.baddbmm(self.bias.unsqueeze(1), flat, wt)
        return y.reshape(S, *lead, d_out)


def _init_linear(d_in: int, d_out: int, bias: bool, variant: str) -> tuple[Tensor, Tensor | None]:
    """One seed's weight ``[out, in]`` and bias, drawn from the global generator."""
    if variant == "ours":  # torch.nn.Linear's default
        layer = nn.Linear(d_in, d_out, bias=bias)
        return layer.weight.detach().clone(), None if layer.bias is None else (
            layer.bias.detach().clone()
        )
    std = math.sqrt(1.0 / d_in) / _TRUNC_STD  # Flax's lecun_normal
    w = nn.init.trunc_normal_(torch.empty(d_out, d_in), 0.0, std, -2 * std, 2 * std)
    return w, torch.zeros(d_out) if bias else None


def _layers(cfg: ModelConfig) -> dict[str, tuple[int, int, bool]]:
    """Layer name -> (in, out, has bias), in initialisation order."""
    C, W, listing = cfg.n_classes, cfg.width, cfg.variant == "listing"
    layers = {
        "item1": (1 + C, W, True),
        "item2": (W, W, True),
        "query1": (cfg.query_dim, W, True),
        "query2": (W, W, True),
        "w_q": (W, W, listing),
        "w_k": (W, W, listing),
        "w_v": (W, W, listing),
    }
    if listing:
        layers["w_o"] = (W, W, True)
    return layers | {"out1": (W, W, True), "out2": (W, C, True)}


class MaxRetrievalModel(nn.Module):
    """Deep Sets style classifier with one attention head (Eqs. 9–14), S seeds stacked.

    :meth:`forward` computes Eqs. 9–14 re-associated: W_k, W_v (and, for ``"ours"``, the item
    encoder's last layer) are linear, so with f_i the last per-item activation,
    e_i = f_i·(Aᵀ W_kᵀ q) + const and Σα_i v_i = W_v A Σα_i f_i + (A's and v's biases)·Σα_i,
    where A is the identity (``"listing"``) or the item encoder's last layer (``"ours"``).
    Per item that leaves the encoder alone: no key or value vectors are formed.
    :meth:`reference_forward` is the literal form; the two agree to float rounding (tested).

    Parameters
    ----------
    cfg : ModelConfig
    seeds : sequence of int
        Seed ``s`` initialises slice ``s`` of every parameter exactly as ``seeds=(s,)`` would.
    """

    def __init__(self, cfg: ModelConfig, seeds: Sequence[int] = (0,)) -> None:
        super().__init__()
        self.cfg = cfg
        self.seeds = tuple(int(s) for s in seeds)
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be a non-empty list of distinct ints, got {seeds}")
        layers = _layers(cfg)
        drawn: dict[str, list[tuple[Tensor, Tensor | None]]] = {k: [] for k in layers}
        for seed in self.seeds:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)  # initial weights depend on the seed only
                for name, (d_in, d_out, bias) in layers.items():
                    drawn[name].append(_init_linear(d_in, d_out, bias, cfg.variant))
        self.dense = nn.ModuleDict(
            {
                name: _Dense(
                    torch.stack([w for w, _ in ws]),
                    None if ws[0][1] is None else torch.stack([b for _, b in ws]),  # type: ignore[misc]
                )
                for name, ws in drawn.items()
            }
        )
        self.listing = cfg.variant == "listing"
        self.scale = 1.0 / math.sqrt(cfg.width)  # scores are q·k_i / √W

    def act(self, x: Tensor) -> Tensor:
        return F.gelu(x, approximate="tanh" if self.listing else "none")

    @property
    def spec(self) -> NormSpec:
        return self.cfg.normalizer, self.cfg.normalizer_params

    def _d(self, name: str) -> _Dense:
        return self.dense[name]  # type: ignore[return-value]

    def _shared(self, items: Tensor, query: Tensor) -> bool:
        """Whether ``items``/``query`` lack the seed axis; checks their shapes."""
        S, d = len(self.seeds), 1 + self.cfg.n_classes
        if items.ndim == 3 and query.ndim == 2:
            shared = True
        elif items.ndim == 4 and query.ndim == 3 and items.shape[0] == query.shape[0] == S:
            shared = False
        else:
            raise ValueError(
                f"items [B, n, {d}] with query [B, dq], or both with a leading seed axis of "
                f"{S}; got {tuple(items.shape)} and {tuple(query.shape)}"
            )
        if items.shape[-1] != d or query.shape[-1] != self.cfg.query_dim:
            raise ValueError(
                f"items need {d} features and query {self.cfg.query_dim}, got "
                f"{items.shape[-1]} and {query.shape[-1]}"
            )
        return shared

    def query_vector(self, query: Tensor, shared: bool) -> Tensor:
        """q = W_q φ_q(query) (+ b_q), ``[S, B, W]``."""
        return self._d("w_q")(self._d("query2")(self.act(self._d("query1")(query, shared))))

    def encode(self, items: Tensor, query: Tensor) -> tuple[Tensor, Tensor]:
        """Last per-item activation f ``[S, B, n, W]`` and scaled scores e ``[S, B, n]``."""
        shared = self._shared(items, query)
        f = self.act(self._d("item1")(items, shared))  # (S, B, n, W)
        if self.listing:
            f = self.act(self._d("item2")(f))  # h_i: the encoder ends in a GELU
        q = self.query_vector(query, shared)  # (S, B, W)
        w_k = self._d("w_k")
        kq = q @ w_k.weight  # (S, B, W): (W_kᵀ q)ᵀ
        c = q.new_zeros(q.shape[:-1])  # (S, B): the part of e_i common to every item
        if w_k.bias is not None:
            c = c + (q * w_k.bias.unsqueeze(1)).sum(-1)
        if not self.listing:  # fold the encoder's last layer: h_i = W2 f_i + b2
            item2 = self._d("item2")
            assert item2.bias is not None
            c = c + (kq * item2.bias.unsqueeze(1)).sum(-1)
            kq = kq @ item2.weight
        # kq @ fᵀ rather than f @ kq: the batched matrix-vector product is slow on CPU
        e = (kq.unsqueeze(-2) @ f.transpose(-1, -2)).squeeze(-2) + c.unsqueeze(-1)  # (S, B, n)
        return f, e * self.scale

    def readout(self, f: Tensor, a: Tensor) -> Tensor:
        """Class logits ``[S, B, C]`` from activations ``[S, B, n, W]``, attention ``[S, B, n]``."""
        pooled = (a.unsqueeze(-2) @ f).squeeze(-2)  # (S, B, W): Σ α_i f_i
        mass = a.sum(-1, keepdim=True)  # (S, B, 1): Σ α_i (not 1 for sigmoid rows)
        if not self.listing:
            pooled = self._linear(self._d("item2"), pooled, mass)
        o = self._linear(self._d("w_v"), pooled, mass)  # Σ α_i v_i
        if self.listing:
            o = self._d("w_o")(o)
        return self._d("out2")(self.act(self._d("out1")(o)))

    @staticmethod
    def _linear(layer: _Dense, pooled: Tensor, mass: Tensor) -> Tensor:
        """Σ α_i (W x_i + b) = W Σ α_i x_i + b Σ α_i for a pooled ``[S, B, in]``."""
        y = pooled @ layer.weight.transpose(1, 2)
        return y if layer.bias is None else y + mass * layer.bias.unsqueeze(1)

    def forward(
        self,
        items: Tensor,
        query: Tensor,
        *,
        norm: NormSpec | None = None,
        return_attention: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor, Tensor]:
        """Class logits ``[S, B, C]``; with ``return_attention`` also attention, scores
        ``[S, B, n]``. ``norm`` swaps the normaliser (e.g. at inference only)."""
        f, e = self.encode(items, query)
        a = normalise(e, norm or self.spec)  # (S, B, n)
        logits = self.readout(f, a)
        return (logits, a, e) if return_attention else logits

    def forward_multi(
        self, items: Tensor, query: Tensor, norms: Sequence[NormSpec]
    ) -> list[Tensor]:
        """Class logits ``[S, B, C]`` per normaliser, sharing one encoding of the items."""
        f, e = self.encode(items, query)
        return [self.readout(f, normalise(e, spec)) for spec in norms]

    def reference_forward(self, items: Tensor, query: Tensor) -> tuple[Tensor, Tensor]:
        """Literal Eqs. 9–14 with the trained normaliser: logits ``[S, B, C]``, scores
        ``[S, B, n]``; every key and value vector formed."""
        shared = self._shared(items, query)
        h = self._d("item2")(self.act(self._d("item1")(items, shared)))  # (S, B, n, W)
        h = self.act(h) if self.listing else h
        q = self.query_vector(query, shared).unsqueeze(-2)  # (S, B, 1, W)
        k, v = self._d("w_k")(h), self._d("w_v")(h)  # (S, B, n, W)
        e = (q * k).sum(-1) * self.scale  # (S, B, n)
        a = normalise(e, self.spec)
        o = (a.unsqueeze(-1) * v).sum(-2)  # (S, B, W)
        if self.listing:
            o = self._d("w_o")(o)
        return self._d("out2")(self.act(self._d("out1")(o))), e

    @torch.no_grad()
    def spread_bound(self, items: Tensor, query: Tensor) -> tuple[Tensor, Tensor]:
        """Per seed, the largest logit spread in the batch and Prop. 3.1's bound on it.

        Prop. 3.1 with the query side taken as the projected query itself:
        spread ≤ 2·σ_max(W_k)·‖q‖·max_i‖h_i‖ / √W with q = W_q u + b_q and h_i the item
        encoder's output (k's bias cancels in a spread). It implies the paper's
        2·σ_max(W_q)·σ_max(W_k)·‖u‖·max‖h_i‖ when there is no query bias, and holds with one.
        Returns two ``[S]`` tensors (scaled scores), each the maximum over the batch.
        """
        f, e = self.encode(items, query)
        spread = (e.amax(-1) - e.amin(-1)).amax(-1)  # (S,)
        h = f if self.listing else self._d("item2")(f)  # (S, B, n, W): the encoder's output
        q = self.query_vector(query, self._shared(items, query))  # (S, B, W)
        eye = torch.eye(q.shape[-1], dtype=q.dtype, device=q.device)
        w_k = self._d("w_k").weight.unsqueeze(1)  # (S, 1, W, W)
        bound = theory.projected_spread_bound(eye, w_k, q, h)  # (S, B)
        return spread, bound.amax(-1) * self.scale
