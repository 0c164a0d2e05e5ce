"""The steps ablation alone: paper B's default combination (cosine, coupled, listing) at
5,000, 10,000 and 20,000 steps, softmax and adaptive temperature on the main run's sets, with
the report's "Ablation: training length" section and the steps rule applied by code
(:func:`attnlimits.experiments.softmax_not_enough.uncertainty.steps_rule`).

``attnlimits reproduce softmax-not-enough --ablation`` also trains the seven other
schedule × regulariser × variant combinations; this script narrows
:data:`~attnlimits.experiments.softmax_not_enough.config.ABLATION` to the default one before
calling the same command, so only the training-length axis runs. Every other argument is
passed on::

    python benchmarks/steps_ablation.py --seeds 10 --out results/steps_ablation
"""

from __future__ import annotations

import sys

from attnlimits.cli import app
from attnlimits.experiments.softmax_not_enough import config


def main(argv: list[str]) -> None:
    config.ABLATION.update(schedule=("cosine",), regularizer=("coupled",), variant=("listing",))
    app(["reproduce", "softmax-not-enough", "--ablation", "--no-temperature-fit", *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
