"""Each kind's interactive figures (presets), the columns they draw that its tables lack, and
what each kind's page shows beyond its tables (:func:`page_of`, handed to :mod:`attnlimits.view`).

A preset is one plot: a title, the static figure it mirrors (``figure``: the name the report's
PNG has, so a claim that names that figure links to this plot), and layers; a layer is one
table's ``y`` against ``x``, one line per value of ``group``, rows sharing an x averaged
(``raw``: every row a marker instead; ``lines``: no markers), with optional interval columns
(``low``/``high``) or a symmetric error (``err``), a filter ``where``, a fixed ``name``,
``dash`` (a grey dotted reference line), ``symbol`` (a raw layer's marker, coloured as the line
of its group), ``labels`` (y column -> words, for the lines' names), ``suffix`` (added to
them) and ``count`` (a column the plot's note sums up as "n per point", e.g. the probes an
accuracy rests on). Options of the plot: ``shade`` (the x range of
the first layer's rows where that column is true: training sizes or lengths), ``logy``,
``xtitle``/``ytitle`` (the axes in words) and ``facet`` (one plot per value of that column, or
per combination of those columns). Every plot notes under its title the key columns its
points average over and those fixed on it (``explore.js``), and its lines get distinct
colours, dashes and markers, so that two equal lines stay visible.

:func:`derived` adds what the figures compute from the tables and ``run.json``: which sizes
were trained on (*Softmax is not Enough*), its attention profile's top ranks, the App. F
polynomials as curves (``np.polyval`` of the coefficients table, raw and under the listing's
rule), the critical N found (−1: none), where none was found the grid's end N_max, and the
paper's 0.06·L (limitations), chance 1/n (long
context).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from attnlimits.normalizers import ENTROPY_THRESHOLD
from attnlimits.view import Page

__all__ = ["PRESETS", "UNLISTED", "derived", "layer", "page_of", "preset"]

Spec = dict[str, Any]
#: Tables too big or too raw to list on a page (they stay in tables/, Parquet and CSV); the
#: scan's per-length heads table is the heatmap's, its KS tests are long.
UNLISTED = frozenset({"patterns", "windows", "samples", "critical_tests"})
#: Ranks of *Softmax is not Enough*'s attention profile put on the page (a full run's profile
#: holds every rank of every set size, too many rows to plot; its figure shows the top 32).
TOP_RANKS = 32


def layer(
    table: str, x: str, y: str | tuple[str, ...], group: str | None = None, **opts: Any
) -> Spec:
    """One table's ``y`` against ``x`` (see the module docstring for ``opts``)."""
    return {"table": table, "x": x, "y": y, "group": group, **opts}


def preset(figure: str, title: str, *layers: Spec, **opts: Any) -> Spec:
    """One plot mirroring the report's figure ``figure`` (see the module docstring)."""
    return {"figure": figure, "title": title, "layers": list(layers), **opts}


