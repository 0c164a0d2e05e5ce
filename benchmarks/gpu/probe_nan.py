"""Where ``reproduce limitations`` meets "values is NaN in a row where valid is True" on CUDA.

The H100 run of 2026-11-26 stopped so in SmolLM2's first layer (docs/benchmarks.md, GPU runs).
This runs the limitations experiment's quick preset on a tiny random Llama (tests/tiny_models.py,
nothing to carry) and a synthetic text, on the device given, and prints the traceback of any
error, so that the metric and line are named::

    python benchmarks/gpu/probe_nan.py cuda
    ATTNLIMITS_FUSED=0 python benchmarks/gpu/probe_nan.py cpu   # the same torch path on the CPU
"""

from __future__ import annotations

import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from attnlimits.experiments import skeleton  # noqa: E402
from tiny_models import tiny_model_dir  # noqa: E402


def main() -> int:
    device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
    words = " ".join(f"w{(i * 7919) % 211}" for i in range(6000))
    root = Path(tempfile.mkdtemp())
    text = root / "text.txt"
    text.write_text(words)
    model = tiny_model_dir(root, "llama", words, max_positions=512)
    experiment = skeleton.get("limitations")
    config = experiment.config.quick(model=str(model), text=text, device=device)
    try:
        report = skeleton.run(experiment, config, root / "out", fresh=True)
    except Exception:
        traceback.print_exc()
        return 1
    print("ran:", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
