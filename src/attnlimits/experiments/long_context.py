"""Dispersion in a real LM: max-finding over n numbers, softmax vs adaptive temperature.

Paper B (Veličković et al., Lemma 2.1, Theorem 2.2) proves that with bounded logits every
attention coefficient falls to O(1/n) as the number of items n grows, so a head cannot stay
sharp on one item; its adaptive temperature (Figure 4 listing) sharpens high-entropy heads at
inference. Here a pretrained chat model (SmolLM2-135M-Instruct) is asked for the largest of n
random three-digit numbers, one per line, for n over a grid:

- greedy decoding, exact match of the first integer generated (the answer is the first tokens);
- per head, the entropy of the attention of the answer position (the last prompt token as
  query) over the whole prompt, measured by the streaming kernel's statistics;
- two modes: ``"softmax"`` (the model's own attention) and ``"adaptive"`` (the streaming
  kernel of ``attn_implementation="attnlimits_adaptive"``, swapped in at inference only);
- paper B's Figure 3 analogue: per-head spreads max − min of the scaled scores over a window
  of *War and Peace*.

Tables (see :func:`run_long_context`): ``answers`` (one row per prompt and mode),
``answer_heads`` (per prompt, layer, head), ``accuracy``, ``head_entropy``, ``mean_entropy``,
``spread``. Aggregation, figures and the summary: :mod:`~.long_context_report`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch
from torch import Tensor
from tqdm.auto import tqdm
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS, AttentionInterface

from attnlimits.capture import LayerCapture, LoadedModel, attention_modules, capture, load_model
from attnlimits.corpus import load_text, text_sha256, token_windows
from attnlimits.experiments.store import ResultStore
from attnlimits.kernels import streaming_attention
from attnlimits.kernels.hf import make_attention_function
from attnlimits.metrics import logit_spread

__all__ = [
    "ANSWER_PREFIX",
    "QUESTION",
    "LongContextConfig",
    "MaxPrompt",
    "answer_row_stats",
    "build_prompts",
    "format_prompt",
    "generate_answers",
    "head_spreads",
    "parse_answer",
    "recording",
    "run_long_context",
    "sample_numbers",
]

Mode = Literal["softmax", "adaptive"]
MODES: tuple[Mode, ...] = ("softmax", "adaptive")
QUESTION = "Which number is the largest?"
ANSWER_PREFIX = "The largest number is "
_IMPL = "attnlimits_long_context"


@dataclass(frozen=True)
class LongContextConfig:
    """Max-finding over n numbers with a pretrained LM; defaults take ~10 min on 2 CPU cores.

    ``softmax_backend``: ``"sdpa"`` (transformers' own attention, equal to eager up to float
    rounding) or ``"kernel"`` (``attnlimits_softmax_t`` at T = 1). ``adaptive_params`` go to
    the adaptive kernel (``coeffs``, ``threshold``; empty = paper B's listing).
    """

    model: str = "smollm2-135m"
    ns: tuple[int, ...] = (4, 8, 16, 32, 64, 128, 256)
    prompts: int = 20  # per n; the same prompts serve every mode (paired)
    low: int = 100  # numbers are distinct integers in [low, high]
    high: int = 999
    seed: int = 0
    modes: tuple[str, ...] = MODES
    softmax_backend: Literal["sdpa", "kernel"] = "sdpa"
    adaptive_params: dict[str, Any] = field(default_factory=dict)
    chat: bool = True  # use the tokenizer's chat template when it has one
    max_new_tokens: int = 4
    batch_size: int = 4  # prompts of equal token length per forward
    block_size: int = 512  # streaming-kernel block
    spread_length: int = 1024  # War and Peace window for the Figure 3 analogue (0 = skip)
    spread_windows: int = 1
    text: Path | None = None
    device: str = "cpu"

    def __post_init__(self) -> None:
        object.__setattr__(self, "ns", tuple(int(n) for n in self.ns))
        object.__setattr__(self, "modes", tuple(self.modes))
        if not self.ns or min(self.ns) < 1:
            raise ValueError(f"ns must be positive integers, got {self.ns}")
        if not 0 <= self.low < self.high:
            raise ValueError(f"need 0 <= low < high, got low={self.low}, high={self.high}")
        if max(self.ns) > self.high - self.low + 1:
            raise ValueError(
                f"n = {max(self.ns)} distinct numbers do not fit in [{self.low}, {self.high}]"
            )
        bad = [m for m in self.modes if m not in MODES]
        if bad or not self.modes:
            raise ValueError(f"modes must be among {MODES}, got {self.modes}")
        if self.softmax_backend not in ("sdpa", "kernel"):
            raise ValueError(f"softmax_backend must be sdpa or kernel, got {self.softmax_backend}")
        for name in ("prompts", "max_new_tokens", "batch_size", "block_size", "spread_windows"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.spread_length < 0:
            raise ValueError(f"spread_length must be >= 0, got {self.spread_length}")

    @classmethod
    def quick(cls, **fields: Any) -> LongContextConfig:
        """n ≤ 32, 5 prompts, a 256-token spread window: the CI smoke run (< 60 s on 2 cores)."""
        base: dict[str, Any] = {"ns": (4, 8, 16, 32), "prompts": 5, "spread_length": 256}
        return cls(**{**base, **fields})

    def cache_params(self) -> dict[str, Any]:
        """What one (mode, n) part depends on (not the grid, prompt count or device)."""
        params = asdict(self)
        for key in ("ns", "modes", "prompts", "device", "spread_length", "spread_windows", "text"):
            params.pop(key)
        return params


# ---- prompts -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MaxPrompt:
    """One max-finding prompt: ``numbers`` in the order shown, ``target = max(numbers)``."""

    n: int
    index: int
    numbers: tuple[int, ...]
    target: int
    text: str


def sample_numbers(n: int, rng: np.random.Generator, low: int = 100, high: int = 999) -> list[int]:
    """``n`` distinct integers drawn uniformly from ``[low, high]``, in random order."""
    if not 1 <= n <= high - low + 1:
        raise ValueError(f"cannot draw {n} distinct integers from [{low}, {high}]")
    return [int(x) for x in rng.choice(np.arange(low, high + 1), size=n, replace=False)]


def format_prompt(numbers: list[int] | tuple[int, ...], tokenizer: Any = None, chat: bool = True):
    """The question, one number per line, and the start of the answer.

    With ``chat`` and a tokenizer that has a chat template, the question is the user turn and
    :data:`ANSWER_PREFIX` starts the assistant turn; otherwise plain text. Either way the text ends
    with ``"The largest number is "``, so the next tokens are the answer's digits.
    """
    question = QUESTION + "\n" + "\n".join(str(x) for x in numbers)
    if chat and getattr(tokenizer, "chat_template", None):
        turn = [{"role": "user", "content": question}]
        head = tokenizer.apply_chat_template(turn, add_generation_prompt=True, tokenize=False)
        return str(head) + ANSWER_PREFIX
    return question + "\n" + ANSWER_PREFIX


def build_prompts(
    n: int,
    count: int,
    *,
    seed: int = 0,
    low: int = 100,
    high: int = 999,
    tokenizer: Any = None,
    chat: bool = True,
) -> list[MaxPrompt]:
    """``count`` prompts of ``n`` numbers, seeded by ``(seed, n)``: a larger ``count`` extends the
    list (the first prompts stay the same)."""
    rng = np.random.default_rng([seed, n])
    out = []
    for i in range(count):
        xs = sample_numbers(n, rng, low, high)
        out.append(MaxPrompt(n, i, tuple(xs), max(xs), format_prompt(xs, tokenizer, chat)))
    return out


def parse_answer(text: str) -> int | None:
    """The integer the generated ``text`` starts with (after whitespace), else None."""
    match = re.match(r"\s*(\d+)", text)
    return int(match.group(1)) if match else None


# ---- recording attention at the answer position -------------------------------------------------


def _keep_last_row(mask: Tensor | None, n_keys: int) -> Tensor | None:
    """The last query row of a transformers mask as a boolean keep-mask ``[B, 1|H, 1, Lk]``."""
    if mask is None:
        return None
    last = mask[..., -1:, :n_keys]
    return last if last.dtype == torch.bool else last > torch.finfo(last.dtype).min / 2


def answer_row_stats(
    query: Tensor,
    key: Tensor,
    mask: Tensor | None,
    normalizer: str,
    *,
    scaling: float | None = None,
    **params: Any,
) -> dict[str, Tensor]:
    """Statistics of the last query row (the answer position) over all keys, per head.

    ``query [B, Hq, Lq, d]``, ``key [B, Hkv, Lk, d]`` (after rotary), ``mask`` transformers'
    mask or None (plain causal: the last row sees every key). Returns ``[B, Hq]`` tensors:
    ``entropy`` (H of the weights applied, softmax(β·l)), ``entropy_base`` (H of softmax(l)),
    ``beta``, ``n_keys``, ``spread`` (max − min of the scaled scores l over kept keys).
    """
    q = query[:, :, -1:]  # (B, Hq, 1, d)
    keep = _keep_last_row(mask, key.shape[2])
    stats = streaming_attention(
        q, key, key[..., :1], normalizer, mask=keep, causal=True, scale=scaling,
        return_stats=True, **params,
    )  # fmt: skip
    scale = q.shape[-1] ** -0.5 if scaling is None else scaling
    k = key.repeat_interleave(q.shape[1] // key.shape[1], dim=1)  # (B, Hq, Lk, d)
    scores = (q.float() @ k.float().transpose(-1, -2)) * scale  # (B, Hq, 1, Lk)
    return {
        "entropy": stats.out_entropy[..., 0],
        "entropy_base": stats.entropy[..., 0],
        "beta": stats.beta[..., 0],
        "n_keys": stats.n_keys[..., 0],
        "spread": logit_spread(scores, mask=keep)[..., 0],
    }


class _Recorder:
    """Collects :func:`answer_row_stats` per layer during a prompt's (prefill) forward."""

    def __init__(self, layer_of: dict[int, int], normalizer: str, params: dict[str, Any]):
        self.layer_of, self.normalizer, self.params = layer_of, normalizer, params
        self.active = False
        self.rows: dict[int, dict[str, Tensor]] = {}

    def __call__(self, module: Any, query: Tensor, key: Tensor, mask: Tensor | None, scaling: Any):
        stats = answer_row_stats(query, key, mask, self.normalizer, scaling=scaling, **self.params)
        self.rows[self.layer_of[id(module)]] = {k: v.detach().cpu() for k, v in stats.items()}


def _inner_attention(mode: str, cfg: LongContextConfig) -> tuple[Callable[..., Any], str, dict]:
    """The attention function a mode runs, and the normaliser and parameters of its stats."""
    if mode == "adaptive":
        params = dict(cfg.adaptive_params)
        fn = make_attention_function("adaptive", frozen={**params, "block_size": cfg.block_size})
        return fn, "adaptive", params
    if cfg.softmax_backend == "kernel":
        fn = make_attention_function("softmax", frozen={"block_size": cfg.block_size})
        return fn, "softmax", {}
    return ALL_ATTENTION_FUNCTIONS["sdpa"], "softmax", {}


@contextmanager
def recording(model: Any, mode: str, cfg: LongContextConfig) -> Iterator[_Recorder]:
    """Run ``model`` in ``mode`` and record the answer row of each prefill (``Lq > 1``) forward.

    Registers ``attn_implementation="attnlimits_long_context"``: the mode's attention function
    (for ``"adaptive"`` the very function ``attnlimits_adaptive`` runs) followed by
    :func:`answer_row_stats`; restores the model's implementation on exit. Set
    ``recorder.active`` to record; ``recorder.rows`` maps layer -> stats.
    """
    inner, normalizer, params = _inner_attention(mode, cfg)
    layer_of = {id(m): i for i, (_, _, m) in enumerate(attention_modules(model))}
    recorder = _Recorder(layer_of, normalizer, params)

    def attention(module: Any, query: Tensor, key: Tensor, value: Tensor, mask: Any, **kw: Any):
        out = inner(module, query, key, value, mask, **kw)
        if recorder.active and query.shape[2] > 1:
            recorder(module, query, key, mask, kw.get("scaling"))
        return out

    AttentionInterface.register(_IMPL, attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(_IMPL, sdpa_mask)
    previous = model.config._attn_implementation
    try:
        model.set_attn_implementation(_IMPL)
        yield recorder
    finally:
        model.set_attn_implementation(previous or "eager")


@torch.no_grad()
def generate_answers(
    model: Any, ids: Tensor, recorder: _Recorder, max_new_tokens: int
) -> tuple[Tensor, dict[int, dict[str, Tensor]]]:
    """Greedy decoding of ``ids [B, L]`` (no padding) with a KV cache, inside :func:`recording`.

    Returns the new tokens ``[B, max_new_tokens]`` and the answer-row stats of the prompt's
    forward, ``{layer: {name: [B, H]}}``.
    """
    recorder.rows, recorder.active = {}, True
    try:
        out = model(input_ids=ids, use_cache=True)
    finally:
        recorder.active = False
    rows = recorder.rows
    past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1)
    tokens = [nxt]
    for _ in range(max_new_tokens - 1):
        out = model(input_ids=nxt[:, None], past_key_values=past, use_cache=True)
        past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1)
        tokens.append(nxt)
    return torch.stack(tokens, dim=1), rows


