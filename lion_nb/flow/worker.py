"""The worker side of a Ray node: rebuild the branch, run the operation, stream it back.

``run_node_task`` is what Ray executes (imported by reference, so workers need lion_nb
installed). Each execution is an *attempt* with its own id: Ray re-executes a node whose worker
died, and the notebook tells attempts apart by it. While the operation runs, the branch's
signals are batched and pushed to the run's relay actor, one push at a time so they arrive in
order, at most one push every ``FLUSH_S`` seconds (the first event of a quiet spell goes at
once). Each recorded message travels too, as ``("message", <its JSON>)`` in order with the
deltas, so the notebook records it live. The attempt's new messages also travel with the
result, which is the record: live events are best effort (a push can fail, the worker can die),
and the notebook reconciles what landed live with the record when the attempt finishes.

Per-token deltas travel only while the node's stream is *watched* in the notebook (see
``lion_nb.flow.ray_engine``): the payload says whether it was when the node was sent, and the
worker long-polls the relay for a change (``Relay.watch_changed``). While unwatched, the deltas
are kept here instead, merged per message part; when a watcher appears they go first, as one
delta per part (the text so far), and the live deltas follow. Deltas of a message already
recorded are dropped: the message itself carries them. Lifecycle signals and messages always
travel, so a node nobody watches costs a few pushes, not one per ~15th of a second. A stopped
attempt records what it streamed as a message (``on_stop="record"``), which travels like any
other, before the attempt's end.

Nothing here raises for an operation's failure: the error travels back as data (or as a
``RemoteError`` when it cannot be pickled), so Ray's retries are left for lost workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import traceback
import uuid
from dataclasses import replace
from typing import Any

from lion_nb.flow.errors import NotTransferable, RemoteError
from lion_nb.flow.node import Operation
from lion_nb.flow.payload import decode, rebuild_model
from lion_nb.flow.ray_cassette import worker_cassette
from lion_nb.messages import MESSAGE, MESSAGE_LIST
from lion_nb.port.tools import Tool
from lion_nb.session.branch import Branch
from lion_nb.session.session import Session
from lion_nb.signals import MessageAdded, MessageRetracted, RunEnd, RunFailed, Signal, StreamDelta

# Views draw at most ~15 times a second, so pushing more often buys nothing; each push is an
# actor call costing CPU in the worker, the relay and the notebook, which on a small machine is
# taken from the models themselves (B8: 2 vs 1 embedded-model workers 1.64x at 0.02 s). The
# notebook pulls at most as often (``Relay.pull``'s ``gather_s``), so two workers' pushes arrive
# in one call: 16 prompts on 2 workers made 329 pulls before, 195 since. Unwatched nodes send
# no deltas at all (above): the same 16 prompts then reach the notebook in 32 batches, not 306,
# and the relay's CPU fell from 0.88 to 0.23 s, the notebook's from 0.37 to 0.14 s.
FLUSH_S = 1 / 15
logger = logging.getLogger("lion_nb")


def _portable(value: Any) -> bool:
    from ray import cloudpickle  # lazy: ray (an optional extra) takes ~1.4 s to import

    try:
        cloudpickle.dumps(value)
    except Exception:
        return False
    return True


def portable_error(exc: BaseException) -> BaseException:
    """``exc`` itself if it pickles (and unpickles), else a ``RemoteError`` describing it."""
    from ray import cloudpickle  # lazy: ray (an optional extra) takes ~1.4 s to import

    try:
        cloudpickle.loads(cloudpickle.dumps(exc))
    except Exception:
        tb = "".join(traceback.format_exception(exc))
        return RemoteError(type(exc).__name__, str(exc), tb)
    return exc


def transport(signal: Signal) -> tuple[Any, ...] | None:
    """A signal as it travels: deltas as plain tuples (the notebook re-accumulates them),
    messages as their JSON (the notebook records them with the same id), lifecycle signals
    with an unpicklable result/error replaced. None: the signal cannot travel and is dropped."""
    if isinstance(signal, StreamDelta):
        return ("delta", signal.message_id, signal.kind, signal.delta, signal.name, signal.call_id)
    if isinstance(signal, MessageAdded):
        return ("message", MESSAGE.dump_python(signal.message, mode="json"))
    if isinstance(signal, MessageRetracted):
        return ("retract", signal.message_id, signal.reason)
    if isinstance(signal, RunEnd) and not _portable(signal.result):
        signal = replace(signal, result=None)
    elif isinstance(signal, RunFailed):
        signal = replace(signal, error=portable_error(signal.error))
    return ("signal", signal) if _portable(signal) else None


WATCH_POLL_S = 10.0  # how long one ``watch_changed`` call waits at most before it is renewed


def merge_deltas(events: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Transported deltas merged into one per message part, in the order the parts began:
    what a notebook that saw none of them needs to show the text so far. ``tokens`` deltas
    (wire-encoded lists) stay as they are."""
    merged: dict[tuple[Any, ...], list[Any]] = {}
    for event in events:
        _, message_id, kind, delta, name, call_id = event
        part = (message_id, kind, call_id) if kind != "tokens" else (len(merged), event)
        found = merged.get(part)
        if found is None:
            merged[part] = [message_id, kind, [delta], name, call_id]
        else:
            found[2].append(delta)
            found[3] = found[3] or name
    return [("delta", m, k, "".join(d), n, c) for m, k, d, n, c in merged.values()]


