"""Which cassette (if any) the model calls of this context go through.

Kept tiny and dependency-free: ``iModel`` asks it on every call. A ``with cassette(...)`` block
sets a context variable (tasks started inside inherit it, as asyncio copies the context when a
task is created); ``use_cassette(...)`` sets the process-wide default that applies wherever no
block is active (a notebook's later cells, widget-started runs). ``watch(callback)`` is told
when that default changes (the live views' cassette badge follows it at once).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lion_nb.cassettes.cassette import Cassette

__all__ = ["current", "default", "scoped", "set_default", "watch"]

logger = logging.getLogger(__name__)
_UNSET = object()
scoped: ContextVar[object] = ContextVar("lion_nb_cassette", default=_UNSET)
_default: list[Cassette | None] = [None]
# told when the default changes; a bound method is held weakly (a view nobody closed goes)
_watchers: list[Callable[[], Callable[[], None] | None]] = []


def current() -> Cassette | None:
    """The cassette in force here: the innermost ``with cassette(...)``, else the default
    set by ``use_cassette``. ``None`` (or a cassette in mode "off") means call the model."""
    value = scoped.get()
    if value is _UNSET:
        return _default[0]
    return value  # type: ignore[return-value]


def default() -> Cassette | None:
    """The process-wide default (``use_cassette``), whatever block is active here."""
    return _default[0]


def set_default(cassette: Cassette | None) -> Cassette | None:
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
