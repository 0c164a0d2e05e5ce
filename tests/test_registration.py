"""`import attnlimits` makes the kernels' attn_implementation names known to transformers,
whichever of the two is imported first, without importing transformers itself."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = (
    "from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS as F; "
    "names = {'attnlimits_softmax_t', 'attnlimits_ssmax', 'attnlimits_adaptive'}; "
    "assert names <= set(F.keys()), sorted(F.keys())"
)


@pytest.mark.parametrize(
    "program",
    [
        f"import attnlimits; {CHECK}",  # attnlimits first: registered when transformers loads
        f"import transformers.modeling_utils; import attnlimits; {CHECK}",  # transformers first
        "import sys, attnlimits; assert 'transformers' not in sys.modules, 'imported eagerly'",
        # every entry point imports without a cycle through the registration hook
        f"import attnlimits.cli; import attnlimits.experiments.limitations; {CHECK}",
        f"from attnlimits.capture import capture; {CHECK}",
        f"from attnlimits import hf_bridge; hf_bridge.attention_function('sdpa'); {CHECK}",
        f"import attnlimits.kernels; {CHECK}",
    ],
    ids=[
        "attnlimits-first",
        "transformers-first",
        "no-eager-transformers",
        "cli",
        "capture",
        "bridge",
        "kernels",
    ],
)
def test_names_are_registered(program: str) -> None:
    res = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]


def test_without_import_attnlimits_they_are_unknown() -> None:
    """The check above can fail: plain transformers does not know the names."""
    res = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
    assert res.returncode != 0
