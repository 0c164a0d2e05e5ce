"""The numbers of ``docs/limitations.md``, from a saved run: no figure in that doc is typed by hand.

    python -m attnlimits.experiments.limitations.doc RESULTS [--doc docs/limitations.md]
        [--data docs/data/limitations] [--windows OTHER]

RESULTS is the folder of ``attnlimits reproduce limitations`` (its defaults: both models, each
in its own folder). :func:`extract` takes the few small tables the doc shows from the run's
tables (the claims per model and x source, the critical N per L and form, E in its forms, the
audit's head, how much x_i matters, what was run) and writes them as CSV under ``--data``;
:func:`render` turns them (and the statements' roles and quotes, :mod:`.statements`) into
Markdown blocks, which replace the doc's blocks between
``<!-- generated: NAME -->`` and ``<!-- /generated: NAME -->``. ``--windows OTHER``: a run of the
same models with another window count; :func:`other_windows` sets each verdict beside the one
that run gives (the doc's "Windows" block: what the default's window count changes).
``tests/test_limitations_doc.py`` renders the committed CSVs and checks that the doc holds
exactly those blocks, so the doc and the saved run's tables cannot drift apart; CI needs no run.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from attnlimits.claims import PAPER, Graded
from attnlimits.experiments.limitations import flip_points, rules
from attnlimits.experiments.limitations.claims import X_FREE, per_source, placed
from attnlimits.experiments.limitations.provenance import defaults
from attnlimits.experiments.limitations.residual import (
    cells_at_n,
    residual_quantiles,
    residual_summary,
)
from attnlimits.experiments.limitations.sections import (
    e_forms_table,
    fmt,
    one_head,
    x_source_comparison,
)
from attnlimits.experiments.limitations.statements import ALL
from attnlimits.experiments.limitations.summaries import (
    alg2_summary,
    alg4_summary,
    alg5_summary,
    grid_summary,
    weights_summary,
)
from attnlimits.experiments.report import (
    block,
    fill,
    load_tables,
    markdown_table,
    refill,
    save_tables,
)
from attnlimits.experiments.rule_tables import rules_table, thresholds_table

__all__ = [
    "block",
    "extract",
    "fill",
    "load",
    "main",
    "measured_block",
    "other_windows",
    "render",
    "save",
    "with_e_reading",
]

Data = dict[str, pd.DataFrame]
_FORM = {"exact": "exact", "derived": "derived", "main_text": "printed"}
_MODEL = {"smollm2-135m": "SmolLM2-135M", "minilm-l6": "MiniLM-L6"}


def _runs(folder: Path) -> dict[str, Path]:
    """model -> run folder: the runs below a side-by-side folder, or the folder itself."""
    found = [folder] if (folder / "run.json").is_file() else sorted(folder.glob("*/run.json"))
    runs = [p if p.is_dir() else p.parent for p in found]
    if not runs:
        raise ValueError(f"{folder} holds no limitations run (no run.json)")
    order = folder / "tables" / "claims_by_model.parquet"
    named = {str(json.loads((r / "run.json").read_text())["params"]["model"]): r for r in runs}
    if order.exists():  # the order the models were run in
        cols = list(pd.read_parquet(order).columns)
        named = dict(sorted(named.items(), key=lambda m: cols.index(m[0]) if m[0] in cols else 99))
    return named


def extract(folder: Path) -> Data:
    """The doc's tables from a finished run (a side-by-side folder or one model's run)."""
    claims, crit, run = [], [], []
    summaries: dict[str, list[pd.DataFrame]] = {
        "alg2": [],
        "alg4": [],
        "alg5": [],
        "grid": [],
        "weights": [],
        "residual": [],
    }
    quantiles: list[pd.DataFrame] = []  # the residual's per-half quantiles (round 8, point 3)
    data: Data = {}
    for i, (model, path) in enumerate(_runs(folder).items()):
        meta = json.loads((path / "run.json").read_text())
        params = meta["params"]
        tables = {p.stem: pd.read_parquet(p) for p in (path / "tables").glob("*.parquet")}
        cols = [
            "x_source",
            "claim",
            "role",
            "paper",
            "reading",
            "verdict",
            "windows",
            "e_form",
            "robust",
            "alternatives",
            "measured",
            "e_printed",
            "statistic",
            "rule",
        ]
        claims.append(tables["claims"][cols].assign(model=model))
        for source in params["x_sources"]:
            for name, summary in (("alg2", alg2_summary), ("alg4", alg4_summary)):
                table = tables[name][tables[name]["x_source"] == source]
                summaries[name].append(summary(table).assign(model=model, x_source=source))
            if "distance_grid" in tables:  # (ii.d) and (ii.e): the whole N grid at L_max
                grid = tables["distance_grid"]
                grid = grid[grid["x_source"] == source]
                summaries["grid"].append(grid_summary(grid).assign(model=model, x_source=source))
            # Theorem 1's residual row, binned per (L, N) so that its halves can be recounted
            cells = cells_at_n(*(tables[a][tables[a]["x_source"] == source] for a in ALG12))
            residual = residual_summary(cells)
            if len(residual):
                summaries["residual"].append(residual.assign(model=model, x_source=source))
                quantiles.append(residual_quantiles(cells).assign(model=model, x_source=source))
        summaries["alg5"].append(alg5_summary(tables["alg5"]).assign(model=model))
        first_x = tables["alg1"][tables["alg1"]["x_source"] == params["x_sources"][0]]
        weights = weights_summary(first_x)
        if len(weights):  # Lemma 1's check and (i)'s note: the weights as L grows
            summaries["weights"].append(weights.assign(model=model))
        alg3 = tables["alg3"]
        alg3 = alg3[alg3["window"] < 0] if "window" in alg3 else alg3
        text = [
            f"> {int(m)}" if pd.isna(c) else str(int(c))
            for c, m in zip(alg3["critical_n"], alg3["n_max"], strict=True)
        ]
        crit.append(alg3[["x_source", "L", "e_form"]].assign(model=model, critical_n=text))
        heads = int(meta.get("model", {}).get("n_layers", 0)) * int(
            meta.get("model", {}).get("n_heads", 0)
        )
        run.append(
            {
                "model": model,
                "windows": params["windows"],
                "L_max": max(params["lengths"]),
                "x_sources": " and ".join(params["x_sources"]),
                "heads": heads,
                "ks_alpha": params["ks_alpha"],
            }
        )
        if i == 0:  # the first model's E in three forms, its audit head, how much x_i matters
            first = params["x_sources"][0]
            alg1 = tables["alg1"][tables["alg1"]["x_source"] == first]
            data["e_forms"] = fmt(e_forms_table(alg1).reset_index())
            data["one_head"] = pd.DataFrame({"model": [model], "text": [one_head(alg1)]})
            if len(params["x_sources"]) > 1:
                data["x_sources"] = fmt(x_source_comparison(tables, list(params["x_sources"])))
    data["claims"] = with_e_reading(pd.concat(claims, ignore_index=True))
    for name, frames in summaries.items():
        if not frames:
            continue
        table = pd.concat(frames, ignore_index=True)
        keys = [c for c in ("model", "x_source") if c in table]
        data[f"{name}_summary"] = table[[*keys, *(c for c in table if c not in keys)]]
    if quantiles:
        table = pd.concat(quantiles, ignore_index=True)
        data["residual_quantiles"] = table[["model", "x_source", *table.columns[:-2]]]
    data["critical_n"] = pd.concat(crit, ignore_index=True)
    data["run"] = pd.DataFrame(run)
    return data


def other_windows(folder: Path, other: Path) -> pd.DataFrame:
    """Each verdict of the run in ``folder`` beside the same claim's verdict in ``other`` (a run
    of the same models with another window count): model, x_source, claim, windows, verdict,
    windows_other, verdict_other. Claims only one run has are an error (not the same code)."""
    mine, theirs = _runs(folder), _runs(other)
    if set(mine) != set(theirs):
        raise ValueError(f"{other} ran {sorted(theirs)}, {folder} ran {sorted(mine)}")
    frames = []
    for model, path in mine.items():
        both = []
        for run in (path, theirs[model]):
            windows = json.loads((run / "run.json").read_text())["params"]["windows"]
            claims = pd.read_parquet(run / "tables" / "claims.parquet")
            both.append(claims[["x_source", "claim", "verdict"]].assign(windows=windows))
        pair = both[0].merge(
            both[1], on=["x_source", "claim"], how="outer", suffixes=("", "_other"), indicator=True
        )
        if (pair.pop("_merge") != "both").any():
            raise ValueError(f"the claims of {model} differ between {folder} and {other}")
        frames.append(pair.assign(model=model))
    cols = ["model", "x_source", "claim", "windows", "verdict", "windows_other", "verdict_other"]
    return pd.concat(frames, ignore_index=True)[cols]


#: the tables whose cells Theorem 1's residual row judges
ALG12 = ("alg1", "alg2")

#: The doc's tables saved as CSV and read back as text (one helper for every doc module).
save, load = save_tables, load_tables


def _verdicts(claims: pd.DataFrame) -> str:
    """claim | role | E form | a column per (model, x source): the verdict and what it hinges
    on; a claim judged once per model in the model's first column, an arrow in its others
    (:func:`.claims.per_source`)."""
    claims = per_source(claims)
    cell = claims["verdict"] + claims["robust"].map(lambda r: "" if r == "yes" else f" ({r})")
    wide = claims.assign(cell=cell, col=claims["model"] + ", x = " + claims["x_source"])
    order = list(dict.fromkeys(wide["col"]))
    table = wide.pivot_table(index=["claim"], columns="col", values="cell", aggfunc="first")
    claim_order = list(dict.fromkeys(claims["claim"]))
    first = claims.drop_duplicates("claim").set_index("claim")
    table = table.reindex(claim_order)[order].reset_index()
    table.insert(1, "role", table["claim"].map(first["role"]))
    table.insert(2, "E", table["claim"].map(first["e_form"]))
    return markdown_table(table.fillna("—"))


def with_e_reading(claims: pd.DataFrame) -> pd.DataFrame:
    """``claims`` with each row's ``reading`` saying which form of E its verdict uses (the
    round-4 referee's point 9: a row's reading names its E, statistic and heads), from its
    ``e_form`` column; "—" for a statement with no reading of ours."""
    e = claims["e_form"].fillna("—").astype(str)
    said = claims["reading"].fillna("").astype(str)
    with_e = [
        f"{r}; E {f}" if r and f not in ("", "—") else (f"E {f}" if f not in ("", "—") else r)
        for r, f in zip(said, e, strict=True)
    ]
    return claims.assign(reading=[r or "—" for r in with_e])


def measured_block(model: str, x_source: str) -> str:
    """The doc's block of what was measured for ``model`` and ``x_source``; "logits" for the
    rows judged once per model (:data:`.claims.X_FREE`: no x_i enters them)."""
    return f"measured {model} {'logits' if x_source == X_FREE else x_source}"


def _measured(claims: pd.DataFrame, model: str, x_source: str) -> str:
    sub = claims[(claims["model"] == model) & (claims["x_source"] == x_source)]
    cols = ["claim", "role", "verdict", "windows", "measured", "alternatives"]
    if "reading" in sub:  # tables committed before the reading column lack it
        cols.insert(3, "reading")
    return markdown_table(sub[cols])


def _statements() -> str:
    """Every statement the claims judge: its role, the paper's words, our reading."""
    table = pd.DataFrame(
        {
            "statement": [s.claim for s in ALL],
            "role": [s.role for s in ALL],
            "the paper's words": [f"“{s.quote}”" for s in ALL],
            "our reading": [s.reading or "—" for s in ALL],
        }
    )
    return markdown_table(table)


