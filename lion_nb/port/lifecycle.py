"""Run lifecycle ownership (ADR D4): the one mechanism every verb that owns a run uses.

``observed_run`` wraps a coroutine (communicate, operate, ReAct, select); ``observed_stream``
wraps an async generator for its whole iteration (run, ReActStream). The wrapper that owns an
exchange emits ``RunStart`` and exactly one terminal signal. A
task-scoped ContextVar holds the ids of branches whose run is active in this task; a nested
wrapper on the same branch (communicate inside operate, turns inside ReAct) stays silent, while a
concurrent task on the same branch (which has its own context) is not suppressed.

The run's context (suppression, its usage accumulator, its id for ``RoundStart``) is set only
while the run's own code executes (``RunTracker.step``), never left set across a ``yield``: what
a consumer does between two streamed items is not part of the run, and an abandoned generator
finalised later in another context cannot silence the branch's future runs.

A stopped run (Stop, Escape, Kernel -> Interrupt) re-raises the very ``CancelledError`` or
``KeyboardInterrupt`` that stopped it, marked (``lion_nb.tracebacks.mark_stopped``) so that
IPython prints one line saying what the run kept ("stopped — nothing recorded" / "stopped — the
partial reply is kept"), read from the messages it recorded, instead of a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from lion_nb.signals import RunEnd, RunFailed, RunStart
from lion_nb.usage import RunUsage, current_run_usage

if TYPE_CHECKING:
    from lion_nb.port.branch_port import BranchPort

logger = logging.getLogger(__name__)

_active_runs: ContextVar[frozenset[uuid.UUID]] = ContextVar(
    "lion_nb_active_runs", default=frozenset()
)
current_run_id: ContextVar[uuid.UUID | None] = ContextVar("lion_nb_run_id", default=None)


def lifecycle_suppressed(branch: BranchPort) -> bool:
    return branch.id in _active_runs.get()


@contextmanager
def suppress_lifecycle(branch: BranchPort) -> Iterator[None]:
    """Mark ``branch`` as running in this task: nested wrappers emit nothing."""
    token = _active_runs.set(_active_runs.get() | {branch.id})
    try:
        yield
    finally:
        _active_runs.reset(token)


class RunTracker:
    """Start/terminal bookkeeping for one run: at most one terminal signal per start."""

    __slots__ = ("branch", "done", "operation", "run_id", "started", "usage")

    def __init__(self, branch: BranchPort, operation: str) -> None:
        self.branch = branch
        self.operation = operation
        self.run_id = uuid.uuid4()
        self.started = time.perf_counter()
        self.usage = RunUsage()
        self.done = False

    def start(self) -> None:
        self.branch.emit(
            RunStart(branch_id=self.branch.id, run_id=self.run_id, operation=self.operation)
        )

    @contextmanager
    def step(self) -> Iterator[None]:
        """While the run's own code executes: nested verbs silent, usage counted, id known."""
        usage = current_run_usage.set(self.usage)
        run_id = current_run_id.set(self.run_id)
        try:
            with suppress_lifecycle(self.branch):
                yield
        finally:
            current_run_id.reset(run_id)
            current_run_usage.reset(usage)

    def _elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000.0

    def end(self, result: Any = None, *, stopped: bool = False) -> None:
        if self.done:
            return
        self.done = True
        u = self.usage
        self.branch.emit(
            RunEnd(
                branch_id=self.branch.id,
                run_id=self.run_id,
                operation=self.operation,
                duration_ms=self._elapsed_ms(),
                result=result,
                input_tokens=u.input_tokens,
                output_tokens=u.output_tokens,
                total_cost_usd=u.total_cost_usd,
                stopped=stopped,
                usage=u.as_dict(),
            )
        )

    def fail(self, error: BaseException) -> None:
        if self.done:
            return
        self.done = True
        self.branch.emit(
            RunFailed(
                branch_id=self.branch.id,
                run_id=self.run_id,
                operation=self.operation,
                duration_ms=self._elapsed_ms(),
                error=error,
            )
        )


async def observed_run(branch: BranchPort, operation: str, coro: Awaitable[Any]) -> Any:
    """Await ``coro`` under one lifecycle: RunStart, then RunEnd(result) or RunFailed(error)
    (re-raised). Message signals are drained first. Cancellation is a stopped RunEnd, and so
    is a KeyboardInterrupt (Kernel -> Interrupt reaching the awaiting code): the user stopped it.
    """
    if lifecycle_suppressed(branch):
        return await coro
    tracker = RunTracker(branch, operation)
    tracker.start()
    before = len(branch.messages)
    try:
        with tracker.step():
            result = await coro
    except (asyncio.CancelledError, KeyboardInterrupt) as stop:
        tracker.end(None, stopped=True)
        _say_stopped(stop, branch, before)
        raise
    except BaseException as exc:
        await branch.drain()
        tracker.fail(exc)
        raise
    await branch.drain()
    tracker.end(result)
    return result


async def observed_stream(
    branch: BranchPort,
    operation: str,
    stream: AsyncGenerator[Any, None],
    result: Callable[[], Any] | None = None,
) -> AsyncGenerator[Any, None]:
    """Re-yield ``stream`` under one lifecycle for the whole iteration. ``RunStart`` comes
    with the first ``anext`` (closing an unstarted stream emits nothing). A consumer that stops
    early (``break``, ``aclose()``) or is cancelled ends the run with ``RunEnd(stopped=True)``
    once ``stream`` has closed (its own cleanup runs first). ``RunEnd.result`` is
    ``result()`` when given, else the last item. Nested on a branch that is already running
    in this task, it only re-yields."""
    if lifecycle_suppressed(branch):
        try:
            async for item in stream:
                yield item
        finally:
            await stream.aclose()
        return
    tracker = RunTracker(branch, operation)
    tracker.start()
    before = len(branch.messages)
    last: Any = None
    try:
        while True:
            with tracker.step():
                try:
                    item = await anext(stream)
                except StopAsyncIteration:
                    break
            last = item
            yield item
    except (GeneratorExit, asyncio.CancelledError) as stop:
        with tracker.step():
            await _close_quietly(stream)
        await _drain_quietly(branch)
        tracker.end(result() if result is not None else None, stopped=True)
        _say_stopped(stop, branch, before)
        raise
    except BaseException as exc:
        await _drain_quietly(branch)
        tracker.fail(exc)
        raise
    await branch.drain()
    tracker.end(result() if result is not None else last)


def _say_stopped(stop: BaseException, branch: BranchPort, before: int) -> None:
    """Mark ``stop`` to print one line in IPython: what the run recorded before it stopped."""
    if isinstance(stop, GeneratorExit):  # a consumer's break / aclose(): no one to tell
        return
    # lazy: lion_nb.tracebacks loads traceback and sysconfig (~6 ms of `import lion_nb` +
    # Branch(), where the facade imports this module); only a stopped run needs it
    from lion_nb.tracebacks import mark_stopped, stop_line

    mark_stopped(stop, stop_line(list(branch.messages)[before:]))


async def _close_quietly(stream: AsyncGenerator[Any, None]) -> None:
    """Close ``stream`` while stopping; its failure is logged, never replaces the stop."""
    try:
        await stream.aclose()
    except Exception as exc:
        logger.warning("closing a stopped stream failed: %r", exc, exc_info=exc)


async def _drain_quietly(branch: BranchPort) -> None:
    try:
        await branch.drain()
    except Exception as exc:  # an observer's failure never replaces the run's outcome
        logger.warning("draining observers failed: %r", exc, exc_info=exc)
