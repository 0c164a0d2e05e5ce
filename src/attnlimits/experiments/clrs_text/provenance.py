"""Every setting of a CLRS-Text run beside paper B's §4.2, with its label and reason: one row
per setting, every field of :class:`~.config.Config` in exactly one row (:mod:`..provenance`).

*paper*: as the paper or the CLRS-Text benchmark it uses does it. A phrase in double quotes in
a reason is paper B's, word for word up to whitespace in our copy (``tests/test_provenance.py``
searches for each). :func:`provenance_table` is the report's "Set-up" section;
docs/clrs_text.md prints :func:`defaults` (its ``clrs-setup`` block).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from attnlimits.experiments.clrs_text.config import Config
from attnlimits.experiments.provenance import OURS, PAPER, Params, Setting, config_fields, table

__all__ = ["COLUMNS", "SETTINGS", "defaults", "provenance_table"]

#: The columns of the table.
COLUMNS = ("setting", "config", "this run", "label", "why")
#: §4.2's "the thirty algorithmic execution tasks in CLRS-Text".
_PAPER_ALGORITHMS = 30


def _paper_lengths(p: Params) -> bool:
    return bool(p["lengths"] == "paper")


def _tiny(p: Params) -> bool:
    return bool(p["model"] == "tiny")


def _trace(p: Params) -> bool:
    return bool(p.get("format", "trace") == "trace")


def _test_lengths(p: Params) -> str:
    if _paper_lengths(p):
        return "CLRS-Text's validation lengths (4 up to 64), all five of its test seeds"
    train = list(p["train_lengths"])
    inter = [n for n in p["test_lengths"] if min(train) < n < max(train) and n not in train]
    extra = [n for n in p["test_lengths"] if not min(train) <= n <= max(train)]
    return (
        ", ".join(map(str, p["test_lengths"]))
        + f" (interpolation: {', '.join(map(str, inter)) or 'none'}; extrapolation: "
        f"{', '.join(map(str, extra)) or 'none'})"
    )


def _training(p: Params) -> str:
    lrs = ", ".join(f"{v:g}" for v in p.get("lrs", ()))
    patience = (
        f" or once {p['patience']} checks in a row bring no gain above the trivial answer's "
        "validation score"
        if p.get("patience")
        else ""
    )
    return (
        f"at most {p['steps']:,} steps, batch {p['batch']} (run as micro-batches by length: "
        f"the same gradient), AdamW, learning rate per arm from {lrs} on validation, stopped "
        f"once every algorithm's validation exact match reaches {p.get('stop_at', 1):g} "
        f"(checked every {p.get('eval_every', 0)} steps; the best check's model kept)"
        f"{patience}; warm-up and cosine decay; loss on answer tokens only"
    )


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "preset",
        ("preset",),
        lambda p: str(p["preset"]),
        OURS,
        "default: the settings of this table; quick: the smoke run (learns little)",
    ),
    Setting(
        "data",
        ("format",),
        lambda p: (
            "CLRS-Text generators of dm-clrs 2.0.3, "
            + ("trace format (use_hints=True)" if _trace(p) else "answer only (use_hints=False)")
            + "; floats truncated to 3 decimals (the generator's num_decimals_in_float)"
        ),
        OURS,
        lambda p: (
            "CLRS-Text's own form is the trace (Markeeva et al. 2024); §4.2 names no "
            'format, only that it follows the benchmark ("we follow the protocol established by '
            'Markeeva et al. (2024)"): that this means the trace is our reading'
            if _trace(p)
            else "the result only, a classification problem for most tasks"
        ),
    ),
    Setting(
        "algorithms",
        ("algorithms",),
        lambda p: ", ".join(p["algorithms"]),
        lambda p: PAPER if len(p["algorithms"]) == _PAPER_ALGORITHMS else OURS,
        "paper B: all thirty; ours: a search, a sort and a graph task (bfs: the shortest "
        "graph traces) that fit two CPU cores",
    ),
    Setting(
        "one model",
        (),
        "one model per arm and seed, trained on every algorithm together",
        OURS,
        '§4.2: "fine-tune Gemma 2B models (Gemma Team et al., 2024) on the thirty '
        'algorithmic execution tasks in CLRS-Text"; one model over all the tasks (not one per '
        "task) is our reading",
    ),
    Setting(
        "training lengths",
        ("lengths", "train_lengths"),
        lambda p: (
            "CLRS-Text's per algorithm (4 to 31)"
            if _paper_lengths(p)
            else ", ".join(map(str, p["train_lengths"]))
        ),
        OURS,
        lambda p: (
            "CLRS-Text's split (§4.2 states no lengths; the benchmark's, by our reading "
            'of "the protocol")'
            if _paper_lengths(p)
            else "§4.2 states no lengths; traces short enough to train on two CPU cores"
        ),
    ),
    Setting(
        "test lengths",
        ("test_lengths",),
        _test_lengths,
        OURS,
        '§4.2 states no lengths ("at various problem sizes"); in distribution, by '
        "interpolation and by extrapolation, reported apart",
    ),
    Setting(
        "questions",
        ("train_samples", "validation_samples", "test_samples"),
        lambda p: (
            f"{p['train_samples']:,} per training cell, "
            f"{p.get('validation_samples', 0):,} per validation cell (seed 1), "
            f"{p['test_samples']:,} per test cell and seed, then deduplicated; the three splits "
            "disjoint"
        ),
        OURS,
        "§4.2 states no counts; CLRS-Text's generator defaults are 10,000 / 125 per cell; the "
        "validation split, deduplication and disjointness are ours",
    ),
    Setting(
        "seeds of the data",
        (),
        lambda p: (
            "training 0, validation 1, test " + ("3, 14, 35, 81, 94" if _paper_lengths(p) else "3")
        ),
        OURS,
        "§4.2 names none; training 0 and test 3 (with --lengths paper all five) are "
        'CLRS-Text\'s, by our reading of "the protocol"; the validation seed is ours',
    ),
    Setting(
        "model",
        ("model", "layers", "width", "heads"),
        lambda p: (
            "Llama-style decoder from a config, trained from scratch, "
            f"{p['layers']} layers, width {p['width']}, {p['heads']} heads"
            if _tiny(p)
            else "SmolLM2-135M, pretrained, fine-tuned"
        ),
        OURS,
        lambda p: (
            '§4.2: "fine-tune Gemma 2B models", out of reach on CPU. From scratch the '
            "arms differ from the paper's in kind: there a softmax-pretrained model "
            '"just has to directly learn how to leverage" adaptive temperature; here each arm '
            "learns the task with its normaliser from the start"
            if _tiny(p)
            else '§4.2: "fine-tune Gemma 2B models"; SmolLM2 is a smaller pretrained model'
        ),
    ),
    Setting(
        "tokens",
        (),
        lambda p: (
            "bytes (ASCII): every number spelt digit by digit"
            if _tiny(p)
            else "the pretrained model's tokenizer"
        ),
        OURS,
        "§4.2's reason why applying adaptive temperature at inference only does not work "
        'well: "individual numbers often span multiple tokens"; bytes keep that property '
        "(our choice of tokenizer)",
    ),
    Setting(
        "positions",
        ("positions",),
        lambda p: (
            "none (NoPE) in every arm"
            if p.get("positions") == "none"
            else "RoPE; extrapolation lengths run past the longest training text"
        ),
        OURS,
        lambda p: (
            "against a trace length learned per training length (issue 57: RoPE trained "
            "on three lengths wrote minimum's trace one step too long at the unseen length 6)"
            if p.get("positions") == "none"
            else "a model trained from scratch has never seen those positions, so extrapolation "
            "also tests RoPE's length extrapolation, which a pretrained Gemma with a long context "
            "does not face; interpolation does not"
        ),
    ),
    Setting(
        "arms",
        ("arms",),
        lambda p: ", ".join(p["arms"]) + "; each in every head, in training and inference",
        PAPER,
        '§4.2: "we apply adaptive temperature both during fine-tuning and at inference time"',
    ),
    Setting(
        "adaptive temperature",
        (),
        "the Fig. 4 listing's polynomial and threshold",
        PAPER,
        '"our adaptive temperature module exactly as-is (i.e., with exactly the same '
        'polynomial fit as in Figure 6)"; normalizers.adaptive',
    ),
    Setting(
        "gradients through β",
        (),
        "yes",
        OURS,
        'our reading of the listing (no stop_gradient around β) and of "learn how to compute '
        'key/query embeddings that can maximally exploit the temperature adaptation"',
    ),
    Setting(
        "training",
        ("steps", "batch", "lrs", "stop_at", "eval_every", "patience"),
        _training,
        OURS,
        "§4.2 never states its fine-tuning schedule; each arm is trained towards its ceiling "
        "at its own rate, so the gap does not measure learning speed at one shared rate",
    ),
    Setting(
        "seeds",
        ("seeds",),
        lambda p: str(p["seeds"]),
        OURS,
        lambda p: (
            "§4.2 never states its seeds; the unit of every interval that decides (at "
            "least 3 to decide anything). With a rate grid the compared seeds are 1 to "
            f"{p['seeds']}: seed 0's models choose the rate on validation and are not scored, so "
            "the winner's selection does not reach the test"
        ),
    ),
    Setting(
        "evaluation",
        (),
        "greedy decoding, for at most the right answer's tokens + 33; exact match of the whole "
        "answer (trace and result); the result-only match beside it",
        OURS,
        "§4.2 names no metric and no decoding; exact match is CLRS-Text's (our reading of "
        '"the protocol"); greedy decoding and the result-only match are ours (the latter '
        "comparable across formats); the 33 leave room to read the result after a trace a "
        "little too long",
    ),
    Setting(
        "baselines",
        (),
        "per algorithm and length: the most common test answer; a uniform guess over the "
        "answer's format",
        OURS,
        "§4.2 shows none; a comparison counts only where an arm is above both (the uniform "
        'guess\'s reading of "format" is ours)',
    ),
    Setting(
        "precision and device",
        ("dtype", "device"),
        lambda p: (
            f"{p['dtype']} ({'float32 always' if _tiny(p) else 'float32 for auto'}); "
            f"device {p['device']}"
        ),
        OURS,
        "half precision without float32 master weights rounds every update; a device's "
        "random streams differ",
    ),
    Setting(
        "dataset",
        ("dataset",),
        lambda p: (
            "generated from the settings above (or reused from the cache)"
            if p["dataset"] is None
            else f"the given file {p['dataset']}"
        ),
        OURS,
        "CLRS-Text's generators make the questions; a given Parquet file replaces them (the "
        "tests' fixture)",
    ),
)


def provenance_table(meta: Mapping[str, Any]) -> pd.DataFrame:
    """The set-up table of a run, from ``run.json``'s ``params`` (a :class:`.config.Config`)."""
    return table(SETTINGS, meta["params"], COLUMNS)


def defaults() -> pd.DataFrame:
    """The default run's table (docs/clrs_text.md prints it)."""
    return provenance_table({"params": config_fields(Config)})
