"""Dispersion of softmax: Lemma 2.1, Propositions 3.1 and 3.2 of paper B (Veličković et al.).

- Lemma 2.1: logits e_1..e_n in [m, M], spread Δ = M − m, temperature θ > 0 ⇒
  1/(1 + (n−1)·e^{Δ/θ}) ≤ α_k ≤ 1/(1 + (n−1)·e^{−Δ/θ}) for every k, so α_k → 0 as n → ∞.
- Proposition 3.1: for e_i = (Q q)ᵀ(K x_i) the spread is at most
  2·σ_max(Q)·σ_max(K)·||q||·max_i ||x_i||.
- Proposition 3.2: for p ∝ exp(β e), dH/dβ = −β·Var_p(e) (entropy H in nats).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlimits._checks import (
    check_finite,
    check_mask,
    check_nonempty,
    check_number,
    check_positive,
    normalize_dim,
)
from attnlimits.theory._common import Number, check_length, check_nonnegative

__all__ = ["dispersion_bounds", "entropy_beta_derivative", "projected_spread_bound"]


def dispersion_bounds(
    length: Number, spread: Number, temperature: Number = 1.0
) -> tuple[Number, Number]:
    """Paper B, Lemma 2.1: 1/(1 + (n−1)e^{Δ/θ}) ≤ α_k ≤ 1/(1 + (n−1)e^{−Δ/θ}).

    For softmax(e/θ) over n kept logits with max − min ≤ Δ. The upper bound is attained by the
    top logit when the other n − 1 sit at the bottom, the lower bound by the bottom logit when
    the others sit at the top. With spread ≤ 2Δ_A (Δ_A = ||q||·max||k||) this implies paper
    A's Corollary 1.

    Parameters
    ----------
    length : float or Tensor
        n ≥ 1, the number of kept keys.
    spread : float or Tensor
        Δ ≥ 0, a bound on max_k e_k − min_k e_k (raw logits, before dividing by θ).
    temperature : float or Tensor
        θ > 0.

    Returns
    -------
    (lower, upper)
    """
    check_length(length)
    check_nonnegative(spread, "spread")
    check_positive(temperature, "temperature")
    # 1/(1 + (n−1)e^{±Δ/θ}) = sigmoid(∓Δ/θ − log(n−1)): no overflow for Δ/θ ≫ 700 and exact
    # at n = 1 (log 0 = −inf gives 1), where e^{Δ/θ} itself would overflow
    args = [torch.as_tensor(v, dtype=torch.float64) for v in (length, spread, temperature)]
    try:
        torch.broadcast_shapes(*(a.shape for a in args))
    except RuntimeError:
        raise ValueError(
            "length, spread and temperature must broadcast together, got shapes "
            f"{', '.join(str(tuple(a.shape)) for a in args)}"
        ) from None
    n, spread_t, theta = args
    z, log_rest = spread_t / theta, torch.log(n - 1)
    one = n == 1  # exactly 1 (not inf − inf when Δ/θ overflows)
    lower = torch.where(one, 1.0, torch.sigmoid(-z - log_rest))
    upper = torch.where(one, 1.0, torch.sigmoid(z - log_rest))
    if not any(isinstance(v, Tensor) for v in (length, spread, temperature)):
        return float(lower), float(upper)
    like = next(v for v in (spread, length, temperature) if isinstance(v, Tensor))
    dtype = like.dtype if like.is_floating_point() else torch.get_default_dtype()
    return lower.to(dtype), upper.to(dtype)


def projected_spread_bound(w_query: Tensor, w_key: Tensor, query: Tensor, items: Tensor) -> Tensor:
    """Paper B, Proposition 3.1 (its formula is lost in our copy — "Then is upper bounded as ,
    where are the largest singular values of and" — so this statement is our reconstruction):
    max_i e_i − min_i e_i ≤ 2·σ_max(Q)·σ_max(K)·||q||·max_i ||x_i||.

    For logits e_i = (Q q)ᵀ(K x_i): |e_i| ≤ ||Q q||·||K x_i|| ≤ σ_max(Q)||q||·σ_max(K)||x_i||,
    and the spread is at most twice the largest |e_i|. Sharp attention over many items thus
    needs large weights (σ_max) or large inputs.

    Parameters
    ----------
    w_query, w_key : Tensor
        Q and K, ``[..., d_out, d]`` (same ``d_out``).
    query : Tensor
        q, ``[..., d]``.
    items : Tensor
        x_i, ``[..., n, d]``.

    Returns
    -------
    Tensor
        The bound, shape ``[...]`` (the broadcast of the leading shapes).
    """
    for name, t in (("w_query", w_query), ("w_key", w_key), ("query", query), ("items", items)):
        check_finite(t, name, allow_neg_inf=False)
    if w_query.ndim < 2 or w_key.ndim < 2 or items.ndim < 2 or query.ndim < 1:
        raise ValueError(
            "w_query and w_key must be matrices [..., d_out, d], query [..., d], items "
            f"[..., n, d]; got w_query {tuple(w_query.shape)}, w_key {tuple(w_key.shape)}, "
            f"query {tuple(query.shape)}, items {tuple(items.shape)}"
        )
    d = query.shape[-1]
    if w_query.shape[-1] != d or w_key.shape[-1] != d or items.shape[-1] != d:
        raise ValueError(
            f"feature axes differ: w_query {tuple(w_query.shape)}, w_key {tuple(w_key.shape)}, "
            f"query {tuple(query.shape)}, items {tuple(items.shape)}"
        )
    if w_query.shape[-2] != w_key.shape[-2]:
        raise ValueError(
            f"w_query and w_key must map to the same space, got {tuple(w_query.shape)} "
            f"and {tuple(w_key.shape)}"
        )
    if items.shape[-2] == 0:
        raise ValueError(f"items has no item (shape {tuple(items.shape)})")
    lead = [w_query.shape[:-2], w_key.shape[:-2], query.shape[:-1], items.shape[:-2]]
    try:
        torch.broadcast_shapes(*lead)
    except RuntimeError:
        raise ValueError(
            f"the leading axes of w_query, w_key, query and items do not broadcast: {lead}"
        ) from None
    work = [
        t.float() if t.dtype in (torch.float16, torch.bfloat16) else t
        for t in (w_query, w_key, query, items)
    ]
    s_q = torch.linalg.matrix_norm(work[0], ord=2)  # no half kernels
    s_k = torch.linalg.matrix_norm(work[1], ord=2)
    q_norm = torch.linalg.vector_norm(work[2], dim=-1)
    x_max = torch.linalg.vector_norm(work[3], dim=-1).amax(dim=-1)
    bound = 2 * s_q * s_k * q_norm * x_max
    if not bool(torch.isfinite(bound).all()):
        raise ValueError(
            f"the bound overflows {bound.dtype}: w_query, w_key, query or items too large"
        )
    return bound


def entropy_beta_derivative(
    logits: Tensor, beta: float | Tensor = 1.0, *, dim: int = -1, mask: Tensor | None = None
) -> Tensor:
    """Paper B, Proposition 3.2: dH/dβ = −β·Var_p(e) for the Boltzmann distribution p ∝ exp(β e).

    H(β) = log Z − β·E_p[e] with Z = Σ_j exp(β e_j), so dH/dβ = E_p[e] − E_p[e] − β Var_p(e).
    The entropy therefore falls monotonically as |β| grows (the temperature 1/β falls).

    Parameters
    ----------
    logits : Tensor
        e, ``[..., key]`` (any axis via ``dim``); ``-inf`` entries are dropped.
    beta : float or Tensor
        Inverse temperature; a tensor broadcasts against the per-row output.
    dim : int
        The key axis.
    mask : Tensor, optional
        Boolean keep-mask broadcastable to ``logits`` (True = keep).

    Returns
    -------
    Tensor
        dH/dβ per row (``dim`` removed), float32 for half inputs; NaN for a row with no kept
        key.
    """
    check_finite(logits, "logits")
    check_number(beta, "beta", tensor_ok=True)
    if isinstance(beta, Tensor):
        check_finite(beta, "beta", allow_neg_inf=False)
    elif not math.isfinite(beta):
        raise ValueError(f"beta must be finite, got {beta}")
    dim = normalize_dim(dim, logits.ndim, "logits")
    check_nonempty(logits, dim, "logits")
    keep = ~torch.isneginf(logits)
    checked = check_mask(mask, logits, of="logits")
    if checked is not None:
        keep = keep & checked
    work = torch.float32 if logits.dtype in (torch.float16, torch.bfloat16) else logits.dtype
    e = torch.where(keep, logits.to(work), 0.0).movedim(dim, -1)
    keep = keep.movedim(dim, -1)
    if isinstance(beta, Tensor):
        try:  # β broadcasts against the rows (the output may be larger than them)
            torch.broadcast_shapes(beta.shape, e.shape[:-1])
        except RuntimeError:
            raise ValueError(
                f"beta of shape {tuple(beta.shape)} does not broadcast against the rows of "
                f"logits {tuple(e.shape[:-1])}"
            ) from None
    b = beta.unsqueeze(-1) if isinstance(beta, Tensor) else torch.tensor(float(beta), dtype=work)
    # p ∝ exp(β e) is shift-invariant: shift e by its row maximum (β ≥ 0) or minimum (β < 0)
    # so that β·(e − ref) <= 0
    hi = torch.where(keep, e, -math.inf).amax(-1, keepdim=True)
    lo = torch.where(keep, e, math.inf).amin(-1, keepdim=True)
    ref = torch.where(b >= 0, hi, lo)
    ref = torch.where(torch.isfinite(ref), ref, 0.0)
    # β·(e − ref) from the halves, so that a spread past the dtype's maximum (float32 logits of
    # both signs near it) keeps its value; a product that overflows is −inf, a weight of 0
    z = torch.where(keep, (b * (e / 2 - ref / 2)) * 2, -math.inf)
    p = torch.softmax(z, dim=-1).nan_to_num(0.0)
    # Var_p(e) through the half-range h of the keys that carry weight (p > 0: a key of weight 0
    # adds nothing to Var_p, and a far one of them, -3.4e38 beside logits near 0, made h so wide
    # that the others' spread was lost), and centred at the row's mode ``ref`` (so the mean of d
    # is summed without cancelling: centring at 0.5 of the range left a rounding error of the
    # weights' sum, ~1e-7, which h² lifted past the dtype's maximum). d = (e − ref) / 2h lies in
    # [−1, 1], Var(e) = 4h²·Var(d), and −β·4h²·Var(d) is multiplied in an order whose partial
    # products overflow only where the result does (a spread near float64's maximum with a
    # subnormal β has a finite dH/dβ; squaring e − mean first overflowed)
    held = keep & (p > 0)
    hi_s = torch.where(held, e, -math.inf).amax(-1, keepdim=True)
    lo_s = torch.where(held, e, math.inf).amin(-1, keepdim=True)
    h = torch.where(torch.isfinite(hi_s) & torch.isfinite(lo_s), hi_s / 2 - lo_s / 2, 0.0)
    d = torch.where(held & (h > 0), (e / 2 - ref / 2) / torch.where(h > 0, h, 1.0), 0.0)
    d_mean = (p * d).sum(-1, keepdim=True)
    var_u = torch.where(held, p * (d - d_mean) ** 2, 0.0).sum(-1)  # p = 0: no term
    beta_rows, h_rows = b.squeeze(-1), h.squeeze(-1)
    out = -(var_u * h_rows * beta_rows * h_rows) * 4
    out = torch.where(beta_rows == 0, 0.0, out)  # β = 0: exactly 0, Var or not
    out = torch.where(keep.any(-1), out, math.nan)
    if not bool(torch.isfinite(out[keep.any(-1).expand_as(out)]).all()):
        raise ValueError(
            f"dH/dβ overflows {out.dtype}: logits spread too wide for beta={beta!r:.30}"
        )
    return out
