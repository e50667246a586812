"""Model providers, registered by name and imported only when first used.

Adding a provider is one file plus one entry in ``PROVIDERS`` (``models/registry.py``: its
kind, windows, key variables, options, APIs). ``iModel`` is the object users
hold; it owns credentials (never shown) and per-model request defaults.
"""

from __future__ import annotations

from lion_nb.models.imodel import PROVIDERS, iModel, register_provider, resolve_default_model

__all__ = ["PROVIDERS", "iModel", "register_provider", "resolve_default_model"]
