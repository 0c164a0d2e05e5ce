"""attnlimits.normalizers (being written)."""
