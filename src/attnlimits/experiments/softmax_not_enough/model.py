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

Training lives in :mod:`.train`, evaluation in :mod:`.evaluate`, the App. F temperature fit
in :mod:`.temperature_fit`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlimits import normalizers, theory
from attnlimits.experiments.softmax_not_enough.config import ModelConfig, NormSpec

__all__ = ["MaxRetrievalModel", "make_batch"]


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
        bound = theory.projected_spread_bound(
            self.W_q.weight, self.W_k.weight, self.phi_q(query), self.phi_x(items)
        )  # (B,)
        return spread, float(bound.max() * self.scale)
