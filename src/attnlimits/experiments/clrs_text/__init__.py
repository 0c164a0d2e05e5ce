"""Paper B's second experiment: CLRS-Text with adaptive temperature in every head (§4.2, Fig. 8).

``data`` (CLRS-Text questions, generated once without TensorFlow, deduplicated, split by
question) → ``model`` (a Llama-style decoder, byte tokens, answer-only loss, greedy decoding)
→ ``compute`` (every arm and seed, resumable) → ``evaluate`` (accuracy, intervals, paired
tests) → ``figures`` and ``claims``. Run it with ``attnlimits reproduce clrs-text`` or
``skeleton.run(EXPERIMENT, Config(), out)``.
"""

from attnlimits.experiments.clrs_text.claims import EVIDENCE, claims
from attnlimits.experiments.clrs_text.compute import compute, load_dataset, run_arm_seed
from attnlimits.experiments.clrs_text.config import (
    ARMS,
    DEFAULT_ALGORITHMS,
    MODELS,
    Config,
    attn_implementation,
)
from attnlimits.experiments.clrs_text.cost import estimate
from attnlimits.experiments.clrs_text.figures import figures
from attnlimits.experiments.clrs_text.sections import sections
from attnlimits.experiments.skeleton import Experiment

__all__ = [
    "ARMS",
    "DEFAULT_ALGORITHMS",
    "EXPERIMENT",
    "MODELS",
    "Config",
    "attn_implementation",
    "claims",
    "compute",
    "estimate",
    "figures",
    "load_dataset",
    "run_arm_seed",
    "sections",
]

EXPERIMENT = Experiment(
    name="clrs-text",
    title="CLRS-Text with adaptive temperature (Softmax is not Enough, §4.2): reproduction report",
    config=Config,
    compute=compute,
    figures=figures,
    claims=claims,
    evidence=EVIDENCE,
    sections=sections,
    estimate=estimate,
)
