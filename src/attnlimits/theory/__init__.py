"""attnlimits.theory (being written)."""
