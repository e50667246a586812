"""Which cassette (if any) the model calls of this context go through.

Kept tiny and dependency-free: ``iModel`` asks it on every call. It knows a cassette only as a
``Tape`` (below), what its callers use of one: ``cassettes/cassette.py`` builds on this module,
never the other way round. A ``with cassette(...)`` block
sets a context variable (tasks started inside inherit it, as asyncio copies the context when a
task is created); ``use_cassette(...)`` sets the process-wide default that applies wherever no
block is active (a notebook's later cells, widget-started runs). ``watch(callback)`` is told
when that default changes (the live views' cassette badge follows it at once).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncGenerator, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from lion_nb.cassettes.player import LiveComplete, LiveStream
    from lion_nb.models.base import Chunk, CLIRequest, DeltaSink, ModelRequest, ModelResponse

__all__ = ["Tape", "current", "default", "scoped", "set_default", "watch"]


class Tape(Protocol):
    """What the model calls and the views use of a cassette (``cassette.Cassette`` is the one):
    its mode, the files it plays and records, and the two ways a call goes through it."""

    @property
    def mode(self) -> str: ...

    @property
    def recording_to(self) -> str | None: ...

    @property
    def replaying_from(self) -> str | None: ...

    async def complete(
        self, model: Any, request: ModelRequest, on_delta: DeltaSink | None, live: LiveComplete
    ) -> ModelResponse: ...

    def stream(
        self, model: Any, request: CLIRequest, live: LiveStream
    ) -> AsyncGenerator[Chunk, None]: ...


logger = logging.getLogger(__name__)
_UNSET = object()
scoped: ContextVar[object] = ContextVar("lion_nb_cassette", default=_UNSET)
_default: list[Tape | None] = [None]
# told when the default changes; a bound method is held weakly (a view nobody closed goes)
_watchers: list[Callable[[], Callable[[], None] | None]] = []


def current() -> Tape | None:
    """The cassette in force here: the innermost ``with cassette(...)``, else the default
    set by ``use_cassette``. ``None`` (or a cassette in mode "off") means call the model."""
    value = scoped.get()
    if value is _UNSET:
        return _default[0]
    return value  # type: ignore[return-value]


def default() -> Tape | None:
    """The process-wide default (``use_cassette``), whatever block is active here."""
    return _default[0]


def set_default(cassette: Tape | None) -> Tape | None:
    """Install ``cassette`` as the process-wide default; returns the previous one. The
    watchers are told."""
    previous, _default[0] = _default[0], cassette
    for ref in list(_watchers):
        callback = ref()
        if callback is None:
            _watchers.remove(ref)
        else:
            try:
                callback()
            except Exception:  # a view that cannot follow must not break the switch
                logger.exception("a cassette watcher failed")
    return previous


def watch(callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback()`` whenever the default changes; returns the function that stops it.
    A bound method is held weakly."""
    ref: Callable[[], Callable[[], None] | None]
    if hasattr(callback, "__self__") and hasattr(callback, "__func__"):
        ref = weakref.WeakMethod(callback)
    else:
        ref = lambda: callback  # noqa: E731
    _watchers.append(ref)

    def unwatch() -> None:
        if ref in _watchers:
            _watchers.remove(ref)

    return unwatch
