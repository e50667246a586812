"""``GridCell``: one prompt on one column of a ``Grid`` — its conversation and its figures.

A cell's figures are read when its run settles, from what the run left: the text of the reply
it recorded (a stopped cell's partial reply, kept by ``on_stop="record"``), the node's usage
(its runs' ``RunEnd``, on either engine), the node's duration, and the moment its first
``StreamDelta`` reached this process (the grid watches each cell's branch until then).

* ``latency_ms``: from the cell's start (its node handed to the engine) to its end.
* ``first_token_ms``: from the cell's start to its first streamed delta (text, thinking or a
  tool call's arguments): what a person waits before anything shows.
* ``tokens_per_s``: output tokens over the time after the first token (the generation rate);
  over the whole latency when no delta was seen or they all came at once; None without an
  output token count.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from lion_nb.flow.node import Operation, Status
from lion_nb.signals import Signal, StreamDelta
from lion_nb.usage import Usage

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch
    from lion_nb.session.conversation import Conversation

CellStatus = Literal["pending", "running", "done", "failed", "stopped"]

_STATUS: dict[Status, CellStatus] = {
    Status.PENDING: "pending",
    Status.RUNNING: "running",
    Status.COMPLETED: "done",
    Status.FAILED: "failed",
    Status.SKIPPED: "failed",
    Status.STOPPED: "stopped",
    Status.CANCELLED: "stopped",  # the stop came before it started: the next run() runs it
}
_ERROR_CHARS = 400
_MIN_GENERATION_MS = 1.0  # below this the deltas came at once: no rate can be read from them

FIGURES = ("text", "parsed", "usage", "cost_usd", "latency_ms", "first_token_ms", "tokens_per_s")


@dataclass(eq=False)
class GridCell:
    """Row ``row`` (a prompt) on column ``column`` (a model). ``branch`` is the conversation
    of its latest run (open it, continue it); ``attempts`` every branch it ran on, earliest
    first (a re-run forks anew; the earlier replies stay in the session, reachable through
    ``attempts`` and ``conversation()``)."""

    row: int
    column: int
    label: str
    prompt: str
    status: CellStatus = "pending"
    text: str | None = None
    parsed: Any = None
    branch: Branch | None = None
    usage: Usage | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    first_token_ms: float | None = None
    tokens_per_s: float | None = None
    error: str | None = None
    attempt: int = 0
    attempts: list[Branch] = field(default_factory=list)
    node: Operation | None = field(default=None, repr=False)
    """The flow node of the cell's latest run (its raw error, timings, usage)."""
    base_length: int = field(default=0, repr=False)
    """How many messages the cell's branch held before its run (the template's, a system)."""
    _started: float | None = field(default=None, repr=False)
    _first_delta: float | None = field(default=None, repr=False)
    _unwatch: Callable[[], None] | None = field(default=None, repr=False)

    @property
    def ran(self) -> bool:
        """Whether the cell's current branch has had a run (a re-run then needs a new fork)."""
        return self.node is not None and self.node.status not in (
            Status.PENDING,
            Status.CANCELLED,
        )

    @property
    def failure(self) -> BaseException | None:
        """The exception behind ``error`` (for code; ``error`` is for people)."""
        return self.node.error if self.node is not None else None

    def conversation(self) -> Conversation:
        """The cell's conversation: its first branch and every re-run (its alternatives),
        showing the latest. ``conversation().alternatives(k)`` at the reply's position lists
        one branch per reply this cell got."""
        from lion_nb.session.conversation import Conversation  # lazy: only when opened

        if not self.attempts:
            raise ValueError(f"{self.name()} has no branch yet")
        conv = Conversation(self.attempts[0])
        conv.show(self.attempts[-1])
        return conv

    def name(self) -> str:
        """``"Row 2, gpt-4.1-mini"`` (rows count from 1, as a person reads them)."""
        return f"Row {self.row + 1}, {self.label}"

    def record(self) -> dict[str, Any]:
        """One flat dict (a row of ``Grid.to_records()``)."""
        usage = self.usage
        return {
            "row": self.row,
            "column": self.column,
            "prompt": self.prompt,
            "label": self.label,
            "status": self.status,
            "text": self.text,
            "usage": usage.as_dict() if usage is not None else None,
            "input_tokens": usage.input_tokens if usage is not None else None,
            "output_tokens": usage.output_tokens if usage is not None else None,
            "cost_usd": self.cost_usd,
            "latency_ms": self.latency_ms,
            "first_token_ms": self.first_token_ms,
            "tokens_per_s": self.tokens_per_s,
            "error": self.error,
            "attempt": self.attempt,
        }

    # ----- kept by the grid ---------------------------------------------------------------
    def reset(self) -> None:
        """Before a run: no figures, no first delta."""
        for name in FIGURES:
            setattr(self, name, None)
        self.error = None
        self._started = self._first_delta = None

    def started(self) -> None:
        """Note that the cell's run starts now (what its latency is measured from)."""
        self._started = time.perf_counter()

    # The first delta: the grid watches the cell's branch from the start of the run (on Ray a
    # watched stream is relayed from its first token) until that delta arrives, then lets go
    # (an unwatched Ray node keeps its deltas on the worker; nothing here runs per token).
    def watch_first_delta(self) -> None:
        """Watch the cell's branch for its first streamed delta (time to first token)."""
        assert self.branch is not None
        self.unwatch()

        def first(signal: Signal) -> None:
            if self._first_delta is None:
                self._first_delta = time.perf_counter()
            self.unwatch()

        self._unwatch = self.branch.subscribe((StreamDelta,), first)

    def unwatch(self) -> None:
        """Stop watching for the first delta (nothing to do when not watching)."""
        stop, self._unwatch = self._unwatch, None
        if stop is not None:
            stop()

    def settle(self, node: Operation) -> None:
        """Read the figures of ``node``'s settled run (see the module)."""
        self.status = _STATUS[node.status]
        self.text = self._reply_text()
        response = node.response
        self.parsed = response if response is not None and not isinstance(response, str) else None
        usage = node.usage.as_dict()
        self.usage = Usage.from_dict(usage) if usage else None
        self.cost_usd = self.usage.total_cost_usd if self.usage is not None else None
        self.latency_ms = node.duration_ms
        if self._started is not None and self._first_delta is not None:
            self.first_token_ms = (self._first_delta - self._started) * 1000.0
        self.tokens_per_s = _rate(self.usage, self.latency_ms, self.first_token_ms)
        self.error = error_words(node.error) if node.status is Status.FAILED else None

    def _reply_text(self) -> str | None:
        """The text of the last reply the run recorded (None when it recorded none)."""
        if self.branch is None:
            return None
        for message in reversed(list(self.branch.messages)[self.base_length :]):
            if message.role == "assistant":
                return str(message.text)
        return None


def _rate(usage: Usage | None, latency_ms: float | None, first_ms: float | None) -> float | None:
    tokens = usage.output_tokens if usage is not None else None
    if not tokens or latency_ms is None:
        return None
    window = latency_ms - first_ms if first_ms is not None else 0.0
    if window < _MIN_GENERATION_MS:
        window = latency_ms
    return tokens / (window / 1000.0) if window > 0 else None


def error_words(error: BaseException | None) -> str | None:
    """One line a person reads: the error's message (the kind of error when it has none) and
    its fix when the message does not say it already; never a traceback."""
    if error is None:
        return None
    text = " ".join(str(error).split()) or _kind(error)
    hint = getattr(error, "hint", None)
    if hint and hint not in text:
        text = f"{text} — fix: {hint}"
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 1] + "…"


def _kind(error: BaseException) -> str:
    """``ServerError`` -> ``"server error"``."""
    name = type(error).__name__
    words = "".join(f" {c.lower()}" if c.isupper() else c for c in name).strip()
    return words or name
