"""``attnlimits compare``: normalisers swapped into one causal LM at inference, across lengths.

Per normaliser and sequence one forward of the longest length: under a causal mask row ``t``
sees tokens ``0 … t`` only, so the rows of each length's band ``[L/2, L)`` are exactly what a
window of length L would give them (as in ``attnlimits scan``). Each sequence is a stretch of
the book (:func:`~attnlimits.corpus.spread_windows`) with the retrieval probe's needles and
queries written over a few of its tokens (:mod:`.probe`); perplexity counts book tokens only.
Resumable per (normaliser, sequence).

Tables: ``summary`` (normaliser × length), ``perplexity`` (… × sequence), ``retrieval``
(normaliser × length), ``probes`` (one row per probe and normaliser), ``heads`` (normaliser ×
layer × head × length, mean over sequences); for the page's token view, of the first
sequence: ``tokens`` (its text) and ``attention_rows`` (per normaliser, layer and head, a few
query rows' largest weights, every weight at L ≤ 128: :mod:`attnlimits.capture.token_rows`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from attnlimits.capture import ModelInfo, is_causal_lm, load_model
from attnlimits.capture.precision import dtype_name
from attnlimits.capture.token_rows import token_table
from attnlimits.corpus import describe_text, load_text, spread_windows, text_sha256
from attnlimits.experiments import _allocator
from attnlimits.experiments._inputs import check_context, check_text_room, model_record
from attnlimits.experiments._precision import load_dtype
from attnlimits.experiments.compare.config import BASELINE, Config, check_heads, check_probe_room
from attnlimits.experiments.compare.cost import estimate
from attnlimits.experiments.compare.forward import run_forward
from attnlimits.experiments.compare.probe import (
    build_probes,
    check_numbers,
    query_tokens,
    score_probes,
)
from attnlimits.experiments.store import ResultStore, params_hash

__all__ = ["check_model", "check_tokenizer", "compute", "summarize"]


def check_model(cfg: Config, info: ModelInfo) -> None:
    """A causal LM (perplexity needs next-token logits); a length past its context is an
    error, or with ``beyond_context`` a warning."""
    if not info.causal:
        raise ValueError(
            f"{cfg.model} is not a causal language model: compare measures next-token "
            "perplexity and retrieval; use attnlimits scan for encoders"
        )
    check_context(cfg.model, cfg.max_length, info.max_context, cfg.beyond_context, "compare")


def check_tokenizer(cfg: Config, tokenizer: Any, config: Any) -> None:
    """Before the weights load: a causal LM's tokenizer writes every probe's number (one line
    naming the model and what the probe needs otherwise). An encoder is refused by name once
    loaded (:func:`check_model`), whatever its tokenizer."""
    if not is_causal_lm(config):
        return
    n_probes = len(cfg.lengths) * cfg.probes_per_length
    try:
        check_numbers(tokenizer, n_probes, cfg.sequences, cfg.seed)
    except ValueError as err:
        raise ValueError(f"{cfg.model}: {err}") from None


def _band_nll(nll: torch.Tensor, book: torch.Tensor, lengths: tuple[int, ...]) -> pd.DataFrame:
    """Mean loss over the band rows ``[L/2, L)`` whose next token is the book's, per length."""
    target_is_book = book[1:]
    rows = []
    for n in lengths:
        lo, hi = n // 2, min(n, len(nll))
        keep = target_is_book[lo:hi]
        rows.append({"length": n, "nll": float(nll[lo:hi][keep].mean()), "tokens": int(keep.sum())})
    return pd.DataFrame(rows)


def _one(
    loaded: Any,
    ids: torch.Tensor,
    book: torch.Tensor,
    probes: pd.DataFrame,
    spec: str,
    name: str,
    params: dict[str, Any],
    cfg: Config,
    token_rows: bool,
) -> dict[str, pd.DataFrame]:
    res = run_forward(
        loaded.model,
        ids[None],
        name,
        params,
        cfg.lengths,
        cfg.rows,
        block_size=cfg.block_size,
        token_rows=token_rows,
    )
    ppl = _band_nll(res.nll, book, cfg.lengths)
    scored = score_probes(probes, ids, res.logits_at)
    timing = pd.DataFrame({"seconds": [res.seconds], "tokens": [ids.shape[0]]})
    parts = [("ppl", ppl), ("probes", scored), ("heads", res.heads), ("time", timing)]
    if token_rows:
        parts.insert(0, ("attention_rows", res.rows))
    return {name_: df.assign(normalizer=spec) for name_, df in parts}


