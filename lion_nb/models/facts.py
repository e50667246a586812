"""What is known about a model without constructing its provider: its context window, whether
it is a CLI agent, and its offline tokenizer when the provider exists already.

``iModel.context_window``, ``iModel.is_cli`` and ``iModel.token_counter()`` answer from here, so
the operations layer (fitting a request into the window) and the views (the gauge) ask the
model, never a provider. A provider is never constructed just to ask: that may load llama.cpp
and its weights, which a machine replaying a cassette may not have. The model is read as a
``Described`` (below): ``iModel`` builds on this module, never the other way round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from lion_nb.errors import LionError
from lion_nb.models.capabilities import remembered
from lion_nb.models.probe import server_url

if TYPE_CHECKING:
    from lion_nb.models.registry import ProviderSpec

__all__ = ["Described", "context_window", "is_cli", "token_counter"]


class Described(Protocol):
    """What the facts read of a model (``iModel`` is one): the options it was given, its
    registry entry, its server's URL and its provider when constructed already."""

    @property
    def model(self) -> str | None: ...

    @property
    def base_url(self) -> str | None: ...

    @property
    def request_defaults(self) -> Mapping[str, Any]: ...

    @property
    def spec(self) -> ProviderSpec: ...

    @property
    def provider_or_none(self) -> Any: ...


_WINDOW_NAMES = ("context_window", "n_ctx")


def context_window(model: Described) -> int | None:
    """The window in tokens a request must fit: the model's (below), or the window of one
    slot of its server when that is known and smaller (llama-server ``--parallel 4 -c 2048``
    gives each slot 512 tokens; ``iModel.capabilities()`` learns it)."""
    window = _model_window(model)
    slot = _slot_window(model)
    if slot is None:
        return window
    return slot if window is None else min(window, slot)


def _slot_window(model: Described) -> int | None:
    url = server_url(model)
    return remembered(url).slot_window if url else None


def _model_window(model: Described) -> int | None:
    """``context_window=`` (or ``n_ctx=``) given to the model, the constructed provider's own
    figure, else its registry entry's (a known model name, or the entry's default)."""
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
    return model.spec.window(model.model)


def is_cli(model: Described) -> bool:
    """A CLI agent (it keeps its own history: nothing is fitted or cut for it)."""
    return model.spec.kind == "cli" or bool(model.request_defaults.get("cli"))


def token_counter(model: Described) -> Callable[[str], int] | None:
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
    return counter
