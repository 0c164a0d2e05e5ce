r"""The Stieltjes normaliser: heavy-tailed weights :math:`(\lambda - l_n)^{-q}` summing to one.

Softmax is the maximiser of :math:`p^\top l + H(p)` over the simplex Δ. Replacing the Shannon
entropy by :math:`\frac{q}{q-1} \sum_n p_n^{1-1/q}` (by :math:`\sum_n \log p_n` for q = 1) gives

.. math:: p_n = (\lambda_q - l_n)^{-q}, \qquad \lambda_q > \max_n l_n, \quad \sum_n p_n = 1,

a polynomial, not exponential, decay in the logit gap: the stationarity condition
:math:`l_n + p_n^{-1/q} = \lambda_q` holds on every kept key. :math:`\sum_n (\lambda - l_n)^{-q}`
falls strictly from +∞ to 0 on :math:`(\max l, \infty)`, so :math:`\lambda_q` is unique; it is
found by bisection, vectorised over all rows at once.

Source: the one-page proposal "Replacing Softmax with Stieltjes Transform for Attention and MoE
variants" (public GitHub repository jtaylor-eng/asentmax, ``context/stieltjes_proposal.tex``,
§1, regulariser 2; q = 1 is its regulariser 1) and its reference code
(jtaylor-eng/probability-simplex-mappings, ``mappings/stieltjes.py``: bisection on λ). We
found no arXiv paper that defines it; the formula above is the proposal's, and the variational
form is checked by ``tests/test_normalizers_reference.py`` (stationarity and a root-finding
row loop).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor
from torch.autograd import Function

from attnlimits._checks import check_int_at_least, check_positive
from attnlimits.normalizers._common import finish, masked_max, prepare

__all__ = ["stieltjes"]


class _StieltjesFunction(Function):
    @staticmethod
    def forward(ctx: Any, z: Tensor, keep: Tensor, dim: int, q: float, n_iter: int) -> Tensor:
        # z: kept scores minus the row maximum (<= 0); keep has a kept key in every row.
        # Bisect u = log λ: after the shift λ_q lies in [1, n^{1/q}] (the top key alone gives
        # 1^{-q} = 1 at λ = 1; every term is <= 1/n at λ = n^{1/q}), so u in [0, log(n) / q].
        # In u the error of log(p_i / p_j) after k halvings is at most log(n)·2^{-k}, for any q.
        # log w_i = −q log(λ − z_i) = −q u − q log(1 + e^{log(−z_i) − u}): the first term is the
        # same for every key, so it is kept apart (q·u overflows for huge q, and the kept part
        # is exactly 0 at the maximum, so no inf·0 either)
        log_gap = torch.where(keep, -z, 0.0).log()  # log(-z): -inf at the maximum
        n = keep.sum(dim=dim, keepdim=True).to(z.dtype)
        lo = torch.zeros_like(n)
        width = n.log() / q
        zero = torch.zeros((), dtype=z.dtype, device=z.device)
        for _ in range(n_iter):  # iterations, not rows or keys: each step is one vectorised pass
            width = width / 2
            mid = lo + width
            log_w = torch.where(keep, -q * torch.logaddexp(log_gap - mid, zero), -math.inf)
            lo = torch.where(log_w.logsumexp(dim=dim, keepdim=True) >= q * mid, mid, lo)  # Σ w ≥ 1
        log_w = torch.where(keep, -q * torch.logaddexp(log_gap - lo, zero), -math.inf)
        p = torch.softmax(log_w, dim=dim)  # w / Σ w: removes the bisection residual
        ctx.dim, ctx.q = dim, q
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None, None, None, None]:
        # Implicit differentiation of Σ (λ - z)^{-q} = 1: with r = (λ - z)^{-q-1} = p^{1+1/q},
        # dλ = Σ r dz / Σ r and dp = q r (dz - dλ), so dL/dz = q r (g - Σ g r / Σ r).
        (p,) = ctx.saved_tensors
        r = p ** (1.0 + 1.0 / ctx.q)
        r_sum = r.sum(dim=ctx.dim, keepdim=True)
        mean = (grad * r).sum(dim=ctx.dim, keepdim=True) / torch.where(r_sum > 0, r_sum, 1.0)
        return ctx.q * r * (grad - mean), None, None, None, None


def stieltjes(
    scores: Tensor,
    dim: int = -1,
    *,
    mask: Tensor | None = None,
    q: float = 1.0,
    n_iter: int = 50,
) -> Tensor:
    r"""Stieltjes normaliser: :math:`p_n = (\lambda_q - l_n)^{-q}` with Σ p = 1 over the kept keys.

    The map of the module docstring (proposal "Replacing Softmax with Stieltjes Transform for
    Attention and MoE variants", §1; no arXiv paper found). :math:`\lambda_q` comes from
    ``n_iter`` bisection steps on :math:`\log \lambda_q`, all rows at once; the weights are then
    renormalised to sum to one. Backward by implicit differentiation, saving only the output:
    with :math:`r = p^{1 + 1/q}`, :math:`\partial L / \partial l = q\, r \odot (g - r^\top g /
    \textstyle\sum r)`. Dense (every kept key gets weight > 0), invariant to a shift of the
    logits, not to their scale; larger q is sharper.

    Parameters
    ----------
    scores : Tensor
        Logits, any shape, e.g. ``[batch, head, query, key]``. ``-inf`` counts as masked.
    dim : int
        Normalised axis, default ``-1``.
    mask : Tensor of bool, optional
        Keep-mask (True = attend), broadcastable to ``scores``.
    q : float
        Order q > 0. Default 1.0, the proposal's first regulariser (:math:`\sum \log p`) and
        the default of its reference code; the fork's experiments use q = 4.
    n_iter : int
        Bisection steps, ``>= 1``. Default 50.

    Returns
    -------
    Tensor
        Same shape and dtype as ``scores``; sums to one along ``dim`` in rows with a kept key;
        masked entries and all-masked rows are 0.

    Raises
    ------
    ValueError
        Bad scores or mask, ``q <= 0`` or not finite, ``n_iter`` not an int ``>= 1``.
    """
    check_positive(q, "q", tensor_ok=False)
    check_int_at_least(n_iter, "n_iter", 1)
    x, keep, d = prepare(scores, mask, dim)
    z = torch.where(keep, x - masked_max(x, keep, d), 0.0)
    # an all-masked row is solved as if every key were kept (uniform), then zeroed by finish
    solve_on = keep | ~keep.any(dim=d, keepdim=True)
    info = torch.finfo(x.dtype)  # a q beyond the dtype's range is its limit there (flat / one-hot)
    q_work = min(max(float(q), info.tiny), info.max)
    p = _StieltjesFunction.apply(z, solve_on, d, q_work, n_iter)
    return finish(p, keep, scores)
