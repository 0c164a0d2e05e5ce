"""``attnlimits scan MODEL``: the papers' diagnostics for any model, per layer, head and length.

``config`` (lengths, windows, rows) → ``heads`` (one captured layer reduced to per-head values,
streamed and on sampled rows) → ``compute`` (windows, induction pass, per-head critical N,
aggregation) → ``taxonomy`` (kinds and flags: the rules) → ``figures`` and ``claims``. Run it
with ``attnlimits scan smollm2-135m`` or ``skeleton.run(EXPERIMENT, Config(), out)``.
"""

from attnlimits.experiments.scan.claims import EVIDENCE, claims, sections
from attnlimits.experiments.scan.compute import compute, critical_table
from attnlimits.experiments.scan.config import Config
from attnlimits.experiments.scan.cost import estimate
from attnlimits.experiments.scan.figures import figures
from attnlimits.experiments.scan.page import page
from attnlimits.experiments.scan.taxonomy import FLAGS, KINDS, kinds
from attnlimits.experiments.skeleton import Experiment

__all__ = [
    "EXPERIMENT",
    "FLAGS",
    "KINDS",
    "Config",
    "claims",
    "compute",
    "critical_table",
    "estimate",
    "figures",
    "kinds",
    "sections",
]

EXPERIMENT = Experiment(
    name="scan",
    title="Scan: the papers' attention diagnostics, head by head",
    config=Config,
    compute=compute,
    figures=figures,
    claims=claims,
    evidence=EVIDENCE,
    sections=sections,
    estimate=estimate,
    page=page,
)
