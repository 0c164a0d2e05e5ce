"""Weights that do not fit their model, refused by name before a run measures random tensors.

transformers fills a tensor the checkpoint lacks (or holds in another shape) with a fresh random
one, logs a table of them and carries on: a scan of a folder with a tensor missing would measure
noise and say nothing. :func:`checked_load` loads with ``output_loading_info=True`` and
``ignore_mismatched_sizes=True`` (so that a shape mismatch is reported here, by name, instead of
as transformers' "look at the above report"), drops that table and returns the missing,
unexpected and mismatched tensors; :func:`refuse` raises :class:`IncompleteWeightsError`
naming them (the first few and a count), unless the caller allows them.

Two kinds of difference are a model's ordinary state, not damage, and pass: loading an encoder
as its bare model (``AutoModel``) from a checkpoint of a task class (``BertForMaskedLM``), the
task head's tensors are unused and the bare model's pooler (which no measurement reads) is new.
Tied weights and buffers (``lm_head`` tied to the embeddings, ``position_ids``) are not
reported by transformers at all.
"""

from __future__ import annotations

import logging
import pickle
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from attnlimits.capture._files import pickle_error

__all__ = ["IncompleteWeightsError", "checked_load", "refuse"]

#: Modules of a bare model that no measurement reads: new ones are not damage.
_UNREAD = ("pooler.",)
#: Tensors named in a message; the rest are counted.
_SHOWN = 3
#: The option and argument that allow incomplete weights, as the messages name them.
_ALLOW = "--allow-incomplete-weights (allow_incomplete_weights=True)"


class IncompleteWeightsError(OSError):
    """A model's weights lack tensors, hold unexpected ones, or hold some in another shape."""


class _DropLoadReport(logging.Filter):
    """transformers' multi-line LOAD REPORT table (and its note on tied weights that are both
    absent): the one-line error, or the incomplete note, names the same tensors."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        # also its note on tied weights both absent: those are named as missing
        return "LOAD REPORT" not in message and "This checkpoint seem corrupted" not in message


@contextmanager
def _quiet_report() -> Iterator[None]:
    log = logging.getLogger("transformers.modeling_utils")
    drop = _DropLoadReport()
    log.addFilter(drop)
    try:
        yield
    finally:
        log.removeFilter(drop)


def _names(items: list[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def _describe(problems: Mapping[str, list[str]]) -> str:
    """``problems`` (kind -> tensors) in words: "2 missing (a, b), 1 of another shape (c: ...)"."""
    return "; ".join(f"{len(v)} {kind} ({_names(v)})" for kind, v in problems.items() if v)


def _problems(model: Any, info: Mapping[str, Any]) -> dict[str, list[str]]:
    """Missing, unexpected and mismatched tensors, less a bare model's ordinary differences."""
    missing = sorted(info.get("missing_keys") or ())
    unexpected = sorted(info.get("unexpected_keys") or ())
    mismatched = [
        f"{k}: {list(a)} in the file, {list(b)} in the model"
        for k, a, b in sorted(info.get("mismatched_keys") or (), key=lambda m: m[0])
    ]
    archs = getattr(model.config, "architectures", None) or []
    if archs and type(model).__name__ not in archs:  # a bare model from a task checkpoint
        missing = [k for k in missing if not k.startswith(_UNREAD)]
        unexpected = []
    return {"missing": missing, "unexpected": unexpected, "of another shape": mismatched}


def checked_load(load: Callable[..., Any], **kwargs: Any) -> tuple[Any, dict[str, list[str]]]:
    """``load(**kwargs)`` (a ``from_pretrained``) with its loading report: the model and its
    problems (kind -> tensors; all empty for a complete model), transformers' table dropped."""
    try:
        with _quiet_report(), warnings.catch_warnings():
            # torch's note on a pickle protocol it did not write: the load works or fails alone
            warnings.filterwarnings("ignore", message="Detected pickle protocol")
            model, info = load(output_loading_info=True, ignore_mismatched_sizes=True, **kwargs)
    except pickle.UnpicklingError as err:  # torch's page advises weights_only=False: never
        raise pickle_error(err) from None
    return model, _problems(model, info)


def refuse(what: str, model: Any, problems: Mapping[str, list[str]], *, allow: bool) -> None:
    """:class:`IncompleteWeightsError` naming ``what`` and the tensors, where there are
    problems and they are not allowed."""
    if any(problems.values()) and not allow:
        raise IncompleteWeightsError(
            f"{what}'s weights do not fit {type(model).__name__}: {_describe(problems)}; "
            "transformers would fill what is missing or of another shape at random and ignore "
            f"what is unexpected: fix or fetch the files again, or pass {_ALLOW}"
        )
