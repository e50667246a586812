"""``RayEngine``: each node runs as a Ray task; its messages and signals stream back live.

The notebook side of a Ray node:

1. ``build_payload`` turns the node and its branch into data (no credentials; see
   ``lion_nb.flow.payload``). Anything that cannot travel fails the node with
   ``NotTransferable`` before a task is submitted; the branch is untouched.
2. The task (``lion_nb.flow.worker.run_node_task``) runs the operation on a rebuilt copy of the
   branch, with the same id, through the same operations layer.
3. While it runs, its events arrive through the run's relay actor and are applied to the
   notebook's branch as they come: ``RunStart``, ``StreamDelta`` while the node is watched
   (see below; re-accumulated here, so a view renders the snapshot), rounds, parse attempts,
   and each message the worker records, recorded here with the same id, in order
   (``MessageAdded``). Views and ``session.observe`` see them
   live; a CLI agent's tool cards appear as the agent works.
4. When the attempt's record arrives (the authority: live events are best effort), what landed
   live is reconciled with it: messages that match the record's order stay, anything else that
   landed is retracted (``MessageRetracted``), and record messages that never arrived live are
   recorded in order. The branch then holds exactly the record's messages, each once. Only then
   is the run's terminal signal emitted (ADR D4: messages before the terminal signal).

Live deltas are relayed only while someone watches them. A node's stream is *watched* while
a handler in this process would receive its branch's ``StreamDelta``
(``Branch.streams_watched``: a handler of the branch or of the session, e.g. ``FlowView``'s
model on the node it has open, a ``ChatView`` of the branch, ``observe()`` of every signal).
Unwatched, the worker keeps the deltas (``lion_nb.flow.worker``) and only lifecycle signals,
messages and the record travel: on a small machine every relayed batch is CPU taken from the
models. The engine looks for a change at each pull (at least once a second) and tells the
relay, which tells the worker; a watcher that appears mid-run first receives one delta per
part with the text so far (its ``StreamDelta.snapshot`` is the reply until then), then the
live ones. What a flow promises either way: the same messages, in order, with the same ids,
and the same results; only the per-token ``StreamDelta`` of an unwatched node do not happen
here.

A worker that dies mid-node: Ray re-executes the task (``max_retries``, default 2). When the
next attempt begins, the dead attempt's messages that landed live are retracted, newest first
(the retry records its own, with new ids: keeping both would duplicate the instruction), and its
open run is closed with ``RunFailed(WorkerLost)``, so every ``RunStart`` has its terminal.
``node.metadata["ray"]["attempts"]`` lists the attempts (Ray node id, worker pid).

When no attempt will follow - Ray's retries are used up (``WorkerLost``) or the flow is
cancelled - what landed stays on the branch: it is what happened, as on the local engine, where
a failed or cancelled operation keeps the messages it recorded before it stopped. A cancelled
node waits (``STOP_WAIT_S``) for its attempt's last events, so the stopped turn its worker
recorded (``on_stop="record"``, with everything it streamed, watched or not) lands here
before the node settles as stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import TYPE_CHECKING, Any

from lion_nb.flow import payload
from lion_nb.flow.errors import WorkerLost
from lion_nb.flow.ray_cassette import cassette_lines, cassette_part
from lion_nb.flow.ray_start import import_ray, start_ray
from lion_nb.flow.relay import job_relay
from lion_nb.flow.worker import FLUSH_S, run_node_task
from lion_nb.messages import MESSAGE, MESSAGE_LIST
from lion_nb.signals import RunEnd, RunFailed, RunStart, Signal

if TYPE_CHECKING:
    from lion_nb.cassettes.cassette import Cassette
    from lion_nb.flow.engine import Graph
    from lion_nb.flow.node import Operation
    from lion_nb.session.branch import Branch
    from lion_nb.signals import MessageStream

logger = logging.getLogger("lion_nb")

DEFAULT_OPTIONS: dict[str, Any] = {"num_cpus": 1, "max_retries": 2}
END_WAIT_S = 30.0  # how long a finished attempt's last live events may lag behind its record
STOP_WAIT_S = 10.0  # how long a cancelled attempt's last events (its stopped turn) may take


def _emit(branch: Branch, signal: Signal) -> None:
    branch.port().emit(signal)


class _NodeLink:
    """The live side of one node on Ray: applies its attempts' events to the branch."""

    def __init__(self, flow: Graph, node: Operation, branch: Branch) -> None:
        self.flow = flow
        self.node = node
        self.branch = branch
        self.watched = branch.streams_watched()  # what the worker was told, then the relay
        self.attempt: str | None = None
        self.open_runs: dict[Any, RunStart] = {}
        self.held: list[Signal] = []  # terminal lifecycle signals, emitted after the messages
        self.streams: dict[Any, MessageStream] = {}
        self.landed: list[uuid.UUID] = []  # recorded here live by the current attempt, in order
        self.ended: dict[str, asyncio.Event] = {}
        self.attempts: list[dict[str, Any]] = node.metadata.setdefault("ray", {}).setdefault(
            "attempts", []
        )

    def _ended(self, attempt: str) -> asyncio.Event:
        event = self.ended.get(attempt)
        if event is None:
            event = self.ended[attempt] = asyncio.Event()
        return event

    def _begin(self, attempt: str, location: dict[str, Any]) -> None:
        if self.attempt is not None:
            why = "the worker running this node died; Ray retried it"
            self._take_back(self.landed, why)
            self._abandon(why)
        if self.attempt is None and self.node.parameters.get("clear_messages"):
            # the operation forgets the conversation on the worker's copy of the branch; the
            # notebook's copy must forget it too (a branch change without signals, which views
            # pick up when the run ends, as after a local clear)
            self.branch.port().clear_messages()
        self.attempt = attempt
        self.landed = []
        self.streams.clear()
        self.held.clear()
        self.attempts.append({"attempt": attempt, **location})
        self.flow.notify(self.node)

    def _abandon(self, why: str) -> None:
        """Close the runs the current attempt left open (it will never send their end)."""
        for start in list(self.open_runs.values()):
            _emit(
                self.branch,
                RunFailed(
                    branch_id=start.branch_id,
                    run_id=start.run_id,
                    operation=start.operation,
                    duration_ms=0.0,
                    error=WorkerLost(why),
                ),
            )
        self.open_runs.clear()

    def _take_back(self, ids: list[uuid.UUID], why: str) -> None:
        """Retract messages that landed here, newest first (undoing them in reverse order)."""
        port = self.branch.port()
        for message_id in reversed(ids):
            if message_id in self.branch.messages:  # user code may have removed it already
                port.retract(message_id, why)

    def apply(self, attempt: str, events: list[tuple[Any, ...]]) -> None:
        for event in events:
            kind = event[0]
            if kind == "attempt":
                self._begin(attempt, event[1])
            elif attempt != self.attempt:
                continue  # a late event of an attempt that was replaced
            elif kind == "delta":
                self._delta(*event[1:])
            elif kind == "message":
                self._message(event[1])
            elif kind == "retract":
                self._retracted(event[1], event[2])
            elif kind == "signal":
                self._signal(event[1])
            elif kind == "end":
                self._ended(attempt).set()

    def _message(self, data: dict[str, Any]) -> None:
        self._land(MESSAGE.validate_python(data))

    def _land(self, message: Any) -> None:
        # a message already here (an event delivered twice, or history the node started
        # from) is not this attempt's to land, nor to take back later
        if message.id not in self.branch.messages:
            self.branch.port().record(message)
            self.landed.append(message.id)

    def _retracted(self, message_id: uuid.UUID, reason: str) -> None:
        """The worker took back one of its messages; older history is not the engine's."""
        if message_id in self.landed:
            self.landed.remove(message_id)
            self._take_back([message_id], reason)

    def _delta(self, message_id: Any, kind: Any, delta: str, name: Any, call_id: Any) -> None:
        stream = self.streams.get(message_id)
        if stream is None:
            stream = self.streams[message_id] = self.branch.port().stream(message_id)
        stream(kind, delta, name=name, call_id=call_id)

    def _signal(self, signal: Signal) -> None:
        if isinstance(signal, RunStart):
            self.open_runs[signal.run_id] = signal
        elif isinstance(signal, RunEnd | RunFailed):
            self.held.append(signal)  # after the messages, as on the worker (ADR D4)
            return
        _emit(self.branch, signal)

    async def stopped(self) -> None:
        """The flow was cancelled and the attempt has finished: wait for its last events (the
        stopped turn it recorded), close its runs as it did, then any it left open. What
        landed stays: it happened."""
        if self.attempt is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ended(self.attempt).wait(), STOP_WAIT_S)
        await self.branch.port().drain()
        for signal in self.held:
            self.open_runs.pop(getattr(signal, "run_id", None), None)
            _emit(self.branch, signal)
        self.held.clear()
        self._abandon("the flow was cancelled")

    def reconcile(self, messages: list[Any]) -> None:
        """Make the branch hold exactly ``messages`` (the attempt's record) for this attempt,
        each once: the landed prefix that matches stays, the rest of what landed is retracted,
        and the record's messages after that prefix are recorded in order."""
        ids = [m.id for m in messages]
        kept = 0
        while kept < min(len(ids), len(self.landed)) and self.landed[kept] == ids[kept]:
            kept += 1
        self._take_back(self.landed[kept:], "the attempt's record does not hold it there")
        del self.landed[kept:]
        for message in messages[kept:]:
            self._land(message)

    async def settle(self, record: dict[str, Any]) -> Any:
        """Reconcile the finished attempt's messages with its record, then emit its terminal
        signals; returns the response."""
        attempt = record["attempt"]
        try:
            await asyncio.wait_for(self._ended(attempt).wait(), END_WAIT_S)
        except TimeoutError:
            logger.warning("live events of a Ray node did not all arrive; recording anyway")
        if self.attempt != attempt:  # its events never came: only the record is known
            self._begin(attempt, {k: record.get(k) for k in ("node_id", "pid")})
        self.reconcile(MESSAGE_LIST.validate_python(record["messages"]))
        await self.branch.port().drain()
        for signal in self.held:
            self.open_runs.pop(getattr(signal, "run_id", None), None)
            if isinstance(signal, RunEnd):
                self.node.add_run_usage(
                    signal.input_tokens, signal.output_tokens, signal.total_cost_usd
                )
            _emit(self.branch, signal)
        self.held.clear()
        self._abandon("the node's attempt ended without closing this run")
        usage = record.get("usage") or {}
        self.node.add_run_usage(
            usage.get("input_tokens"), usage.get("output_tokens"), usage.get("total_cost_usd")
        )
        if not record["ok"]:
            raise record["error"]
        return record["response"]


