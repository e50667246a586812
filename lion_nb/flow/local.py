"""``LocalEngine``: nodes run in this kernel's event loop, through the operations layer.

A node's usage comes from the ``RunEnd`` signals its own task emits: signal handlers run inline
in the emitting task, so a run of another node on the same branch (or the user's own cell) is
never counted here.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from lion_nb.signals import RunEnd, Signal

if TYPE_CHECKING:
    from lion_nb.flow.engine import Graph
    from lion_nb.flow.node import Operation
    from lion_nb.session.branch import Branch


class LocalEngine:
    def __init__(self) -> None:
        self._flow: Graph | None = None

    async def start(self, flow: Graph) -> None:
        self._flow = flow

    async def execute(self, node: Operation, branch: Branch) -> Any:
        task = asyncio.current_task()
        flow = self._flow

        def on_run_end(signal: Signal) -> None:
            if isinstance(signal, RunEnd) and asyncio.current_task() is task:
                node.add_run_usage(signal.input_tokens, signal.output_tokens, signal.total_cost_usd)
                if flow is not None:
                    flow.notify(node)

        unsubscribe = branch.subscribe((RunEnd,), on_run_end)
        try:
            return await node.execute(branch)
        finally:
            unsubscribe()

    async def close(self) -> None:
        self._flow = None
