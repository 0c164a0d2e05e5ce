"""The README's "What we found", rendered from the committed tables of ``docs/data``.

    python -m attnlimits.experiments.what_we_found [--readme README.md] [--data docs/data]

Three generated blocks (:data:`attnlimits.experiments.report.MARK`), each from the CSVs that
the experiment's own doc is generated from (so README, docs and saved runs cannot drift apart;
``tests/test_what_we_found.py`` checks that the README holds exactly what the CSVs render to):

- ``found-limitations``: paper A's finding verdicts per model and x source
  (``limitations/claims.csv``, the rows whose ``role`` is ``finding``);
- ``found-max-retrieval``: what run paper B's numbers come from (its steps and learning-rate
  schedule, ``softmax_not_enough/run.csv``), its headline accuracy table per test size
  (``sizes.csv``), its findings' verdicts (``claims.csv``) and App. F's result: the refit's β
  beside the published polynomial's (``fit_beta.csv``) and the refit against it on held-out
  seeds (``held_out.csv``);
- ``found-clrs-text``: CLRS-Text's finding, headline and per-regime verdicts
  (``clrs_text/claims.csv``) and
  what run they come from (``clrs_text/run.csv``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from attnlimits.experiments.report import fill, markdown_table
from attnlimits.experiments.store import atomic_write_text

__all__ = [
    "app_f_sentence",
    "clrs_text_block",
    "limitations_block",
    "main",
    "max_retrieval_block",
    "render",
]

#: The model names of paper A's runs as the README prints them.
_MODEL_NAMES = {"smollm2-135m": "SmolLM2-135M", "minilm-l6": "MiniLM-L6"}
#: Where docs/max_retrieval.md tells App. F's derivation.
_APP_F = "docs/max_retrieval.md#app-f-how-the-adaptive-temperature-polynomial-was-derived"
#: Paper B's size-table columns the README shows.
_SIZE_COLUMNS = [
    "size",
    "softmax (%)",
    "adaptive (%)",
    "difference (pts)",
    "adaptive vs softmax (ours)",
]


def _csv(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: it is written by the experiment's doc step")
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def limitations_block(claims: pd.DataFrame) -> str:
    """Paper A's findings as rows, one column per (model, x source), in the table's order."""
    found = claims[claims["role"] == "finding"]
    if found.empty:
        raise ValueError("limitations/claims.csv has no finding rows")
    models = list(dict.fromkeys(found["model"]))
    sources = list(dict.fromkeys(found["x_source"]))
    cells = found.set_index(["claim", "model", "x_source"])["verdict"]
    if not cells.index.is_unique:
        raise ValueError("limitations/claims.csv has a finding twice for one model and x source")
    table = cells.unstack(["model", "x_source"]).reindex(list(dict.fromkeys(found["claim"])))
    columns = [(m, s) for m in models for s in sources if (m, s) in table.columns]
    table = table[columns].fillna("—")
    table.columns = [f"{_MODEL_NAMES.get(m, m)}, x = {s}" for m, s in columns]
    return markdown_table(table.rename_axis("finding (paper A)").reset_index())


def _schedule(run: pd.DataFrame) -> str:
    """ "the N-step schedule (the S learning rate): the run of DATE, `command`"."""
    r = run.iloc[0]
    rate = f" (the {r['schedule']} learning rate, our choice)" if "schedule" in r.index else ""
    return f"the {r['steps']}-step schedule{rate}: the run of {r['date']}, {r['command']}"


def app_f_sentence(beta: pd.DataFrame, held_out: pd.DataFrame) -> str:
    """App. F's result in one sentence: the published polynomial's β at H = 1 … 4 beside our
    least-squares refit's (on its own grid, the smallest ``theta_min``), and the refit against
    the published polynomial on seeds it was not fitted on (the row that decides)."""
    paper = beta[beta["fit"] == "paper"]
    refit = beta[beta["fit"] == "refit"]
    if paper.empty or refit.empty:
        raise ValueError("softmax_not_enough/fit_beta.csv lacks the paper or the refit row")
    refit = refit.loc[[refit["theta_min"].astype(float).idxmin()]]
    hs = [c for c in beta.columns if c.startswith("β(H=")]

    def betas(row: pd.DataFrame) -> str:
        return " / ".join(f"{float(row[c].iloc[0]):.2f}" for c in hs)

    said = (
        f"**App. F** (how the published polynomial was derived): App. F's procedure as our copy "
        f"states it, on our models, gives β = {betas(refit)} at "
        f"H = {' / '.join(c[4:-1] for c in hs)} nats, against the published {betas(paper)}: "
        "it does not yield the published polynomial"
    )
    both = held_out[
        (held_out["fit"] == "refit") & held_out["evaluated on seeds"].str.startswith("all")
    ]
    if len(both):
        r = both.iloc[0]
        # the outcome column: "outcome" in the comparison vocabulary, "held-out verdict" before
        outcome = r.get("outcome", r.get("held-out verdict", ""))
        said += (
            f"; on seeds it was not fitted on, the refit's gain over the published polynomial is "
            f"{r['gain over published (pts)']} points ({outcome})"
        )
    return said + f" ([docs]({_APP_F}))."


def max_retrieval_block(
    sizes: pd.DataFrame,
    claims: pd.DataFrame,
    run: pd.DataFrame | None = None,
    beta: pd.DataFrame | None = None,
    held_out: pd.DataFrame | None = None,
) -> str:
    """Paper B's accuracy per test size (mean [95 %]), the run and schedule it belongs to, the
    verdicts of its findings and App. F's result."""
    missing = [c for c in _SIZE_COLUMNS if c not in sizes.columns]
    if missing:
        raise ValueError(f"softmax_not_enough/sizes.csv lacks the columns {missing}")
    findings = claims[claims["role"] == "finding"][["claim", "verdict"]]
    parts = []
    if run is not None and len(run):
        parts.append(f"The per-size numbers belong to {_schedule(run)}.")
    parts += [
        markdown_table(sizes[_SIZE_COLUMNS]),
        markdown_table(findings.rename(columns={"claim": "finding (paper B)"})),
    ]
    if beta is not None:
        held = held_out if held_out is not None else pd.DataFrame(columns=["fit"])
        parts.append(app_f_sentence(beta, held))
    return "\n\n".join(parts)


