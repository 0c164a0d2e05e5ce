"""Whether the Hugging Face hub can be reached, asked once before :func:`load_model` loads a hub
id: offline mode, or one DNS lookup and TCP handshake."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlparse

__all__ = ["HUB_TIMEOUT", "hub_unreachable", "offline_flag"]


def offline_flag() -> bool:
    """Whether offline mode is asked for: ``HF_HUB_OFFLINE`` in the environment, or
    huggingface_hub's own flag (read once at its import, and what transformers obeys)."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    try:
        from huggingface_hub import constants
    except ImportError:  # pragma: no cover - a dependency of transformers
        return False
    return bool(getattr(constants, "HF_HUB_OFFLINE", False))


#: Seconds to wait for the hub's TCP handshake before calling it unreachable.
HUB_TIMEOUT = 1.0


def hub_unreachable() -> str | None:
    """Why the Hugging Face hub cannot be reached (offline mode, no name, no route), or None.

    One DNS lookup and one TCP connection with a 1 s timeout (measured: an unresolvable host
    fails in ~0.02 s): without it, transformers retries for ~24 s before saying an unknown id
    cannot be fetched.
    """
    if offline_flag():
        return "HF_HUB_OFFLINE is set"
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname
    try:
        with socket.create_connection((host or "huggingface.co", 443), timeout=HUB_TIMEOUT):
            return None
    except OSError as err:
        return f"{host} is unreachable ({err.__class__.__name__})"
