"""``RayEngine``: each node runs as a Ray task; its signals stream back live.

The notebook side of a Ray node:

1. ``build_payload`` turns the node and its branch into data (no credentials; see
   ``lion_nb.flow.payload``). Anything that cannot travel fails the node with
   ``NotTransferable`` before a task is submitted; the branch is untouched.
2. The task (``lion_nb.flow.worker.run_node_task``) runs the operation on a rebuilt copy of the
   branch, with the same id, through the same operations layer.
3. While it runs, its signals arrive through the run's relay actor and are emitted on the
   notebook's branch as they come: ``RunStart``, ``StreamDelta`` (re-accumulated here, so a view
   renders the snapshot), rounds, parse attempts. Views and ``session.observe`` see them live.
4. When the attempt's record arrives, its new messages are recorded on the notebook's branch
   with the ids they were given on the worker, in order (``MessageAdded`` each), then the run's
   terminal signal is emitted. Messages land once, from the attempt that finished.

A worker that dies mid-node: Ray re-executes the task (``max_retries``, default 2). The dead
attempt recorded nothing on the notebook's branch (its messages travel only with a finished
attempt's record); its open run is closed with ``RunFailed(WorkerLost)`` when the next attempt
starts, so every ``RunStart`` has its terminal. ``node.metadata["ray"]["attempts"]`` lists the
attempts (Ray node id, worker pid).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import TYPE_CHECKING, Any

from lion_nb.flow.errors import EngineUnavailable, WorkerLost
from lion_nb.signals import RunEnd, RunFailed, RunStart, Signal

if TYPE_CHECKING:
    from lion_nb.flow.graph import Flow
    from lion_nb.operations.node import Operation
    from lion_nb.session.branch import Branch
    from lion_nb.signals import MessageStream

logger = logging.getLogger("lion_nb")

INSTALL_HINT = "pip install 'lion_nb[ray]'"
DEFAULT_OPTIONS: dict[str, Any] = {"num_cpus": 1, "max_retries": 2}
END_WAIT_S = 30.0  # how long a finished attempt's last live events may lag behind its record


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise EngineUnavailable(
            f"engine='ray' needs Ray, which is not installed: {INSTALL_HINT}"
        ) from exc
    return ray


def _emit(branch: Branch, signal: Signal) -> None:
    branch.port().emit(signal)


class _NodeLink:
    """The live side of one node on Ray: applies its attempts' events to the branch."""

    def __init__(self, flow: Flow, node: Operation, branch: Branch) -> None:
        self.flow = flow
        self.node = node
        self.branch = branch
        self.attempt: str | None = None
        self.open_runs: dict[Any, RunStart] = {}
        self.held: list[Signal] = []  # terminal lifecycle signals, emitted after the messages
        self.streams: dict[Any, MessageStream] = {}
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
            self._abandon("the worker running this node died; Ray retried it")
        self.attempt = attempt
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

    def apply(self, attempt: str, events: list[tuple[Any, ...]]) -> None:
        for event in events:
            kind = event[0]
            if kind == "attempt":
                self._begin(attempt, event[1])
            elif attempt != self.attempt:
                continue  # a late event of an attempt that was replaced
            elif kind == "delta":
                self._delta(*event[1:])
            elif kind == "signal":
                self._signal(event[1])
            elif kind == "end":
                self._ended(attempt).set()

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

    async def settle(self, record: dict[str, Any]) -> Any:
        """Record the finished attempt's messages, then its terminal signals; the response."""
        from lion_nb.messages import MESSAGE_LIST

        attempt = record["attempt"]
        try:
            await asyncio.wait_for(self._ended(attempt).wait(), END_WAIT_S)
        except TimeoutError:
            logger.warning("live events of a Ray node did not all arrive; recording anyway")
        if self.attempt != attempt:  # its events never came: only the record is known
            self._begin(attempt, {k: record.get(k) for k in ("node_id", "pid")})
        for message in MESSAGE_LIST.validate_python(record["messages"]):
            if message.id not in self.branch.messages:
                self.branch.add_message(message)
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
        self._flow: Flow | None = None
        self._relay: Any = None
        self._pump: asyncio.Task[None] | None = None
        self._links: dict[str, _NodeLink] = {}
        self._task: Any = None
        self._channel = uuid.uuid4().hex

    async def start(self, flow: Flow) -> None:
        from lion_nb.flow.relay import job_relay
        from lion_nb.flow.worker import run_node_task

        ray = self.ray
        if not ray.is_initialized():
            ray.init(include_dashboard=False)
        self._flow = flow
        self._task = ray.remote(run_node_task).options(**self.options)
        self._relay = await job_relay(ray)
        self._pump = asyncio.create_task(self._pump_events(), name="lion_nb.flow:ray-relay")

    async def _pump_events(self) -> None:
        cursor = 0
        while True:
            try:
                cursor, entries = await self._relay.pull.remote(self._channel, cursor, 1.0)
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

    async def execute(self, node: Operation, branch: Branch) -> Any:
        from lion_nb.flow.payload import build_payload

        assert self._flow is not None, "start() first"
        parts = build_payload(node, branch)  # NotTransferable: fails before anything is sent
        link = self._links[str(node.id)] = _NodeLink(self._flow, node, branch)
        ref = self._task.remote(self._relay, self._channel, parts)
        try:
            try:
                record = await ref
            except asyncio.CancelledError:
                await self._cancel(ref)
                link._abandon("the flow was cancelled")
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