_DIST = ("distance", "expectation_exact", "expectation", "bound")
_DIST_LABELS = {
    "distance": "true distance d̃",
    "expectation_exact": "E exact (Monte Carlo)",
    "expectation": "E derived",
    "bound": "upper bound (Thm 1.1)",
}
_SNE_ACC = "accuracy (mean over seeds and test sets) against the set size n, per arm"
PRESETS: dict[str, tuple[Spec, ...]] = {
    "compare": (
        preset(
            "perplexity_change",
            "perplexity vs softmax (relative change) against length, per normaliser",
            layer("summary", "length", "perplexity_change", "normalizer"),
        ),
        preset(
            "accuracy",
            "retrieval accuracy against length (± 1 s.e. over the probes)",
            layer("summary", "length", "accuracy", "normalizer", err="accuracy_se", count="probes"),
            ytitle="retrieval accuracy",
        ),
        preset(
            "head_entropy",
            "median head entropy (nats) against length: how each normaliser shifts it",
            layer("summary", "length", "head_entropy_median", "normalizer"),
        ),
        preset(
            "cost",
            "cost: seconds per forward",
            layer("summary", "normalizer", "seconds_per_forward"),
        ),
        preset(
            "heads_entropy",
            "head entropy per layer (mean over heads and lengths): how each normaliser shifts it",
            layer("heads", "layer", "entropy", "normalizer"),
        ),
    ),
    "limitations": (
        preset(
            "fig2a",
            "Fig. 2a (Alg. 1): distance d̃ against L, with E (Thm 1.2) and the "
            "bound (Thm 1.1); colour: the quantity, dash and marker: the x source",
            layer("alg1", "L", _DIST, "x_source", labels=_DIST_LABELS),
            logy=True,
            ytitle="distance (log scale)",
            xtitle="sequence length L",
        ),
        preset(
            "fig2b",
            "Fig. 2b (Alg. 2): distance d̃ against N at L = L_max, with E and the "
            "bound; colour: the quantity, dash and marker: the x source",
            layer("alg2", "N", _DIST, "x_source", labels=_DIST_LABELS),
            logy=True,
            ytitle="distance (log scale)",
            xtitle="selected tokens N",
        ),
        preset(
            "fig2c",
            "Fig. 2c (Alg. 3): critical N against L per form of E, windows pooled "
            "(window −1); dotted: the paper's 0.06·L; triangles: none found (KS rejects up "
            "to N_max, drawn at N_max)",
            layer("alg3", "L", "critical_n", "e_form", where={"window": -1}),
            layer(
                "alg3",
                "L",
                "none_found",
                "e_form",
                raw=True,
                where={"window": -1},
                suffix=": none found (> N_max)",
                symbol="triangle-up-open",
                labels={"none_found": "N_max (KS rejects up to it)"},
            ),
            layer("alg3", "L", "paper_0.06L", name="paper: 0.06·L", dash=True),
            facet=("model", "x_source"),
            logy=True,
            ytitle="critical N (log scale)",
            xtitle="sequence length L",
        ),
        preset(
            "fig3",
            "Fig. 3 (Alg. 4): N_s/N against N, with Theorem 2's bounds",
            layer("alg4", "N", ("ratio", "lower", "upper"), "x_source"),
            ytitle="N_s/N and its bounds",
            xtitle="selected tokens N",
        ),
        preset(
            "fig4",
            "Fig. 4 (Alg. 5): ‖J‖₂ against the temperature T",
            layer("alg5", "T", "jacobian_norm"),
            logy=True,
            ytitle="‖J‖₂ (log scale)",
        ),
    ),
    "softmax-not-enough": (
        preset(
            "accuracy",
            _SNE_ACC + " (95 % interval over seeds and test sets; shaded: training sizes)",
            layer("summary", "size", "mean", "norm", low="ci_low", high="ci_high"),
            shade="trained",
        ),
        preset(
            "attention_profile",
            "dispersion: the largest attention coefficient against n (Thm 2.2: → 0)",
            layer("attention_profile", "size", "attention", "norm", where={"rank": 0}),
        ),
        preset(
            "temperature_fit",
            "App. F (Fig. 6): best inverse temperature β* against the "
            "entropy H; bin medians with quartiles; the polynomials (published, refits)",
            layer("temperature_fit_points", "entropy", "beta_star", raw=True, name="β* per input"),
            layer(
                "temperature_fit_bins",
                "entropy_median",
                "beta_median",
                low="beta_q25",
                high="beta_q75",
                raw=True,
                name="bin median, quartiles",
            ),
            layer("temperature_fit_curves", "entropy", "beta", "curve", lines=True),
            logy=True,
            ytitle="inverse temperature β*",
            xtitle="entropy H of softmax(e) (nats)",
        ),
        preset(
            "entropy_vs_temperature",
            "entropy against the temperature θ, per logit spread (Prop. 3.2)",
            layer("entropy_vs_temperature", "T", "entropy", "spread"),
        ),
        preset(
            "logit_spread",
            "logit spread and the Prop. 3.1 bound over training steps",
            layer("training_log", "step", ("spread", "bound"), "norm"),
        ),
    ),
    "clrs-text": (
        preset(
            "profile",
            "exact match against length per arm (95 % over seeds; dotted: "
            "the trivial baseline; shaded: training lengths)",
            layer(
                "accuracy", "length", "accuracy", "arm", low="ci_seeds_low", high="ci_seeds_high"
            ),
            layer("accuracy", "length", "baseline", name="trivial baseline", dash=True),
            shade="in_distribution",
            facet="algorithm",
        ),
        preset(
            "training_loss",
            "training loss per arm",
            layer("training", "step", "loss", "arm"),
            logy=True,
        ),
    ),
    "long-context": (
        preset(
            "accuracy",
            "max-finding accuracy against n per mode (± 1 s.e.; dotted: chance 1/n)",
            layer("accuracy", "n", "accuracy", "mode", err="se"),
            layer("accuracy", "n", "chance", name="chance (1/n)", dash=True),
        ),
        preset(
            "mean_entropy",
            "mean head entropy of the answer position against n (dotted: "
            "log of the prompt's tokens)",
            layer("mean_entropy", "n", "entropy", "mode"),
            layer("mean_entropy", "n", "log_keys", name="log(prompt tokens)", dash=True),
        ),
        preset(
            "head_entropy",
            "head entropy of the answer position per layer against n",
            layer("head_entropy", "n", "entropy", "layer"),
        ),
    ),
}


