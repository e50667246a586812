"""What is known about a model without constructing its provider: its context window, whether
it is a CLI agent, and its offline tokenizer when the provider exists already.

``iModel.context_window``, ``iModel.is_cli`` and ``iModel.token_counter()`` answer from here, so
the operations layer (fitting a request into the window) and the views (the gauge) ask the
model, never a provider. A provider is never constructed just to ask: that may load llama.cpp
and its weights, which a machine replaying a cassette may not have.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING

from lion_nb.errors import LionError

if TYPE_CHECKING:
    from lion_nb.models.imodel import iModel

__all__ = ["KNOWN_WINDOWS", "context_window", "is_cli", "token_counter"]

# Context windows of well-known models, by name prefix (providers that know better say so
# through ``context_window`` / ``n_ctx``; an unknown window stays unknown, never guessed).
KNOWN_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude", 200_000),
    ("sonnet", 200_000),
    ("opus", 200_000),
    ("haiku", 200_000),
    ("gemini-2.5", 1_048_576),
    ("smollm2", 8_192),
)
_WINDOW_NAMES = ("context_window", "n_ctx")


def _provider_class(model: iModel) -> type | None:
    from lion_nb.models.imodel import PROVIDERS

    spec = PROVIDERS.get(model.provider_name)
    if spec is None:
        return None
    try:
        return getattr(import_module(spec.module), spec.cls)  # type: ignore[no-any-return]
    except (ImportError, AttributeError):
        return None


def _constructor_default(model: iModel) -> int | None:
    cls = _provider_class(model)
    if cls is None:
        return None
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return None
    for name in _WINDOW_NAMES:
        default = params[name].default if name in params else None
        if isinstance(default, int) and not isinstance(default, bool) and default > 0:
            return default
    return None


def context_window(model: iModel) -> int | None:
    """The window in tokens: ``context_window=`` (or ``n_ctx=``) given to the model, the
    constructed provider's own figure, its constructor's default, or a known model name."""
    for name in _WINDOW_NAMES:
        value = model.request_defaults.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    provider = model.provider_or_none
    for attr in _WINDOW_NAMES:
        value = getattr(provider, attr, None)
        if callable(value):
            try:
                value = value()
            except Exception:  # a fact must not fail on a provider quirk
                value = None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    if provider is None and (value := _constructor_default(model)) is not None:
        return value
    name = (model.model or model.provider_name or "").lower()
    for prefix, window in KNOWN_WINDOWS:
        if name.startswith(prefix) or f"/{prefix}" in name or name.endswith(prefix):
            return window
    return None


def is_cli(model: iModel) -> bool:
    """A CLI agent (it keeps its own history: nothing is fitted or cut for it)."""
    from lion_nb.models.imodel import CLI_PROVIDERS

    if model.provider_name in CLI_PROVIDERS or model.request_defaults.get("cli"):
        return True
    provider = model.provider_or_none
    if provider is not None:
        return bool(getattr(provider, "is_cli", False))
    return bool(getattr(_provider_class(model), "is_cli", False) is True)


def token_counter(model: iModel) -> Callable[[str], int] | None:
    """The provider's offline tokenizer (``count_tokens(text)``) when the provider is
    constructed already (it is after a live call) and can count, else None: counts are then
    estimates. A call that failed because the model is not installed (a cassette miss on a
    machine without it) leaves a provider that cannot load its tokenizer either."""
    counter = getattr(model.provider_or_none, "count_tokens", None)
    if not callable(counter):
        return None
    try:
        counter("")
    except LionError:
        return None
    return counter  # type: ignore[no-any-return]
