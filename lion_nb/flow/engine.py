"""What runs a flow sees of it: ``Graph`` (the executor's and the engines' view of a ``Flow``)
and ``Engine`` (executes one node on one branch). Protocols, so ``flow/graph.py`` (which runs
the executor) and the executor and engines (which read the graph) form no import cycle."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Protocol

from lion_nb.flow.node import Operation

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch
    from lion_nb.session.session import Session


class Graph(Protocol):
    """The nodes, their edges and branches, and the listeners' hook (``Flow`` implements it)."""

    @property
    def nodes(self) -> list[Operation]: ...

    @property
    def session(self) -> Session: ...

    def dependencies(self, node: Operation | uuid.UUID) -> list[Operation]: ...

    def given_branch(self, node: Operation) -> Branch | None: ...

    def results(self) -> dict[uuid.UUID, Any]: ...

    def notify(self, node: Operation) -> None: ...


class Engine(Protocol):
    """Executes one node on one branch and returns its response (raising on failure)."""

    async def start(self, flow: Graph) -> None: ...

    async def execute(self, node: Operation, branch: Branch) -> Any: ...

    async def close(self) -> None: ...
