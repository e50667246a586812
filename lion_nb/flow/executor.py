"""Scheduling a flow: dependency order, the concurrency bound, skips, cancellation.

One asyncio task per pending node waits for its dependencies, then takes (in this order) its
branch's lock and a slot of the ``max_concurrent`` semaphore, and hands the node to an engine,
which only knows how to execute one node on one branch: ``LocalEngine`` in this kernel,
``RayEngine`` on a Ray cluster. The bound is therefore the same on both engines.

Choices the contract leaves open, made here:

* Nodes that run on the same branch run one at a time, in the order they were added: one
  conversation is sequential (two concurrent turns would interleave their messages).
* ``run()`` runs pending nodes, and those a stopped run cancelled before they started;
  completed, failed, stopped and skipped nodes keep their state, so adding nodes and running
  again continues the flow.
* A fork made for a node without ``branch=`` is named after the node (``Operation.title``:
  its ``name``, else its instruction), not after the branch it was forked from.
* Cancelling ``run()`` (a stop) cancels the running nodes (their streams close: CLI process
  groups end) and settles them as ``stopped``; what they streamed stays on their branch as the
  verb's ``on_stop`` says (``Flow.add`` gives the chat verbs ``on_stop="record"``). Nodes that
  had not started settle as ``cancelled``. Neither is a failure: no ``error``.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import TYPE_CHECKING, Any

from lion_nb.flow.engine import Engine, Graph
from lion_nb.flow.errors import DependencyFailed, FlowError
from lion_nb.flow.local import LocalEngine
from lion_nb.flow.node import Operation, Status

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch


def make_engine(engine: str, ray_options: dict[str, Any] | None) -> Engine:
    if engine == "local":
        return LocalEngine()
    if engine == "ray":
        # lazy: the Ray engine's modules (~18 ms, argparse, pickle) load only for engine="ray"
        from lion_nb.flow.ray_engine import RayEngine

        return RayEngine(ray_options)
    raise ValueError(f"unknown engine {engine!r}; use 'local' or 'ray'")


def _check_bound(max_concurrent: int) -> int:
    if isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int):
        raise TypeError(f"max_concurrent must be an int, not {max_concurrent!r}")
    if max_concurrent < 1:
        raise ValueError(f"max_concurrent must be at least 1, not {max_concurrent}")
    return max_concurrent


class _Run:
    """One ``run()`` of a flow."""

    def __init__(self, flow: Graph, engine: Engine, max_concurrent: int) -> None:
        self.flow = flow
        self.engine = engine
        self.slots = asyncio.Semaphore(max_concurrent)
        self.settled: dict[uuid.UUID, asyncio.Event] = {}
        self.branch_locks: dict[uuid.UUID, asyncio.Lock] = {}
        for node in flow.nodes:
            event = self.settled[node.id] = asyncio.Event()
            if node.status.settled:
                event.set()

    def _lock(self, branch: Branch) -> asyncio.Lock:
        lock = self.branch_locks.get(branch.id)
        if lock is None:
            lock = self.branch_locks[branch.id] = asyncio.Lock()
        return lock

    def _branch_for(self, node: Operation, parents: list[Operation]) -> Branch:
        given = self.flow.given_branch(node)
        if given is not None:
            return given
        if parents:
            source = parents[0].branch
            if source is None:  # a completed node always ran somewhere
                raise RuntimeError(f"{parents[0]!r} completed without a branch")
            return source.fork(name=node.title())
        return self.flow.session.new_branch()

    async def node(self, node: Operation) -> None:
        try:
            parents = self.flow.dependencies(node)
            for parent in parents:
                await self.settled[parent.id].wait()
            broken = next((p for p in parents if p.status is not Status.COMPLETED), None)
            if broken is not None:
                node.mark_skipped(DependencyFailed(broken))
                self.flow.notify(node)
                return
            await self._execute(node, parents)
        finally:
            if node.status.settled:
                self.settled[node.id].set()

    async def _execute(self, node: Operation, parents: list[Operation]) -> None:
        # One branch lock per conversation: a given branch is known now; a fork is new.
        given = self.flow.given_branch(node)
        lock = self._lock(given) if given is not None else None
        if lock is not None:
            await lock.acquire()
        try:
            async with self.slots:
                try:
                    branch = self._branch_for(node, parents)
                except Exception as exc:  # no model configured, fork failed: the node fails
                    node.mark_running(None)
                    node.mark_failed(exc)
                    self.flow.notify(node)
                    return
                node.mark_running(branch)
                self.flow.notify(node)
                try:
                    response = await self.engine.execute(node, branch)
                except asyncio.CancelledError:
                    node.mark_stopped()
                    self.flow.notify(node)
                    raise
                except Exception as exc:
                    node.mark_failed(exc)
                else:
                    node.mark_completed(response)
                self.flow.notify(node)
        finally:
            if lock is not None:
                lock.release()


async def run_flow(
    flow: Graph,
    *,
    max_concurrent: int = 8,
    engine: str = "local",
    raise_errors: bool = False,
    ray_options: dict[str, Any] | None = None,
) -> dict[uuid.UUID, Any]:
    bound = _check_bound(max_concurrent)
    runner = make_engine(engine, ray_options)
    for node in flow.nodes:
        if node.requeue():  # cancelled by a stopped run: it never ran
            flow.notify(node)
    pending = [n for n in flow.nodes if n.status is Status.PENDING]
    try:
        await runner.start(flow)
    except asyncio.CancelledError:
        _cancel_unstarted(flow, pending)
        raise
    run = _Run(flow, runner, bound)
    tasks = [asyncio.create_task(run.node(n), name=f"lion_nb.flow:{n.operation}") for n in pending]
    try:
        if tasks:
            # wait(), not gather(): being cancelled must cancel each node exactly once, so a
            # node's cleanup (closing a CLI's process group) is never interrupted by a second
            # cancellation from here.
            await asyncio.wait(tasks)
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        while not all(t.done() for t in tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait(tasks)
        _cancel_unstarted(flow, pending)
        raise
    finally:
        await runner.close()
    for task in tasks:
        task.result()  # a bug in scheduling itself surfaces here, never silently
    failed = [n for n in pending if n.status is Status.FAILED]
    if raise_errors and failed:
        raise FlowError(failed)
    return flow.results()


def _cancel_unstarted(flow: Graph, nodes: list[Operation]) -> None:
    """The run was stopped: its nodes that never started settle as cancelled."""
    for node in nodes:
        if node.status is Status.PENDING:
            node.mark_cancelled()
            flow.notify(node)
