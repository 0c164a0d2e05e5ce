"""``attnlimits compare``: normalisers swapped into one causal LM at inference, across lengths.

``config`` (normaliser specs, lengths, sequences) → ``probe`` (the retrieval probe written
into the book) → ``forward`` (one swapped forward: losses, probe logits, head entropy) →
``compute`` (parts per normaliser and sequence, the tables) → ``figures`` and ``claims``;
``page`` (report.html's token view: one head under two normalisers). Run
it with ``attnlimits compare`` or ``skeleton.run(EXPERIMENT, Config(), out)``.
"""

from attnlimits.experiments.compare.claims import EVIDENCE, claims, effects, sections
from attnlimits.experiments.compare.compute import compute, summarize
from attnlimits.experiments.compare.config import BASELINE, Config, parse_normalizer
from attnlimits.experiments.compare.cost import estimate
from attnlimits.experiments.compare.figures import figures
from attnlimits.experiments.compare.page import page
from attnlimits.experiments.compare.probe import build_probes, score_probes
from attnlimits.experiments.skeleton import Experiment

__all__ = [
    "BASELINE",
    "EXPERIMENT",
    "Config",
    "build_probes",
    "claims",
    "compute",
    "effects",
    "estimate",
    "figures",
    "parse_normalizer",
    "score_probes",
    "sections",
    "summarize",
]

EXPERIMENT = Experiment(
    name="compare",
    title="Compare: normalisers swapped into a model, across lengths",
    config=Config,
    compute=compute,
    figures=figures,
    claims=claims,
    evidence=EVIDENCE,
    sections=sections,
    estimate=estimate,
    page=page,
)
