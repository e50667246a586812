"""``SignalBus``: where a branch's (or a session's) signals go, and who listens.

A branch owns one (``branch.signals``); so does a session, and an included branch's bus
passes every signal on to its session's (``upstream``). The port, the run lifecycle and a
streaming message emit through it; ``observe`` and ``subscribe`` add handlers to it.
``emit`` is synchronous and cheap (it runs per token); async handlers become tasks that
``drain()`` awaits, so message signals settle before a run's terminal signal (ADR-0021 D4).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lion_nb.signals import Handler, Observers, Signal, observe_decorator


class SignalBus:
    """The handlers of one branch or session, and the bus its signals go on to.

    ``observe`` is the caller's subscription (``unobserve_all`` removes it); ``subscribe`` is
    one held by an object that ends it itself (a view), which ``unobserve_all`` leaves."""

    __slots__ = ("_observers", "upstream")

    def __init__(self, observers: Observers | None = None, *, upstream: SignalBus | None = None):
        self._observers = observers if observers is not None else Observers()
        self.upstream = upstream

    # ----- emitting -----------------------------------------------------------------------
    def emit(self, signal: Signal) -> None:
        """Hand ``signal`` to this bus's handlers, then to the upstream bus's."""
        if self._observers:
            self._observers.emit(signal)
        upstream = self.upstream
        if upstream is not None:
            upstream.emit(signal)

    async def drain(self) -> None:
        """Wait for the async handlers of the signals emitted so far (here and upstream)."""
        await self._observers.drain()
        if self.upstream is not None:
            await self.upstream.drain()

    def observed(self) -> bool:
        """Whether any handler here or upstream would receive a signal (checked per token:
        a stream builds no signal nobody hears)."""
        return bool(self._observers) or (self.upstream is not None and self.upstream.observed())

    def wants(self, kind: type[Signal]) -> bool:
        """Whether a signal of type ``kind`` reaches a handler here or upstream."""
        return self._observers.wants(kind) or (
            self.upstream is not None and self.upstream.wants(kind)
        )

    # ----- listening ----------------------------------------------------------------------
    def observe(self, *signal_types: type[Signal], handler: Handler | None = None) -> Any:
        """Subscribe ``handler`` (sync or async) to ``signal_types`` (every signal when none):
        ``bus.observe(RunEnd, handler=fn)`` or ``@bus.observe(RunEnd)``. Returns the handler
        (or, in decorator form, the decorator)."""
        return observe_decorator(self._observers.subscribe, signal_types, handler)

    def unobserve(self, handler: Handler) -> bool:
        """Stop calling ``handler`` (every subscription it has here); False if it had none."""
        return self._observers.unsubscribe(handler)

    def unobserve_all(self) -> None:
        """Remove every ``observe`` subscription; held ones (``subscribe``) stay."""
        self._observers.clear()

    def subscribe(self, types: tuple[type[Signal], ...], handler: Handler) -> Callable[[], None]:
        """A subscription its holder ends by calling the returned function."""
        return self._observers.subscribe(tuple(types), handler, held=True)

    def __repr__(self) -> str:
        upstream = ", with upstream" if self.upstream is not None else ""
        return f"<SignalBus: {len(self._observers)} subscription(s){upstream}>"
