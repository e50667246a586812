"""Errors of ``lion_nb.flow`` (they extend the tree drawn in ``lion_nb.errors``).

    LionError
    ├── ConfigurationError
    │   ├── EngineUnavailable     engine="ray" without lion_nb[ray] installed
    │   └── GridShapeError        a grid's prompts, models or baseline cannot make a grid
    │       └── GridIndexError    a grid's row, column or cell that is not there
    └── OperationError
        ├── FlowError             raise_errors=True and some nodes failed (``.failed``)
        ├── DependencyFailed      why a node was skipped (the ``error`` of a skipped node)
        ├── NotTransferable       something a Ray node needs cannot travel to a worker
        ├── WorkerLost            a Ray worker died under an attempt (Ray retries the node)
        ├── RemoteError           a worker-side exception that could not travel back as itself
        └── GridFailed            every cell of a grid's run failed (``.cells``)

A node's failure is captured on the node (``status``/``error``); these are raised only where
the caller asked for it (``raise_errors=True``) or before anything ran (``EngineUnavailable``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lion_nb.errors import ConfigurationError, OperationError

if TYPE_CHECKING:
    from lion_nb.flow.node import Operation


class EngineUnavailable(ConfigurationError):
    """An engine's package is not installed; the message names the install command."""


class FlowError(OperationError):
    """Raised by ``Flow.run(raise_errors=True)`` after every node settled, if any failed."""

    def __init__(self, failed: list[Operation]) -> None:
        self.failed = failed
        names = ", ".join(f"{n.operation} ({type(n.error).__name__}: {n.error})" for n in failed)
        super().__init__(f"{len(failed)} node(s) failed: {names}")


class DependencyFailed(OperationError):
    """The ``error`` of a skipped node: which dependency did not complete."""

    def __init__(self, dependency: Operation) -> None:
        self.dependency = dependency
        super().__init__(
            f"skipped: depends on {dependency.operation} node {str(dependency.id)[:8]}, "
            f"which {dependency.status.value}"
        )


class NotTransferable(OperationError):
    """A node's branch, parameters, tools or operation cannot be sent to a Ray worker."""


class WorkerLost(OperationError):
    """The worker process running an attempt died; Ray retries the node (``max_retries``)."""


class RemoteError(OperationError):
    """An exception raised on a worker that could not be sent back as itself: its type name,
    message and the worker's traceback."""

    def __init__(self, type_name: str, message: str, traceback: str = "") -> None:
        self.type_name = type_name
        self.remote_traceback = traceback
        super().__init__(f"{type_name}: {message}")


class GridShapeError(ConfigurationError, ValueError):
    """A grid cannot be made of what it was given (no prompts, no models, a prompt's keys the
    verb does not take, a baseline out of range); raised before anything runs."""


class GridIndexError(GridShapeError, IndexError):
    """A row, column or cell the grid does not have (also an ``IndexError``)."""


class GridFailed(OperationError):
    """Every cell of a ``Grid.run`` failed; ``cells`` are those cells, each with its ``error``."""

    def __init__(self, cells: list[Any]) -> None:
        self.cells = cells
        reasons: dict[str, int] = {}
        for cell in cells:
            reasons[cell.error or "unknown"] = reasons.get(cell.error or "unknown", 0) + 1
        said = "; ".join(f"{n} × {why}" if n > 1 else why for why, n in reasons.items())
        super().__init__(f"every cell of the grid failed ({len(cells)}): {said}")
