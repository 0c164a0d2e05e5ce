"""attnlimits.capture: load models and capture per-layer, per-head attention.

- :func:`load_model`: named offline models (``"smollm2-135m"``, ``"minilm-l6"``), ``"gpt2"``,
  or any hub id / local directory; eager attention, with :class:`ModelInfo` facts; weights
  lacking tensors are refused by name (:class:`IncompleteWeightsError`) unless allowed.
- :func:`capture`: streaming capture, one :class:`LayerCapture` per layer handed to a callback;
  :func:`capture_all` keeps them all (small inputs); :func:`capturing` wraps your own forward;
  :func:`capture_qkv`: the same without maps (SDPA output, q/k/v per layer) for long contexts.
- :func:`keep_models` / :func:`keep_models_in_this_process`: load each model once for many runs
  in one process (a sweep); :func:`models_loaded` counts the loads.

Axis order: maps ``[batch, head, query, key]``, q/k/v ``[batch, head, pos, d]``; masks are
boolean, True = attend. See ``docs/capture.md``.
"""

from attnlimits.capture._kept import keep_models, keep_models_in_this_process, models_loaded
from attnlimits.capture.capture import (
    CAPTURE_IMPL,
    STREAM_IMPL,
    TENSOR_KEYS,
    LayerCapture,
    LayerQKV,
    capture,
    capture_all,
    capture_keys,
    capture_qkv,
    capturing,
)
from attnlimits.capture.models import (
    NAMED_CONTEXT,
    NAMED_MODELS,
    IncompleteWeightsError,
    LoadedModel,
    ModelInfo,
    ModelUnavailableError,
    attention_modules,
    check_device,
    check_model_available,
    is_causal_lm,
    load_model,
    model_info,
)

__all__ = [
    "CAPTURE_IMPL",
    "NAMED_CONTEXT",
    "NAMED_MODELS",
    "STREAM_IMPL",
    "TENSOR_KEYS",
    "IncompleteWeightsError",
    "LayerCapture",
    "LayerQKV",
    "LoadedModel",
    "ModelInfo",
    "ModelUnavailableError",
    "attention_modules",
    "capture",
    "capture_all",
    "capture_keys",
    "capture_qkv",
    "capturing",
    "check_device",
    "check_model_available",
    "is_causal_lm",
    "keep_models",
    "keep_models_in_this_process",
    "load_model",
    "model_info",
    "models_loaded",
]
