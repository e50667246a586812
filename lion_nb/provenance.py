"""What a branch's messages do not say about themselves: which run recorded each one, how long
the runs took, which notebook cell was executing, and the parse attempts behind a result.

Messages are frozen values, so this lives in a side table keyed by message id, filled from the
branch's signals by a ``Provenance`` observer. ``provenance_of(branch)`` returns the branch's
table, attaching it on first use (the inspector does this; call it early to record from the
first message). It is exported and imported with the branch (``lion_nb.export``).
"""

from __future__ import annotations

import sys
import uuid
import weakref
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from lion_nb.signals import (
    MessageAdded,
    MessageRetracted,
    ParseAttempt,
    RunEnd,
    RunFailed,
    RunStart,
    Signal,
)

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["Provenance", "RunRecord", "current_cell", "provenance_of"]


@dataclass(slots=True)
class RunRecord:
    """One run's lifecycle: RunStart -> RunEnd / RunFailed."""

    run_id: str
    operation: str
    started_at: float  # epoch seconds (the signal's ``at``)
    status: str = "running"  # running | ok | stopped | failed
    ended_at: float | None = None
    duration_ms: float | None = None
    error: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_cost_usd: float | None = None
    message_ids: list[str] = field(default_factory=list)
    cell: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def current_cell() -> int | None:
    """The execution count of the notebook cell running now, when inside IPython. IPython is
    never imported here: if the program did not load it, there is no cell."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    shell = ipython.get_ipython()
    count = getattr(shell, "execution_count", None)
    return count if isinstance(count, int) else None


class Provenance:
    """Side tables for one branch: run log, message -> run, message -> cell, parse attempts."""

    def __init__(self) -> None:
        self.runs: list[RunRecord] = []
        self.run_of: dict[str, str] = {}  # message id -> run id
        self.cells: dict[str, int] = {}  # message id -> execution count
        self.parse_attempts: list[dict[str, Any]] = []
        self._by_id: dict[str, RunRecord] = {}
        self._open: list[RunRecord] = []  # runs started and not ended, oldest first
        self._listeners: list[Any] = []

    # ----- recording ---------------------------------------------------------------------
    def attach(self, branch: Branch) -> None:
        branch.observe(
            RunStart,
            RunEnd,
            RunFailed,
            MessageAdded,
            MessageRetracted,
            ParseAttempt,
            handler=self.on_signal,
        )

    def add_listener(self, fn: Any) -> None:
        """``fn(signal)`` after the tables took the signal in (views refresh from here)."""
        self._listeners.append(fn)

    def remove_listener(self, fn: Any) -> None:
        if fn in self._listeners:
            self._listeners.remove(fn)

    def on_signal(self, signal: Signal) -> None:
        if isinstance(signal, RunStart):
            record = RunRecord(
                run_id=str(signal.run_id),
                operation=signal.operation,
                started_at=signal.at,
                cell=current_cell(),
            )
            self.runs.append(record)
            self._by_id[record.run_id] = record
            self._open.append(record)
        elif isinstance(signal, RunEnd | RunFailed):
            ended = self._by_id.get(str(signal.run_id))
            if ended is not None:
                self._close(ended, signal)
        elif isinstance(signal, MessageAdded):
            mid = str(signal.message.id)
            cell = current_cell()
            if cell is not None:
                self.cells[mid] = cell
            if self._open:  # concurrent runs on one branch: the latest started one owns it
                record = self._open[-1]
                record.message_ids.append(mid)
                self.run_of[mid] = record.run_id
        elif isinstance(signal, MessageRetracted):
            self._forget(str(signal.message_id))
        elif isinstance(signal, ParseAttempt):
            self.parse_attempts.append(
                {
                    "attempt": signal.attempt,
                    "ok": signal.ok,
                    "target": signal.target,
                    "raw": signal.raw,
                    "errors": list(signal.errors),
                    "at": signal.at,
                    "run_id": self._open[-1].run_id if self._open else None,
                }
            )
        for fn in list(self._listeners):
            fn(signal)

    def _forget(self, mid: str) -> None:
        """A retracted message was never part of its run (an exported table must not list it)."""
        self.cells.pop(mid, None)
        run_id = self.run_of.pop(mid, None)
        record = self._by_id.get(run_id) if run_id else None
        if record is not None and mid in record.message_ids:
            record.message_ids.remove(mid)

    def _close(self, record: RunRecord, signal: RunEnd | RunFailed) -> None:
        record.ended_at = signal.at
        record.duration_ms = signal.duration_ms
        if isinstance(signal, RunFailed):
            record.status = "failed"
            record.error = f"{type(signal.error).__name__}: {signal.error}"
        else:
            record.status = "stopped" if signal.stopped else "ok"
            record.input_tokens = signal.input_tokens
            record.output_tokens = signal.output_tokens
            record.total_cost_usd = signal.total_cost_usd
        if record in self._open:
            self._open.remove(record)

    # ----- reading -----------------------------------------------------------------------
    def run_for(self, message_id: uuid.UUID | str) -> RunRecord | None:
        run_id = self.run_of.get(str(message_id))
        return self._by_id.get(run_id) if run_id else None

    def cell_for(self, message_id: uuid.UUID | str) -> int | None:
        return self.cells.get(str(message_id))

    # ----- persistence -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": [r.as_dict() for r in self.runs],
            "cells": dict(self.cells),
            "parse_attempts": list(self.parse_attempts),
        }

    def load(self, data: dict[str, Any]) -> None:
        """Restore tables written by ``to_dict`` (an imported branch's history)."""
        for raw in data.get("runs", []):
            record = RunRecord(**raw)
            self.runs.append(record)
            self._by_id[record.run_id] = record
            for mid in record.message_ids:
                self.run_of[mid] = record.run_id
        self.cells.update({str(k): int(v) for k, v in (data.get("cells") or {}).items()})
        self.parse_attempts.extend(data.get("parse_attempts") or [])

    @property
    def empty(self) -> bool:
        return not (self.runs or self.cells or self.parse_attempts)


_TABLES: weakref.WeakKeyDictionary[Any, Provenance] = weakref.WeakKeyDictionary()


def provenance_of(branch: Branch, *, create: bool = True) -> Provenance | None:
    """The branch's provenance table; with ``create`` it is made and attached on first use."""
    table = _TABLES.get(branch)
    if table is None and create:
        table = _TABLES[branch] = Provenance()
        table.attach(branch)
    return table
