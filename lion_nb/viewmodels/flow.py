"""What ``FlowView`` shows, as plain data: one row per node, totals, the selected transcript,
and when each node ran (``start_ms`` from the flow's first start, ``run_ms``, ``worker``) for
the time strip.

``FlowViewModel(flow)`` follows the flow (node started, settled, usage reported), each node's
branch (messages recorded or taken back, runs ending) and the streamed text of the *selected*
node's branch only, so its transcript shows a reply while it is written; a message taken back
(``MessageRetracted``: a Ray attempt that died) redraws it. Only the selected node's stream is
followed because rows show no text: on Ray, a node whose stream nobody follows sends no
per-token deltas (``lion_nb.flow.ray_engine``), so a view open on a flow of many nodes costs
them nothing; opening a running node shows its reply so far, then live.

It holds no widgets and builds no HTML: ``snapshot()`` gives frozen rows for
``lion_nb.render.flow`` and is tested without ipywidgets. ``on_change`` (set by the
view) is called after anything changed.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from lion_nb.flow.node import Operation, Status
from lion_nb.signals import MessageAdded, MessageRetracted, RunEnd, RunFailed, Signal, StreamDelta


class Flow(Protocol):
    """What the view model reads of a ``lion_nb.flow.Flow`` (the one implementation). A
    protocol, not the class: ``Flow._repr_html_`` builds this view model, so importing the
    class here would tie the two modules in a cycle."""

    name: str | None

    @property
    def nodes(self) -> list[Operation]: ...

    @property
    def is_running(self) -> bool: ...

    def subscribe(self, handler: Callable[[Operation], Any]) -> Callable[[], None]: ...


@dataclass(frozen=True, slots=True)
class NodeRow:
    id: uuid.UUID
    index: int
    operation: str
    label: str  # the instruction (or first parameter), shortened
    status: str
    run_ms: float | None  # so far, while running
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    branch: str | None  # the branch's name, else its short id
    depends_on: tuple[int, ...]  # indexes of the rows it waits for
    error: str | None  # why it failed or was skipped ("Type: message"); None when stopped
    attempts: int  # Ray attempts (0 on the local engine)
    name: str | None = None  # the node's own name (``flow.add(..., name=)``)
    title: str = ""  # what the node is called (``Operation.title``): its forks are named so
    worker: str | None = None  # where it ran: "kernel", "worker <pid>" on Ray
    start_ms: float | None = None  # when it started, from the flow's first start


@dataclass(frozen=True, slots=True)
class FlowSnapshot:
    title: str
    rows: tuple[NodeRow, ...]
    counts: dict[str, int]
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    selected: uuid.UUID | None
    span_ms: float = 0.0  # from the first start to the last end (or now, while running)
    stoppable: bool = False  # a run is in progress with nodes still to settle: Stop applies
    unpriced: int = 0  # nodes with tokens but no known price, when others have one


def error_text(error: BaseException | None) -> str | None:
    """``"Type: message"``, or the type alone when the message is empty."""
    if error is None:
        return None
    message = str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def worker_of(node: Operation) -> str | None:
    """Where ``node`` ran: its last Ray attempt's worker process, else this kernel."""
    ray = node.metadata.get("ray")
    if isinstance(ray, dict):
        attempts = ray.get("attempts") or ()
        pid = attempts[-1].get("pid") if attempts else None
        return f"worker {pid}" if pid is not None else "Ray"
    return "kernel" if node.started_at is not None else None