def compute(cfg: Config, store: ResultStore, *, progress: bool = True) -> dict[str, pd.DataFrame]:
    """Compare ``cfg.normalizers`` in ``cfg.model``; parts per (normaliser, sequence)."""
    text = load_text(cfg.text)
    source = describe_text(cfg.text)
    check_text_room(text, source, cfg.max_length, cfg.sequences, "sequence")
    loaded = load_model(
        cfg.model,
        device=cfg.device,
        dtype=load_dtype(cfg, estimate),  # auto: float32 where it fits (a line on stderr if not)
        check_tokenizer=lambda tok, conf: check_tokenizer(cfg, tok, conf),
        allow_incomplete_weights=cfg.allow_incomplete_weights,  # else refused by name
    )
    info = loaded.info
    check_model(cfg, info)
    check_probe_room(cfg, query_tokens(loaded.tokenizer))
    sha = text_sha256(text)
    spread = spread_windows(loaded.tokenizer, text, cfg.max_length, cfg.sequences, source=source)
    probes = build_probes(
        loaded.tokenizer, spread.ids, cfg.lengths, cfg.probes_per_length, cfg.seed
    )
    specs = cfg.specs(info.max_context)
    check_heads(specs, info.n_heads)  # before any forward: sink=[...] per query head
    store.update_meta(
        model=model_record(cfg.model, loaded),
        text={"sha256": sha, "source": source, "chars": len(text)},
        sequences={
            "char_starts": list(spread.char_starts),
            "first_lines": list(spread.first_lines),
            "book_tokens": [int(b.sum()) for b in probes.book],
        },
        normalizers={spec: {"name": n, "params": p} for spec, (n, p) in specs.items()},
    )
    cache = cfg.cache_params(cfg.model, sha) | {"model_content": loaded.content}
    cache["dtype"] = dtype_name(loaded.model.dtype)  # the weights' precision, auto resolved
    device = next(loaded.model.parameters()).device
    frames: dict[str, list[pd.DataFrame]] = {"ppl": [], "probes": [], "heads": [], "time": []}
    rows: list[pd.DataFrame] = []  # the token view's, of the first sequence
    bar = tqdm(
        total=len(specs) * cfg.sequences, desc="compare", unit="forward", disable=not progress
    )
    with store.timed("forwards"):
        for spec, (name, params) in specs.items():
            tag = f"{name}-{params_hash({'name': name, 'params': params})[:10]}"
            for s in range(cfg.sequences):
                key = f"{tag}-s{s}"
                if not store.has_part("time", cache, key):
                    table = probes.table[probes.table["sequence"] == s]
                    parts = _one(
                        loaded,
                        probes.ids[s].to(device),
                        probes.book[s],
                        table,
                        spec,
                        name,
                        params,
                        cfg,
                        token_rows=s == 0,
                    )
                    for stage in parts:  # "time" last: the marker
                        store.save_part(stage, cache, key, parts[stage].assign(sequence=s))
                    del parts
                    _allocator.trim()  # the forward's freed blocks back to the system
                for stage in frames:
                    frames[stage].append(store.load_part(stage, cache, key))
                if s == 0 and store.has_part("attention_rows", cache, key):  # older runs: none
                    rows.append(store.load_part("attention_rows", cache, key))
                bar.update(1)
    bar.close()
    cat = {k: pd.concat(v, ignore_index=True) for k, v in frames.items()}
    tables = summarize(cat["ppl"], cat["probes"], cat["heads"], cat["time"], list(specs))
    for df in tables.values():
        df.insert(0, "model", cfg.model)
    if rows:  # the token view (report.html): the first sequence's tokens and sampled rows
        tables["attention_rows"] = _order(pd.concat(rows, ignore_index=True), list(specs))
        tables["tokens"] = token_table(loaded.tokenizer, probes.ids[0])
    return tables


def _order(df: pd.DataFrame, specs: list[str]) -> pd.DataFrame:
    """Rows in the order the normalisers were given (baseline first), then by length."""
    rank = {s: i for i, s in enumerate(specs)}
    by = ["normalizer", *[c for c in ("length", "layer", "head", "sequence") if c in df]]
    out = df.assign(_rank=df["normalizer"].map(rank)).sort_values(["_rank", *by[1:]])
    return out.drop(columns="_rank").reset_index(drop=True)


def summarize(
    ppl: pd.DataFrame,
    probes: pd.DataFrame,
    heads: pd.DataFrame,
    time: pd.DataFrame,
    specs: list[str],
) -> dict[str, pd.DataFrame]:
    """The report's tables from the per-sequence parts (see the module docstring)."""
    base = ppl.loc[ppl["normalizer"] == BASELINE, ["sequence", "length", "nll"]]
    ppl = ppl.merge(base.rename(columns={"nll": "base"}), on=["sequence", "length"], how="left")
    ppl = ppl.assign(delta_nll=ppl["nll"] - ppl.pop("base"))
    g = ppl.groupby(["normalizer", "length"])
    per = pd.DataFrame(
        {
            "nll": g["nll"].mean(),
            "nll_sd": g["nll"].std(ddof=1),
            "delta_nll": g["delta_nll"].mean(),
            "delta_nll_sd": g["delta_nll"].std(ddof=1),
            "sequences": g.size(),
            "tokens": g["tokens"].sum(),
        }
    )
    per["perplexity"] = np.exp(per["nll"])
    per["perplexity_change"] = np.expm1(per["delta_nll"])  # relative to softmax, same tokens
    r = probes.groupby(["normalizer", "length"])
    retrieval = pd.DataFrame(
        {
            "accuracy": r["correct"].mean(),
            "first_digit": r["first_digit"].mean(),
            "answer_nll": r["answer_nll"].mean(),
            "probes": r.size(),
        }
    )
    retrieval["accuracy_se"] = np.sqrt(
        retrieval["accuracy"] * (1 - retrieval["accuracy"]) / retrieval["probes"]
    )
    h = heads.groupby(["normalizer", "layer", "head", "length"])[["entropy", "mass", "max_weight"]]
    head_table = h.mean().reset_index()
    hl = head_table.groupby(["normalizer", "length"])
    seconds = time.groupby("normalizer")["seconds"].mean().rename("seconds_per_forward")
    summary = per.join(retrieval, how="left").join(
        pd.DataFrame(
            {
                "head_entropy_median": hl["entropy"].median(),
                "head_mass_mean": hl["mass"].mean(),
                "head_max_weight_median": hl["max_weight"].median(),
            }
        )
    )
    summary = summary.reset_index().join(seconds, on="normalizer")
    summary["time_vs_softmax"] = summary["seconds_per_forward"] / float(seconds.get(BASELINE))
    return {
        "summary": _order(summary, specs),
        "perplexity": _order(ppl, specs),
        "retrieval": _order(retrieval.reset_index(), specs),
        "probes": _order(probes, specs),
        "heads": _order(head_table, specs),
    }