def clrs_text_block(claims: pd.DataFrame, run: pd.DataFrame) -> str:
    """What CLRS-Text run the verdicts come from, then its finding, headline and per-regime
    verdicts (the preconditions left out: their verdict is n/a)."""
    learns = claims["claim"].str.contains("-learns)", regex=False)
    regimes = (claims["role"] == "supporting") & ~learns
    rows = claims[claims["role"].isin(["finding", "headline"]) | regimes]
    rows = rows[["claim", "role", "verdict"]]
    facts = dict(zip(run["setting"], run["value"], strict=True)) if len(run) else {}
    said = ", ".join(
        f"{k} {facts[k]}"
        for k in ("preset", "format", "algorithms", "seeds", "steps")
        if k in facts
    )
    return "\n\n".join([f"From the committed run ({said}).", markdown_table(rows)])


def render(data: Path) -> dict[str, str]:
    """The README's generated blocks, by name, from the CSVs under ``data``."""
    data = Path(data)
    return {
        "found-limitations": limitations_block(_csv(data / "limitations" / "claims.csv")),
        "found-max-retrieval": max_retrieval_block(
            _csv(data / "softmax_not_enough" / "sizes.csv"),
            _csv(data / "softmax_not_enough" / "claims.csv"),
            _csv(data / "softmax_not_enough" / "run.csv"),
            _csv(data / "softmax_not_enough" / "fit_beta.csv"),
            _csv(data / "softmax_not_enough" / "held_out.csv"),
        ),
        "found-clrs-text": clrs_text_block(
            _csv(data / "clrs_text" / "claims.csv"), _csv(data / "clrs_text" / "run.csv")
        ),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", type=Path, default=Path("README.md"))
    parser.add_argument("--data", type=Path, default=Path("docs/data"))
    args = parser.parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    atomic_write_text(args.readme, fill(text, render(args.data)))
    print(f"wrote {args.readme}")


if __name__ == "__main__":
    main()
