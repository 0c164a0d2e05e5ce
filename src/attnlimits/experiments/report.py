"""The Markdown report every experiment writes, the pieces its claims use, and the generated
blocks of the docs (``<!-- generated: NAME -->`` … ``<!-- /generated: NAME -->``: a doc's numbers
rendered from a saved run's tables, :mod:`.limitations.doc`, :mod:`.softmax_not_enough.doc`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from attnlimits.claims.verdicts import CHECK
from attnlimits.experiments.store import ResultStore, atomic_write_text

__all__ = [
    "MARK",
    "as_text",
    "block",
    "block_pattern",
    "fill",
    "load_tables",
    "markdown_table",
    "refill",
    "save_tables",
    "write_report",
]


def markdown_table(df: pd.DataFrame) -> str:
    """``df`` as a Markdown table; floats to 4 significant digits, ``|`` in cells escaped."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines)


def as_text(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every cell and column name the text :func:`markdown_table` writes for it
    (``|`` not yet escaped): saved as CSV and read back as text, it gives the same table."""
    out = df.map(_text)
    out.columns = [str(c) for c in df.columns]
    return out


def _text(v: object) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _cell(v: object) -> str:
    return _text(v).replace("|", "\\|")


def _run_facts(store: ResultStore) -> list[str]:
    meta = store.meta
    machine = meta.get("machine", {})
    versions = meta.get("versions", {})
    total = meta.get("wall_time_total_s", {})
    return [
        "## Run",
        "",
        f"- machine: {machine.get('cpu', '?')}, {machine.get('cores', '?')} cores, torch "
        f"threads {machine.get('torch_threads', '?')}"
        + (f", GPU {machine['cuda']}" if machine.get("cuda") else ""),
        "- versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        "- wall time (s), this invocation (all invocations of a resumed run): "
        + ", ".join(f"{k} {v} ({total.get(k, v)})" for k, v in meta.get("wall_time_s", {}).items()),
        "- parameters and input hashes: `run.json`",
    ]


def _incomplete_weights(store: ResultStore) -> list[str]:
    """A warning above the claims where the model loaded with ``allow_incomplete_weights``
    lacked tensors (``run.json``'s ``model.incomplete``: kind -> names)."""
    model = store.meta.get("model")
    if not isinstance(model, dict) or not model.get("incomplete"):
        return []
    incomplete = model["incomplete"]
    said = "; ".join(
        f"{len(names)} {kind} ({', '.join(names[:3])}{', and more' if len(names) > 3 else ''})"
        for kind, names in incomplete.items()
    )
    return [
        f"> **Incomplete weights.** {model.get('id')} was loaded with "
        f"--allow-incomplete-weights; its files do not fit its model: {said}. transformers "
        "filled what is missing or mismatched with random values, so these numbers describe "
        "that model, not the checkpoint.",
        "",
    ]


def write_report(
    store: ResultStore,
    title: str,
    claims: pd.DataFrame,
    figures: Sequence[str],
    sections: Sequence[str] = (),
) -> Path:
    """``report.md``: title, claims table, the experiment's own sections, figures, run facts.
    Where the claims have a ``role`` column (:mod:`attnlimits.claims.verdicts`), the checks
    (properties a theorem guarantees) get their own table after the findings."""
    lines = [f"# {title}", "", *_incomplete_weights(store), "## Claims", ""]
    if "role" in claims and (claims["role"] == CHECK).any():
        checks = claims["role"] == CHECK
        lines += [
            markdown_table(claims[~checks]),
            "",
            "## Checks",
            "",
            "Properties a theorem guarantees (a bound is safe, a quantity exists): shown for what "
            "they say about the run and the paper's theorems, never evidence for a finding.",
            "",
            markdown_table(claims[checks]),
        ]
    else:
        lines.append(markdown_table(claims))
    lines += [
        "",
        *sections,
        "",
        "## Figures",
        "",
        *[f"![{name}](figures/{name}.png)" for name in figures],
        "",
        *_run_facts(store),
        "",
    ]
    path = store.root / "report.md"
    atomic_write_text(path, "\n".join(lines))
    return path


#: The markers around a generated block of a doc (its name in the braces).
MARK = "<!-- generated: {} -->", "<!-- /generated: {} -->"


def block(doc: str, name: str) -> str | None:
    """The text between the doc's markers for ``name`` (None where it has none)."""
    found = re.search(block_pattern(name), doc, flags=re.S)
    return found.group(2) if found else None


def block_pattern(name: str) -> str:
    """The markers of ``name`` and what lies between (nothing, in a doc not yet filled)."""
    start, end = (re.escape(m.format(name)) for m in MARK)
    return f"({start}\\n)(.*?)\\n?({end})"


def fill(doc: str, blocks: Mapping[str, str]) -> str:
    """``doc`` with each named block replaced; a block the doc has no markers for is an error."""
    for name, text in blocks.items():
        found = re.search(block_pattern(name), doc, flags=re.S)
        if found is None:
            start, end = (m.format(name) for m in MARK)
            raise ValueError(f"the doc has no {start} … {end} block")
        doc = f"{doc[: found.start(2)]}{text}\n{doc[found.start(3) :]}"
    return doc


def save_tables(data: Mapping[str, pd.DataFrame], folder: Path) -> None:
    """A doc's tables as ``folder/NAME.csv``, one a table (the folder's other files stay: a run
    without an optional part leaves that part's saved tables in place)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, table in data.items():
        table.to_csv(folder / f"{name}.csv", index=False)


def load_tables(folder: Path, *, as_text: bool = True) -> dict[str, pd.DataFrame]:
    """The tables :func:`save_tables` wrote, by name; ``as_text``: every cell as the text
    written (the numbers already formatted), not parsed back into numbers."""
    kind = {"dtype": str} if as_text else {}
    return {
        p.stem: pd.read_csv(p, keep_default_na=False, **kind) for p in sorted(folder.glob("*.csv"))
    }


def refill(doc: Path, blocks: Mapping[str, str]) -> None:
    """Rewrite the generated blocks of the doc at ``doc`` (:func:`fill`)."""
    doc.write_text(fill(doc.read_text(encoding="utf-8"), blocks), encoding="utf-8")