class FlowViewModel:
    def __init__(self, flow: Flow, *, clock: Callable[[], float] = time.time) -> None:
        self.flow = flow
        self.clock = clock
        self.selected: uuid.UUID | None = None
        self.on_change: Callable[[uuid.UUID | None], Any] | None = None
        self._live: dict[uuid.UUID, dict[uuid.UUID, str]] = {}  # node -> message id -> text
        self._watched: dict[uuid.UUID, Callable[[], None]] = {}  # branch id -> unsubscribe
        self._streaming: tuple[uuid.UUID, Callable[[], None]] | None = None  # selected's branch
        self._unsubscribe: Callable[[], None] | None = None

    # ----- following the flow ------------------------------------------------------------
    def attach(self) -> None:
        """Start following the flow and its nodes' branches."""
        if self._unsubscribe is None:
            self._unsubscribe = self.flow.subscribe(self.on_node)
            for node in self.flow.nodes:
                self._watch(node)
            self._follow_selected()

    def detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for stop in self._watched.values():
            stop()
        self._watched.clear()
        if self._streaming is not None:
            self._streaming[1]()
            self._streaming = None

    def on_node(self, node: Operation) -> None:
        self._watch(node)
        if node.id == self.selected:
            self._follow_selected()  # it may have a branch only now, or a new one
        if node.status.settled:
            self._live.pop(node.id, None)
        self._changed(node.id)

    def _watch(self, node: Operation) -> None:
        branch = node.branch
        if branch is None or branch.id in self._watched:
            return
        self._watched[branch.id] = branch.subscribe(
            (MessageAdded, MessageRetracted, RunEnd, RunFailed), self._on_signal
        )

    def _follow_selected(self) -> None:
        """Follow the stream of the selected node's branch, and of no other."""
        node = self.selected_node() if self._unsubscribe is not None else None
        branch = node.branch if node is not None else None
        if self._streaming is not None:
            if branch is not None and self._streaming[0] == branch.id:
                return
            self._streaming[1]()
            self._streaming = None
        if branch is not None:
            stop = branch.subscribe((StreamDelta,), self._on_signal)
            self._streaming = (branch.id, stop)

    def _node_on(self, branch_id: uuid.UUID) -> Operation | None:
        """The running node on that branch (else the last one that ran there)."""
        found = None
        for node in self.flow.nodes:
            if node.branch is not None and node.branch.id == branch_id:
                found = node
                if node.status is Status.RUNNING:
                    return node
        return found

    def _on_signal(self, signal: Signal) -> None:
        node = self._node_on(signal.branch_id)
        if node is None:
            return
        if isinstance(signal, StreamDelta) and signal.kind == "text":
            self._live.setdefault(node.id, {})[signal.message_id] = signal.snapshot
        elif isinstance(signal, MessageAdded):
            self._live.get(node.id, {}).pop(signal.message.id, None)
        elif isinstance(signal, MessageRetracted):  # the transcript reads the branch: redraw
            self._live.get(node.id, {}).pop(signal.message_id, None)
        elif isinstance(signal, RunFailed):
            self._live.pop(node.id, None)
        self._changed(node.id)

    def _changed(self, node_id: uuid.UUID | None) -> None:
        if self.on_change is not None:
            self.on_change(node_id)

    # ----- selecting ---------------------------------------------------------------------
    def select(self, node: Operation | uuid.UUID | None) -> None:
        """Show ``node``'s transcript (None: none); selecting the selected node closes it."""
        key = node.id if isinstance(node, Operation) else node
        if key is not None and key not in {n.id for n in self.flow.nodes}:
            raise ValueError(f"{node!r} is not a node of this flow")
        self.selected = None if key == self.selected else key
        self._follow_selected()
        self._changed(None)

    def selected_node(self) -> Operation | None:
        if self.selected is None:
            return None
        return next((n for n in self.flow.nodes if n.id == self.selected), None)

    def transcript(self) -> tuple[list[Any], list[tuple[uuid.UUID, str]]]:
        """The selected node's branch messages, and the replies it is still writing."""
        node = self.selected_node()
        if node is None or node.branch is None:
            return [], []
        return list(node.branch.messages), list(self._live.get(node.id, {}).items())

    # ----- reading -----------------------------------------------------------------------
    def row(
        self,
        node: Operation,
        index: int,
        positions: dict[uuid.UUID, int],
        origin: float | None = None,
    ) -> NodeRow:
        run_ms = node.duration_ms
        if node.status is Status.RUNNING and node.started_at is not None:
            run_ms = max(0.0, (self.clock() - node.started_at) * 1000.0)
        start_ms = None
        if node.started_at is not None and origin is not None:
            start_ms = max(0.0, (node.started_at - origin) * 1000.0)
        branch = node.branch
        usage = node.usage
        return NodeRow(
            id=node.id,
            index=index,
            operation=node.operation,
            label=node.label(),
            status=node.status.value,
            run_ms=run_ms,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=usage.total_cost_usd,
            branch=(branch.name or str(branch.id)[:8]) if branch is not None else None,
            depends_on=tuple(positions[d] for d in node.depends_on if d in positions),
            error=error_text(node.error),
            attempts=len(node.metadata.get("ray", {}).get("attempts", ())),
            name=node.name,
            title=node.title(),
            worker=worker_of(node),
            start_ms=start_ms,
        )

    def snapshot(self) -> FlowSnapshot:
        nodes = self.flow.nodes
        positions = {n.id: i for i, n in enumerate(nodes, start=1)}
        starts = [n.started_at for n in nodes if n.started_at is not None]
        origin = min(starts) if starts else None
        rows = tuple(self.row(n, positions[n.id], positions, origin) for n in nodes)
        counts = {s.value: 0 for s in Status}
        for r in rows:
            counts[r.status] += 1
        costs = [r.cost_usd for r in rows if r.cost_usd is not None]
        unpriced = sum(
            1
            for r in rows
            if r.cost_usd is None and (r.input_tokens is not None or r.output_tokens is not None)
        )
        ends = [(r.start_ms or 0.0) + (r.run_ms or 0.0) for r in rows if r.start_ms is not None]
        return FlowSnapshot(
            title=self.flow.name or "Flow",
            rows=rows,
            counts=counts,
            input_tokens=sum(r.input_tokens or 0 for r in rows),
            output_tokens=sum(r.output_tokens or 0 for r in rows),
            cost_usd=sum(costs) if costs else None,
            selected=self.selected,
            span_ms=max(ends, default=0.0),
            stoppable=self.stoppable,
            unpriced=unpriced if costs else 0,  # the sum leaves them out: say so
        )

    @property
    def running(self) -> bool:
        return any(n.status is Status.RUNNING for n in self.flow.nodes)

    @property
    def stoppable(self) -> bool:
        """A run is in progress and some node has yet to settle: Stop would change something.
        False once every node settled, even before ``run()`` has returned."""
        return self.flow.is_running and any(not n.status.settled for n in self.flow.nodes)
