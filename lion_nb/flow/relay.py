"""The relay: a small asyncio Ray actor that carries live events from workers to the notebook.

Workers push batches ``(node key, attempt, events)``; the notebook long-polls ``pull(cursor)``,
which returns every entry after ``cursor`` as soon as there is one (or after ``timeout``) and
forgets those before it. One relay per ``Flow.run``; it takes no CPU slot (``num_cpus=0``).
Ray streaming generators were not used because a retried generator must replay the same number
of items, and a model's deltas do not repeat exactly.
"""

from __future__ import annotations

import asyncio
from typing import Any


class Relay:
    def __init__(self) -> None:
        self._entries: list[tuple[str, str, list[Any]]] = []
        self._base = 0  # index of _entries[0] in the whole stream
        self._arrived = asyncio.Event()

    async def push(self, key: str, attempt: str, events: list[Any]) -> None:
        self._entries.append((key, attempt, events))
        self._arrived.set()

    async def pull(self, cursor: int, timeout: float) -> tuple[int, list[Any]]:
        """Entries from ``cursor`` on, and the cursor after them."""
        drop = cursor - self._base
        if drop > 0:
            del self._entries[:drop]
            self._base = cursor
        if not self._entries:
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), timeout)
            except TimeoutError:
                pass
        entries = list(self._entries)
        return self._base + len(entries), entries


_ACTOR: list[Any] = []


def relay_actor() -> Any:
    """The Ray actor class (made on first use: importing this module needs no Ray)."""
    if not _ACTOR:
        import ray

        _ACTOR.append(ray.remote(num_cpus=0, max_restarts=0)(Relay))
    return _ACTOR[0]
