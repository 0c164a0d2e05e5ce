"""Attention per layer and head during training: entropy, maximum weight, sink mass, spread.

:class:`AttentionMonitor` watches a transformers model while it trains, as a
``transformers.TrainerCallback`` (``monitor.attach(trainer)``) or as a context manager around a
hand-written loop::

    with AttentionMonitor(every=50, out_dir="runs/attn").watch(model) as mon:
        for batch in batches:
            loss = model(**batch).loss
            loss.backward(); optimizer.step(); optimizer.zero_grad()
            mon.step()  # one call per optimiser step, after it

On every ``every``-th step it records, per layer and head, on that step's batches (all of its
forward passes: gradient accumulation included), the row means of

- the entropy ``H = −Σ p log p`` in nats: paper A's Discussion recommends monitoring it;
- the maximum weight ``max p``: paper A, Lemma 1 (C₁/L ≤ α ≤ C₂/L, vanishing attention) and
  paper B, Lemma 2.1 (dispersion: every weight → 0 as the keys grow, for a bounded spread);
- the sink mass ``p₀``: the weight on key position 0;
- the logit spread ``Δ = max l − min l`` of the scaled logits over the kept keys: paper B,
  Lemma 2.1 and Prop. 3.1 (sharp attention needs a large spread, hence large weights).

How: the model's attention implementation (eager, sdpa, ...) is swapped for a registered wrapper
that calls the original function unchanged and gets the same masks
(:func:`attnlimits.hf_bridge.register_attention_like`); the original is restored when the
monitor closes. Only on recorded steps does the wrapper also run
:func:`attnlimits.kernels.attention_row_stats` on the detached q and k under ``no_grad``
(blockwise: no ``[query, key]`` map) and reduce it at once to per-head sums; other steps cost
one dictionary look-up per layer.

Recorded rows go to ``<out_dir>/attention_monitor.parquet`` (the whole table, rewritten
atomically at every record and on close; with a Trainer ``out_dir`` defaults to
``args.output_dir``), columns :data:`COLUMNS`. A table the monitor wrote there before is kept
and appended to (a hand-written loop numbers its steps on from its last step; a Trainer resumed
at step ``s`` keeps its rows up to ``s``; a Trainer starting at step 0 is refused); a file there
that is not the monitor's own, or a symbolic link, is refused in one line. At the end of
training (close, or the Trainer's ``on_train_end``) ``attention_monitor.html`` beside it shows
the table (:mod:`attnlimits.view`). A head is judged on the rows with at least two kept keys:
it has *collapsed* when ``H < collapse_entropy`` (0.05 nats) on every row, *dispersed* when
``H / log n_keys > disperse_ratio`` (0.95) on every row (the normalised entropy of one step: the
end state paper B's dispersion leads to, near-uniform weights, not the trend over n that
:mod:`attnlimits.metrics.dispersion` measures); each head warns (:class:`AttentionHeadWarning`)
once per kind. See docs/monitor.md.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import TYPE_CHECKING, Any, TypeVar

from attnlimits._checks import check_in_range, check_int_at_least
from attnlimits.monitor._files import COLUMNS, TABLE_NAME, earlier_rows, writable
from attnlimits.monitor._session import MONITOR_PREFIX, STATS, Session
from attnlimits.monitor._tokens import TokenSample

__all__ = [
    "COLUMNS",
    "MONITOR_PREFIX",
    "STATS",
    "TABLE_NAME",
    "AttentionHeadWarning",
    "AttentionMonitor",
]

M = TypeVar("M", bound="_Monitor")


class AttentionHeadWarning(UserWarning):
    """A head whose attention collapsed onto one key, or dispersed to near-uniform weights."""


class _Monitor:
    """Record attention statistics per layer and head every ``every`` steps of training.

    Per head, the row means of the entropy (paper A's Discussion: monitor it), the maximum
    weight (paper A, Lemma 1; paper B, Lemma 2.1), the sink mass (weight on key 0) and the logit
    spread (paper B, Lemma 2.1 and Prop. 3.1), from the forward passes of the recorded steps.

    Parameters
    ----------
    every : int
        Record on steps ``every, 2·every, ...`` (1-based, as Trainer's ``global_step``).
    out_dir : path, optional
        Folder of ``attention_monitor.parquet``; created if missing, checked for writing. A
        table the monitor wrote there before is appended to; another file of that name (or of
        ``attention_monitor.html``), or a symbolic link, raises ``ValueError``.
        Default: the Trainer's ``args.output_dir``; in a hand-written loop, no file (the
        records stay available through :meth:`table`).
    collapse_entropy : float
        Warn when a head's entropy is below this (nats) on every row with ≥ 2 keys (0.05;
        0 turns the warning off).
    disperse_ratio : float
        Warn when ``H / log n_keys`` exceeds this on every row with ≥ 2 keys (0.95; 1 turns
        the warning off). A freshly initialised model is dispersed: its logits are near 0.
    block_size : int
        Query rows and key columns per block of the streamed statistics (memory per recorded
        call: about batch × heads × block_size² floats).
    tokenizer : optional
        For the page's token view (default: the Trainer's ``processing_class``): on recorded
        steps, a few query rows of the first sequence per layer and head with its tokens as
        text (:meth:`token_rows`; at most 8 steps kept). Without one the page says so.

    Use with ``transformers.Trainer``: ``monitor.attach(trainer)`` before ``trainer.train()``
    (it puts the monitor first among the callbacks so that the reporting callbacks of
    ``report_to`` receive its ``attn/<stat>/layer_<i>`` summaries; a recorded step also sets
    ``control.should_log``, so the Trainer logs on it). The model is watched from
    ``on_train_begin`` to ``on_train_end``.

    In a hand-written loop: ``with monitor.watch(model) as mon: ... mon.step()``; :meth:`step`
    returns the layer summaries on recorded steps (None otherwise). Without ``with``, call
    :meth:`close` to restore the model's attention and write the table.
    """

    def __init__(
        self,
        every: int = 50,
        out_dir: str | os.PathLike[str] | None = None,
        *,
        collapse_entropy: float = 0.05,
        disperse_ratio: float = 0.95,
        block_size: int = 128,
        tokenizer: Any = None,
    ) -> None:
        check_int_at_least(every, "every", 1)
        check_int_at_least(block_size, "block_size", 1)
        check_in_range(collapse_entropy, "collapse_entropy", 0.0, math.inf, closed=(True, False))
        check_in_range(disperse_ratio, "disperse_ratio", 0.0, 1.0, closed=(False, True))
        self.every, self.block_size = every, block_size
        self.collapse_entropy, self.disperse_ratio = float(collapse_entropy), float(disperse_ratio)
        self.out_dir = None if out_dir is None else writable(out_dir, "out_dir")
        self.records = [] if self.out_dir is None else earlier_rows(self.out_dir)
        self.last_summaries: dict[str, float] = {}
        self._session = Session(block_size)
        self._tokens = self._session.tokens = TokenSample(tokenizer)
        self._done = 0
        self._warned: set[tuple[Any, ...]] = set()
        self._pending: dict[str, float] = {}
        self._attached = self._owns_watch = False

    # ---- watching a model -----------------------------------------------------------------
    def watch(self: M, model: Any) -> M:
        """Start watching ``model``: its attention implementation is swapped for the recording
        wrapper. Returns the monitor, a context manager that closes it on exit. Steps are
        numbered on from the last recorded one (an earlier loop's, in this monitor or in the
        table it found in ``out_dir``).

        ``TypeError`` for a model whose attention does not go through transformers' attention
        interface; ``ValueError`` if the monitor or the model is already watching/watched.
        """
        if self._session.model is not None:
            raise ValueError("this AttentionMonitor already watches a model; close() it first")
        self._session.install(model)
        self._tokens.hook(model, lambda: self._session.armed)
        self._set_done(max((int(r["step"]) for r in self.records), default=0))
        return self

    def close(self) -> None:
        """Write the table and its page, restore the model's attention implementation, stop
        watching."""
        self._flush(page=True)
        self._tokens.unhook()
        self._session.uninstall()

    def __enter__(self: M) -> M:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def recording(self) -> bool:
        """Whether the current step (the forward passes before the next :meth:`step`) is
        recorded."""
        return self._session.armed

    def step(self) -> dict[str, float] | None:
        """End one training step (call it once per optimiser step); on a recorded step, return
        the layer summaries ``{"attn/<stat>/layer_<i>": mean over heads}``, else None."""
        if self._session.model is None:
            raise ValueError("step() needs a watched model: use `with monitor.watch(model):`")
        return self._end_step(self._done + 1)

    def table(self) -> Any:
        """Every record so far as a pandas DataFrame with :data:`COLUMNS`."""
        import pandas as pd

        return pd.DataFrame(self.records, columns=list(COLUMNS))

    def token_rows(self) -> tuple[Any, Any]:
        """The token view's tables (pandas DataFrames; empty without a tokenizer): the kept
        steps' sampled rows (``step``, ``layer``, ``head``, ``row``, ``key``, ``weight``, ``rank``,
        ``keys``, ``length``) and their first sequences' tokens (``step``, ``position``,
        ``token_id``, ``text``)."""
        return self._tokens.tables()

    # ---- recording ------------------------------------------------------------------------
    def _set_done(self, done: int) -> None:
        """``done`` steps are finished: arm the wrapper if step ``done + 1`` is recorded."""
        self._done = done
        self._session.armed = self._session.model is not None and (done + 1) % self.every == 0

    def _end_step(self, step: int) -> dict[str, float] | None:
        summaries = self._finish(step) if self._session.armed else None
        if self._session.armed:
            self._tokens.end_step(step)
        self._set_done(step)
        return summaries

    def _finish(self, step: int) -> dict[str, float] | None:
        """Turn the step's sums into table rows, warn, write the table; the layer summaries."""
        sums, skipped = self._session.take()
        for layer, why in skipped.items():
            self._warn_once(("skip", layer), f"AttentionMonitor: layer {layer} not recorded: {why}")
        if not sums:
            self._warn_once(
                ("nothing",),
                f"AttentionMonitor recorded nothing at step {step}: no forward pass of the "
                "watched model ran through its attention interface during the step",
            )
            return None
        rows: list[dict[str, Any]] = []
        summaries: dict[str, float] = {}
        for layer in sorted(sums):
            s = sums[layer]
            n = s.rows.cpu()
            means = (s.sums.cpu() / n.clamp_min(1)).masked_fill(n == 0, math.nan)
            ent_max, ratio_min = s.entropy_max.tolist(), s.ratio_min.tolist()
            for head in range(len(n)):
                row: dict[str, Any] = {"step": step, "layer": layer, "head": head}
                row.update({stat: float(means[i, head]) for i, stat in enumerate(STATS)})
                row.update(entropy_max=ent_max[head], entropy_ratio_min=ratio_min[head])
                row.update(length=s.length, n_rows=int(n[head]))
                rows.append(row)
                self._judge(row)
            for i, stat in enumerate(STATS):
                summaries[f"attn/{stat}/layer_{layer}"] = float(means[i].nanmean())
        self.records.extend(rows)
        self.last_summaries = summaries
        self._flush()
        return summaries

    def _judge(self, row: dict[str, Any]) -> None:
        """Warn (once per head and kind) about a collapsed or dispersed head."""
        where = f"at step {row['step']}: layer {row['layer']}, head {row['head']}"
        top, low = row["entropy_max"], row["entropy_ratio_min"]  # ±inf: no row with 2 keys
        if math.isfinite(top) and top < self.collapse_entropy:
            self._warn_once(
                ("collapsed", row["layer"], row["head"]),
                f"attention head collapsed {where} has entropy below {self.collapse_entropy:g} "
                f"nats on every row (largest {top:.3g}): each query attends to "
                "one key",
            )
        elif self.disperse_ratio < 1 and math.isfinite(low) and low > self.disperse_ratio:
            self._warn_once(
                ("dispersed", row["layer"], row["head"]),
                f"attention head dispersed {where} has entropy above {self.disperse_ratio:g}·log "
                f"n_keys on every row (smallest ratio {low:.3f}): its "
                "weights are near uniform (paper B, Lemma 2.1)",
            )

    def _warn_once(self, key: tuple[Any, ...], message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            category = AttentionHeadWarning if key[0] in ("collapsed", "dispersed") else UserWarning
            warnings.warn(message, category, stacklevel=3)

    def _flush(self, page: bool = False) -> None:
        """Rewrite ``<out_dir>/attention_monitor.parquet`` atomically (no folder, no file);
        with ``page`` (at the end of training) also ``attention_monitor.html`` beside it."""
        if self.out_dir is None or not self.records:
            return
        from attnlimits.experiments.store import atomic_write_bytes

        table = self.table()
        atomic_write_bytes(self.out_dir / TABLE_NAME, table.to_parquet(index=False))
        if page:
            from attnlimits.view.monitor_page import write_monitor_page

            rows, tokens = self._tokens.tables()
            write_monitor_page(
                self.out_dir,
                table,
                self.collapse_entropy,
                self.disperse_ratio,
                (rows, tokens, self._tokens.why),
            )

    # ---- transformers.Trainer -------------------------------------------------------------
    def attach(self: M, trainer: Any) -> M:
        """Add the monitor to ``trainer``'s callbacks, first (moved there if already added), so
        that its summaries reach every reporting callback; returns the monitor."""
        handler = getattr(trainer, "callback_handler", None)
        if handler is None:
            raise TypeError(f"attach() takes a transformers.Trainer, got {type(trainer).__name__}")
        if self in handler.callbacks:
            handler.callbacks.remove(self)
        handler.callbacks.insert(0, self)
        self._attached = True
        return self

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self._attached:
            warnings.warn(
                "AttentionMonitor was added to the Trainer without attach(trainer): reporting "
                "callbacks listed before it may miss its summaries; call monitor.attach(trainer)",
                UserWarning,
                stacklevel=2,
            )
        if self._tokens.tokenizer is None:  # the Trainer's tokenizer, for the token view
            found = kwargs.get("processing_class") or kwargs.get("tokenizer")
            self._tokens.tokenizer = found if hasattr(found, "batch_decode") else None
        if self.out_dir is None:
            self.out_dir = writable(args.output_dir, "args.output_dir")
            self.records = earlier_rows(self.out_dir)
        if self.records and state.global_step == 0:
            steps = [int(r["step"]) for r in self.records]
            raise ValueError(
                f"{self.out_dir / TABLE_NAME} holds an earlier training's rows (steps "
                f"{min(steps)} … {max(steps)}); this training starts at step 0 and would "
                "replace them: resume from a checkpoint, move the table away, or pass another "
                "out_dir"
            )
        # resumed at a checkpoint: the rows of the steps trained before it are kept
        self.records = [r for r in self.records if r["step"] <= state.global_step]
        if self._session.model is None:
            self.watch(kwargs["model"])
            self._owns_watch = True
        self._set_done(state.global_step)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._set_done(state.global_step)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        summaries = self._end_step(state.global_step)
        if summaries:
            self._pending.update(summaries)
            control.should_log = True
        return control

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if self._pending and logs is not None:
            logs.update(self._pending)
            if state.log_history and state.log_history[-1].get("step") == state.global_step:
                state.log_history[-1].update(self._pending)  # the copy Trainer.log kept
            self._pending = {}

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._owns_watch:
            self._owns_watch = False
            self.close()
        else:
            self._flush(page=True)


if TYPE_CHECKING:
    from transformers import TrainerCallback

    class AttentionMonitor(_Monitor, TrainerCallback):
        """A ``transformers.TrainerCallback`` recording attention per layer and head."""

else:

    def __getattr__(name: str) -> Any:
        """``AttentionMonitor`` is built on first use: it subclasses ``transformers.
        TrainerCallback``, whose import is costly, so ``import attnlimits.monitor`` stays cheap."""
        if name != "AttentionMonitor":
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from transformers import TrainerCallback

        cls = type(name, (_Monitor, TrainerCallback), {"__module__": __name__})
        cls.__doc__ = _Monitor.__doc__
        cls.__qualname__ = name
        globals()[name] = cls
        return cls
