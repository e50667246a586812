"""``Flow``: a graph of ``Operation`` nodes over the branches of one session.

``flow.add(operation, branch=None, depends_on=(), **parameters)`` adds a node and returns it;
``await flow.run()`` runs every pending node once its dependencies completed (see
``lion_nb.flow.executor``). A node without ``branch=`` runs on a fork of its first dependency's
branch taken after that dependency finished (so it continues that conversation), named after
the node (``node_name=``, else its instruction), or on a new branch of the flow's session when
it has none. Every branch a flow runs on belongs to its session, so ``session.observe(...)``
sees every node's signals.

Stopping a flow (``flow.cancel()``, FlowView's Stop) keeps what was said: ``add`` gives the
verbs whose stop ``on_stop`` decides (``communicate``, ``operate``, ``ReAct``) the parameter
``on_stop="record"`` unless it is given, so a node stopped mid-reply keeps the instruction and
the partial reply on its branch as a stopped turn (``metadata["stopped"] = True``). The
parameter travels with the node, so on Ray the worker records the stopped turn too (with all
it streamed, whether or not its deltas were relayed), and it lands here with the attempt's last
live events, which the node waits for before it settles. Pass ``on_stop="discard"`` for the
ADR's default.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from lion_nb.errors import OperationError
from lion_nb.flow.executor import run_flow
from lion_nb.flow.node import Operation, Status
from lion_nb.operations.verbs import SENDS_HISTORY
from lion_nb.session.branch import Branch
from lion_nb.session.session import Session
from lion_nb.tracebacks import flow_stop_line, mark_stopped

NodeRef = Operation | uuid.UUID


class Flow:
    """A graph of ``Operation`` nodes over the branches of one session, run in this kernel
    or on Ray.

    ``add`` a node per step, with the nodes it waits for; ``await run()`` runs every pending
    node once its dependencies completed, at most ``max_concurrent`` at once. A node without
    a branch runs on a fork of its first dependency's branch (so it continues that
    conversation), or on a new branch. Every branch a flow runs on belongs to its session, so
    ``session.observe(...)`` sees every node's signals; ``FlowView`` shows a flow live.

    Args:
        session: The session the flow's branches belong to. Without one, the flow uses the
            session of the first branch given to ``add`` (or a new one).
        name: Names the flow (its view, a new session).

    Example:
        ```python
        flow = Flow(session)
        outline = flow.add("communicate", branch, instruction="Outline a talk on tides.")
        for n in (1, 2):
            flow.add("communicate", depends_on=outline, instruction=f"Write section {n}.")
        results = await flow.run(max_concurrent=2)  # {node.id: response}
        ```
    """

    def __init__(self, session: Session | None = None, *, name: str | None = None) -> None:
        self._session = session
        self.name = name
        self._nodes: dict[uuid.UUID, Operation] = {}
        self._branches: dict[uuid.UUID, Branch] = {}  # node id -> the branch it was given
        self._listeners: list[Callable[[Operation], Any]] = []
        self._running: asyncio.Task[Any] | None = None

    # ----- the session -------------------------------------------------------------------
    @property
    def session(self) -> Session:
        """The session the flow's branches belong to (a new one, made on first use, if none)."""
        if self._session is None:
            self._session = Session(name=self.name)
        return self._session

    def adopt(self, branch: Branch) -> Branch:
        """Put ``branch`` in the flow's session (a clear error if it belongs to another)."""
        if not isinstance(branch, Branch):
            raise TypeError(f"branch= takes a Branch, not {type(branch).__name__}")
        if self._session is None and branch.session is not None:
            self._session = branch.session
        session = self.session
        if branch.session is None:
            session.include_branches(branch)
        elif branch.session is not session:
            raise ValueError(
                f"{branch!r} belongs to another session than this flow's; "
                "fork it into this flow's session first (flow.session.include_branches)"
            )
        return branch

    # ----- building ----------------------------------------------------------------------
    def add(
        self,
        operation: str,
        branch: Branch | None = None,
        depends_on: Iterable[NodeRef] | NodeRef = (),
        *,
        node_name: str | None = None,
        **parameters: Any,
    ) -> Operation:
        """Add a node running ``operation`` (a facade verb or a name registered on the
        session) with ``parameters``; it runs after every node in ``depends_on``. ``node_name``
        (e.g. ``"section 2"``; not ``name=``, which stays an operation parameter) is what the
        view and the fork made for the node call it."""
        if not isinstance(operation, str) or not operation:
            raise TypeError(f"operation must be a name such as 'communicate', not {operation!r}")
        parents = [self._node(ref) for ref in _as_refs(depends_on)]
        if branch is not None:
            branch = self.adopt(branch)
        known = branch.get_operation(operation) if branch is not None else None
        if known is None and self.session.get_operation(operation) is None:
            raise OperationError(
                f"Unknown operation {operation!r}: not a Branch verb and not registered on "
                "the session (session.register_operation(name, func))"
            )
        if node_name is not None and not isinstance(node_name, str):
            raise TypeError(f"node_name= takes a string, not {type(node_name).__name__}")
        if operation in SENDS_HISTORY:  # built-in verbs (they resolve first): a stop keeps
            parameters.setdefault("on_stop", "record")  # what the node streamed
        node = Operation(
            operation,
            parameters,
            branch_id=branch.id if branch is not None else None,
            depends_on=tuple(dict.fromkeys(p.id for p in parents)),
            name=node_name or None,
        )
        self._nodes[node.id] = node
        if branch is not None:
            self._branches[node.id] = branch
        return node

    def add_edge(self, before: NodeRef, after: NodeRef) -> None:
        """Make ``after`` wait for ``before``; a cycle is rejected (nothing changes)."""
        first, second = self._node(before), self._node(after)
        if first.id == second.id or self._reaches(second.id, first.id):
            raise ValueError(
                f"a dependency {first.operation} -> {second.operation} would make a cycle "
                f"({str(second.id)[:8]} already leads to {str(first.id)[:8]})"
            )
        if second.status not in (Status.PENDING, Status.CANCELLED):
            raise ValueError(f"{second!r} has already run; it cannot gain a dependency")
        if first.id not in second.depends_on:
            second.depends_on = (*second.depends_on, first.id)

    def _reaches(self, start: uuid.UUID, target: uuid.UUID) -> bool:
        """Whether ``target`` depends, directly or through other nodes, on ``start``."""
        seen: set[uuid.UUID] = set()
        stack = [target]
        while stack:
            current = stack.pop()
            if current == start:
                return True
            if current in seen:
                continue
            seen.add(current)
            stack.extend(self._nodes[current].depends_on)
        return False

    def _node(self, ref: NodeRef) -> Operation:
        key = ref.id if isinstance(ref, Operation) else ref
        node = self._nodes.get(key) if isinstance(key, uuid.UUID) else None
        if node is None or (isinstance(ref, Operation) and node is not ref):
            raise ValueError(f"{ref!r} is not a node of this flow")
        return node

    # ----- reading -----------------------------------------------------------------------
    @property
    def nodes(self) -> list[Operation]:
        """Every node, in the order added."""
        return list(self._nodes.values())

    def __iter__(self) -> Iterator[Operation]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __getitem__(self, node_id: uuid.UUID) -> Operation:
        return self._nodes[node_id]

    def dependencies(self, node: NodeRef) -> list[Operation]:
        """The nodes ``node`` (a node or its id) waits for."""
        return [self._nodes[i] for i in self._node(node).depends_on]

    def dependents(self, node: NodeRef) -> list[Operation]:
        """The nodes that wait for ``node`` (a node or its id)."""
        key = self._node(node).id
        return [n for n in self._nodes.values() if key in n.depends_on]

    def given_branch(self, node: Operation) -> Branch | None:
        """The branch passed to ``add`` for ``node`` (None: the flow chooses one)."""
        return self._branches.get(node.id)

    def results(self) -> dict[uuid.UUID, Any]:
        """``{node.id: response}`` for every node (None for those that did not complete)."""
        return {n.id: n.response for n in self._nodes.values()}

    # ----- watching ----------------------------------------------------------------------
    def subscribe(self, handler: Callable[[Operation], Any]) -> Callable[[], None]:
        """Call ``handler(node)`` whenever a node changes (starts, settles, reports usage);
        returns the function that ends the subscription."""
        self._listeners.append(handler)

        def unsubscribe() -> None:
            if handler in self._listeners:
                self._listeners.remove(handler)

        return unsubscribe

    def notify(self, node: Operation) -> None:
        """Tell subscribers ``node`` changed (the engines call this). A failing subscriber
        is logged and never changes the flow."""
        for handler in list(self._listeners):
            try:
                handler(node)
            except Exception:
                logging.getLogger("lion_nb").exception("flow subscriber %r failed", handler)

    # ----- running -----------------------------------------------------------------------
    async def run(
        self,
        *,
        max_concurrent: int = 8,
        engine: str = "local",
        raise_errors: bool = False,
        ray_options: dict[str, Any] | None = None,
    ) -> dict[uuid.UUID, Any]:
        """Run every pending node (and those a stopped run cancelled before they started; at
        most ``max_concurrent`` at once) and return ``{node.id: response}`` once all have
        settled. ``engine="ray"`` runs each node as a Ray task (``ray_options`` go to
        ``.options()``, e.g. ``{"num_cpus": 0.5}``). A failed node's dependents are skipped;
        with ``raise_errors=True`` a ``FlowError`` is raised at the end if any node failed.
        Stopped (``cancel()``, FlowView's Stop, Kernel -> Interrupt), it re-raises the
        cancellation, which IPython prints as one line of what the nodes kept."""
        if self._running is not None and not self._running.done():
            raise RuntimeError("this flow is already running; await it or flow.cancel() first")
        self._running = asyncio.current_task()
        try:
            return await run_flow(
                self,
                max_concurrent=max_concurrent,
                engine=engine,
                raise_errors=raise_errors,
                ray_options=ray_options,
            )
        except asyncio.CancelledError as stop:  # FlowView's Stop, Kernel -> Interrupt
            mark_stopped(stop, flow_stop_line([n.status.value for n in self.nodes]))
            raise
        finally:
            self._running = None

    @property
    def is_running(self) -> bool:
        """Whether a ``run()`` of this flow is in progress."""
        return self._running is not None and not self._running.done()

    def cancel(self) -> bool:
        """Cancel the ``run()`` in progress (what FlowView's Stop does): running nodes are
        cancelled, their streams closed, and they settle as ``stopped`` (keeping what their
        verb kept: ``on_stop``); nodes that had not started settle as ``cancelled``. False if
        the flow is not running."""
        if not self.is_running:
            return False
        assert self._running is not None
        self._running.cancel()
        return True

    def __repr__(self) -> str:
        counts: dict[str, int] = {}
        for node in self._nodes.values():
            counts[node.status.value] = counts.get(node.status.value, 0) + 1
        summary = " ".join(f"{k}={v}" for k, v in counts.items()) or "empty"
        return f"<Flow {self.name + ' ' if self.name else ''}{summary}>"

    def _repr_html_(self) -> str:
        from lion_nb.render.flow import flow_html
        from lion_nb.viewmodels.flow import FlowViewModel

        return flow_html(FlowViewModel(self).snapshot())


def _as_refs(depends_on: Iterable[NodeRef] | NodeRef) -> list[NodeRef]:
    if isinstance(depends_on, Operation | uuid.UUID):
        return [depends_on]
    return list(depends_on)
