"""One captured layer reduced to per-head diagnostics at every length it stands for.

Two kinds of quantity, from one :class:`~attnlimits.capture.LayerQKV`:

- **streamed, every row** (:func:`band_means`): entropy, the active set exp(H)/L (effective
  support as a fraction of the keys), maximum weight, sink mass, logit spread, the adaptive
  β(H), the weight on the previous token and on the last :data:`LOCAL` tokens, from
  :func:`attnlimits.kernels.attention_row_stats` (no ``[query, key]`` map), averaged over the
  rows of each length's band (:func:`~attnlimits.experiments.scan.config.band`);
- **materialised, sampled rows** (:func:`sampled_rows`): ``rows`` evenly spaced query rows of
  the band get their full weight rows, for the exact Jacobian norm (paper A, Alg. 5, at the
  head's own scale T = 1), N_s/N (Alg. 4) and d̃ and E (Eq. 7, Thm 1.2) per N, from which
  :func:`~attnlimits.experiments.scan.compute.critical_table` runs Alg. 3 over heads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from attnlimits.capture import LayerQKV
from attnlimits.experiments.scan.config import Config, band
from attnlimits.kernels import RowStats, attention_row_stats
from attnlimits.metrics import (
    distance_curve,
    normalize_to_sphere,
    separability_curve,
    softmax_jacobian_norm,
)
from attnlimits.normalizers import softmax
from attnlimits.normalizers.adaptive import adaptive_beta

__all__ = ["LOCAL", "band_means", "duplicate_keys", "induction_scores", "sampled_rows"]

#: Keys that count as "local" to a query: itself and the LOCAL − 1 tokens before it.
LOCAL = 8


def _row_stats(qkv: LayerQKV, offsets: Sequence[int], cfg: Config) -> RowStats:
    return attention_row_stats(
        qkv.q,
        qkv.k,
        mask=qkv.mask,
        causal=qkv.causal,
        scale=qkv.scaling,
        offsets=offsets,
        block_size=cfg.block_size,
    )


def _nanmean(x: Tensor) -> np.ndarray:
    """Mean over the last axis ignoring NaN (rows with no key), as float64 numpy."""
    return torch.nanmean(x.double(), dim=-1).cpu().numpy()


def band_means(qkv: LayerQKV, lengths: tuple[int, ...], cfg: Config) -> pd.DataFrame:
    """Per head and length: the band means of the streamed per-row statistics."""
    r = _row_stats(qkv, range(LOCAL), cfg)
    n = r.n_keys[0].double()  # (head, rows)
    per_row = {
        "entropy": r.entropy[0],
        "entropy_norm": torch.where(n >= 2, r.entropy[0] / n.clamp_min(2).log(), torch.nan),
        "support_fraction": torch.where(n >= 1, r.entropy[0].exp() / n.clamp_min(1), torch.nan),
        "max_weight": r.max_weight[0],
        "sink_mass": r.sink_mass[0],
        "logit_spread": r.logit_spread[0],
        "beta": torch.where(r.entropy[0].isnan(), torch.nan, adaptive_beta(r.entropy[0])),
        "prev_token": r.offset_weights[0, ..., 1],
        "local_mass": r.offset_weights[0].sum(-1),
    }
    heads = qkv.q.shape[1]
    frames = []
    for length in lengths:  # a handful of lengths, each a slice of the same rows
        a, b = band(length, qkv.causal)
        cols = {k: _nanmean(v[:, a:b]) for k, v in per_row.items()}
        frames.append(pd.DataFrame({"length": length, "head": np.arange(heads), **cols}))
    return pd.concat(frames, ignore_index=True)


def duplicate_keys(v: Tensor, kv_head_of: Tensor) -> np.ndarray:
    """Per query head: how many of the value vectors ``v`` ``[kv_head, L, d]`` have an exact twin.

    Assumption 2 of paper A (δ = min ‖x_i − x_j‖ > 0) fails exactly when this is > 0 (e.g.
    repeated tokens in layer 0). One ``unique`` over all kv heads at once (the head index is a
    leading column), not a loop over heads.
    """
    hkv, length, d = v.shape
    tagged = torch.cat(
        [torch.arange(hkv, dtype=v.dtype).repeat_interleave(length)[:, None], v.reshape(-1, d)],
        dim=1,
    )
    _, inverse, counts = torch.unique(tagged, dim=0, return_inverse=True, return_counts=True)
    twins = (counts[inverse] > 1).reshape(hkv, length).sum(-1)
    return twins[kv_head_of.cpu()].numpy()


def sampled_rows(qkv: LayerQKV, length: int, cfg: Config) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per head: ‖J‖₂, N_s/N and duplicate keys; per head, N and row: d̃ and E) at length L."""
    a, b = band(length, qkv.causal)
    idx = torch.linspace(a, b - 1, cfg.rows).round().long().unique()
    heads = qkv.q.shape[1]
    q = qkv.q[0, :, idx.to(qkv.q.device)].double()  # (head, R, d)
    k = qkv.k[0, qkv.kv_head_of, :length].double()  # (head, L, d)
    x = qkv.v[0, qkv.kv_head_of, :length].float()  # x_i: value vectors (paper A)
    scores = q @ k.transpose(-1, -2) * qkv.scaling  # (head, R, L)
    keep = torch.ones(len(idx), length, dtype=torch.bool, device=scores.device)
    if qkv.causal:
        keep = keep & (
            torch.arange(length, device=keep.device)[None, :] <= idx[:, None].to(keep.device)
        )
    if qkv.mask is not None:
        keep = keep & qkv.mask[0, 0][idx][:, :length]
    attn = softmax(scores, mask=keep).float()
    jac = softmax_jacobian_norm(scores, 1.0, mask=keep).values  # (head, R)
    fewest = int(keep.sum(-1).min())  # N must stay below every sampled row's kept keys
    ns = [n for n in cfg.ns if n < fewest]
    n_sep = min(cfg.n_separability, fewest - 1)
    # δ = 0 skips the O(L²) pairwise distances: only N_s/N is kept, not Theorem 2's bounds
    sep = separability_curve(
        attn, normalize_to_sphere(x), [n_sep], mask=keep, radius=1.0, delta=0.0
    )
    per_head = pd.DataFrame(
        {
            "length": length,
            "head": np.arange(heads),
            "jacobian_norm": _nanmean(jac),
            "separability": _nanmean(sep.ratio[..., 0]),
            "n_separability": n_sep,
            "duplicate_keys": duplicate_keys(qkv.v[0, :, :length].cpu(), qkv.kv_head_of),
        }
    )
    curve = distance_curve(attn, x, ns, mask=keep, forms=("derived",))
    shape = curve.distance.shape  # (head, R, n_N)
    grid = np.indices(shape).reshape(3, -1)
    samples = pd.DataFrame(
        {
            "length": length,
            "head": grid[0],
            "row": idx.numpy()[grid[1]],
            "N": np.asarray(ns)[grid[2]],
            "distance": curve.distance.reshape(-1).cpu().numpy(),
            "expectation": curve.expected["derived"].reshape(-1).cpu().numpy(),
        }
    )
    return per_head, samples


def induction_scores(qkv: LayerQKV, period: int, cfg: Config) -> pd.DataFrame:
    """Per head, on ``period`` random tokens repeated once: the mean weight a second-copy token
    puts on the token after its first occurrence (offset ``period − 1``; the induction score
    of Olsson et al. 2022) and on the previous token."""
    r = _row_stats(qkv, (period - 1, 1), cfg)
    second = r.offset_weights[0, :, period:]  # (head, rows of the second copy, 2)
    return pd.DataFrame(
        {
            "head": np.arange(qkv.q.shape[1]),
            "induction": _nanmean(second[..., 0]),
            "prev_token_repeated": _nanmean(second[..., 1]),
        }
    )