def _rules() -> str:
    """Every rule as the claims table prints it, formatted from its thresholds (never retyped)."""
    return rules_table(rules.RULES)


def _thresholds() -> str:
    """Every threshold once: its value, provenance, reason and the rules that use it."""
    return thresholds_table(rules.THRESHOLDS, rules.RULES)


def _rule_of(text: str) -> Graded | None:
    """The one-number rule whose printed text a claims row's ``rule`` starts with."""
    graded = [r for r in rules.RULES if isinstance(r, Graded)]
    return next((r for r in graded if text.startswith(r.text())), None)


def _sensitivity(claims: pd.DataFrame) -> str:
    """For each threshold of ours that a one-number rule reads: how many committed verdicts it
    decides, and the one it is closest to flipping, with the value it would have to pass
    (:meth:`attnlimits.claims.Graded.flips`: the measured statistic itself)."""
    rows = []
    stats = claims[claims["statistic"].astype(str).str.len() > 0]
    for t in rules.THRESHOLDS.values():
        if t.provenance == PAPER:
            continue
        near: list[tuple[float, str]] = []
        decided = 0
        for r in stats.itertuples():
            rule = _rule_of(str(r.rule))
            if rule is None or t not in rule.thresholds:
                continue
            decided += 1
            value = float(r.statistic)
            if t.name in rule.flips(value):
                x = abs(value) if rule.magnitude else value
                where = placed(_MODEL.get(r.model, r.model), r.x_source)
                said = f"{r.claim.split(' ')[0]} {where}: {x:.3g} ({r.verdict})"
                near.append((abs(x - t.value), said))
        if not decided:
            continue
        # nearest first; of equal ones the first in the claims table's order, as the README's
        # thresholds line names
        closest = (
            min(near, key=lambda n: n[0])[1] if near else "none (moving it alone flips no verdict)"
        )
        rows.append(
            {
                "threshold": f"`{t.name}`",
                "value": str(t),
                "provenance": t.provenance,
                "verdicts it decides": str(decided),
                "closest to flipping (the value the threshold would have to pass)": closest,
            }
        )
    return markdown_table(pd.DataFrame(rows))


