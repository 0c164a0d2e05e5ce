"""Paper B's reproduction: *Softmax is not Enough* (Veličković et al., 2025).

``config`` → ``model`` (the Eqs. 9–14 max-retrieval model) → ``train`` → ``evaluate`` (with
``uncertainty``: intervals over seeds and test sets) → ``seeds`` (train and evaluate over
seeds, the ablation, the cross-normaliser table) and ``temperature_fit`` (App. F; ``fits``) →
``compute`` (all tables) → ``figures``, ``findings`` (the claims, judged by ``rules``, quoting
``claims``) and ``sections`` (``provenance``: every
setting's label). Run it with
``attnlimits reproduce softmax-not-enough`` or ``skeleton.run(EXPERIMENT, Config(), out)``.
"""

from attnlimits.experiments.skeleton import Experiment
from attnlimits.experiments.softmax_not_enough.claims import EVIDENCE
from attnlimits.experiments.softmax_not_enough.compute import compute, entropy_vs_temperature
from attnlimits.experiments.softmax_not_enough.config import (
    ABLATION,
    SWAPS,
    TRAINED,
    Config,
    CrossConfig,
    EvalConfig,
    MaxRetrievalConfig,
    ModelConfig,
    NormSpec,
    SoftmaxNotEnoughConfig,
    TemperatureFitConfig,
    TrainConfig,
)
from attnlimits.experiments.softmax_not_enough.cost import estimate
from attnlimits.experiments.softmax_not_enough.evaluate import (
    attention_profile,
    evaluate,
    paired_table,
    summary_table,
)
from attnlimits.experiments.softmax_not_enough.figures import figures
from attnlimits.experiments.softmax_not_enough.findings import claims
from attnlimits.experiments.softmax_not_enough.model import (
    MaxRetrievalModel,
    make_batch,
    make_seed_batches,
)
from attnlimits.experiments.softmax_not_enough.sections import sections
from attnlimits.experiments.softmax_not_enough.seeds import (
    run_ablation,
    run_cross_normalizers,
    run_max_retrieval,
    trained_model,
)
from attnlimits.experiments.softmax_not_enough.temperature_fit import (
    ThetaSearch,
    apply_rule,
    beta_table,
    bin_table,
    clamp_points,
    collect_points,
    fit_median_polynomial,
    fit_polynomial,
    fit_table,
    max_item_temperature,
    refit_norms,
    run_temperature_fit,
    seed_fits,
)
from attnlimits.experiments.softmax_not_enough.train import checkpoint_path, lr_factor, train
from attnlimits.experiments.softmax_not_enough.uncertainty import seeds_by_sets

__all__ = [
    "ABLATION",
    "EXPERIMENT",
    "SWAPS",
    "TRAINED",
    "Config",
    "CrossConfig",
    "EvalConfig",
    "MaxRetrievalConfig",
    "MaxRetrievalModel",
    "ModelConfig",
    "NormSpec",
    "SoftmaxNotEnoughConfig",
    "TemperatureFitConfig",
    "ThetaSearch",
    "TrainConfig",
    "apply_rule",
    "attention_profile",
    "beta_table",
    "bin_table",
    "checkpoint_path",
    "claims",
    "clamp_points",
    "collect_points",
    "compute",
    "entropy_vs_temperature",
    "estimate",
    "evaluate",
    "figures",
    "fit_median_polynomial",
    "fit_polynomial",
    "fit_table",
    "lr_factor",
    "make_batch",
    "make_seed_batches",
    "max_item_temperature",
    "paired_table",
    "refit_norms",
    "run_ablation",
    "run_cross_normalizers",
    "run_max_retrieval",
    "run_temperature_fit",
    "sections",
    "seed_fits",
    "seeds_by_sets",
    "summary_table",
    "train",
    "trained_model",
]

EXPERIMENT = Experiment(
    name="softmax-not-enough",
    title="Softmax is not Enough: reproduction report",
    config=Config,
    compute=compute,
    figures=figures,
    claims=claims,
    evidence=EVIDENCE,
    sections=sections,
    estimate=estimate,
)
