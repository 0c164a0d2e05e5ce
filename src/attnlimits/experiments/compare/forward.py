"""One forward of a causal LM with a normaliser swapped in: token losses, probe logits, and the
per-head entropy of the weights the normaliser actually applies, on sampled rows.

The swapped model runs ``attn_implementation="attnlimits_<name>"`` (:mod:`attnlimits.kernels`;
the baseline ``softmax`` runs the model's own SDPA). A wrapper registered like that
implementation hands the call on unchanged and, on ``rows`` query rows per length band, applies
the registry's tensor function (:func:`attnlimits.normalizers.get`) to the same q and k: the
entropy of the weights over the keys (normalised to sum one for the maps that do not) and the
weight they put on the keys at all (below one for softmax1, softpick, ReLU maps, ...). With
``token_rows`` the same weights of a few rows per length are kept for the page's token view.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn

from attnlimits.capture.token_rows import band_rows as token_band
from attnlimits.capture.token_rows import rows_table
from attnlimits.hf_bridge import (
    attention_function,
    get_attn_implementation,
    register_attention_like,
    repeat_kv,
    using_attention,
)
from attnlimits.kernels.hf import config_params
from attnlimits.kernels.spec import resolve_params, sink_logits
from attnlimits.normalizers import get

__all__ = ["FULL_ROWS_UP_TO", "LOGIT_CHUNK", "ForwardResult", "band_rows", "run_forward"]

_RECORDER = "attnlimits_compare_recorder"
_STATS = ("entropy", "mass", "max_weight")
LOGIT_CHUNK = 1024  # positions per slice of the LM head: [1024, vocab] floats at a time
#: Lengths up to which the token view keeps every weight of a row (the scan: 256; here every
#: normaliser multiplies the rows: the quick run's page stays about 6 MB, not 7.6 MB)
FULL_ROWS_UP_TO = 128


class ForwardResult(NamedTuple):
    nll: Tensor  #: [L − 1] loss of token t + 1 from row t (nats), on the CPU
    logits_at: Callable[[Tensor], Tensor]  #: positions → logits predicting them (CPU)
    heads: pd.DataFrame  #: one row per layer, head, length: entropy, mass, max_weight
    seconds: float  #: wall time of the forward (the LM head and recording included)
    #: with ``token_rows``: the token view's rows (:func:`~attnlimits.capture.token_rows.
    #: rows_table` per layer and length, the weights the normaliser applies), else empty
    rows: pd.DataFrame = pd.DataFrame()


def band_rows(lengths: tuple[int, ...], rows: int) -> dict[int, np.ndarray]:
    """``rows`` query rows spread evenly over each length's band ``[L/2, L)`` (causal)."""
    return {
        n: np.unique(np.linspace(n // 2, n - 1, num=min(rows, n - n // 2)).round().astype(int))
        for n in lengths
    }


def _weights(
    query: Tensor, key: Tensor, scaling: float, rows: np.ndarray, name: str, params: dict
) -> tuple[Tensor, Tensor]:
    """The weights w = normaliser(l) of query ``rows`` over every key ``(B, Hq, R, Lk)``, and
    the causal keep-mask ``(R, Lk)``."""
    Hq = query.shape[1]
    k = repeat_kv(key, Hq // key.shape[1]).float()
    idx = torch.from_numpy(rows).to(query.device)
    scores = scaling * (query[:, :, idx].float() @ k.transpose(-1, -2))  # (B, Hq, R, Lk)
    keep = torch.arange(k.shape[2], device=query.device)[None, :] <= idx[:, None]  # causal
    if name == "sink_softmax":  # one sink or one per query head, as the kernel reads them
        sink = sink_logits(name, resolve_params(name, params), Hq)
        assert sink is not None
        params = {"sink": sink.to(scores)[:, None, None]}  # (Hq, 1, 1)
    return get(name)(scores, mask=keep, **params), keep


def _row_stats(
    query: Tensor, key: Tensor, scaling: float, rows: np.ndarray, name: str, params: dict
) -> tuple[Tensor, Tensor, Tensor]:
    """Per head, averaged over ``rows``: entropy of w/Σw, Σw and max w, w = normaliser(l)."""
    w, _ = _weights(query, key, scaling, rows, name, params)
    mass = w.sum(-1)
    p = w / mass.clamp_min(1e-30)[..., None]
    entropy = -torch.special.xlogy(p, p).sum(-1)
    return (
        entropy.mean((0, 2)),
        mass.mean((0, 2)),
        w.amax(-1).mean((0, 2)),
    )


def run_forward(
    model: Any,  # a transformers causal LM (base_model, get_output_embeddings)
    ids: Tensor,
    name: str,
    params: dict[str, Any],
    lengths: tuple[int, ...],
    rows: int,
    *,
    block_size: int = 512,
    token_rows: bool = False,
) -> ForwardResult:
    """Run ``model`` on ``ids`` ``[1, L]`` with normaliser ``name`` (``"softmax"``: the model's
    own SDPA) and return the losses, a logits accessor, per-head statistics and the time; with
    ``token_rows`` also the token view's rows (the scan's sampling: :data:`~attnlimits.
    capture.token_rows.TOKEN_ROWS` rows per length band, their top keys or whole rows)."""
    impl = "sdpa" if name == "softmax" else f"attnlimits_{name}"
    inner = attention_function(impl)
    sampled = band_rows(lengths, rows)
    shown = {n: token_band(n // 2, n).numpy() for n in lengths} if token_rows else {}
    records: list[dict[str, Any]] = []  # one per layer and length, arrays over heads
    kept: list[pd.DataFrame] = []  # the token view's rows, per layer and length
    calls = [0]

    def recorder(module: nn.Module, query: Tensor, key: Tensor, *args: Any, **kwargs: Any) -> Any:
        out = inner(module, query, key, *args, **kwargs)
        layer = getattr(module, "layer_idx", None)
        layer = calls[0] if layer is None else int(layer)
        calls[0] += 1
        scaling = kwargs.get("scaling") or getattr(module, "scaling", query.shape[-1] ** -0.5)
        with torch.no_grad():
            for length, r in sampled.items():
                stats = _row_stats(query, key, float(scaling), r, name, params)
                heads = np.arange(query.shape[1])
                records.append(
                    {"layer": layer, "head": heads, "length": length}
                    | {k: v.cpu().numpy() for k, v in zip(_STATS, stats, strict=True)}
                )
            for length, r in shown.items():
                w, keep = _weights(query, key, float(scaling), r, name, params)
                weights = w[0, :, :, :length].double()
                table = rows_table(
                    torch.from_numpy(r),
                    weights,
                    keep[:, :length],
                    length,
                    full_up_to=FULL_ROWS_UP_TO,
                )
                kept.append(table.assign(layer=layer))
        return out

    register_attention_like(_RECORDER, recorder, like=impl)
    start = time.perf_counter()
    with (
        torch.inference_mode(),
        config_params(model, {**params, "block_size": block_size}),
        using_attention(model, _RECORDER),
    ):
        hidden = model.base_model(ids, use_cache=False).last_hidden_state[0]  # (L, d)
        head = model.get_output_embeddings()
        n = ids.shape[1] - 1  # rows with a next token
        nll = torch.cat(
            [
                nn.functional.cross_entropy(
                    head(hidden[i : min(i + LOGIT_CHUNK, n)]).float(),
                    ids[0, i + 1 : min(i + LOGIT_CHUNK, n) + 1],
                    reduction="none",
                )
                for i in range(0, n, LOGIT_CHUNK)
            ]
        )
    seconds = time.perf_counter() - start

    def logits_at(positions: Tensor) -> Tensor:
        with torch.inference_mode():
            return head(hidden[positions.to(hidden.device) - 1]).float().cpu()

    assert get_attn_implementation(model) != _RECORDER
    heads = pd.concat([pd.DataFrame(r) for r in records], ignore_index=True)
    kept_rows = pd.concat(kept, ignore_index=True) if kept else pd.DataFrame()
    return ForwardResult(nll.cpu(), logits_at, heads, seconds, kept_rows)
