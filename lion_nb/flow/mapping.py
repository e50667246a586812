"""``Session.map``: one operation over many inputs, each on its own branch, results in order."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from lion_nb.flow.graph import Flow
from lion_nb.flow.node import Operation, Status

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch
    from lion_nb.session.session import Session


async def map_operation(
    session: Session,
    operation: str,
    inputs: Iterable[Mapping[str, Any]],
    *,
    template: Branch | None = None,
    max_concurrent: int = 16,
    engine: str = "local",
    return_nodes: bool = False,
    ray_options: dict[str, Any] | None = None,
) -> list[Any] | list[Operation]:
    """Each input (the operation's keyword arguments) becomes a node on its own fork of
    ``template`` (taken now) or on a new branch of ``session``. Returns the responses in input
    order, ``None`` for nodes that failed; with ``return_nodes=True`` the nodes themselves."""
    rows = list(inputs)
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(
                f"input {index} is a {type(row).__name__}; each input is a mapping of the "
                f"operation's arguments, e.g. {{'instruction': ...}}"
            )
    flow = Flow(session)
    if template is not None:
        flow.adopt(template)  # in this session, or a clear error before anything runs
    nodes = []
    for row in rows:
        branch = template.fork() if template is not None else session.new_branch()
        nodes.append(flow.add(operation, branch=branch, **dict(row)))
    await flow.run(max_concurrent=max_concurrent, engine=engine, ray_options=ray_options)
    if return_nodes:
        return nodes
    return [n.response if n.status is Status.COMPLETED else None for n in nodes]
