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

Tables (see :func:`compute`): ``answers`` (one row per prompt and mode), ``answer_heads`` (per
prompt, layer, head), ``accuracy``, ``head_entropy``, ``mean_entropy`` (:func:`summarize`),
``spread``. Figures: :mod:`.figures`; claims and the report's summary: :mod:`.claims`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
from torch import Tensor
from tqdm.auto import tqdm

from attnlimits import theory
from attnlimits.capture import LayerCapture, LoadedModel, capture, load_model
from attnlimits.capture.precision import dtype_name
from attnlimits.corpus import describe_text, load_text, text_sha256, token_windows
from attnlimits.experiments._inputs import model_record
from attnlimits.experiments._precision import load_dtype
from attnlimits.experiments.long_context.config import Config
from attnlimits.experiments.long_context.cost import estimate
from attnlimits.experiments.long_context.prompts import MaxPrompt, build_prompts, parse_answer
from attnlimits.experiments.long_context.recording import generate_answers, recording
from attnlimits.experiments.store import ResultStore, numerics
from attnlimits.metrics import logit_spread

__all__ = ["compute", "head_spreads", "summarize"]


def _batches(lengths: list[int], size: int) -> list[list[int]]:
    """Indices grouped into batches of equal token length, at most ``size`` each."""
    groups: dict[int, list[int]] = {}
    for i, length in enumerate(lengths):
        groups.setdefault(length, []).append(i)
    return [g[j : j + size] for g in groups.values() for j in range(0, len(g), size)]


def _run_cell(
    loaded: LoadedModel, prompts: list[MaxPrompt], mode: str, cfg: Config
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
                    {
                        "prompt": p.index,
                        "n_tokens": ids.shape[1],
                        "target": p.target,
                        "output": text,
                        "predicted": pred,
                        "correct": pred == p.target,
                        "numbers": " ".join(map(str, p.numbers)),
                    }
                )
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
            s = logit_spread(cap.scores, mask=cap.mask)[0, :, 1:].cpu()  # (H, L-1): ≥ 2 keys
            return pd.DataFrame(
                {
                    "window": w,
                    "layer": cap.layer,
                    "head": np.arange(s.shape[0]),
                    "spread_max": s.amax(-1).numpy(),
                    "spread_mean": s.mean(-1).numpy(),
                    "spread_last": s[:, -1].numpy(),
                    "length": ids.shape[1],
                }
            )

        frames += list(capture(loaded, ids[w : w + 1], on_layer=on_layer).values())
    return pd.concat(frames, ignore_index=True)


# ---- the run -----------------------------------------------------------------------------------


def compute(cfg: Config, store: ResultStore, *, progress: bool = True) -> dict[str, pd.DataFrame]:
    """The (mode, n) cells, their summaries and the spread pass, as tables.

    Resumable: each (mode, n) cell is saved as a part as soon as it is done, and the spread
    pass too; a rerun with the same parameters skips them (a larger ``prompts`` recomputes).
    """
    allow = cfg.allow_incomplete_weights  # else weights lacking tensors are refused by name
    dtype = load_dtype(cfg, estimate)  # auto: float32 where it fits (one line on stderr if not)
    loaded = load_model(cfg.model, device=cfg.device, dtype=dtype, allow_incomplete_weights=allow)
    if not loaded.info.causal:  # an encoder has no next-token logits to answer with
        raise ValueError(
            f"{cfg.model} is not a causal language model: the demo generates "
            "answers; use attnlimits scan for encoders"
        )
    params = {**cfg.cache_params(), "prompts": cfg.prompts, "model_content": loaded.content}
    params["dtype"] = dtype_name(loaded.model.dtype)  # the weights' precision, auto resolved
    store.update_meta(model=model_record(cfg.model, loaded))
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
                    n,
                    cfg.prompts,
                    seed=cfg.seed,
                    low=cfg.low,
                    high=cfg.high,
                    tokenizer=loaded.tokenizer,
                    chat=cfg.chat,
                )
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
            sp = {
                "model": cfg.model,
                "L": cfg.spread_length,
                "text_sha256": sha,
                "model_content": loaded.content,
                "dtype": params["dtype"],
            }
            sp |= numerics(cfg)

            def spreads() -> pd.DataFrame:
                ids = token_windows(loaded.tokenizer, text, cfg.spread_length, cfg.spread_windows)
                return head_spreads(loaded, ids)

            tables["spread"] = store.part("spread", sp, f"w{cfg.spread_windows}", spreads)
            store.update_meta(text={"sha256": sha, "source": describe_text(cfg.text)})
    return {name: df.assign(model=cfg.model) for name, df in tables.items()}


# ---- aggregation -------------------------------------------------------------------------------


def _position(numbers: str, predicted: float) -> int:
    """Index of the predicted number in the list as shown, −1 when absent or unparsed."""
    items = numbers.split()
    if predicted is None or (isinstance(predicted, float) and math.isnan(predicted)):
        return -1
    return items.index(str(int(predicted))) if str(int(predicted)) in items else -1


def summarize(answers: pd.DataFrame, heads: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``accuracy`` per (mode, n) with its standard error, ``head_entropy`` per (mode, n, layer,
    head) (means over prompts), ``mean_entropy`` per (mode, n) (means over heads and prompts).

    Besides accuracy: ``parsed`` (the output starts with an integer), ``in_list`` (the answer is
    one of the numbers), ``picked_last`` (the answer is the last number shown, a recency guess).
    """
    pos = [_position(s, p) for s, p in zip(answers["numbers"], answers["predicted"], strict=True)]
    answers = answers.assign(
        position=pos,
        in_list=np.asarray(pos) >= 0,
        picked_last=np.asarray(pos) == answers["n"].to_numpy() - 1,
    )
    g = answers.groupby(["mode", "n"], sort=True)
    acc = g.agg(
        prompts=("correct", "size"),
        accuracy=("correct", "mean"),
        parsed=("predicted", lambda s: float(s.notna().mean())),
        in_list=("in_list", "mean"),
        picked_last=("picked_last", "mean"),
        n_tokens=("n_tokens", "mean"),
    ).reset_index()
    acc["se"] = theory.binomial_standard_error(acc["accuracy"], acc["prompts"])
    acc["chance"] = 1.0 / acc["n"]  # naming a random list item
    cols = ["entropy", "entropy_base", "beta", "spread", "n_keys", "log_keys"]
    per_head = heads.groupby(["mode", "n", "layer", "head"], sort=True)
    head = per_head[cols].mean().reset_index()
    head.insert(5, "entropy_sd", per_head["entropy"].std(ddof=1).to_numpy())
    mean = heads.groupby(["mode", "n"], sort=True)[cols].mean().reset_index()
    mean["entropy_ratio"] = mean["entropy"] / mean["log_keys"]
    sharpened = heads.assign(s=heads["beta"] > 1).groupby(["mode", "n"], sort=True)["s"].mean()
    mean["frac_sharpened"] = sharpened.to_numpy()
    return {"accuracy": acc, "head_entropy": head, "mean_entropy": mean}
