"""The run numbers of ``docs/max_retrieval.md``, from saved runs: no table in it is typed by hand.

    python -m attnlimits.experiments.softmax_not_enough.doc [RESULTS] [--ablation ABLATION]
        [--doc docs/max_retrieval.md] [--data docs/data/softmax_not_enough] [--date YYYY-MM-DD]

RESULTS is the folder of ``attnlimits reproduce softmax-not-enough`` (any run of it, default
or not); without it the doc is re-rendered from the saved CSVs alone (a changed rule text or
threshold). ABLATION, optional, the folder of ``python benchmarks/steps_ablation.py`` (the
training-length axis of ``--ablation``). The ``rules`` and ``thresholds`` blocks are drawn from
:mod:`.rules` itself (every threshold once, with its provenance), not from a run.
:func:`extract` takes the tables the doc shows from a run's ``run.json`` and
``tables/*.parquet`` through the functions the report uses (:mod:`.claims`, :mod:`.sections`),
as the text the report prints, and :func:`save` writes them as CSV under ``--data``;
:func:`render` turns those CSVs into Markdown blocks, which replace the doc's blocks between
``<!-- generated: NAME -->`` and ``<!-- /generated: NAME -->``
(:func:`attnlimits.experiments.report.fill`); the numbers the doc's prose quotes are blocks too
(:mod:`.prose`). Without ``--ablation`` the ablation's saved CSVs
stay as they are (a separate, longer run; its own "what was run" line names it).
``tests/test_softmax_not_enough_doc.py`` renders the committed CSVs and checks that the doc
holds exactly those blocks, so the doc and the saved runs' tables cannot drift apart.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from attnlimits.claims.verdicts import CHECK
from attnlimits.experiments.report import (
    as_text,
    load_tables,
    markdown_table,
    refill,
    save_tables,
)
from attnlimits.experiments.rule_tables import rules_table, thresholds_table
from attnlimits.experiments.softmax_not_enough import rules
from attnlimits.experiments.softmax_not_enough.ablation_row import with_row, wrong_top_by_length
from attnlimits.experiments.softmax_not_enough.appf_match import (
    FLOOR_RULE,
    INTERVAL_RULE,
    T_PLACE,
    own_tests,
    training_inputs,
)
from attnlimits.experiments.softmax_not_enough.argmax_arm import TABLE, argmax_table
from attnlimits.experiments.softmax_not_enough.claims import (
    FEW_SETS,
    NEAR_CEILING,
    held_out_refits,
    size_table,
)
from attnlimits.experiments.softmax_not_enough.config import Config
from attnlimits.experiments.softmax_not_enough.findings import fig7_sets
from attnlimits.experiments.softmax_not_enough.prose import prose_blocks
from attnlimits.experiments.softmax_not_enough.provenance import defaults
from attnlimits.experiments.softmax_not_enough.second_lambda import per_seed
from attnlimits.experiments.softmax_not_enough.sections import (
    fit_tables,
    length_tables,
    norm_table,
)
from attnlimits.experiments.softmax_not_enough.temperature_fit import fold_label

__all__ = ["ABLATION_NAMES", "extract", "extract_ablation", "load", "main", "render", "save"]

Data = dict[str, pd.DataFrame]
#: The CSVs of the ablation run (kept when the doc is regenerated without ``--ablation``).
#: The pooled reading of the steps rule (:func:`.sections.steps_decision`) is not among them
#: (referee point 13): it is a later reading of the rule, reported in the run's own report, while
#: the default follows the rule as first written (docs/max_retrieval.md, "Ablation: training
#: length").
ABLATION_NAMES = ("ablation_run", "steps", "steps_loss")
#: The command's options (``attnlimits reproduce softmax-not-enough --help``), as Config fields.
_OPTIONS = (
    "seeds",
    "normalizers",
    "device",
    "temperature_fit",
    "model_variant",
    "schedule",
    "regularizer",
    "ablation",
    "steps",
)
_CLI, _SCRIPT = "attnlimits reproduce softmax-not-enough", "python benchmarks/steps_ablation.py"
#: paper: its words (round 3's point 21); reading: what the row reads into them beyond the
#: quote, as the run's claims table has it (round 4's point 9: the docs showed no reading).
_CLAIMS = ["claim", "role", "verdict", "paper", "reading", "measured", "rule"]


def _read(folder: Path) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
    """A finished run's ``run.json`` and tables; a folder without them is an error."""
    meta_path = folder / "run.json"
    if not meta_path.is_file():
        raise ValueError(f"{folder} holds no softmax-not-enough run (no run.json)")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if meta.get("experiment") != "softmax-not-enough":
        raise ValueError(
            f"{meta_path} is a run of {meta.get('experiment')!r}, not softmax-not-enough"
        )
    tables = {p.stem: pd.read_parquet(p) for p in (folder / "tables").glob("*.parquet")}
    if "summary" not in tables:
        raise ValueError(f"{folder / 'tables'} holds no summary table: the run did not finish")
    return meta, tables