def _summary(table: pd.DataFrame) -> str:
    """A committed summary as a Markdown table, numbers to 4 significant digits."""
    shown = table.copy()
    for c in shown.columns:  # the same text from the run's numbers and from the CSV's
        if c not in ("model", "x_source"):
            shown[c] = [_g(v) for v in shown[c]]
    return markdown_table(shown.rename(columns={"x_source": "x_i"}))


def _g(value: object) -> str:
    try:
        return f"{float(str(value)):.4g}"
    except ValueError:
        return str(value)


def _fraction(text: str, length: int) -> str:
    """A critical N as a fraction of L ("> 28" → "> 0.875"; N = 1: KS accepts at once)."""
    if text.startswith("> "):
        return f"> {int(text[2:]) / length:.3f}"
    return f"{int(text) / length:.3f}" + (" (N = 1)" if text == "1" else "")


def _critical(crit: pd.DataFrame, fraction: bool = False) -> str:
    """model | x_i | E | the critical N per L ("> n_max": KS rejects up to the grid's end), or
    with ``fraction`` the critical N / L."""
    wide = crit.assign(E=crit["e_form"].map(_FORM).fillna(crit["e_form"]), L=crit["L"].astype(int))
    if fraction:
        cells = zip(wide["critical_n"], wide["L"], strict=True)
        wide = wide.assign(critical_n=[_fraction(str(c), int(n)) for c, n in cells])
    rank = {
        k: i for i, k in enumerate(dict.fromkeys(zip(wide["model"], wide["x_source"], strict=True)))
    }
    rank_e = {f: i for i, f in enumerate(_FORM.values())}
    table = wide.pivot_table(
        index=["model", "x_source", "E"], columns="L", values="critical_n", aggfunc="first"
    )
    table.columns = [f"L = {c}" for c in table.columns]
    table = table.reset_index()
    order = [
        (rank[(m, x)], rank_e.get(e, 9))
        for m, x, e in table[["model", "x_source", "E"]].itertuples(index=False)
    ]
    table = table.iloc[sorted(range(len(table)), key=order.__getitem__)]
    return markdown_table(table.rename(columns={"x_source": "x_i"}).fillna("—"))


