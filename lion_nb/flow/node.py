"""``Operation``: a graph-executable node naming one branch operation (ADR D2).

A node is an event, not a call: ``invoke(branch)`` settles it to a ``status`` with a ``response``
or an ``error`` and records where (``branch``) and when (``started_at``, ``ended_at``,
``duration_ms``) it ran. ``lion_nb.flow`` schedules nodes; a node knows nothing of graphs beyond
the ids of the nodes it waits for (``depends_on``).

A stop is not a failure: a node cancelled while it ran is ``STOPPED`` (its branch keeps what
its verb kept: ``on_stop``), one cancelled before it started is ``CANCELLED`` (a later run may
still run it); neither has an ``error``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from lion_nb.errors import OperationError
from lion_nb.operations.types import BranchOperations
from lion_nb.session.session import call_operation
from lion_nb.usage import RunUsage, Usage, current_run_usage

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

LABEL_KEYS = ("instruction", "text", "prompt")  # the parameters that say what a node asks
VERB_OPTIONS = frozenset({"on_stop"})  # options a flow adds for the verb; not what it asks


class Status(StrEnum):
    """Where a node is: waiting, running, or settled one of five ways.

    ``STOPPED`` (cancelled while it ran) and ``CANCELLED`` (stopped before it started; a
    later run may still run it) are not failures and carry no ``error``; ``SKIPPED`` means a
    node it depends on did not complete."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    STOPPED = "stopped"  # cancelled while it ran (the flow was stopped)
    CANCELLED = "cancelled"  # the flow was stopped before it started
    SKIPPED = "skipped"

    @property
    def settled(self) -> bool:
        """Whether the node is done with: anything but pending or running."""
        return self not in (Status.PENDING, Status.RUNNING)