def _batches(lengths: list[int], size: int) -> list[list[int]]:
    """Indices grouped into batches of equal token length, at most ``size`` each."""
    groups: dict[int, list[int]] = {}
    for i, length in enumerate(lengths):
        groups.setdefault(length, []).append(i)
    return [g[j : j + size] for g in groups.values() for j in range(0, len(g), size)]


def _run_cell(
    loaded: LoadedModel, prompts: list[MaxPrompt], mode: str, cfg: LongContextConfig
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Answers and per-head answer-row stats of one (mode, n) cell."""
    tok, model = loaded.tokenizer, loaded.model
    device = next(model.parameters()).device
    encoded = [tok(p.text, add_special_tokens=False)["input_ids"] for p in prompts]
    answers, heads = [], []
    with recording(model, mode, cfg) as recorder:
        for batch in _batches([len(e) for e in encoded], cfg.batch_size):
            ids = torch.tensor([encoded[i] for i in batch], device=device)  # (B, L)
            new, rows = generate_answers(model, ids, recorder, cfg.max_new_tokens)
            for b, i in enumerate(batch):
                p, text = prompts[i], tok.decode(new[b].tolist(), skip_special_tokens=True)
                pred = parse_answer(text)
                answers.append(
                    {"prompt": p.index, "n_tokens": ids.shape[1], "target": p.target,
                     "output": text, "predicted": pred, "correct": pred == p.target,
                     "numbers": " ".join(map(str, p.numbers))}
                )  # fmt: skip
                for layer, stats in sorted(rows.items()):
                    n_heads = stats["entropy"].shape[1]
                    heads.append(
                        pd.DataFrame(
                            {"prompt": p.index, "layer": layer, "head": np.arange(n_heads)}
                            | {k: v[b].numpy() for k, v in stats.items()}
                        )
                    )
    head_df = pd.concat(heads, ignore_index=True)
    head_df["log_keys"] = np.log(head_df["n_keys"].astype(float))
    return pd.DataFrame(answers), head_df


# ---- War and Peace: per-head logit spreads (paper B, Figure 3 analogue) --------------------------


def head_spreads(loaded: LoadedModel, ids: Tensor) -> pd.DataFrame:
    """Per window, layer and head: spreads max − min of the scaled scores over kept keys.

    ``ids [W, L]``. For every query row with at least two kept keys the spread is computed over
    its keys (causal: the prefix); per head we keep the maximum and the mean over rows and the
    last row's spread.
    """
    frames = []
    for w in range(ids.shape[0]):

        def on_layer(cap: LayerCapture, w: int = w) -> pd.DataFrame:
            s = logit_spread(cap.scores, mask=cap.mask)[0, :, 1:]  # (H, L-1): rows with ≥ 2 keys
            return pd.DataFrame(
                {"window": w, "layer": cap.layer, "head": np.arange(s.shape[0]),
                 "spread_max": s.amax(-1).numpy(), "spread_mean": s.mean(-1).numpy(),
                 "spread_last": s[:, -1].numpy(), "length": ids.shape[1]}
            )  # fmt: skip

        frames += list(capture(loaded, ids[w : w + 1], on_layer=on_layer).values())
    return pd.concat(frames, ignore_index=True)


# ---- the run -----------------------------------------------------------------------------------


def run_long_context(
    cfg: LongContextConfig, out: Path, *, progress: bool = True, figures: bool = True
) -> Path:
    """Run the experiment into ``out`` (tables, figures, ``report.md``); returns the report path.

    ``figures=False`` skips the figures (they take seconds to render).

    Resumable: each (mode, n) cell is saved as a part as soon as it is done, and the spread
    pass too; a rerun with the same parameters skips them (a larger ``prompts`` recomputes).
    """
    from attnlimits.experiments.long_context_report import summarize, write_report

    store = ResultStore(out)
    loaded = load_model(cfg.model, device=cfg.device)
    params = {**cfg.cache_params(), "prompts": cfg.prompts}
    store.update_meta(
        experiment="long_context",
        params=replace(cfg, text=None) if cfg.text is None else cfg,
        model={"id": cfg.model, **asdict(loaded.info)},
    )
    cells = [(mode, n) for n in cfg.ns for mode in cfg.modes]
    answers, heads = [], []
    bar = tqdm(cells, desc="(mode, n)", disable=not progress, unit="cell")
    with store.timed("max_finding"):
        for mode, n in bar:
            bar.set_postfix(mode=mode, n=n)
            key = f"{mode}-n{n}"
            if not (
                store.has_part("answers", params, key) and store.has_part("heads", params, key)
            ):
                prompts = build_prompts(
                    n, cfg.prompts, seed=cfg.seed, low=cfg.low, high=cfg.high,
                    tokenizer=loaded.tokenizer, chat=cfg.chat,
                )  # fmt: skip
                a, h = _run_cell(loaded, prompts, mode, cfg)
                store.save_part("heads", params, key, h)
                store.save_part("answers", params, key, a)
            answers.append(store.load_part("answers", params, key).assign(mode=mode, n=n))
            heads.append(store.load_part("heads", params, key).assign(mode=mode, n=n))
    tables = summarize(pd.concat(answers, ignore_index=True), pd.concat(heads, ignore_index=True))
    tables["answers"] = pd.concat(answers, ignore_index=True)
    tables["answer_heads"] = pd.concat(heads, ignore_index=True)
    if cfg.spread_length:
        with store.timed("spread"):
            text = load_text(cfg.text)
            sha = text_sha256(text)
            sp = {"model": cfg.model, "L": cfg.spread_length, "text_sha256": sha}

            def spreads() -> pd.DataFrame:
                ids = token_windows(loaded.tokenizer, text, cfg.spread_length, cfg.spread_windows)
                return head_spreads(loaded, ids)

            tables["spread"] = store.part("spread", sp, f"w{cfg.spread_windows}", spreads)
            store.update_meta(text={"sha256": sha, "source": str(cfg.text or "War and Peace")})
    for name, df in tables.items():
        store.write_table(df.assign(model=cfg.model), name)
    return write_report(store, tables, cfg, figures=figures)