def _command(params: Mapping[str, Any], script: bool) -> str:
    """The command a run's ``params`` stand for: the options that differ from its preset's
    defaults (``script``: ``benchmarks/steps_ablation.py``, which adds ``--ablation
    --no-temperature-fit`` itself); settings no option reaches are named as set in Python."""
    quick = params.get("preset") == "quick"
    default = json.loads(json.dumps(asdict(Config.quick() if quick else Config())))
    words = [_SCRIPT if script else _CLI, *(["--quick"] if quick else [])]
    python = []
    for key, value in params.items():
        if key == "preset" or value == default.get(key, value):
            continue
        flag = "--" + key.replace("_", "-")
        if key not in _OPTIONS:
            python.append(f"{key}={value}")
        elif script and key in ("ablation", "temperature_fit"):
            continue
        elif isinstance(value, bool):
            words.append(flag if value else f"--no-{key.replace('_', '-')}")
        else:
            words.append(f"{flag} {','.join(value) if isinstance(value, list) else value}")
    said = f"`{' '.join(words)}`"
    return said + (f" ({', '.join(python)} set in Python)" if python else "")


def _run(folder: Path, meta: Mapping[str, Any], date: str | None, script: bool) -> pd.DataFrame:
    """What was run: date, seeds, steps, command, machine, and the recorded stage times."""
    bench, machine = meta["benchmark"], meta.get("machine", {})
    when = (
        date or datetime.fromtimestamp((folder / "run.json").stat().st_mtime, timezone.utc).date()
    )
    steps = meta["params"].get("ablation_steps") if script else None
    gpu = f", GPU {machine['cuda']}" if machine.get("cuda") else ""
    times = meta.get("wall_time_total_s", {})
    row = {
        "date": str(when),
        "seeds": str(len(bench["seeds"])),
        "steps": ", ".join(f"{s:,}" for s in steps) if steps else f"{bench['train']['steps']:,}",
        "schedule": str(bench["train"].get("schedule", "?")),
        "command": _command(meta["params"], script),
        "machine": f"{machine.get('cpu', '?')} ({machine.get('cpu_capability', '?')}), "
        f"{machine.get('cores', '?')} cores, {machine.get('torch_threads', '?')} torch threads"
        + gpu,
        "stages": ", ".join(f"{k} {float(v):.3g} s" for k, v in times.items()),
    }
    return pd.DataFrame([row])


