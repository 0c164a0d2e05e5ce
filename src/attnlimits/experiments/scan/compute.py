"""``attnlimits scan``: every layer × head × length of one model, resumable per (window, layer).

A causal model needs one forward per window at the longest L: the rows of each length's band
(:func:`~attnlimits.experiments.scan.config.band`) see exactly the keys a window of that length
would show them. A bidirectional model gets one forward per window and length. The model runs
:func:`~attnlimits.capture.capture_qkv` (SDPA output, no ``[query, key]`` map): every statistic
is streamed from q and k, so lengths whose maps would not fit in memory work. Decoders get one
more forward per window: random tokens repeated once, for the induction score.

Tables (see :func:`compute`): ``heads`` (one row per layer, head, length: mean and standard
deviation over the windows, kind and flags), ``head_summary`` (one row per layer and head),
``windows`` (one row per window, layer, head, length), ``critical_tests`` (the KS tests) and
``patterns`` (the first window's sampled rows' weights in key bins, :mod:`.patterns`),
``attention_rows`` and ``tokens`` (the first window's tokens as text and a few rows' top-k and,
at small L, full weights over them, :mod:`.tokens`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import pandas as pd
import torch
from scipy import stats
from tqdm.auto import tqdm

from attnlimits.capture import LayerQKV, LoadedModel, ModelInfo, capture_qkv, load_model
from attnlimits.capture.precision import dtype_name
from attnlimits.corpus import describe_text, load_text, spread_windows, text_sha256
from attnlimits.experiments._inputs import check_context as _check_context
from attnlimits.experiments._inputs import check_text_room, model_record
from attnlimits.experiments._precision import load_dtype
from attnlimits.experiments.scan.config import Config, analysed_lengths
from attnlimits.experiments.scan.cost import estimate
from attnlimits.experiments.scan.heads import band_means, induction_scores, sampled_rows
from attnlimits.experiments.scan.patterns import pattern_sample
from attnlimits.experiments.scan.taxonomy import dispersion_slopes, flag_heads, head_kind, kinds
from attnlimits.experiments.scan.tokens import attention_rows, token_table
from attnlimits.experiments.store import ResultStore

__all__ = ["METRICS", "NO_INTERFACE", "check_context", "compute", "critical_table", "induction_ids"]

#: Per-head diagnostics averaged over windows (mean and ``<name>_std`` columns in ``heads``).
METRICS = (
    "entropy",
    "entropy_norm",
    "max_weight",
    "sink_mass",
    "logit_spread",
    "beta",
    "prev_token",
    "local_mass",
    "support_fraction",
    "jacobian_norm",
    "separability",
)


#: A model whose attention never reached the interface (custom code calling its own kernels).
NO_INTERFACE = (
    "{model}'s attention did not go through transformers' attention interface (layers {layers} "
    "reported nothing): scan needs attention modules that call ALL_ATTENTION_FUNCTIONS "
    "(attn_implementation eager, sdpa or flash_attention_2 in transformers >= 5: GPT-2, Llama, "
    "Mistral, Qwen2, BERT, ...), not a model with its own SDPA-only attention code"
)


def check_context(cfg: Config, info: ModelInfo) -> None:
    """A length past the model's context: an error, or with ``beyond_context`` a warning."""
    _check_context(cfg.model, cfg.max_length, info.max_context, cfg.beyond_context, "scan")


def induction_ids(loaded: LoadedModel, period: int, window: int, seed: int) -> torch.Tensor:
    """``period`` random non-special tokens repeated once, ``[1, 2·period]``, seeded per window."""
    vocab = int(loaded.model.config.vocab_size)
    special = set(getattr(loaded.tokenizer, "all_special_ids", []) or [])
    allowed = torch.tensor([i for i in range(vocab) if i not in special])
    gen = torch.Generator().manual_seed(seed * 1_000_003 + window)
    tokens = allowed[torch.randint(len(allowed), (period,), generator=gen)]
    return tokens.repeat(2)[None]


