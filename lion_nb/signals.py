"""Signals a branch emits while it works, and the bus that delivers them.

Lifecycle: ``RunStart`` then exactly one of ``RunEnd`` / ``RunFailed`` (ADR-0021 D4).
Content: ``MessageAdded`` when a message is recorded, ``MessageRetracted`` when one is taken
back (a Ray attempt that died); ``StreamDelta`` while a message is being built (what changed,
plus the running snapshot, keyed by the id the message will be recorded under, so a view can
render idempotently). Each model request is bracketed by ``CallStart`` / ``CallEnd`` (what
was asked, and whether its reply was recorded). ReAct adds ``RoundStart`` / ``RoundEnd``.

Observer failures are logged on the ``lion_nb`` logger and never change an operation's result.
Signals are read-only by convention; they are plain (non-frozen) slotted dataclasses because a
frozen dataclass's ``__init__`` costs several times more, and ``StreamDelta`` is emitted per token.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

logger = logging.getLogger("lion_nb")


@dataclass(slots=True, kw_only=True)
class Signal:
    """What every signal carries: the branch it is about and when it was emitted
    (``time.time()``). Observe signals with ``branch.observe(Type, handler=fn)``."""

    branch_id: uuid.UUID
    at: float = field(default_factory=time.time)


@dataclass(slots=True, kw_only=True)
class RunStart(Signal):
    """A run began: one verb with a lifecycle (``communicate``, ``operate``, ``run``,
    ``ReAct``, ...). Exactly one ``RunEnd`` or ``RunFailed`` with the same ``run_id``
    follows; ``operation`` names the verb."""

    run_id: uuid.UUID
    operation: str


@dataclass(slots=True, kw_only=True)
class RunEnd(Signal):
    """A run ended normally (including a consumer that stopped reading a stream).

    Usage counts only the model calls made during this run. ``usage``: all of it that some
    call reported (``usage.Usage`` fields: the tokens above plus ``cache_read_tokens``,
    ``cache_write_tokens``, ``reasoning_tokens``, and ``total_cost_usd``); {} when none did."""

    run_id: uuid.UUID
    operation: str
    duration_ms: float
    result: Any = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_cost_usd: float | None = None
    stopped: bool = False
    usage: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class RunFailed(Signal):
    """A run ended with an exception (``error``, which the verb also raises); a stop is a
    ``RunEnd(stopped=True)``, not a failure."""

    run_id: uuid.UUID
    operation: str
    duration_ms: float
    error: BaseException


@dataclass(slots=True, kw_only=True)
class MessageAdded(Signal):
    """A message was recorded on the branch (at the end of its progression)."""

    message: Any  # RoledMessage; typed loosely so this module imports no pydantic models


@dataclass(slots=True, kw_only=True)
class MessageRetracted(Signal):
    """A recorded message was taken back (``Branch.retract_message``): it is no longer in
    the branch's messages or progression. ``reason`` says why, for people and logs (on Ray:
    the attempt that recorded it died and Ray ran the node again)."""

    message_id: uuid.UUID
    reason: str


@dataclass(slots=True, kw_only=True)
class CallStart(Signal):
    """A model request is about to be sent (``operations.chat``). ``instruction`` is the
    Instruction as the verb built it, not recorded yet (a view shows it pending while the reply
    streams; None when no new one is sent: ``fork_at_token`` continues a reply); the reply
    streams under ``message_id``. ``records``: the exchange is recorded
    when it succeeds (communicate); False for an unrecorded call (chat, interpret, a parse
    repair turn), whose streamed card a view drops at ``CallEnd``."""

    message_id: uuid.UUID
    instruction: Any  # Instruction; typed loosely like MessageAdded.message
    records: bool


@dataclass(slots=True, kw_only=True)
class CallEnd(Signal):
    """The model request of ``message_id`` ended. ``recorded``: the reply (and its
    instruction) are in the branch now (their ``MessageAdded`` came first); ``outcome``:
    "done", "stopped" (cancelled) or "failed". An unrecorded reply is not in the branch and a
    view must not show it as kept."""

    message_id: uuid.UUID
    recorded: bool
    outcome: Literal["done", "stopped", "failed"]


class TextAccumulator:
    """Growing text of one part of a message being streamed. Appending is O(1); the joined
    text is built only when someone reads it (views read at a throttled rate), so emitting a
    delta per token stays linear however long the reply grows."""

    __slots__ = ("_parts", "length")

    def __init__(self, initial: str = "") -> None:
        self._parts: list[str] = [initial] if initial else []
        self.length = len(initial)

    def append(self, delta: str) -> None:
        """Add ``delta`` at the end (O(1): nothing is joined until ``value()``)."""
        self._parts.append(delta)
        self.length += len(delta)

    def value(self) -> str:
        """The text so far, joined now (and kept joined, so reading twice costs once)."""
        parts = self._parts
        if len(parts) > 1:
            parts[:] = ["".join(parts)]
        return parts[0] if parts else ""


@dataclass(slots=True, kw_only=True)
class StreamDelta(Signal):
    """``delta`` was appended to the ``kind`` part of message ``message_id``; ``snapshot`` is
    that part so far (computed on read). For ``tool_args`` the tool ``name`` and ``call_id``
    are set. ``message_id`` is the id the finished message will be recorded under.

    ``kind == "tokens"`` (a reply streamed with ``logprobs=K``): ``tokens`` are the
    ``TokenChoice``s that arrived, ``token_index`` the index of the first of them in the reply
    (the count so far is ``token_index + len(tokens)``); ``delta`` is their wire form and
    ``snapshot`` the text of all the tokens so far. The same text also arrives as ``"text"`` deltas: a view that does not tint tokens
    ignores this kind."""

    message_id: uuid.UUID
    kind: Literal["text", "thinking", "tool_args", "tokens"]
    delta: str
    source: TextAccumulator | str = ""
    length: int = -1
    name: str | None = None
    call_id: str | None = None
    tokens: list[Any] | None = None
    token_index: int = 0

    @property
    def snapshot(self) -> str:
        """The ``kind`` part of the message so far, as it was when this delta was emitted."""
        text = self.source if isinstance(self.source, str) else self.source.value()
        if self.length < 0 or self.length == len(text):
            return text
        return text[: self.length]


class MessageStream:
    """The one accumulator of a message while it streams: a ``TextAccumulator`` per part
    (text, thinking, each tool call's arguments). Called with each provider delta (it is a
    ``DeltaSink``), it emits ``StreamDelta`` whose ``snapshot`` is that part so far, so a view
    renders the snapshot and one attached mid-stream shows everything. While ``listening()``
    is false the signal is not even built (this runs once per token)."""

    __slots__ = ("_emit", "_listening", "_parts", "_tokens", "branch_id", "message_id")

    def __init__(
        self,
        branch_id: uuid.UUID,
        message_id: uuid.UUID,
        emit: Callable[[Signal], Any] | None = None,
        listening: Callable[[], bool] | None = None,
    ) -> None:
        self.branch_id = branch_id
        self.message_id = message_id
        self._emit = emit
        self._listening = listening
        self._parts: dict[str, TextAccumulator] = {}
        self._tokens: list[Any] | None = None

    def __call__(
        self, kind: Any, delta: str, *, name: str | None = None, call_id: str | None = None
    ) -> None:
        if kind == "tokens":
            self._add_tokens(delta)
            return
        key = kind if kind != "tool_args" else f"tool_args:{call_id}"
        acc = self._parts.get(key)
        if acc is None:
            acc = self._parts[key] = TextAccumulator()
        acc.append(delta)
        emit = self._emit
        if emit is not None and (self._listening is None or self._listening()):
            emit(
                StreamDelta(
                    branch_id=self.branch_id,
                    message_id=self.message_id,
                    kind=kind,
                    delta=delta,
                    source=acc,
                    length=acc.length,
                    name=name,
                    call_id=call_id,
                )
            )

    def _add_tokens(self, delta: str) -> None:
        # lazy: lion_nb.tokens (~4 ms) is for replies streamed with their tokens, and signals
        # load with `import lion_nb`
        from lion_nb.tokens import decode_tokens_delta

        new = decode_tokens_delta(delta)
        if self._tokens is None:
            self._tokens = []
        start = len(self._tokens)
        self._tokens.extend(new)
        acc = self._parts.get("tokens")
        if acc is None:
            acc = self._parts["tokens"] = TextAccumulator()
        for token in new:
            acc.append(token.text)
        emit = self._emit
        if emit is not None and (self._listening is None or self._listening()):
            emit(
                StreamDelta(
                    branch_id=self.branch_id,
                    message_id=self.message_id,
                    kind="tokens",
                    delta=delta,
                    source=acc,
                    length=acc.length,
                    tokens=new,
                    token_index=start,
                )
            )

    def tokens(self) -> list[Any] | None:
        """The ``TokenChoice``s that arrived (None when the reply streams without them)."""
        return None if self._tokens is None else list(self._tokens)

    def text(self, kind: str = "text") -> str:
        """The ``kind`` part so far ("" if none arrived)."""
        acc = self._parts.get(kind)
        return acc.value() if acc is not None else ""

    def __bool__(self) -> bool:
        """Whether any text or thinking arrived."""
        return any(self._parts[k].length for k in ("text", "thinking") if k in self._parts)


@dataclass(slots=True, kw_only=True)
class RoundStart(Signal):
    """A ReAct round began: ``round`` 1 is the first analysis; ``final`` marks the answer turn."""

    run_id: uuid.UUID | None
    round: int
    final: bool = False


@dataclass(slots=True, kw_only=True)
class RoundEnd(Signal):
    """A ReAct round ended. ``error``: what ended it (a tool failure, a ``ReActError`` for a
    round that gave no answer), else None; ``extension_needed``: the model asked for more
    rounds (None for the answer round)."""

    run_id: uuid.UUID | None
    round: int
    final: bool = False
    duration_ms: float = 0.0
    extension_needed: bool | None = None
    error: BaseException | None = None


@dataclass(slots=True, kw_only=True)
class ParseAttempt(Signal):
    """One attempt of ``parse``: 0 is local extraction of the original text, later ones parse
    a repair turn's reply. ``errors`` are per-field validation errors (loc, msg, type).
    ``final``: no attempt of this parse follows (it validated, or the retries are used up), so
    a view following one parse knows when it has settled. ``value``: what the attempt
    validated into (None unless ``ok``), so a view shows parse's own result."""

    attempt: int
    raw: str
    ok: bool
    errors: list[dict[str, Any]]
    target: str
    final: bool = False
    value: Any = None


