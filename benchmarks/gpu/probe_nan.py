"""Where ``reproduce limitations`` met "values is NaN in a row where valid is True" on CUDA.

The H100 run of 2026-11-26 stopped so in SmolLM2's first layer (docs/benchmarks.md, GPU runs;
issue 54). This runs the limitations experiment's quick preset on a tiny random Llama
(tests/tiny_models.py, nothing to carry) and a synthetic text with repeated words, on the
device given, and prints the traceback of any error, so that the metric and line are named::

    python benchmarks/gpu/probe_nan.py cuda
    ATTNLIMITS_FUSED=0 python benchmarks/gpu/probe_nan.py cpu   # the same torch path on the CPU

Its hidden size (default 128) makes the hidden states take the Gram route of the top-N
metrics, the sparse selection × Gram product (``metrics._topn.gram_pays``: one x shared by
every head and d·n_N > 32·N_max; the quick Alg. 4 grid (1, 2, 4, 8, 16) needs d > 102, Alg. 3's
twelve N up to 32 need d > 85). The hidden size 32 of the first version never took it, which
is why it ran clean where the H100 did not. Every selection matrix that route builds is checked
here with torch's own CSR invariants (sorted, distinct column indices: what cuSPARSE
documents), and the number built is printed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from attnlimits.experiments import skeleton  # noqa: E402
from attnlimits.metrics import _topn  # noqa: E402
from tiny_models import tiny_model_dir  # noqa: E402

_built = [0]
_selection_csr = _topn.selection_csr


def _checked_selection_csr(attn: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """The route's selection matrix, checked as torch checks a CSR tensor (and counted)."""
    sel = _selection_csr(attn, idx)
    torch.sparse_csr_tensor(
        sel.crow_indices(), sel.col_indices(), sel.values(), sel.shape, check_invariants=True
    )
    _built[0] += 1
    return sel


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("device", nargs="?", default="cuda")
    p.add_argument("--hidden-size", type=int, default=128)
    args = p.parse_args()
    _topn.selection_csr = _checked_selection_csr  # type: ignore[assignment]
    words = " ".join(f"w{(i * 7919) % 211}" for i in range(6000))
    root = Path(tempfile.mkdtemp())
    text = root / "text.txt"
    text.write_text(words)
    model = tiny_model_dir(root, "llama", words, max_positions=512, hidden_size=args.hidden_size)
    experiment = skeleton.get("limitations")
    config = experiment.config.quick(model=str(model), text=text, device=args.device)
    try:
        report = skeleton.run(experiment, config, root / "out", fresh=True)
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        print(f"sparse route: {_built[0]} selection matrices built, each passed check_invariants")
    print("ran:", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