class RayEngine:
    def __init__(self, options: dict[str, Any] | None = None) -> None:
        self.ray = import_ray()
        self.options = {**DEFAULT_OPTIONS, **(options or {})}
        self._flow: Graph | None = None
        self._relay: Any = None
        self._pump: asyncio.Task[None] | None = None
        self._links: dict[str, _NodeLink] = {}
        self._task: Any = None
        self._channel = uuid.uuid4().hex
        self._cassettes: dict[tuple[int, int, int], tuple[Cassette, Any]] = {}  # in Ray's store

    async def start(self, flow: Graph) -> None:
        ray = self.ray
        if not ray.is_initialized():
            start_ray()  # joins RAY_ADDRESS, else starts a local cluster (quietly, fast)
        self._flow = flow
        self._task = ray.remote(run_node_task).options(**self.options)
        self._relay = await job_relay(ray)
        self._pump = asyncio.create_task(self._pump_events(), name="lion_nb.flow:ray-relay")

    async def _pump_events(self) -> None:
        cursor = 0
        while True:
            try:
                cursor, entries = await self._relay.pull.remote(self._channel, cursor, 1.0, FLUSH_S)
            except Exception:  # the relay restarts (max_restarts=-1); records still arrive
                logger.warning("the Ray relay did not answer; retrying", exc_info=True)
                await asyncio.sleep(0.5)
                continue
            for key, attempt, events in entries:
                link = self._links.get(key)
                if link is None:
                    continue
                try:
                    link.apply(attempt, events)
                except Exception:
                    logger.exception("applying a Ray node's live events failed")
            self._follow_watchers()

    def _follow_watchers(self) -> None:
        """Tell the relay about each running node whose watching changed since last time."""
        for key, link in list(self._links.items()):
            watched = link.branch.streams_watched()
            if watched != link.watched:
                link.watched = watched
                self._relay.watch.remote(self._channel, key, watched)  # its result: nothing

    async def execute(self, node: Operation, branch: Branch) -> Any:
        assert self._flow is not None, "start() first"
        # NotTransferable fails here. Looked up when called: tests/flow/test_ray_vendor.py records it
        parts: dict[str, Any] = {**payload.build_payload(node, branch)}
        link = self._links[str(node.id)] = _NodeLink(self._flow, node, branch)
        parts["watched"] = link.watched
        parts["cassette"] = cassette_part(self._put_once)  # the cassette in force: replayed there
        ref = self._task.remote(self._relay, self._channel, parts)
        try:
            try:
                record = await ref
            except asyncio.CancelledError:
                await self._cancel(ref)
                await link.stopped()
                raise
            except self.ray.exceptions.WorkerCrashedError as exc:
                link._abandon("the worker died and Ray's retries are used up")
                raise WorkerLost(
                    f"the worker running this node died and Ray's retries "
                    f"(max_retries={self.options.get('max_retries')}) are used up: {exc}"
                ) from exc
            return await link.settle(record)
        finally:
            self._links.pop(str(node.id), None)

    def _put_once(self, tape: Cassette) -> Any:
        """A cassette's lines in Ray's object store, once per run and state of the cassette
        (every node replays them; a recording made meanwhile is sent with the next nodes)."""
        key = (id(tape), len(tape), tape.recorded)
        held = self._cassettes.get(key)
        if held is None:  # the cassette is held too: its id stays its own for the run
            held = self._cassettes[key] = (tape, self.ray.put(cassette_lines(tape)))
        return held[1]

    async def _cancel(self, ref: Any) -> None:
        """Cancel the task (KeyboardInterrupt in the worker, so its stream closes and a CLI's
        process group ends) and wait a little for it to finish doing so."""
        self.ray.cancel(ref, force=False)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(ref.future())), 10.0)

    async def close(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(BaseException):
                await self._pump
        if self._relay is not None:
            with contextlib.suppress(Exception):
                await self._relay.close.remote(self._channel)
        self._relay = self._pump = None
        self._flow = None
        self._cassettes.clear()
