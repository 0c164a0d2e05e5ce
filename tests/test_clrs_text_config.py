"""``attnlimits reproduce clrs-text`` (paper B §4.2): the config (``clrs_text/config.py``): a bad
value is one clear error, the default is the benchmark's form, the quick preset, the regime of
each length."""

from __future__ import annotations

import pytest

from attnlimits.experiments.clrs_text import Config
from attnlimits.experiments.clrs_text.config import regime


@pytest.mark.parametrize(
    ("n", "expected"),
    [(4, "in distribution"), (5, "interpolation"), (7, "in distribution"),
     (6, "interpolation"), (8, "extrapolation"), (14, "extrapolation")],
)  # fmt: skip
def test_lengths_are_trained_interpolated_or_extrapolated(n, expected):
    assert regime(n, (4, 7)) == expected


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"algorithms": ("sortt",)}, "unknown CLRS-Text algorithm"),
        ({"train_lengths": (3,)}, "from 4 to 64"),
        ({"test_lengths": (5, 8)}, "missing \\[4, 7\\]"),
        ({"arms": ("adaptive", "softmax")}, "start with softmax"),
        ({"arms": ("softmax", "nope")}, "unknown arms"),
        ({"model": "gemma"}, "model must be"),
        ({"seeds": 0}, "seeds"),
        ({"width": 30, "heads": 4}, "multiple of heads"),
        ({"lengths": "mine"}, "lengths must be"),
        ({"format": "hints"}, "format must be one of trace, answer"),
        ({"lrs": (0.0, 1e-3)}, "lrs must be numbers in"),
        ({"lrs": (1e-3, True)}, "lrs must be numbers in"),
        ({"stop_at": 1.5}, "stop_at must be"),
    ],
)
def test_bad_config_is_one_clear_error(kw, match):
    with pytest.raises(ValueError, match=match):
        Config(**kw)


def test_the_default_is_the_benchmarks_form():
    """Traces, a search, a sort and a graph task in one model, ≥ 5 seeds, a learning-rate grid,
    interpolation inside the training range and extrapolation to ≥ 2× its largest length."""
    c = Config()
    assert c.format == "trace" and c.algorithms == ("minimum", "insertion_sort", "bfs")
    assert c.seeds >= 5 and len(c.lrs) >= 2
    regimes = {regime(n, c.train_lengths) for n in c.test_lengths}
    assert regimes == {"in distribution", "interpolation", "extrapolation"}
    assert max(c.test_lengths) >= 2 * max(c.train_lengths)
    assert Config(lengths="paper").test_seeds() == (3, 14, 35, 81, 94)
    assert Config().test_seeds() == (3,)


def test_quick_preset_and_all_algorithms():
    q = Config.quick(seeds=3)
    assert q.seeds == 3 and q.preset == "quick" and q.algorithms == ("minimum",)
    assert len(Config(algorithms=("all",)).algorithms) == 30
    train, test = Config(lengths="paper", algorithms=("bridges",)).split_lengths()
    assert train == {"bridges": (4, 5)} and test == {"bridges": (4, 5, 6, 7)}


def test_the_learning_rates_default_per_model():
    """No rate given: the tiny model's grid from scratch, a fine-tuning rate for a pretrained
    model (a rate of 1e-3 or more would overwrite its weights); a given grid wins."""
    from attnlimits.experiments.clrs_text.config import PRETRAINED_LRS, TINY_LRS

    assert Config().lrs == TINY_LRS == Config(lrs=()).lrs
    assert Config(model="smollm2-135m").lrs == PRETRAINED_LRS == (1e-4,)
    assert Config(model="smollm2-135m", lrs=(3e-5,)).lrs == (3e-5,)
    assert Config.quick(model="smollm2-135m").lrs == (1e-4,)
