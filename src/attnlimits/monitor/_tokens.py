"""The monitor's token view: on recorded steps, a few query rows of the step's first sequence
per layer and head, with that sequence's tokens as text (the scan's sampling and tables,
:mod:`attnlimits.capture.token_rows`).

A forward pre-hook on the watched model keeps the first sequence (``input_ids[0]``, cut to its
attention mask's length) of the first forward of a recorded step; each layer's first attention
call of that step then keeps :data:`~attnlimits.capture.token_rows.TOKEN_ROWS` rows of its
band (``[L/2, L)`` causal, ``[0, L)`` else): the softmax of that call's own q·kᵀ and scale
under its mask, the top keys (every key at L ≤ 256). At most :data:`KEPT_STEPS` steps are kept
(halved, evenly, when one more comes: the first and the latest stay). Only with a tokenizer
(``AttentionMonitor(tokenizer=...)`` or the Trainer's ``processing_class``); :attr:`TokenSample.why`
says why no rows were kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import torch
from torch import Tensor

__all__ = ["KEPT_STEPS", "TokenSample"]

#: Recorded steps whose token rows are kept (the page's step selector).
KEPT_STEPS = 8


class TokenSample:
    """The token rows of the recorded steps (see the module docstring)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.why = ""
        self.steps: dict[int, tuple[pd.DataFrame, pd.DataFrame]] = {}  # step: (rows, tokens)
        self._ids: Tensor | None = None
        self._pending: dict[int, pd.DataFrame] = {}  # layer: rows
        self._handle: Any = None

    def hook(self, model: Any, armed: Callable[[], bool]) -> None:
        """Keep the first sequence of each recorded step's first forward of ``model``."""

        def first_sequence(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            if not armed() or self._ids is not None:
                return
            ids = kwargs.get("input_ids", args[0] if args else None)
            if not isinstance(ids, Tensor) or ids.ndim != 2 or ids.is_floating_point():
                self.why = "the watched model's forward got no input_ids"
                return
            n, mask = ids.shape[1], kwargs.get("attention_mask")
            if isinstance(mask, Tensor) and mask.ndim == 2:
                keep = mask[0].bool()
                n = int(keep.sum())
                if not bool(keep[:n].all()):
                    self.why = "the first sequence of a recorded batch is left-padded"
                    return
            self._ids = ids[0, :n].detach().cpu()

        if self.tokenizer is None:
            self.why = (
                "no tokenizer was given (AttentionMonitor(tokenizer=...), or the Trainer's "
                "processing_class)"
            )
            return
        self._handle = model.register_forward_pre_hook(first_sequence, with_kwargs=True)

    def unhook(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def record(
        self,
        layer: int,
        query: Tensor,
        key: Tensor,
        keep: Tensor | None,
        causal: bool,
        scaling: float | None,
    ) -> None:
        """One attention call (detached, under ``no_grad``): ``keep`` a boolean
        ``[batch, 1|head, query|1, key]`` mask or None, ``causal`` whether causality is left to
        the call."""
        from attnlimits.capture.token_rows import band_rows, rows_table
        from attnlimits.hf_bridge import repeat_kv

        if self._ids is None or layer in self._pending:
            return
        n = len(self._ids)
        if query.shape[2] < n or key.shape[2] < n:
            return
        square = keep is not None and keep.shape[2] > 1  # a mask per query: causal if no key after
        ordered = causal or (square and not bool(keep[0, 0, :n, :n].triu(1).any()))  # type: ignore[index]
        lo = n // 2 if ordered else 0
        idx = band_rows(lo, n)
        at = idx.to(query.device)
        q = query[0, :, at].double()  # (head, R, d)
        k = repeat_kv(key[:1], query.shape[1] // key.shape[1])[0, :, :n].double()
        scores = (q @ k.transpose(-1, -2)) * (q.shape[-1] ** -0.5 if scaling is None else scaling)
        ok = torch.ones(len(idx), n, dtype=torch.bool, device=scores.device)
        if causal:
            ok &= torch.arange(n, device=ok.device)[None, :] <= at[:, None].to(ok.device)
        if keep is not None:
            rows = keep[0, 0]
            rows = rows[at.to(rows.device)] if rows.shape[0] > 1 else rows.expand(len(idx), -1)
            ok &= rows[:, :n].to(ok.device)
        attn = torch.softmax(scores.masked_fill(~ok, float("-inf")), dim=-1).nan_to_num(0.0)
        self._pending[layer] = rows_table(idx, attn, ok, n).assign(layer=layer)

    def end_step(self, step: int) -> None:
        """Keep the step's rows (if any) and start the next step clean."""
        from attnlimits.capture.token_rows import token_table

        if self._ids is not None and self._pending:
            rows = pd.concat([self._pending[k] for k in sorted(self._pending)], ignore_index=True)
            tokens = token_table(self.tokenizer, self._ids)
            self.steps[step] = (rows.assign(step=step), tokens.assign(step=step))
            if len(self.steps) > KEPT_STEPS:
                order = sorted(self.steps)
                keep = set(order[::2]) | {order[-1]}
                self.steps = {s: v for s, v in self.steps.items() if s in keep}
        self._ids, self._pending = None, {}

    def tables(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(the kept rows, their steps' tokens), empty without any."""
        if not self.steps:
            return pd.DataFrame(), pd.DataFrame()
        rows, tokens = zip(*(self.steps[s] for s in sorted(self.steps)), strict=True)
        return pd.concat(rows, ignore_index=True), pd.concat(tokens, ignore_index=True)