class _Outbox:
    """Batches events and pushes them to the relay, one push in flight at a time; keeps
    per-token deltas back while nobody watches them."""

    def __init__(
        self,
        relay: Any,
        channel: str,
        key: str,
        attempt: str,
        flush_s: float = FLUSH_S,
        watched: bool = True,
    ) -> None:
        self.flush_s = flush_s
        self.relay = relay
        self.channel = channel
        self.key = key
        self.attempt = attempt
        self.watched = watched
        self.buffer: list[tuple[Any, ...]] = []
        self.withheld: list[tuple[Any, ...]] = []  # deltas nobody watched yet, in order
        self.wake = asyncio.Event()
        self.closing = asyncio.Event()  # ends a batch's wait: the attempt's last events go now
        self.closed = False

    def put(self, event: tuple[Any, ...]) -> None:
        self.buffer.append(event)
        self.wake.set()

    def put_delta(self, event: tuple[Any, ...]) -> None:
        if self.watched:
            self.put(event)
        else:
            self.withheld.append(event)

    def recorded(self, message_id: Any) -> None:
        """Message ``message_id`` was recorded: its withheld deltas are no longer needed."""
        if self.withheld:
            self.withheld = [e for e in self.withheld if e[1] != message_id]

    def set_watched(self, watched: bool) -> None:
        if watched and not self.watched and self.withheld:
            self.buffer.extend(merge_deltas(self.withheld))  # the text so far, then live
            self.withheld = []
            self.wake.set()
        self.watched = watched

    async def follow_watch(self) -> None:
        """Follow the notebook's watching of this node for the attempt's life."""
        while not self.closed:
            try:
                watched = await self.relay.watch_changed.remote(
                    self.channel, self.key, self.watched, WATCH_POLL_S
                )
            except Exception:  # the relay restarts: keep the current mode, ask again later
                logger.warning("a Ray node could not ask whether it is watched", exc_info=True)
                await asyncio.sleep(1.0)
                continue
            self.set_watched(watched)

    async def pump(self) -> None:
        last_push = -self.flush_s
        while True:
            await self.wake.wait()
            self.wake.clear()
            wait = last_push + self.flush_s - time.monotonic()
            if wait > 0 and not self.closed:  # gather a batch (deltas come per token)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.closing.wait(), wait)
            last_push = time.monotonic()
            batch, self.buffer = self.buffer, []
            if batch:
                try:
                    await self.relay.push.remote(self.channel, self.key, self.attempt, batch)
                except Exception:  # live events are a view; the record travels with the result
                    logger.warning("a Ray node's live events could not be sent", exc_info=True)
            if self.closed and not self.buffer:
                return

    async def close(
        self, task: asyncio.Task[None], watch: asyncio.Task[None] | None = None
    ) -> None:
        self.closed = True
        self.closing.set()  # the notebook settles the node when "end" arrives: no wait
        self.wake.set()
        if watch is not None:
            watch.cancel()
        await task
        if watch is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await watch


