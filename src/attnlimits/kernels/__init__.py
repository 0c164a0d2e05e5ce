"""attnlimits.kernels: streaming (blockwise, O(L·d) memory) attention for long contexts.

- :func:`streaming_attention`: ``softmax(c·l) @ v`` with ``c`` = 1/T (``"softmax"``), s·log n
  (``"ssmax"``) or paper B's adaptive β(H) (``"adaptive"``), over key blocks; GQA, causal with
  a decode offset, boolean keep-masks; :class:`AttentionStats` on request.
- :func:`attention_row_stats`: per-row entropy, maximum weight, sink mass, logit spread and
  weights at given offsets, streamed from q and k (what ``scan`` and the monitor record).
- :func:`sdpa_attention`: the same result through PyTorch's ``scaled_dot_product_attention``
  for every normaliser with an SDPA form (all but softcap; streaming fallback otherwise), with
  SDPA's own backward and attention dropout.
- :func:`naive_attention`: the same definition over materialised scores (tests, benchmarks).
- transformers: importing this package registers ``attn_implementation`` names
  ``attnlimits_<name>`` for every registry normaliser (SDPA path by default); :func:`patch`
  switches a loaded model inside a ``with`` block. See ``docs/kernels.md``.
"""

from attnlimits.kernels.hf import CONFIG_ATTR, HF_NAMES, patch, register, register_defaults
from attnlimits.kernels.reference import naive_attention
from attnlimits.kernels.row_stats import RowStats, attention_row_stats
from attnlimits.kernels.sdpa import sdpa_attention
from attnlimits.kernels.streaming import NORMALIZERS, AttentionStats, streaming_attention

register_defaults()

__all__ = [
    "CONFIG_ATTR",
    "HF_NAMES",
    "NORMALIZERS",
    "AttentionStats",
    "RowStats",
    "attention_row_stats",
    "naive_attention",
    "patch",
    "register",
    "sdpa_attention",
    "streaming_attention",
]
