"""Small max-retrieval models for paper B's tests (tests/test_max_retrieval*.py)."""

from __future__ import annotations

from attnlimits.experiments.softmax_not_enough import ModelConfig


def small(normalizer: str = "softmax", width: int = 32) -> ModelConfig:
    return ModelConfig(width=width, normalizer=normalizer)