class Operation:
    """A node of a flow: one named branch operation with its parameters, and what came of it.

    A node is an event, not a call: ``invoke(branch)`` runs the operation and settles the
    node to a ``status`` with a ``response`` or an ``error``, and records where (``branch``)
    and when (``started_at``, ``ended_at``, ``duration_ms``) it ran. The name resolves as
    ``Session.run_operation`` resolves it: a facade verb first, then the session's registered
    operations. A failure is captured in ``status``/``error`` (``invoke``) while ``execute``
    raises. Nodes are usually made by ``Flow.add`` (or ``Session.map``), which also sets their
    dependencies.

    ``usage`` (input/output tokens, cost) is what the node's model calls reported: the run
    lifecycle's figures (``RunEnd``, added by the flow engines) plus calls made outside any
    run (``chat``, registered operations), counted while the node ran.

    Args:
        operation: A facade verb (``"communicate"``, ``"operate"``, ...) or a name registered
            on the session.
        parameters: The operation's keyword arguments.
        branch_id: The branch it should run on, if chosen already.
        depends_on: The ids of the nodes it waits for.
        metadata: Free-form data carried with the node.
        name: What views and the forks made for it call it (see ``title``).

    Raises:
        TypeError: ``operation`` is not a non-empty string.

    Example:
        ```python
        node = Operation("communicate", {"instruction": "Name a prime."})
        await node.invoke(branch)
        node.status, node.response, node.duration_ms
        ```
    """

    def __init__(
        self,
        operation: BranchOperations | str,
        parameters: dict[str, Any] | None = None,
        *,
        branch_id: uuid.UUID | None = None,
        depends_on: tuple[uuid.UUID, ...] = (),
        metadata: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        if not isinstance(operation, str) or not operation:
            raise TypeError(f"an operation is named by a non-empty string, not {operation!r}")
        self.id = uuid.uuid4()
        self.operation = operation
        self.name = name
        self.parameters = dict(parameters or {})
        self.branch_id = branch_id
        self.depends_on = tuple(depends_on)
        self.metadata = dict(metadata or {})
        self.status = Status.PENDING
        self.response: Any = None
        self.error: BaseException | None = None
        self.branch: Branch | None = None
        self.started_at: float | None = None  # time.time() when it started running
        self.ended_at: float | None = None
        self.duration_ms: float | None = None
        self.usage = RunUsage()
        self._started = 0.0

    # ----- state transitions (used by invoke and by the flow engines) -----------------------
    def mark_running(self, branch: Branch | None) -> None:
        """Start: the node runs on ``branch`` from now (``started_at``). The flow engines call
        the ``mark_*`` methods; ``invoke`` does for a node run by hand. Raises
        ``RuntimeError`` for a node that has settled already."""
        if self.status.settled:
            raise RuntimeError(f"{self!r} has already settled")
        self.branch = branch
        if branch is not None:
            self.branch_id = branch.id
        self.status = Status.RUNNING
        self.started_at = time.time()
        self._started = time.perf_counter()

    def _finish(self) -> None:
        self.ended_at = time.time()
        if self.started_at is not None:
            self.duration_ms = (time.perf_counter() - self._started) * 1000.0

    def mark_completed(self, response: Any) -> None:
        """Settle as completed with the operation's ``response``; the run time is taken."""
        self.response = response
        self.status = Status.COMPLETED
        self._finish()

    def mark_failed(self, error: BaseException) -> None:
        """Settle as failed with ``error`` (kept, not raised); the run time is taken."""
        self.error = error
        self.status = Status.FAILED
        self._finish()

    def mark_stopped(self) -> None:
        """Cancelled while it ran: not a failure (``error`` stays None)."""
        self.status = Status.STOPPED
        self._finish()

    def mark_cancelled(self) -> None:
        """Cancelled before it started; ``requeue()`` makes it pending again."""
        if self.status is not Status.PENDING:
            raise RuntimeError(f"{self!r} has started; it is stopped, not cancelled")
        self.status = Status.CANCELLED
        self.ended_at = time.time()

    def requeue(self) -> bool:
        """A cancelled node (it never ran) becomes pending again, for the next run; returns
        whether it was cancelled."""
        if self.status is not Status.CANCELLED:
            return False
        self.status = Status.PENDING
        self.ended_at = None
        return True

    def mark_skipped(self, reason: BaseException) -> None:
        """Not run because a node it depends on did not complete (``reason`` says which)."""
        self.error = reason
        self.status = Status.SKIPPED
        self.ended_at = time.time()

    def add_run_usage(
        self,
        input_tokens: int | None,
        output_tokens: int | None,
        total_cost_usd: float | None,
    ) -> None:
        """Add what one of this node's runs reported (``RunEnd``): calls made inside a run
        are counted by the run, not by the node, so nothing is counted twice."""
        self.usage.add(Usage(input_tokens, output_tokens, total_cost_usd))

    def label(self, limit: int = 80) -> str:
        """What the node asks, on one line: its instruction (or first parameter other than a
        verb option), shortened to ``limit`` characters; "" when it has none."""
        params = {k: v for k, v in self.parameters.items() if k not in VERB_OPTIONS}
        value = next((params[k] for k in LABEL_KEYS if k in params), None)
        if value is None and params:
            value = next(iter(params.values()))
        text = " ".join(str(value).split()) if value is not None else ""
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def title(self, limit: int = 40) -> str:
        """What the node is called: its ``name``, else its ``label(limit)``, else its
        operation. The forks a flow makes for it are named after it."""
        return self.name or self.label(limit) or self.operation

    # ----- running ---------------------------------------------------------------------------
    async def execute(self, branch: Branch) -> Any:
        """Resolve the operation on ``branch`` (built-ins first, then the session's registry)
        and await it; streaming verbs are drained into a list. Raises on failure."""
        func = branch.get_operation(self.operation)
        if func is None:
            raise OperationError(f"Unsupported operation type: {self.operation}")
        token = current_run_usage.set(self.usage)
        try:
            return await call_operation(branch, self.operation, func, dict(self.parameters))
        finally:
            current_run_usage.reset(token)

    async def invoke(self, branch: Branch) -> Any:
        """Run on ``branch`` and settle. Cancellation settles the node as stopped and
        propagates."""
        self.mark_running(branch)
        try:
            response = await self.execute(branch)
        except asyncio.CancelledError:
            self.mark_stopped()
            raise
        except Exception as exc:  # captured by design; inspect .error
            self.mark_failed(exc)
        else:
            self.mark_completed(response)
        return self.response

    def __repr__(self) -> str:
        named = f", name={self.name!r}" if self.name else ""
        return f"Operation({self.operation!r}{named}, status={self.status.value})"