def _first_passing(tests: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group: the smallest N whose test does not reject (−1 if all do), the largest tested."""
    g = tests.groupby(by)
    first = tests[~tests["rejected"]].groupby(by)["N"].min()
    out = pd.DataFrame({"n_max_tested": g["N"].max(), "critical_n": first}).reset_index()
    out["critical_n"] = out["critical_n"].fillna(-1).astype(int)
    return out


def critical_table(
    samples: pd.DataFrame, alpha: float
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Paper A, Alg. 3 as the paper runs it: per L and N, the two-sample KS test of the heads'
    row-mean d̄ (Eq. 7) against their Ē (Thm 1.2, derived form); the critical N is the smallest
    N the test does not reject at ``alpha`` (−1 when every N of the grid rejects).

    The heads are the samples, as in the paper: all heads of the model (``scope`` "model"), and
    the heads of each layer (``scope`` "layer"). The row means are over the sampled rows of every
    window. Per head, with rows as the samples, the test separates d̃ from E up to N ≈ L/2 on
    every head of SmolLM2 (KS statistic 1): d̃ < E on every row, so a per-head critical N says
    nothing and is not reported (docs/scan.md). One vectorised ``ks_2samp`` per scope.

    Returns (per layer and L, per L, one row per test).
    """
    per_head = (
        samples.groupby(["length", "N", "layer", "head"])[["distance", "expectation"]]
        .mean()
        .reset_index()
    )
    tests = []
    for scope, by in (("layer", ["length", "N", "layer"]), ("model", ["length", "N"])):
        df = per_head.sort_values([*by, "layer", "head"])
        keys = df[by].drop_duplicates().reset_index(drop=True)
        shape = (len(keys), len(df) // len(keys))
        res = stats.ks_2samp(
            df["distance"].to_numpy().reshape(shape),
            df["expectation"].to_numpy().reshape(shape),
            axis=1,
        )
        tests.append(
            keys.assign(
                scope=scope,
                ks_statistic=res.statistic,
                p_value=res.pvalue,
                rejected=~(res.pvalue >= alpha),
                heads=shape[1],
            )
        )
    layer_tests, model_tests = tests
    by_layer = _first_passing(layer_tests, ["length", "layer"])
    by_model = _first_passing(model_tests, ["length"])
    for df in (by_layer, by_model):
        df["critical_n_over_L"] = (df["critical_n"] / df["length"]).where(df["critical_n"] > 0)
    all_tests = pd.concat(tests, ignore_index=True)
    all_tests["layer"] = all_tests["layer"].fillna(-1).astype(int)
    return by_layer, by_model, all_tests


def _layer_parts(
    qkv: LayerQKV, served: tuple[int, ...], cfg: Config, tokens: bool
) -> dict[str, pd.DataFrame]:
    """One layer's parts; ``tokens``: also the rows over the real tokens (the first window)."""
    parts = {"heads": band_means(qkv, served, cfg)}
    if tokens:
        parts["attention_rows"] = pd.concat(
            [attention_rows(qkv, n) for n in served], ignore_index=True
        )
    analysed = [n for n in served if n in analysed_lengths(cfg)]
    if not analysed:
        return parts | {"samples": pd.DataFrame(), "patterns": pd.DataFrame()}
    per_head, samples = zip(*(sampled_rows(qkv, n, cfg) for n in analysed), strict=True)
    parts["heads"] = parts["heads"].merge(pd.concat(per_head), on=["length", "head"], how="left")
    patterns = pd.concat([pattern_sample(qkv, n, cfg) for n in analysed], ignore_index=True)
    return parts | {"samples": pd.concat(samples, ignore_index=True), "patterns": patterns}


def _induction_part(qkv: LayerQKV, cfg: Config) -> dict[str, pd.DataFrame]:
    return {"induction": induction_scores(qkv, cfg.induction_period, cfg)}


def _aggregate(
    win: pd.DataFrame, samples: pd.DataFrame, induction: pd.DataFrame, cfg: Config
) -> dict[str, pd.DataFrame]:
    keys = ["layer", "head", "length"]
    cols = [c for c in METRICS if c in win]
    g = win.groupby(keys)
    heads = g[cols].mean().join(g[cols].std(ddof=1).add_suffix("_std"))
    heads["windows"] = g.size()
    for col in ("duplicate_keys", "n_separability"):  # any window fails; the same N in all
        if col in win:
            heads[col] = g[col].max(min_count=1)
    heads = heads.reset_index()
    tests = pd.DataFrame()
    if len(samples):
        by_layer, by_model, tests = critical_table(samples, cfg.ks_alpha)
        heads = heads.merge(by_layer, on=["layer", "length"], how="left")
        model_n = by_model.set_index("length")["critical_n"].rename("critical_n_model")
        heads = heads.join(model_n, on="length")
    for col in (
        "n_separability",
        "critical_n_model",
        "critical_n",
        "n_max_tested",
        "critical_n_over_L",
        "duplicate_keys",
        "jacobian_norm",
        "separability",
    ):
        if col not in heads:
            heads[col] = np.nan
    if len(induction):
        mean = induction.groupby(["layer", "head"])[["induction", "prev_token_repeated"]].mean()
        heads = heads.merge(mean.reset_index(), on=["layer", "head"], how="left")
    heads = heads.merge(dispersion_slopes(heads), on=["layer", "head"], how="left")
    heads["kind"] = kinds(heads)
    heads = pd.concat([heads, flag_heads(heads, cfg.critical_fraction)], axis=1)
    flags = [c for c in heads if c.startswith("flag_")]
    longest = heads[heads["length"] == cfg.max_length].set_index(["layer", "head"])
    summary = longest[
        [
            c
            for c in (
                "entropy",
                "entropy_norm",
                "max_weight",
                "sink_mass",
                "logit_spread",
                "beta",
                "induction",
                "dispersion_slope",
                "entropy_slope",
            )
            if c in longest
        ]
    ].copy()
    summary.insert(0, "kind", head_kind(heads))
    summary = summary.join(heads.groupby(["layer", "head"])[flags].any())
    summary = summary.reset_index().rename(
        columns={
            c: f"{c}_at_max_length"
            for c in ("entropy", "entropy_norm", "max_weight", "sink_mass", "logit_spread", "beta")
        }
    )
    return {"heads": heads, "head_summary": summary, "windows": win, "critical_tests": tests}


def compute(cfg: Config, store: ResultStore, *, progress: bool = True) -> dict[str, pd.DataFrame]:
    """Scan ``cfg.model``: per (window, layer) parts make an interrupted scan resumable."""
    text = load_text(cfg.text)
    source = describe_text(cfg.text)
    check_text_room(text, source, cfg.max_length, cfg.windows, "window")
    allow = cfg.allow_incomplete_weights  # else weights lacking tensors are refused by name
    dtype = load_dtype(cfg, estimate)  # auto: float32 where it fits (one line on stderr if not)
    loaded = load_model(cfg.model, device=cfg.device, dtype=dtype, allow_incomplete_weights=allow)
    info = loaded.info
    check_context(cfg, info)
    sha = text_sha256(text)
    spread = spread_windows(loaded.tokenizer, text, cfg.max_length, cfg.windows, source=source)
    ids = spread.ids
    store.update_meta(
        model=model_record(cfg.model, loaded),
        text={"sha256": sha, "source": source, "chars": len(text)},
        windows={
            "char_starts": list(spread.char_starts),
            "first_lines": list(spread.first_lines),
            "token_sha256": [text_sha256(",".join(map(str, r)).encode()) for r in ids.tolist()],
        },
    )
    params = cfg.cache_params(cfg.model, sha) | {"model_content": loaded.content}
    params["dtype"] = dtype_name(loaded.model.dtype)  # the weights' precision, auto resolved
    passes = [(w, cfg.max_length, cfg.lengths) for w in range(cfg.windows)]
    if not info.causal:
        passes = [(w, n, (n,)) for w in range(cfg.windows) for n in cfg.lengths]
    n_ind = cfg.windows if info.causal else 0
    bar = tqdm(
        total=(len(passes) + n_ind) * info.n_layers, desc="scan", unit="layer", disable=not progress
    )
    frames: dict[str, list[pd.DataFrame]] = {
        "heads": [],
        "samples": [],
        "patterns": [],
        "attention_rows": [],
        "induction": [],
    }

    def run(
        key: str,
        stages: tuple[str, ...],
        input_ids: torch.Tensor,
        reduce: Callable[[LayerQKV], dict[str, pd.DataFrame]],
    ) -> None:
        todo = [  # a part saved before a stage existed (patterns) is computed again
            i
            for i in range(info.n_layers)
            if not all(store.has_part(s, params, f"{key}-l{i}") for s in stages)
        ]

        def on_layer(qkv: LayerQKV) -> None:
            for name, df in reduce(qkv).items():
                store.save_part(name, params, f"{key}-l{qkv.layer}", df.assign(layer=qkv.layer))
            bar.update(1)

        bar.update(info.n_layers - len(todo))
        if todo:
            capture_qkv(loaded, input_ids, on_layer=on_layer, layers=todo)
            missed = [i for i in todo if not store.has_part(stages[0], params, f"{key}-l{i}")]
            if missed:
                raise ValueError(NO_INTERFACE.format(model=cfg.model, layers=missed[:5]))
        for name in stages:
            parts = [store.load_part(name, params, f"{key}-l{i}") for i in range(info.n_layers)]
            frames[name] += [p.assign(window=int(key.split("-")[0][1:])) for p in parts]

    with store.timed("scan"):
        for w, length, served in passes:
            reduce = partial(_layer_parts, served=served, cfg=cfg, tokens=w == 0)
            stages = ("heads", "samples", "patterns", *(("attention_rows",) if w == 0 else ()))
            run(f"w{w}-L{length}", stages, ids[w : w + 1, :length], reduce)
        for w in range(n_ind):
            reduce = partial(_induction_part, cfg=cfg)
            ind = induction_ids(loaded, cfg.induction_period, w, cfg.seed)
            run(f"w{w}-induction", ("induction",), ind, reduce)
    bar.close()
    with store.timed("aggregate"):
        cat = {
            k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in frames.items()
        }
        results = _aggregate(cat["heads"], cat["samples"], cat["induction"], cfg)
        if len(cat["patterns"]):  # the first window's: a sample to look at (report.html)
            first = cat["patterns"][cat["patterns"]["window"] == 0]
            results["patterns"] = first.drop(columns="window").reset_index(drop=True)
        if len(cat["attention_rows"]):  # the first window's, over its tokens
            rows = cat["attention_rows"].drop(columns="window")
            results["attention_rows"] = rows.sort_values(
                ["layer", "head", "length", "row", "key"], ignore_index=True
            )[["layer", "head", "length", "row", "key", "weight", "rank", "keys"]]
            results["tokens"] = token_table(loaded.tokenizer, ids[0])
    for df in results.values():
        df.insert(0, "model", cfg.model)
    return results
