"""Which cassette (if any) the model calls of this context go through.

Kept tiny and dependency-free: ``iModel`` asks it on every call. A ``with cassette(...)`` block
sets a context variable (tasks started inside inherit it, as asyncio copies the context when a
task is created); ``use_cassette(...)`` sets the process-wide default that applies wherever no
block is active (a notebook's later cells, widget-started runs).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lion_nb.cassettes.cassette import Cassette

__all__ = ["current", "scoped", "set_default"]

_UNSET = object()
scoped: ContextVar[object] = ContextVar("lion_nb_cassette", default=_UNSET)
_default: list[Cassette | None] = [None]


def current() -> Cassette | None:
    """The cassette in force here: the innermost ``with cassette(...)``, else the default
    set by ``use_cassette``. ``None`` (or a cassette in mode "off") means call the model."""
    value = scoped.get()
    if value is _UNSET:
        return _default[0]
    return value  # type: ignore[return-value]


def set_default(cassette: Cassette | None) -> Cassette | None:
    """Install ``cassette`` as the process-wide default; returns the previous one."""
    previous, _default[0] = _default[0], cassette
    return previous