Handler = Callable[[Signal], Any]


class Observers:
    """Subscriptions by signal type. ``emit`` is synchronous and cheap: sync handlers run
    inline; async handlers become tasks that ``drain()`` awaits (ADR D4: message signals are
    drained before a terminal lifecycle signal).

    A subscription is either the caller's (``observe``) or *held* by an object that ends it
    itself (a view, through ``subscribe``): ``clear()`` removes only the former, so a user's
    ``unobserve_all()`` never detaches a view that is still open."""

    __slots__ = ("_handlers", "_pending", "_resolved")

    def __init__(self) -> None:
        self._handlers: list[_Subscription] = []
        self._pending: set[asyncio.Task[Any]] = set()
        self._resolved: dict[type, tuple[Handler, ...]] = {}

    def __bool__(self) -> bool:
        return bool(self._handlers)

    def __len__(self) -> int:
        return len(self._handlers)

    def subscribe(
        self, types: tuple[type[Signal], ...], handler: Handler, *, held: bool = False
    ) -> Callable[[], None]:
        """Add ``handler`` for ``types`` (all signals when empty); returns the function that
        removes exactly this subscription."""
        entry = _Subscription(types or (Signal,), handler, held)
        self._handlers.append(entry)
        self._resolved.clear()

        def unsubscribe() -> None:
            if entry in self._handlers:
                self._handlers.remove(entry)
                self._resolved.clear()

        return unsubscribe

    def unsubscribe(self, handler: Handler) -> bool:
        """Remove every subscription of ``handler``; False if it had none."""
        kept = [e for e in self._handlers if e.handler != handler]
        removed = len(kept) != len(self._handlers)
        self._handlers[:] = kept
        self._resolved.clear()
        return removed

    def clear(self) -> None:
        """Remove the callers' subscriptions; held ones (open views) stay."""
        self._handlers[:] = [e for e in self._handlers if e.held]
        self._resolved.clear()

    def wants(self, kind: type[Signal]) -> bool:
        """Whether a signal of type ``kind`` would reach a handler here."""
        return bool(self._for(kind))

    def _for(self, kind: type) -> tuple[Handler, ...]:
        found = self._resolved.get(kind)
        if found is None:
            found = tuple(e.handler for e in self._handlers if issubclass(kind, e.types))
            self._resolved[kind] = found
        return found

    def emit(self, signal: Signal) -> None:
        """Call every handler subscribed to ``signal``'s type, now. A sync handler runs
        inline; an async one becomes a task that ``drain()`` awaits. A handler's exception
        is logged, never raised: observing never changes what is observed."""
        for handler in self._for(type(signal)):
            try:
                result = handler(signal)
                if result is not None and inspect.isawaitable(result):
                    task = asyncio.ensure_future(result)
                    self._pending.add(task)
                    task.add_done_callback(self._settled)
            except Exception:
                logger.exception("observer %r failed on %s", handler, type(signal).__name__)

    def _settled(self, task: asyncio.Task[Any]) -> None:
        self._pending.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            logger.error("async observer failed: %r", error, exc_info=error)

    async def drain(self) -> None:
        """Wait until every async handler's task has finished (including tasks they started
        meanwhile); their exceptions are logged, not raised."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)


@dataclass(slots=True, eq=False)
class _Subscription:
    types: tuple[type[Signal], ...]
    handler: Handler
    held: bool


def observe_decorator(bus_subscribe: Callable[..., Any], types: tuple[Any, ...], handler: Any):
    """Shared body of ``Branch.observe`` / ``Session.observe``: call form or decorator form."""
    if types and not isinstance(types[0], type) and callable(types[0]) and handler is None:
        # observe(fn): all signals
        handler, types = types[0], ()
    if handler is not None:
        bus_subscribe(tuple(types), handler)
        return handler

    def decorator(fn: Handler) -> Handler:
        bus_subscribe(tuple(types), fn)
        return fn

    return decorator
