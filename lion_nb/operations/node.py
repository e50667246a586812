"""``Operation``: a graph-executable node naming one branch operation (ADR D2)."""

from __future__ import annotations

import time
import uuid
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from lion_nb.errors import OperationError
from lion_nb.operations.types import BranchOperations

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch


class Status(StrEnum):
    PENDING = "pending"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"


class Operation:
    """``Operation("communicate", {"instruction": "hi"})``. ``invoke(branch)`` settles the
    node to one response value; a failure is captured in ``status``/``error`` (the node is an
    event, not a call), while ``_invoke`` raises."""

    def __init__(
        self,
        operation: BranchOperations | str,
        parameters: dict[str, Any] | None = None,
        *,
        branch_id: uuid.UUID | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.id = uuid.uuid4()
        self.operation = operation
        self.parameters = dict(parameters or {})
        self.branch_id = branch_id
        self.metadata = dict(metadata or {})
        self.status = Status.PENDING
        self.response: Any = None
        self.error: BaseException | None = None
        self.duration_ms: float | None = None

    async def _invoke(self, branch: Branch) -> Any:
        from lion_nb.session.session import call_operation

        func = branch.get_operation(self.operation)
        if func is None:
            raise OperationError(f"Unsupported operation type: {self.operation}")
        return await call_operation(branch, self.operation, func, dict(self.parameters))

    async def invoke(self, branch: Branch) -> Any:
        self.status = Status.PROCESSING
        started = time.perf_counter()
        try:
            self.response = await self._invoke(branch)
            self.status = Status.COMPLETED
        except Exception as exc:  # captured by design; inspect .error
            self.error = exc
            self.status = Status.FAILED
        finally:
            self.duration_ms = (time.perf_counter() - started) * 1000.0
        return self.response

    def __repr__(self) -> str:
        return f"Operation({self.operation!r}, status={self.status.value})"