def extract(folder: Path, date: str | None = None) -> Data:
    """The doc's tables of the default run in ``folder``, as text (:func:`.report.as_text`)."""
    meta, tables = _read(folder)
    bench = meta["benchmark"]
    id_size = int(bench["train"]["max_size"])
    summary = tables["summary"]
    claims = tables.get("claims")
    if claims is None:
        raise ValueError(f"{folder / 'tables'} holds no claims table: run attnlimits report")
    data: Data = {
        "run": _run(folder, meta, date, script=False),
        "claims": claims[[*_CLAIMS]],
        "sizes": size_table(summary, id_size),
    }
    if "training_log" in tables:  # round 8, point 4: the data behind finding (3)
        lam = float(bench["train"].get("weight_decay", "nan"))
        data["weights_per_seed"] = per_seed(
            tables["training_log"], tables.get("second_lambda_log"), lam
        )
    if "set_attention" in tables:  # round 8, point 12: the paired rows behind (2.b)
        wide = fig7_sets(tables["set_attention"], id_size)
        data["fig7_sets"] = wide.assign(
            **{c: wide[c].map(lambda v: f"{v:.6g}") for c in ("softmax", "adaptive")}
        )
    if TABLE in tables:  # the argmax arm (§3's temperature zero), inference only
        data["argmax"] = argmax_table(tables[TABLE], tables.get("accuracy"))
    folds = tables.get("temperature_fit_folds")
    if folds is not None and "accuracy" in tables:
        data["held_out"] = held_out_refits(tables["accuracy"], folds, id_size)
    # every normaliser of the evaluation pass but the folds' refits (the held-out table's)
    held = set() if folds is None else {fold_label(r.fit, int(r.fold)) for r in folds.itertuples()}
    data["norms"] = norm_table(summary[~summary["norm"].isin(held)], ["norm"])
    if "temperature_fit_coeffs" in tables:
        data |= {f"fit_{k}": v for k, v in fit_tables(tables).items()}
    return {name: as_text(df) for name, df in data.items()}


def extract_ablation(folder: Path, date: str | None = None) -> Data:
    """The training-length tables of an ablation run (``benchmarks/steps_ablation.py``)."""
    meta, tables = _read(folder)
    if "ablation_training_log" not in tables or "ablation_summary" not in tables:
        raise ValueError(f"{folder} is not an --ablation run (no ablation tables)")
    combos = tables["ablation_summary"][["schedule", "regularizer", "variant"]].drop_duplicates()
    script = len(combos) == 1 and meta["params"].get("temperature_fit") is False
    length = length_tables(tables, meta)
    data = {
        "ablation_run": _run(folder, meta, date, script=script),
        "steps": length["steps"],
        "steps_loss": length["loss"],
    }
    return {name: as_text(df) for name, df in data.items()}


#: The doc's tables saved as CSV and read back as text (one helper for every doc module).
save, load = save_tables, load_tables


#: The rules the claims table prints: paper B's, then App. F's (our own test's) rules.
_ALL_RULES = (*rules.RULES, INTERVAL_RULE, FLOOR_RULE)


def _rules() -> str:
    """Every rule as the claims table prints it, formatted from its thresholds (never retyped)."""
    return rules_table(_ALL_RULES)


def _thresholds() -> str:
    """Every threshold once: its value, provenance, reason and the rules that use it."""
    every = {t.name: t for rule in _ALL_RULES for t in rule.thresholds}
    # round 6, point 10: the size table's two constants are named in STABLE's reason
    return thresholds_table(every, _ALL_RULES) + (
        f"\n\nNot in the table, since they decide no verdict: `NEAR_CEILING` = {NEAR_CEILING:g} "
        f"and `FEW_SETS` = {FEW_SETS} (ours), which word the size table's likely-reason column "
        "(both arms near 100 %; few test sets)."
    )


def _run_line(run: pd.DataFrame, what: str) -> str:
    r = run.iloc[0]
    schedule = f" ({r['schedule']} learning-rate schedule)" if "schedule" in r.index else ""
    stages = f" (stage times: {r['stages']})" if r["stages"] else ""
    return (
        f"{what}: {r['date']}, {r['seeds']} seeds, {r['steps']} steps{schedule}, "
        f"{r['command']}, on {r['machine']}{stages}"
    )


def _sets(sizes: pd.DataFrame) -> str:
    """The test sets drawn per size, as one row (the per-size table's ``sets`` column)."""
    row = pd.DataFrame([["sets", *sizes["sets"]]], columns=["n", *sizes["size"]])
    return markdown_table(row)


