"""A chat view's run bookkeeping: which runs are active on its branch, whether it drives one
(a background task it started), what its status line says, and the rule that one view drives a
run on a branch at a time (``RunSlots``).

``BranchView`` maps this to widgets: Send/Stop enabled or not, the status line, the error box.
"""

from __future__ import annotations

import asyncio
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from lion_nb.signals import (
    CallEnd,
    ParseAttempt,
    RoundEnd,
    RoundStart,
    RunEnd,
    RunFailed,
    RunStart,
    Signal,
)

__all__ = ["SLOTS", "ChatRuns", "Claim", "RunSlots", "status_of"]


class RunSlots:
    """Which chat view drives a run on each branch (branch id -> its ``ChatRuns``). Views on
    one branch share one ``RunSlots`` and never drive runs at once."""

    def __init__(self) -> None:
        self._drivers: weakref.WeakValueDictionary[uuid.UUID, ChatRuns] = (
            weakref.WeakValueDictionary()
        )

    def driver(self, branch_id: uuid.UUID) -> ChatRuns | None:
        """The view model driving a run on the branch now, if any."""
        holder = self._drivers.get(branch_id)
        return holder if holder is not None and holder.driving else None

    def hold(self, branch_id: uuid.UUID, runs: ChatRuns) -> None:
        self._drivers[branch_id] = runs

    def release(self, branch_id: uuid.UUID, runs: ChatRuns) -> None:
        if self._drivers.get(branch_id) is runs:
            del self._drivers[branch_id]


SLOTS = RunSlots()  # the one the chat views of a kernel share


@dataclass(frozen=True, slots=True)
class Claim:
    """Whether a view may start a run: ``go`` (after stopping ``after``, when given), ``busy``
    (a run is active: nothing starts), ``taken`` (another view drives a run on the branch)."""

    verdict: Literal["go", "busy", "taken"]
    after: ChatRuns | None = None


class ChatRuns:
    """The runs a chat view sees on its branch and the one it drives.

    ``runs`` are the run ids started and not yet ended on the branch (by this view or by a
    cell); ``driving`` is whether this view's own task is running; ``run_began`` whether a
    run lifecycle started since this view's last Send. ``on_stopping`` is called when a stop
    of this view's run is requested (by its view, or by another taking over the branch)."""

    def __init__(
        self,
        branch_id: uuid.UUID,
        *,
        slots: RunSlots | None = None,
        on_stopping: Callable[[], Any] | None = None,
    ) -> None:
        self.branch_id = branch_id
        self.slots = slots if slots is not None else SLOTS
        self.on_stopping = on_stopping
        self.runs: set[uuid.UUID] = set()
        self.task: asyncio.Task[Any] | None = None
        self.driving = False
        self.run_began = False
        self.stop_requested = False
        self.stop_kept: bool | None = None  # a stopped run's last call: recorded or not

    @property
    def running(self) -> bool:
        """A run is active on the branch (started here or elsewhere)."""
        return bool(self.runs) or self.driving

    def claim(self, *, stop_others: bool = False) -> Claim:
        """May this view start a run now? Another view's run is stopped first only when
        ``stop_others``; a run started elsewhere (awaited in a cell) is never interrupted."""
        if self.driving:
            return Claim("busy")
        other = self.slots.driver(self.branch_id)
        if other is self:
            other = None
        if other is None and self.runs:
            return Claim("busy")
        if other is not None and not stop_others:
            return Claim("taken")
        return Claim("go", after=other)

    def started(self, task: asyncio.Task[Any]) -> None:
        """This view's run began as ``task``."""
        self.task = task
        self.driving = True
        self.run_began = False
        self.stop_requested = False
        self.slots.hold(self.branch_id, self)

    def ended(self) -> None:
        """This view's task finished, however it ended."""
        self.driving = False
        self.slots.release(self.branch_id, self)

    def stop(self) -> bool:
        """Cancel this view's run, if one is going; returns whether one was."""
        if self.task is None or self.task.done():
            return False
        self.stop_requested = True
        self.task.cancel()
        if self.on_stopping is not None:
            self.on_stopping()
        return True

    async def wait(self) -> Any:
        """Wait for this view's last run, if any; returns its result."""
        if self.task is None:
            return None
        return await asyncio.shield(self.task)

    def on_signal(self, signal: Signal) -> tuple[str, str] | None:
        """Follow the run lifecycle on the branch; returns what the status line says now
        (``status_of``), or None when it does not change."""
        if isinstance(signal, RunStart):
            self.run_began = True
            self.runs.add(signal.run_id)
            self.stop_kept = None
        elif isinstance(signal, RunEnd | RunFailed):
            self.runs.discard(signal.run_id)
        elif isinstance(signal, CallEnd) and signal.outcome == "stopped":
            self.stop_kept = signal.recorded
        return status_of(signal, kept=self.stop_kept)


def _run_end_status(signal: RunEnd, kept: bool | None) -> tuple[str, str]:
    if signal.stopped:
        tail = ""
        if kept is not None:
            tail = " · the partial reply is kept" if kept else " · nothing was recorded"
        return "stopped", f"{signal.operation} stopped{tail}"
    usage = ""
    if signal.output_tokens:
        usage = f" · {signal.input_tokens or 0:,} in / {signal.output_tokens:,} out tokens"
    if signal.total_cost_usd is not None:  # an API model's price (models/cost.py)
        usage += f" · ${signal.total_cost_usd:.4f}"
    return "done", f"{signal.operation} done in {signal.duration_ms / 1000:.1f} s{usage}"


def status_of(signal: Signal, *, kept: bool | None = None) -> tuple[str, str] | None:
    """What a chat view's status line says after ``signal``: ``(state, text)``, or None when
    the signal does not change it. ``kept``: whether a stopped run's last call was recorded
    (``CallEnd.recorded``; None: unknown). A parse that validated ends in "parsed"."""
    if isinstance(signal, RunStart):
        return "running", f"{signal.operation}…"
    if isinstance(signal, RunEnd):
        return _run_end_status(signal, kept)
    if isinstance(signal, RunFailed):
        return "failed", f"{signal.operation} failed after {signal.duration_ms / 1000:.1f} s"
    if isinstance(signal, RoundStart):
        label = "final answer" if signal.final else f"round {signal.round}"
        return "running", f"ReAct {label}…"
    if isinstance(signal, RoundEnd) and signal.error is not None:
        return "running", f"round {signal.round} failed: {type(signal.error).__name__}"
    if isinstance(signal, ParseAttempt):
        return _parse_status(signal)
    return None


def _parse_status(signal: ParseAttempt) -> tuple[str, str]:
    repairs = signal.attempt
    after = f" after {repairs} repair turn{'s' if repairs != 1 else ''}" if repairs else ""
    if signal.ok:
        return "done", f"parsed into {signal.target}{after}"
    if signal.final:
        return "failed", f"could not parse into {signal.target}{after}"
    return "running", f"parse attempt {signal.attempt + 1} did not validate; retrying…"