def _curves(coeffs: pd.DataFrame, top: float, threshold: float) -> pd.DataFrame:
    """The App. F polynomials fitted on the grid's own lower bound as β(H): raw (β ≤ 0 left
    out) and under the listing's rule, β = max(poly(H), 1) where H > threshold, else 1 (a
    temperature polynomial, ``inverse``, gives β = 1/poly(H))."""
    if "theta_min" in coeffs:
        coeffs = coeffs[coeffs["theta_min"] == coeffs["theta_min"].min()]
    h = np.linspace(0.0, max(top, 1.0), 120)
    out = []
    for row in coeffs.itertuples():  # a handful of fits
        poly = np.polyval(np.asarray(row.coeffs, float), h)
        with np.errstate(divide="ignore", invalid="ignore"):
            raw = np.where(poly > 0, 1.0 / poly, np.nan) if bool(row.inverse) else poly
        raw = np.where(raw > 0, raw, np.nan)
        rule = np.where(h > threshold, np.fmax(np.nan_to_num(raw, nan=np.inf), 1.0), 1.0)
        out += [
            pd.DataFrame({"entropy": h, "beta": raw, "curve": f"{row.fit} (raw)"}),
            pd.DataFrame({"entropy": h, "beta": rule, "curve": f"{row.fit} (rule)"}),
        ]
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def derived(
    experiment: str, tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]
) -> dict[str, pd.DataFrame]:
    """Tables (new, or copies with a column more) that the kind's presets draw."""
    out: dict[str, pd.DataFrame] = {}
    if experiment == "softmax-not-enough":
        train = (meta.get("benchmark") or {}).get("train") or {}
        if "summary" in tables and "max_size" in train:
            size = tables["summary"]["size"]
            trained = (size <= train["max_size"]) & (size >= train.get("min_size", 0))
            out["summary"] = tables["summary"].assign(trained=trained)
        prof = tables.get("attention_profile")
        if prof is not None and "rank" in prof:  # the plot needs the top ranks only
            out["attention_profile"] = prof[prof["rank"] < TOP_RANKS]
        if {"temperature_fit_coeffs", "temperature_fit_points"} <= set(tables):
            points = tables["temperature_fit_points"]
            top = float(points["entropy"].max()) if len(points) else 6.0
            fit = meta.get("temperature_fit") or {}
            threshold = float(fit.get("threshold", ENTROPY_THRESHOLD))
            curves = _curves(tables["temperature_fit_coeffs"], top, threshold)
            if len(curves):
                out["temperature_fit_curves"] = curves
    if experiment == "limitations" and {"L", "critical_n"} <= set(tables.get("alg3", {})):
        crit = pd.to_numeric(tables["alg3"]["critical_n"]).astype(float)
        alg3 = tables["alg3"]  # −1 or missing: none found (a lower limit, not a value)
        n_max = pd.to_numeric(alg3["n_max"]).astype(float) if "n_max" in alg3 else np.nan
        out["alg3"] = alg3.assign(
            critical_n=crit.where(crit > 0),
            none_found=pd.Series(n_max, index=alg3.index).where(~(crit > 0)),
            **{"paper_0.06L": 0.06 * alg3["L"]},
        )
    if experiment == "long-context" and "accuracy" in tables and "n" in tables["accuracy"]:
        out["accuracy"] = tables["accuracy"].assign(chance=1.0 / tables["accuracy"]["n"])
    return out


def page_of(
    name: str,
    own: Callable[[Any, Any], Page] | None,
    tables: Mapping[str, pd.DataFrame],
    meta: Mapping[str, Any],
) -> Page:
    """What the page of a run of kind ``name`` shows beyond its tables: its presets and the
    tables they draw, and the kind's own views (``own``, its ``Experiment.page``: the scan's
    heatmaps, compare's token view); neither lists the tables of :data:`UNLISTED`."""
    page = own(tables, meta) if own is not None else Page()
    if not page.presets and name in PRESETS:
        page = replace(page, presets=PRESETS[name], derived=derived(name, tables, meta))
    return replace(page, unlisted=frozenset(page.unlisted) | UNLISTED)