def _windows(pairs: pd.DataFrame) -> str:
    """How many verdicts another window count keeps, and a row for each one it changes."""
    mine, other = pairs["windows"].iloc[0], pairs["windows_other"].iloc[0]
    moved = pairs[pairs["verdict"] != pairs["verdict_other"]]
    head = (
        f"With `--windows {other}` instead of {mine}, {len(pairs) - len(moved)} of {len(pairs)} "
        "verdicts (claims and sub-claims, every model and x source) are the same"
    )
    if moved.empty:
        return head + "."
    table = moved[["model", "x_source", "claim", "verdict", "verdict_other"]].rename(
        columns={
            "x_source": "x_i",
            "verdict": f"{mine} windows",
            "verdict_other": f"{other} windows",
        }
    )
    return f"{head}; these change:\n\n{markdown_table(table)}"


def render(data: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    """Markdown per block name (the doc's ``<!-- generated: NAME -->`` blocks)."""
    run = data["run"]
    lines = [
        f"- **{r.model}**: {r.windows} window{'' if str(r.windows) == '1' else 's'} of "
        f"{r.L_max} tokens, {r.heads} heads, x_i = "
        f"{r.x_sources}, KS at α = {r.ks_alpha} (0.05 shown beside it)"
        for r in run.itertuples()
    ]
    claims = data["claims"]
    checks = claims["role"] == "check"
    out = {
        "run": "\n".join(lines),
        "statements": _statements(),
        "rules": _rules(),
        "thresholds": _thresholds(),
        "verdicts": _verdicts(claims[~checks]),
        "checks": _verdicts(claims[checks]),
        "provenance": markdown_table(defaults()),
    }
    for model in run["model"]:
        for x in dict.fromkeys(claims.loc[claims["model"] == model, "x_source"]):
            out[measured_block(model, x)] = _measured(claims, model, x)
    out["critical_n"] = _critical(data["critical_n"])
    out["critical_fraction"] = _critical(data["critical_n"], fraction=True)
    if "e_forms" in data:
        out["e_forms"] = markdown_table(data["e_forms"])
    if "one_head" in data and data["one_head"]["text"][0]:
        out["one_head"] = f"{data['one_head']['model'][0]}: {data['one_head']['text'][0]}"
    if "x_sources" in data:
        out["x_sources"] = markdown_table(data["x_sources"])
    if "windows" in data:
        out["windows"] = _windows(data["windows"])
    if "statistic" in claims:
        out["sensitivity"] = _sensitivity(claims)
    grid = data.get("grid_summary")
    if {"critical_n", "alg4_summary"} <= set(data):
        shapes = flip_points.table(claims, data["critical_n"], grid)
        out["sensitivity_shapes"] = markdown_table(shapes)
    if grid is not None:
        out["d_collapses"] = markdown_table(flip_points.collapse_fractions(grid))
    for name in ("alg2", "alg4", "alg5", "grid"):
        if f"{name}_summary" in data:
            out[f"{name}_summary"] = _summary(data[f"{name}_summary"])
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--doc", type=Path, default=Path("docs/limitations.md"))
    parser.add_argument("--data", type=Path, default=Path("docs/data/limitations"))
    parser.add_argument(
        "--windows", type=Path, metavar="OTHER", help="a run with another window count"
    )
    args = parser.parse_args(argv)
    data = extract(args.results)
    if args.windows is not None:
        data["windows"] = other_windows(args.results, args.windows)
    save(data, args.data)
    blocks = render(load(args.data))  # what the test renders: the CSVs, not the parquet
    refill(args.doc, blocks)
    print(f"{args.doc}: {len(blocks)} blocks from {args.results} (tables in {args.data})")


if __name__ == "__main__":
    main()