def render(data: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    """Markdown per block name (the doc's ``<!-- generated: NAME -->`` blocks)."""
    claims = data["claims"]
    checks = claims["role"] == CHECK
    ours = own_tests(claims)  # our own tests, apart from the paper's findings
    out = {
        "run": _run_line(data["run"], "Run"),
        "claims": markdown_table(claims[~checks & ~ours]),
        "own_tests": markdown_table(claims[ours]),
        "checks": markdown_table(claims[checks]),
        "sets": _sets(data["sizes"]),
        "sizes": markdown_table(data["sizes"]),
        "norms": markdown_table(data["norms"]),
        "provenance": markdown_table(defaults()),  # the config's defaults, not the run's
        "rules": _rules(),
        "thresholds": _thresholds(),
    }
    out |= {name: markdown_table(df) for name, df in data.items() if name.startswith("fit_")}
    if "held_out" in data:
        out["held_out"] = markdown_table(data["held_out"])
    if "weights_per_seed" in data:
        out["weights_per_seed"] = markdown_table(data["weights_per_seed"])
    if "argmax" in data:
        out["argmax"] = markdown_table(data["argmax"])
    if "ablation_run" in data:
        out["ablation_run"] = _run_line(data["ablation_run"], "Run of the training-length axis")
        out["steps"] = markdown_table(data["steps"])
        out["steps_loss"] = markdown_table(data["steps_loss"])
    return out | prose_blocks(data)  # the numbers the prose quotes (referee point 12)


def _with_ablation_row(data: Data, folder: Path) -> pd.DataFrame:
    """The run's claims with (2.g), judged on the steps ablation's tables (:mod:`.ablation_row`):
    ``steps_loss`` from ``data`` (``--ablation``) or ``folder``'s CSV, App. F's kept inputs per
    length from ``appf_sensitivity/sensitivity.csv`` beside ``folder``; unchanged without them."""
    loss = data.get("steps_loss")
    if loss is None and (folder / "steps_loss.csv").is_file():
        loss = load(folder)["steps_loss"]
    sensitivity = folder.parent / "appf_sensitivity" / "sensitivity.csv"
    if loss is None or not sensitivity.is_file():
        return data["claims"]
    row = wrong_top_by_length(pd.read_csv(sensitivity, dtype=str), loss)
    return _with_t_outcome(as_text(with_row(data["claims"], row)), folder)


def _with_t_outcome(claims: pd.DataFrame, folder: Path) -> pd.DataFrame:
    """(F.a)'s row with (T)'s outcome in its place (referee round 6, point 6), from
    ``appf_sensitivity/inputs.csv`` and ``verdicts.csv`` beside ``folder``; unchanged without
    them."""
    side = folder.parent / "appf_sensitivity"
    if not (side / "inputs.csv").is_file() or not (side / "verdicts.csv").is_file():
        return claims
    said = training_inputs(
        pd.read_csv(side / "inputs.csv", dtype=str), pd.read_csv(side / "verdicts.csv", dtype=str)
    )
    return claims.assign(measured=claims["measured"].str.replace(T_PLACE, said, regex=False))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("results", type=Path, nargs="?", help="a run folder (else: the CSVs)")
    parser.add_argument("--ablation", type=Path, help="a benchmarks/steps_ablation.py folder")
    parser.add_argument("--doc", type=Path, default=Path("docs/max_retrieval.md"))
    parser.add_argument("--data", type=Path, default=Path("docs/data/softmax_not_enough"))
    parser.add_argument("--date", help="RESULTS' date (default: its run.json's, UTC)")
    parser.add_argument("--ablation-date", help="ABLATION's date (default: its run.json's)")
    args = parser.parse_args(argv)
    data: Data = {} if args.results is None else extract(args.results, args.date)
    if args.ablation is not None:
        data |= extract_ablation(args.ablation, args.ablation_date)
    if "claims" in data:
        data["claims"] = _with_ablation_row(data, args.data)
    if data:
        save(data, args.data)  # without --ablation the ablation's saved tables stay
    blocks = render(load(args.data))  # what the test renders: the CSVs, not the parquet
    refill(args.doc, blocks)
    source = args.results or "the saved tables"
    print(f"{args.doc}: {len(blocks)} blocks from {source} (tables in {args.data})")


if __name__ == "__main__":
    main()
