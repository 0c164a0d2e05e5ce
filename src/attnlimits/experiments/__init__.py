"""Experiments: one module per algorithm or figure; config dataclass -> table -> figure."""
