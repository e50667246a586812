"""How many generations go to one server at once: a limiter per server, shared by every
``iModel`` that talks to it, in every event loop and thread of the process.

A server with N slots (llama-server ``--parallel N``; ``llama_cpp.server`` counts as one; a
model given ``max_concurrent=N``) is sent at most N generations at a time; the others wait
here, in the order they came, and are not sent until a slot is free (``llama_cpp.server``
cuts the running stream short when another request arrives; ``llama-server`` queues them but
the requests' time then counts against the caller's timeout). A server without a known limit
is not limited (the vendor clouds: today's behaviour).

The limiter is not an ``asyncio.Semaphore``: that belongs to one event loop, and a process may
run several (a kernel's loop, a sync helper's loop in a thread, a flow's worker). A waiter
is a future of its own loop, woken with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

__all__ = ["ServerSlots", "slots_for"]


@dataclass(eq=False)
class _Waiter:
    limit: int
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]
    granted: bool = field(default=False)


class ServerSlots:
    """The generations in flight to one server. ``hold(limit)`` waits until fewer than
    ``limit`` are in flight (each caller says its own limit: a model given
    ``max_concurrent=1`` waits for the server to be idle even when another model on it may
    send four)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._waiters: deque[_Waiter] = deque()

    @property
    def active(self) -> int:
        """Generations in flight now."""
        return self._active

    @property
    def waiting(self) -> int:
        """Requests queued, not sent yet."""
        return len(self._waiters)

    @asynccontextmanager
    async def hold(self, limit: int | None) -> AsyncIterator[None]:
        """A slot for the body of the ``async with`` (no limit: nothing is held)."""
        if limit is None:
            yield
            return
        await self._acquire(max(1, int(limit)))
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, limit: int) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._active < limit and not any(w.limit > self._active for w in self._waiters):
                self._active += 1
                return
            waiter = _Waiter(limit, loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            await waiter.future
        except BaseException:
            with self._lock:
                granted = waiter.granted
                if not granted:
                    self._waiters.remove(waiter)
            if granted:  # woken and cancelled in the same breath: hand the slot on
                self._release()
            raise

    def _release(self) -> None:
        with self._lock:
            self._active -= 1
            self._wake()

    def _wake(self) -> None:
        """Grant free slots to the first waiters whose limit admits them (lock held)."""
        for waiter in list(self._waiters):
            if self._active >= waiter.limit:
                continue
            self._waiters.remove(waiter)
            waiter.granted = True
            self._active += 1
            try:
                waiter.loop.call_soon_threadsafe(_grant, waiter.future)
            except RuntimeError:  # its loop is closed: nobody is waiting there any more
                self._active -= 1


def _grant(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


_registry_lock = threading.Lock()
_servers: dict[str, ServerSlots] = {}


def slots_for(key: str) -> ServerSlots:
    """The limiter of the server (or model) ``key`` names, created on first use."""
    with _registry_lock:
        slots = _servers.get(key)
        if slots is None:
            slots = _servers[key] = ServerSlots()
        return slots
