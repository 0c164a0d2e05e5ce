"""Paper A's reproduction: *Limitations of Normalization in Attention* (Mudarisov et al., 2025).

``config`` (what to compute) → ``compute`` (Algorithms 1–5 over token windows, resumable) →
``figures`` (Figs. 2a–c, 3, 4) and ``claims`` (findings i–v and Corollary 3, judged on the
tables). Run it with ``attnlimits reproduce limitations`` or
``skeleton.run(EXPERIMENT, Config(), out)``.
"""

from attnlimits.experiments.limitations.claims import EVIDENCE, claims
from attnlimits.experiments.limitations.compute import compute, compute_layer
from attnlimits.experiments.limitations.config import E_FORMS, Config, LimitationsConfig
from attnlimits.experiments.limitations.cost import estimate
from attnlimits.experiments.limitations.critical import critical_n_table
from attnlimits.experiments.limitations.figures import figures
from attnlimits.experiments.limitations.sections import sections, x_source_comparison
from attnlimits.experiments.skeleton import Experiment

__all__ = [
    "EXPERIMENT",
    "E_FORMS",
    "Config",
    "LimitationsConfig",
    "claims",
    "compute",
    "compute_layer",
    "critical_n_table",
    "estimate",
    "figures",
    "sections",
    "x_source_comparison",
]

EXPERIMENT = Experiment(
    name="limitations",
    title="Limitations of Normalization in Attention: reproduction report",
    config=Config,
    compute=compute,
    figures=figures,
    claims=claims,
    evidence=EVIDENCE,
    sections=sections,
    estimate=estimate,
)
