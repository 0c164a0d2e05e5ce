"""Dispersion in a real LM: max-finding over n numbers, softmax vs adaptive temperature.

``config`` → ``prompts`` (max-finding prompts) → ``recording`` (the answer position's attention
statistics during the forward pass) → ``compute`` (cells, summaries, spreads on War and Peace)
→ ``figures`` and ``claims``. Run it with ``attnlimits demo long-context`` or
``skeleton.run(EXPERIMENT, Config(), out)``.
"""

from attnlimits.experiments.long_context.claims import (
    EVIDENCE,
    claims,
    paired_counts,
    sections,
)
from attnlimits.experiments.long_context.compute import compute, head_spreads, summarize
from attnlimits.experiments.long_context.config import MODES, Config, LongContextConfig
from attnlimits.experiments.long_context.cost import estimate
from attnlimits.experiments.long_context.figures import figures
from attnlimits.experiments.long_context.prompts import (
    ANSWER_PREFIX,
    QUESTION,
    MaxPrompt,
    build_prompts,
    format_prompt,
    parse_answer,
    sample_numbers,
)
from attnlimits.experiments.long_context.recording import (
    answer_row_stats,
    generate_answers,
    recording,
)
from attnlimits.experiments.skeleton import Experiment

__all__ = [
    "ANSWER_PREFIX",
    "EXPERIMENT",
    "MODES",
    "QUESTION",
    "Config",
    "LongContextConfig",
    "MaxPrompt",
    "answer_row_stats",
    "build_prompts",
    "claims",
    "compute",
    "estimate",
    "figures",
    "format_prompt",
    "generate_answers",
    "head_spreads",
    "paired_counts",
    "parse_answer",
    "recording",
    "sample_numbers",
    "sections",
    "summarize",
]

EXPERIMENT = Experiment(
    name="long-context",
    title="Long context: max-finding with softmax vs adaptive temperature",
    config=Config,
    compute=compute,
    figures=figures,
    claims=claims,
    evidence=EVIDENCE,
    sections=sections,
    estimate=estimate,
)
