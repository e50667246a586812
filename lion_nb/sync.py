"""Blocking helpers for people who do not want to write ``await``.

``await branch.communicate(...)`` is the way in a notebook (IPython runs top-level ``await``).
These helpers are for scripts and for notebook code that has to stay synchronous:

    from lion_nb.sync import communicate_sync
    answer = communicate_sync(branch, "Summarise this")

Outside any event loop they run the coroutine on one private loop that is kept between calls
(so a provider's HTTP client, bound to the loop it was created on, keeps working). Inside a
running loop - a Jupyter kernel - they make that loop re-entrant with ``nest-asyncio2`` the first
time they are needed, never at import: the archived ``nest_asyncio`` 1.6 hangs the next queued cell
under ipykernel 7 "Run All"; its maintained fork (which ipykernel 7.4 itself depends on) does not.

A blocking call holds the kernel until it returns, so widget clicks (a view's Stop button) are not
handled during it; runs started from a view are background tasks for that reason.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import threading
from collections.abc import Awaitable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import nest_asyncio2

from lion_nb.tracebacks import carry_stop

if TYPE_CHECKING:
    from lion_nb.messages import RoledMessage
    from lion_nb.session.branch import Branch

T = TypeVar("T")

__all__ = [
    "chat_sync",
    "communicate_sync",
    "operate_sync",
    "parse_sync",
    "react_sync",
    "run_collect_sync",
    "run_messages_sync",
    "run_sync",
]

_lock = threading.Lock()
_runners: dict[int, asyncio.Runner] = {}  # thread id -> private loop (scripts, worker threads)
_patched_loops: set[int] = set()


def _private_runner() -> asyncio.Runner:
    key = threading.get_ident()
    with _lock:
        runner = _runners.get(key)
        if runner is None:
            runner = _runners[key] = asyncio.Runner()
        return runner


@atexit.register
def _close_runners() -> None:
    with _lock:
        runners = list(_runners.values())
        _runners.clear()
    for runner in runners:
        runner.close()


def _make_reentrant(loop: asyncio.AbstractEventLoop) -> None:
    if id(loop) in _patched_loops:
        return
    nest_asyncio2.apply(loop)
    _patched_loops.add(id(loop))


def run_sync(awaitable: Awaitable[T]) -> T:
    """Run ``awaitable`` to completion and return its result, whether or not an event loop is
    already running in this thread. Exceptions propagate unchanged."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None:
        # the caller's context as it is now (an active cassette, a run's usage), not as it
        # was when the cached runner was made
        try:
            return _private_runner().run(
                _as_coroutine(awaitable), context=contextvars.copy_context()
            )
        except KeyboardInterrupt as stop:  # asyncio.Runner cancelled the run first
            _say_stopped(stop.__context__, stop)
            raise
    _make_reentrant(loop)
    task = asyncio.ensure_future(awaitable)
    try:
        return loop.run_until_complete(task)
    except KeyboardInterrupt as stop:  # Kernel -> Interrupt while this cell waits
        _stop_and_settle(loop, task, stop)
        raise
    finally:
        # An interrupted wait (KeyboardInterrupt in a kernel) must not leave the work running.
        if not task.done():
            task.cancel()


def _stop_and_settle(
    loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], stop: BaseException
) -> None:
    """Cancel the interrupted run and let it finish its cleanup (what it keeps, a CLI's
    process group) before the interrupt reaches the cell, which then prints the run's one
    line ("stopped — …") instead of a traceback. A second interrupt ends the wait."""
    task.cancel()
    try:
        loop.run_until_complete(asyncio.wait([task]))
    except BaseException:
        return
    if task.cancelled():
        try:
            task.result()
        except asyncio.CancelledError as cancelled:
            _say_stopped(cancelled, stop)


def _say_stopped(cancelled: BaseException | None, stop: BaseException) -> None:
    carry_stop(cancelled, stop)


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _as_coroutine(awaitable: Awaitable[T]) -> Coroutine[Any, Any, T]:
    if asyncio.iscoroutine(awaitable):
        return awaitable
    return _await(awaitable)


def communicate_sync(branch: Branch, instruction: Any = None, **kwargs: Any) -> Any:
    """``branch.communicate(...)``, blocking."""
    return run_sync(branch.communicate(instruction, **kwargs))


def chat_sync(branch: Branch, instruction: Any = None, **kwargs: Any) -> Any:
    """``branch.chat(...)``, blocking (nothing is recorded)."""
    return run_sync(branch.chat(instruction, **kwargs))


def parse_sync(branch: Branch, text: str, response_format: Any = None, **kwargs: Any) -> Any:
    """``branch.parse(...)``, blocking."""
    return run_sync(branch.parse(text, response_format, **kwargs))


def operate_sync(branch: Branch, **kwargs: Any) -> Any:
    """``branch.operate(...)``, blocking."""
    return run_sync(branch.operate(**kwargs))


def react_sync(branch: Branch, instruction: Any = None, **kwargs: Any) -> Any:
    """``branch.ReAct(...)``, blocking."""
    return run_sync(branch.ReAct(instruction, **kwargs))


def run_collect_sync(branch: Branch, instruction: Any = "", **kwargs: Any) -> Any:
    """``branch.run_and_collect(...)``, blocking: the CLI agent's joined answer."""
    return run_sync(branch.run_and_collect(instruction, **kwargs))


def run_messages_sync(branch: Branch, instruction: Any = "", **kwargs: Any) -> list[RoledMessage]:
    """Consume ``branch.run(...)`` and return the messages it recorded, blocking."""

    async def collect() -> list[RoledMessage]:
        stream = branch.run(instruction, **kwargs)
        try:
            return [message async for message in stream]
        finally:
            await stream.aclose()

    return run_sync(collect())