def run_node_task(relay: Any, channel: str, parts: dict[str, Any]) -> dict[str, Any]:
    """Ray's entry point: one attempt of one node. Returns the attempt's record.

    ``ray.cancel`` interrupts the loop with KeyboardInterrupt; ``asyncio.run`` then cancels the
    attempt and runs its cleanup to the end (a CLI stream closes, its process group ends).
    The notebook's cassette, when one was in force there, is in force here too (a copy:
    ``lion_nb.flow.ray_cassette``)."""
    with worker_cassette(parts.get("cassette")):
        return asyncio.run(_attempt(relay, channel, parts))


def _node_location() -> dict[str, Any]:
    import ray  # lazy: ray (an optional extra) takes ~1.4 s to import

    if not ray.is_initialized():  # run outside Ray (this module's tests): never start one
        return {"node_id": None, "pid": os.getpid()}
    return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}


def _build(parts: dict[str, Any]) -> tuple[Any, Any]:
    branch = Branch.from_dict(
        decode(parts["branch"]),
        chat_model=rebuild_model(decode(parts["chat_model"])),
        parse_model=rebuild_model(decode(parts["parse_model"])),
    )
    tools = decode(parts["tools"])
    if tools:
        branch.register_tools([Tool(f, name=n, description=d) for n, d, f in tools])
    branch.context_providers = list(decode(parts["context_providers"]))
    session = Session()
    session.include_branches(branch)
    registered = decode(parts["registered"])
    if registered is not None:
        session.register_operation(parts["operation"], registered)
    node = Operation(parts["operation"], decode(parts["parameters"]))
    return branch, node


async def _attempt(relay: Any, channel: str, parts: dict[str, Any]) -> dict[str, Any]:
    attempt = uuid.uuid4().hex
    key = parts["node_id"]
    outbox = _Outbox(relay, channel, key, attempt, watched=parts.get("watched", True))
    outbox.put(("attempt", _node_location()))
    pump = asyncio.create_task(outbox.pump())
    watch = asyncio.create_task(outbox.follow_watch())
    record: dict[str, Any] = {"attempt": attempt, **_node_location(), "messages": []}
    started = time.perf_counter()
    try:
        branch, node = _build(parts)
    except Exception as exc:
        await outbox.close(pump, watch)
        record.update(ok=False, error=portable_error(_unbuildable(exc)))
        return record
    known = {m.id for m in branch.messages}

    def forward(signal: Signal) -> None:
        event = transport(signal)
        if event is None:
            return
        if event[0] == "delta":
            outbox.put_delta(event)
            return
        if isinstance(signal, MessageAdded):
            outbox.recorded(signal.message.id)
        outbox.put(event)

    unsubscribe = branch.subscribe((), forward)
    try:
        response = await node.execute(branch)
        record.update(ok=True, response=_returnable(response))
    except Exception as exc:
        record.update(ok=False, error=portable_error(exc))
    finally:
        unsubscribe()
        new = [m for m in branch.messages if m.id not in known]
        record["messages"] = MESSAGE_LIST.dump_python(new, mode="json")
        record["usage"] = {
            "input_tokens": node.usage.input_tokens,
            "output_tokens": node.usage.output_tokens,
            "total_cost_usd": node.usage.total_cost_usd,
        }
        record["worker_ms"] = (time.perf_counter() - started) * 1000.0
        outbox.put(("end", None))
        await outbox.close(pump, watch)
    if record["ok"] and isinstance(record["response"], NotTransferable):
        record.update(ok=False, error=record.pop("response"))
    return record


def _unbuildable(exc: Exception) -> Exception:
    if isinstance(exc, ModuleNotFoundError | AttributeError):
        return NotTransferable(
            f"the worker cannot rebuild this node ({type(exc).__name__}: {exc}); code it "
            "refers to by module must be importable on the workers (install the package "
            "there, or ray.init(runtime_env={'py_modules': [...]}))"
        )
    return exc


def _returnable(response: Any) -> Any:
    if _portable(response):
        return response
    return NotTransferable(
        f"the response ({type(response).__name__}) cannot travel back from the worker"
    )
