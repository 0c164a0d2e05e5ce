"""Warnings a user cannot act on are stopped where they arise, not shown on every run (issue 54):
scipy's "catastrophic cancellation" in the paired t-test over seeds, and torch's sparse-tensor
notices from the Gram route of the top-N metrics (seen in the H100 smoke logs of
docs/data/gpu/h100-2026-11-26)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import ttest_rel

from attnlimits.experiments.softmax_not_enough import summary_table
from attnlimits.experiments.softmax_not_enough.evaluate import paired_t
from attnlimits.metrics import _topn

# paired differences all 0.25 exactly (scipy warns), and all 0.02 but each rounded differently
# (scipy divides by rounding noise, silently)
EXACT = np.array([0.75, 0.5, 1.0]), np.array([0.5, 0.25, 0.75])
ROUNDED = np.array([0.93, 0.95, 0.5]), np.array([0.91, 0.93, 0.48])


def test_scipy_warns_or_divides_by_noise_on_these_data() -> None:
    """The data of the tests below make scipy warn of catastrophic cancellation (t = inf), or
    give t ≈ 5e14 where t is infinite."""
    with pytest.warns(RuntimeWarning, match="catastrophic cancellation"):
        assert ttest_rel(*EXACT).statistic == math.inf
    assert 1e12 < ttest_rel(*ROUNDED).statistic < math.inf


@pytest.mark.parametrize("data", [EXACT, ROUNDED], ids=["exact", "rounded"])
def test_paired_t_of_equal_differences_is_infinite_and_silent(
    data: tuple[np.ndarray, np.ndarray],
) -> None:
    x, b = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        assert paired_t(x, b) == (math.inf, 0.0)
        assert paired_t(b, x) == (-math.inf, 0.0)
        t, p = paired_t(x, x.copy())
        assert math.isnan(t) and math.isnan(p)  # no difference at all: no test (as scipy)


def test_paired_t_is_scipys_elsewhere() -> None:
    x, b = np.array([0.93, 0.95, 0.5]), np.array([0.91, 0.94, 0.47])
    res = ttest_rel(x, b)
    assert paired_t(x, b) == (float(res.statistic), float(res.pvalue))
    # differences apart by one set in a million are kept as they are
    y = b + np.array([0.02, 0.02, 0.02 + 1e-6])
    assert math.isfinite(paired_t(y, b)[0])


def test_summary_table_over_seeds_with_equal_differences_is_silent() -> None:
    acc = pd.DataFrame(
        {
            "norm": ["softmax"] * 3 + ["adaptive"] * 3,
            "seed": [0, 1, 2] * 2,
            "size": 16,
            "accuracy": [*EXACT[1], *EXACT[0]],
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = summary_table(acc).set_index("norm")
    assert table.loc["adaptive", "t"] == math.inf and table.loc["adaptive", "p_ttest"] == 0.0


def _gram_inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(256, 8, generator=gen)
    attn = torch.softmax(torch.randn(1, 1, 64, 256, generator=gen), -1)
    return attn, attn.argsort(-1, descending=True), x @ x.mT


def test_the_gram_route_is_silent() -> None:
    attn, order, gram = _gram_inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = list(_topn._gram_products(attn, order, [4, 8, 16], gram))
    assert [n for n, _, _ in got] == [4, 8, 16]


def test_the_gram_route_stops_the_sparse_notices_of_cuda_builds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """torch warns once per process, so the test above may see nothing whatever the code does:
    here both notices (as torch 2.11 on CUDA printed them) are raised on every call, and none
    gets out; a third, unrelated warning still does."""
    real = torch.sparse_csr_tensor

    def noisy(*args: object, **kwargs: object) -> torch.Tensor:
        warnings.warn("Sparse CSR tensor support is in beta state. If you miss ...", stacklevel=2)
        warnings.warn("Sparse invariant checks are implicitly disabled. Memory ...", stacklevel=2)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(torch, "sparse_csr_tensor", noisy)
    attn, order, gram = _gram_inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(_topn._gram_products(attn, order, [4, 8], gram))

    def other(*args: object, **kwargs: object) -> torch.Tensor:
        warnings.warn("something a user should see", stacklevel=2)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(torch, "sparse_csr_tensor", other)
    with pytest.warns(UserWarning, match="a user should see"):
        list(_topn._gram_products(attn, order, [4], gram))
