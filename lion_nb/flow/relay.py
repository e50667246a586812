"""The relay: a small asyncio Ray actor that carries live events from workers to the notebook.

Workers push batches ``(node key, attempt, events)`` into a run's *channel*; the notebook
long-polls ``pull(channel, cursor)``, which returns every entry after ``cursor`` as soon as there
is one (or after ``wait_s`` seconds) and forgets those before it.

The other way, the relay carries one bit per node: whether something in the notebook watches
its stream (``lion_nb.flow.ray_engine``). The notebook sets it with ``watch`` when it changes
during a run (the attempt starts with the value it had when the node was sent), and the worker
long-polls ``watch_changed`` for it, so it relays per-token deltas only while they are watched.

One relay serves every run of a Ray job (``num_cpus=0``): starting an actor costs about a
second, and events pushed before it is up would only arrive once it is, so it is started once
and awaited before the first task.

Ray streaming generators were not used because a retried generator must replay the same number
of items, and a model's deltas do not repeat exactly.
"""

from __future__ import annotations

import asyncio
from typing import Any


class _Channel:
    __slots__ = ("arrived", "base", "entries", "returned", "watch_moved", "watched")

    def __init__(self) -> None:
        self.entries: list[tuple[str, str, list[Any]]] = []
        self.base = 0  # index of entries[0] in the channel's whole stream
        self.arrived = asyncio.Event()
        self.returned = 0.0  # when a pull last returned entries (event-loop time)
        self.watched: dict[str, bool] = {}  # node key -> watched, once the notebook changed it
        self.watch_moved: dict[str, asyncio.Event] = {}  # wakes the key's worker on a change

    def moved(self, key: str) -> asyncio.Event:
        event = self.watch_moved.get(key)
        if event is None:
            event = self.watch_moved[key] = asyncio.Event()
        return event


class Relay:
    def __init__(self) -> None:
        self._channels: dict[str, _Channel] = {}

    def _channel(self, name: str) -> _Channel:
        channel = self._channels.get(name)
        if channel is None:
            channel = self._channels[name] = _Channel()
        return channel

    async def ping(self) -> bool:
        return True

    async def push(self, name: str, key: str, attempt: str, events: list[Any]) -> None:
        channel = self._channel(name)
        channel.entries.append((key, attempt, events))
        channel.arrived.set()
        last = events[-1] if events else None
        if isinstance(last, tuple) and last[:1] == ("end",):  # its worker stops asking: release
            channel.moved(key).set()

    async def watch(self, name: str, key: str, watched: bool) -> None:
        """The notebook: whether node ``key``'s stream is watched now."""
        channel = self._channel(name)
        channel.watched[key] = watched
        channel.moved(key).set()

    async def watch_changed(self, name: str, key: str, watched: bool, wait_s: float) -> bool:
        """The worker of node ``key``, which relays as if ``watched``: the notebook's value as
        soon as it differs from that, else ``watched`` after ``wait_s`` seconds (or once the
        attempt pushed its end)."""
        channel = self._channel(name)
        moved = channel.moved(key)
        if channel.watched.get(key, watched) == watched:
            moved.clear()
            try:
                await asyncio.wait_for(moved.wait(), wait_s)
            except TimeoutError:
                pass
        return channel.watched.get(key, watched)

    async def pull(
        self, name: str, cursor: int, wait_s: float, gather_s: float = 0.0
    ) -> tuple[int, list[Any]]:
        """Entries of channel ``name`` from ``cursor`` on, and the cursor after them.

        ``gather_s``: at most one return with entries per ``gather_s`` seconds; a pull that
        comes sooner waits out the rest, gathering what other workers push meanwhile into the
        same return (each call costs CPU in the notebook and here, taken from the models on a
        small machine)."""
        channel = self._channel(name)
        if cursor > channel.base + len(channel.entries):
            channel.base = cursor  # this relay was restarted: its entries continue the stream
        drop = cursor - channel.base
        if drop > 0:
            del channel.entries[:drop]
            channel.base = cursor
        if not channel.entries:
            channel.arrived.clear()
            try:
                await asyncio.wait_for(channel.arrived.wait(), wait_s)
            except TimeoutError:
                pass
        if channel.entries and gather_s > 0:
            loop = asyncio.get_running_loop()
            early = channel.returned + gather_s - loop.time()
            if early > 0:
                await asyncio.sleep(early)
            channel.returned = loop.time()
        entries = list(channel.entries)
        return channel.base + len(entries), entries

    async def close(self, name: str) -> None:
        self._channels.pop(name, None)


_ACTOR: list[Any] = []
_RELAYS: dict[str, Any] = {}


async def job_relay(ray: Any) -> Any:
    """This Ray job's relay actor, started (and awaited) on first use.

    Keyed by the job *and* the driver's Ray node: job ids start again at 1 in every new cluster
    (``ray.shutdown()`` then ``ray.init()``), and using a handle of an earlier cluster aborts
    the process inside Ray's core. Handles of earlier clusters are kept, never dropped, for the
    same reason (a few bytes each)."""
    context = ray.get_runtime_context()
    key = f"{context.get_job_id()}@{context.get_node_id()}"
    relay = _RELAYS.get(key)
    if relay is None:
        if not _ACTOR:
            _ACTOR.append(ray.remote(num_cpus=0, max_restarts=-1)(Relay))
        relay = _ACTOR[0].remote()
        await relay.ping.remote()
        _RELAYS[key] = relay
    return relay
