"""attnlimits.metrics (being written)."""
