r"""Sparse normalisers: sparsemax and α-entmax (exact for α = 2 and 1.5, bisection for any α > 1),
and α-entmax with a length-dependent temperature (ASEntmax).

α-entmax (Peters, Niculae & Martins 2019, "Sparse Sequence-to-Sequence Models", Eq. 9) is

.. math:: \mathrm{entmax}_\alpha(z) = \arg\max_{p \in \Delta} \; p^\top z + H^T_\alpha(p),

with the Tsallis entropy :math:`H^T_\alpha`; its solution is
:math:`p_i = [(\alpha - 1) z_i - \tau]_+^{1/(\alpha - 1)}` with τ chosen so that Σ p = 1.
α → 1 is softmax; α = 2 is sparsemax (Martins & Astudillo 2016), the Euclidean projection
onto the simplex. Dropped keys are handled by giving them a score below every possible
threshold, so they sit outside the support and get exactly 0.

The closed-form backward passes save only the output, as in the ``entmax`` package; that
package is a test reference only (it returns NaN on all-masked rows).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor
from torch.autograd import Function

from attnlimits._checks import check_int_at_least, check_number, key_counts
from attnlimits.normalizers._common import finish, masked_max, prepare

__all__ = ["as_entmax", "entmax15", "entmax_bisect", "sparsemax"]


def _shift_and_fill(x: Tensor, keep: Tensor, dim: int, alpha: float) -> Tensor:
    """Shift each row's kept maximum to 0; give dropped keys -(1/(α-1) + 1).

    With the maximum at 0 the threshold satisfies τ >= (α-1)·0 - 1, so any score below
    -1/(α-1) is outside the support.
    """
    return torch.where(keep, x - masked_max(x, keep, dim), -(1.0 / (alpha - 1.0) + 1.0))


def _ranks(z: Tensor, dim: int) -> Tensor:
    """1, 2, ..., n along ``dim``, shaped to broadcast against ``z``."""
    shape = [1] * z.ndim
    shape[dim] = z.shape[dim]
    return torch.arange(1, z.shape[dim] + 1, dtype=z.dtype, device=z.device).view(shape)


class _SparsemaxFunction(Function):
    @staticmethod
    def forward(ctx: Any, z: Tensor, dim: int) -> Tensor:
        srt = z.sort(dim=dim, descending=True).values
        csum = srt.cumsum(dim) - 1.0
        support = (_ranks(z, dim) * srt > csum).sum(dim=dim, keepdim=True)  # k(z) >= 1
        tau = csum.gather(dim, support - 1) / support.to(z.dtype)
        p = (z - tau).clamp_min(0.0)
        ctx.dim = dim
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        (p,) = ctx.saved_tensors
        on = p > 0
        g = torch.where(on, grad, 0.0)
        mean = g.sum(dim=ctx.dim, keepdim=True) / on.sum(dim=ctx.dim, keepdim=True)
        return torch.where(on, g - mean, 0.0), None


class _Entmax15Function(Function):
    @staticmethod
    def forward(ctx: Any, z: Tensor, dim: int) -> Tensor:
        z = z / 2  # p = [z/2 - τ]_+^2
        srt = z.sort(dim=dim, descending=True).values
        rho = _ranks(z, dim)
        mean = srt.cumsum(dim) / rho
        mean_sq = (srt * srt).cumsum(dim) / rho
        delta = (1.0 - rho * (mean_sq - mean * mean)) / rho
        tau = mean - delta.clamp_min(0.0).sqrt()
        support = (tau <= srt).sum(dim=dim, keepdim=True)
        p = (z - tau.gather(dim, support - 1)).clamp_min(0.0) ** 2
        ctx.dim = dim
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        (p,) = ctx.saved_tensors
        gppr = p.sqrt()  # dp_i/dz_i at fixed τ
        g = grad * gppr
        q = g.sum(dim=ctx.dim, keepdim=True) / gppr.sum(dim=ctx.dim, keepdim=True)
        return g - q * gppr, None


class _EntmaxBisectFunction(Function):
    @staticmethod
    def forward(ctx: Any, z: Tensor, dim: int, alpha: float, n_iter: int) -> Tensor:
        am1 = min(alpha - 1.0, torch.finfo(z.dtype).max)  # beyond it: argmax to the dtype's eye
        z = z * am1
        n = z.shape[dim]
        # f(τ) = Σ [z - τ]_+^{1/(α-1)} - 1 is decreasing, >= 0 at max - 1, <= 0 at max - n^{1-α}
        tau_lo = z.amax(dim=dim, keepdim=True) - 1.0
        width = 1.0 - n ** (-am1)
        p = z
        for _ in range(n_iter):  # iterations, not keys: each step is one vectorised pass
            width = width / 2
            tau_mid = tau_lo + width
            p = (z - tau_mid).clamp_min(0.0) ** (1.0 / am1)
            tau_lo = torch.where(p.sum(dim=dim, keepdim=True) >= 1.0, tau_mid, tau_lo)
        p = p / p.sum(dim=dim, keepdim=True)
        ctx.dim, ctx.alpha = dim, alpha
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None, None, None]:
        (p,) = ctx.saved_tensors
        gppr = torch.where(p > 0, p ** (2.0 - ctx.alpha), 0.0)  # dp_i/dz_i at fixed τ
        g = grad * gppr
        q = g.sum(dim=ctx.dim, keepdim=True) / gppr.sum(dim=ctx.dim, keepdim=True)
        return g - q * gppr, None, None, None


def sparsemax(scores: Tensor, dim: int = -1, *, mask: Tensor | None = None) -> Tensor:
    r"""Sparsemax: the Euclidean projection of the kept scores onto the probability simplex.

    .. math:: \mathrm{sparsemax}(z) = \arg\min_{p \in \Delta} \|p - z\|_2^2 = [z - \tau(z)]_+

    Martins & Astudillo 2016, "From Softmax to Sparsemax", Eq. 2 and Algorithm 1 (sort-based,
    O(n log n)): with :math:`z_{(1)} \ge \dots \ge z_{(n)}`,
    :math:`k(z) = \max\{k : 1 + k z_{(k)} > \sum_{j \le k} z_{(j)}\}` and
    :math:`\tau = (\sum_{j \le k(z)} z_{(j)} - 1) / k(z)`. Backward in closed form (their
    Eq. 14): :math:`\partial L / \partial z = s \odot (v - \bar v_S)` on the support S.

    Parameters
    ----------
    scores : Tensor
        Logits, any shape, e.g. ``[batch, head, query, key]``. ``-inf`` counts as masked.
    dim : int
        Normalised axis, default ``-1``.
    mask : Tensor of bool, optional
        Keep-mask (True = attend), broadcastable to ``scores``.

    Returns
    -------
    Tensor
        Same shape and dtype as ``scores``; sums to one along ``dim`` in rows with a kept key,
        with exact zeros outside the support; masked entries and all-masked rows are 0.

    Raises
    ------
    ValueError
        NaN or +inf in ``scores``; a non-boolean or non-broadcastable mask.
    """
    x, keep, d = prepare(scores, mask, dim)
    p = _SparsemaxFunction.apply(_shift_and_fill(x, keep, d, 2.0), d)
    return finish(p, keep, scores)


def entmax15(scores: Tensor, dim: int = -1, *, mask: Tensor | None = None) -> Tensor:
    r"""1.5-entmax, exact: :math:`p_i = [z_i / 2 - \tau]_+^2` with Σ p = 1.

    Peters, Niculae & Martins 2019, Eq. 9 with α = 1.5, solved exactly by sorting
    (their Algorithm 2): for each candidate support size k the threshold solves a quadratic,
    :math:`\tau_k = \mu_k - \sqrt{(1 - k\,\sigma_k^2)/k}` over the k largest half-scores;
    the support is the largest k with :math:`\tau_k \le z_{(k)}/2`. Backward in closed form
    (their Eq. 10): with :math:`g = \sqrt{p}`, :math:`\partial L/\partial z = g \odot v -
    (g^\top v / \sum g)\, g`.

    Parameters
    ----------
    scores : Tensor
        Logits, any shape, e.g. ``[batch, head, query, key]``. ``-inf`` counts as masked.
    dim : int
        Normalised axis, default ``-1``.
    mask : Tensor of bool, optional
        Keep-mask (True = attend), broadcastable to ``scores``.

    Returns
    -------
    Tensor
        Same shape and dtype as ``scores``; sums to one along ``dim`` in rows with a kept key;
        sparse; masked entries and all-masked rows are 0.

    Raises
    ------
    ValueError
        NaN or +inf in ``scores``; a non-boolean or non-broadcastable mask.
    """
    x, keep, d = prepare(scores, mask, dim)
    p = _Entmax15Function.apply(_shift_and_fill(x, keep, d, 1.5), d)
    return finish(p, keep, scores)


def _check_alpha(alpha: float) -> None:
    check_number(alpha, "alpha")
    if not (math.isfinite(alpha) and alpha > 1):
        raise ValueError(f"alpha must be finite and > 1, got {alpha}")


def entmax_bisect(
    scores: Tensor,
    dim: int = -1,
    *,
    mask: Tensor | None = None,
    alpha: float = 1.5,
    n_iter: int = 50,
) -> Tensor:
    r"""α-entmax for any α > 1 by bisection on the threshold τ.

    :math:`p_i = [(\alpha - 1) z_i - \tau]_+^{1/(\alpha - 1)}` (Peters et al. 2019, Eq. 9);
    :math:`f(\tau) = \sum_i p_i(\tau) - 1` is decreasing in τ with a root in
    :math:`[\max_i (\alpha-1) z_i - 1,\ \max_i (\alpha-1) z_i - n^{1-\alpha}]`
    (Blondel et al. 2020, "Learning with Fenchel-Young Losses", Sec. 5). After ``n_iter``
    halvings of that interval the output is renormalised to sum to one. Backward by implicit
    differentiation, :math:`g = p^{2-\alpha}` on the support, as for :func:`entmax15`.

    Parameters
    ----------
    scores : Tensor
        Logits, any shape, e.g. ``[batch, head, query, key]``. ``-inf`` counts as masked.
    dim : int
        Normalised axis, default ``-1``.
    mask : Tensor of bool, optional
        Keep-mask (True = attend), broadcastable to ``scores``.
    alpha : float
        α > 1 (α → 1 approaches softmax, α = 2 is sparsemax). Default 1.5.
    n_iter : int
        Bisection steps, ``>= 1``; each halves the bracket (of width < 1). Default 50.

    Returns
    -------
    Tensor
        Same shape and dtype as ``scores``; sums to one along ``dim`` in rows with a kept key;
        masked entries and all-masked rows are 0.

    Raises
    ------
    ValueError
        Bad scores or mask, ``alpha <= 1`` or not finite, ``n_iter < 1``.
    """
    _check_alpha(alpha)
    check_int_at_least(n_iter, "n_iter", 1)
    x, keep, d = prepare(scores, mask, dim)
    z = _shift_and_fill(x, keep, d, float(alpha))
    p = _EntmaxBisectFunction.apply(z, d, float(alpha), n_iter)
    return finish(p, keep, scores)


def _as_tensor_param(value: float | Tensor, name: str, like: Tensor, *, nonneg: bool) -> Tensor:
    """``value`` (number, or tensor broadcastable to ``like``) as a tensor of ``like``'s dtype
    and device, after checking it is finite (and ``>= 0`` where ``nonneg``)."""
    check_number(value, name, tensor_ok=True)
    v = torch.as_tensor(value, dtype=torch.float64)
    if not bool(torch.isfinite(v).all()) or (nonneg and bool((v < 0).any())):
        kind = "a finite number >= 0" if nonneg else "a finite number"
        raise ValueError(f"{name} must be {kind} or a tensor of them, got {value!r:.60}")
    if isinstance(value, Tensor):
        try:
            if torch.broadcast_shapes(value.shape, like.shape) != like.shape:
                raise RuntimeError
        except RuntimeError:
            raise ValueError(
                f"{name} of shape {tuple(value.shape)} must broadcast to the per-row shape "
                f"{tuple(like.shape)} (size 1 along dim)"
            ) from None
        return value.to(like.dtype)
    return torch.tensor(float(value), dtype=like.dtype, device=like.device)


def as_entmax(
    scores: Tensor,
    dim: int = -1,
    *,
    mask: Tensor | None = None,
    alpha: float = 1.5,
    delta: float | Tensor = 1.0,
    beta: float | Tensor = 1.0,
    gamma: float | Tensor = 1.0,
    n_iter: int = 50,
) -> Tensor:
    r"""Adaptive-Scalable α-entmax (ASEntmax): α-entmax of logits scaled by the context length.

    .. math::
        \mathrm{ASEntmax}(l) = \alpha\text{-entmax}\big((\delta + \beta\,(\log m)^{\gamma})\, l\big)

    Vasylenko, Pitorro, Martins & Treviso 2025, "Long-Context Generalization with Sparse
    Attention", arXiv 2506.16640 (ASEntmax section; we could not check the equation number
    from here). The scale is computed as the authors' code does (deep-spin/asentmax,
    ``sparse_gemma.py``, ``_apply_length_scaling``): ``log_position = log(arange(2, L + 2))``, so
    :math:`m = n + 1` for a row with ``n`` kept keys, which keeps :math:`(\log m)^\gamma` finite
    for γ < 0 on one-key rows. There β = softplus(·) ≥ 0 and γ = 2·tanh(·) are predicted
    per head from each query's hidden state and δ = 1; here they are parameters, numbers or
    tensors broadcastable to the per-row shape (``scores``' shape with size 1 along ``dim``,
    e.g. ``[head, 1, 1]``), and gradients reach them. β = 0 is plain α-entmax scaled by δ.
    α-entmax is :func:`entmax_bisect`.

    Parameters
    ----------
    scores : Tensor
        Logits, any shape, e.g. ``[batch, head, query, key]``. ``-inf`` counts as masked.
    dim : int
        Normalised axis, default ``-1``.
    mask : Tensor of bool, optional
        Keep-mask (True = attend), broadcastable to ``scores``.
    alpha : float
        α > 1; default 1.5, the paper's.
    delta, beta : float or Tensor
        δ ≥ 0 and β ≥ 0, not both 0. δ = 1 is the authors' default; β = 1 is ours (learned
        in the paper).
    gamma : float or Tensor
        Exponent γ, finite; default 1 (ours; learned in the paper, in (-2, 2)), which makes the
        scale grow like log n as in Scalable-Softmax.
    n_iter : int
        Bisection steps of :func:`entmax_bisect`, ``>= 1``. Default 50.

    Returns
    -------
    Tensor
        Same shape and dtype as ``scores``; sums to one along ``dim`` in rows with a kept key;
        sparse; masked entries and all-masked rows are 0.

    Raises
    ------
    ValueError
        Bad scores or mask; α, δ, β, γ or ``n_iter`` out of range.
    """
    _check_alpha(alpha)
    check_int_at_least(n_iter, "n_iter", 1)
    x, keep, d = prepare(scores, mask, dim)
    m = key_counts(keep, x, d).clamp_min(1.0) + 1.0  # n + 1 >= 2 (all-masked rows: any m)
    dl = _as_tensor_param(delta, "delta", m, nonneg=True)
    b = _as_tensor_param(beta, "beta", m, nonneg=True)
    g = _as_tensor_param(gamma, "gamma", m, nonneg=False)
    both = torch.as_tensor(delta, dtype=torch.float64) + torch.as_tensor(beta, dtype=torch.float64)
    if bool((both <= 0).any()):
        raise ValueError("delta and beta must not both be 0 (the scale must be > 0)")
    big = torch.finfo(x.dtype).max
    scale = (dl + torch.where(b > 0, b * m.log() ** g, 0.0)).clamp_max(big)  # not 0·inf at β = 0
    # entmax is shift-invariant: scale the shifted logits (max 0), which cannot overflow to
    # +inf, clamped at -max (no 0·inf); dropped keys below the support, as _shift_and_fill does
    shifted = (x - masked_max(x, keep, d)).clamp_min_(-big)
    z = torch.where(keep, (scale * shifted).clamp_min_(-big), -(1.0 / (alpha - 1.0) + 1.0))
    p = _EntmaxBisectFunction.apply(z, d, float(alpha), n_iter)
    return finish(p, keep, scores)
