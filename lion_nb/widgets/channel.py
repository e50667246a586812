"""The ordered delta channel from the kernel to a view's front end (``widgets/lion_nb.js``).

Every update is one custom comm message ``{"seq": n, "ops": [...]}``. The ops, the page actions,
the synced trait names, the sequence/resync rule and the envelope budget are defined once, in
``lion_nb.widgets.protocol`` (its docstring is the reference; a test checks the module against
it).

Updates are coalesced: structural changes go out at once; streamed text at most ``max_rate``
times a second (the first at once, so the first token shows within one round trip). Each
message costs ~550 bytes of envelope (``protocol.ENVELOPE_BYTES``), more than most ops it
carries, so ops that can wait a moment are *held*
(``push(..., hold=s)``): a Send's prompt card waits up to ``hold`` seconds for the reply's first
text and goes in one message with it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from lion_nb.widgets import protocol
from lion_nb.widgets.protocol import message

__all__ = ["MAX_RATE", "Channel", "fingerprint", "in_order"]

# The one throttle default: a view's streamed updates go out at most this many times a second
# (the first at once). 15 a second reads as smooth text and keeps a streamed reply's traffic
# within the budget (``protocol.BYTES_BUDGET_PER_S``). A view that needs another rate says why.
MAX_RATE = 15.0

# an op, as the views build them (``protocol``'s constructors)
Op = protocol.Op
# what the channel takes: any op (a plain mapping too: the tests' ops)
AnyOp = Mapping[str, Any]
_Queued = dict[str, Any]  # an op as queued (a copy: the channel merges queued chrome ops)
Producer = Callable[[], Sequence[AnyOp]]
V = TypeVar("V")


def in_order(shown: dict[str, V], keys: Iterable[str]) -> dict[str, V]:
    """The parts of ``shown`` (key -> what the page shows) that ``keys`` names, in its order:
    what a view keeps of its nested parts after an update."""
    kept: dict[str, V] = {}
    for key in keys:
        if key in shown:
            kept[key] = shown[key]
    return kept


def fingerprint(text: str) -> int:
    """32-bit FNV-1a over the UTF-16 code units of ``text`` (what JavaScript strings are made
    of), so the page can tell that its DOM already shows this HTML without being sent it."""
    data = text.encode("utf-16-le")
    h = 0x811C9DC5
    for unit in memoryview(data).cast("H"):
        h = ((h ^ unit) * 0x01000193) & 0xFFFFFFFF
    return h


class Channel:
    """Numbers and sends the ops of one view; ``send(content)`` is the widget's custom send.

    ``push(op)`` queues a structural op and sends at once; ``stream(key, producer)`` marks a
    streaming part dirty: its producer is asked for ops when the next throttled update goes out.
    ``sent_bytes`` counts the JSON payloads sent (without the comm envelope)."""

    def __init__(
        self,
        send: Callable[[dict[str, Any]], None],
        *,
        max_rate: float = MAX_RATE,
        clock: Callable[[], float] = time.monotonic,
        call_later: Callable[[float, Callable[[], None]], Any] | None = None,
    ) -> None:
        self._send = send
        self.interval = 1.0 / max_rate if max_rate > 0 else 0.0
        self._clock = clock
        self._call_later = call_later
        self.seq = 0
        self._ops: list[_Queued] = []
        self._dirty: dict[str, Producer] = {}
        self._timer: Any = None
        self._timer_soon = False  # the pending timer is a call_soon, not the throttle
        self._held = False  # the pending timer ends a hold (``push(hold=...)``)
        self._last: float | None = None
        self.messages = 0
        self.sent_bytes = 0
        self.closed = False
        # called before each message is made: the owner queues its pending small changes (the
        # view's chrome) so they travel with the ops of the same moment instead of on their own
        self.before_flush: Callable[[], None] | None = None
        # HTML the page holds as synced templates (html -> template name): a put of exactly
        # that HTML names the template instead (a live card's empty shell, ~480 bytes)
        self.templates: dict[str, str] = {}

    def push(self, *ops: AnyOp, now: bool = True, hold: float = 0.0) -> None:
        """Queue ``ops``; ``now``: send them with the next turn of the event loop (so the ops
        of one burst of signals - a prompt and its reply recorded back to back - share one
        message), else with the next throttled update. ``hold``: send them within ``hold``
        seconds, or sooner with a streamed part's first text; other ops pushed meanwhile
        wait with them."""
        self.queue(*ops)
        if hold > 0:
            self._hold(hold)
        elif now:
            self._soon()
        else:
            self._schedule()

    def queue(self, *ops: AnyOp) -> None:
        """Queue ``ops`` without scheduling a message (``before_flush`` adds to the one being
        made). A ``chrome`` op joins one queued already (later values win)."""
        for op in ops:
            last = next((o for o in self._ops if o.get("op") == "chrome"), None)
            if op.get("op") == "chrome" and last is not None:
                last["values"] = {**last["values"], **op["values"]}
            else:
                self._ops.append(dict(op))

    def stream(self, key: str, producer: Producer, *, now: bool = False) -> None:
        """``now``: a part's first text goes out at once (the first token on screen within a
        round trip), not after the interval of the update before it."""
        self._dirty[key] = producer
        if now:
            self._soon(end_hold=True)
        else:
            self._schedule()

    def forget(self, key: str) -> None:
        self._dirty.pop(key, None)

    @property
    def pending(self) -> bool:
        return bool(self._ops or self._dirty)

    def _soon(self, *, end_hold: bool = False) -> None:
        if self._timer is not None and (self._timer_soon or (self._held and not end_hold)):
            return
        if self._call_later is not None:
            self.flush()  # manual time (tests): at once
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_soon(self._fire)
        self._timer_soon = True
        self._held = False

    def _hold(self, delay: float) -> None:
        if self._timer is not None:
            return  # a message is due already (within the throttle interval at most)
        self._held = self._send_after(delay)

    def _schedule(self) -> None:
        if self._timer is not None:
            return
        wait = 0.0 if self._last is None else self._last + self.interval - self._clock()
        if wait <= 0:
            self.flush()
            return
        self._send_after(wait)

    def _send_after(self, delay: float) -> bool:
        """Send in ``delay`` seconds; False: sent now (fed outside any loop: nothing to wait
        on)."""
        if self._call_later is not None:
            self._timer = self._call_later(delay, self._fire)
            return True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return False
        self._timer = loop.call_later(delay, self._fire)
        return True

    def _fire(self) -> None:
        self._timer = None
        self._timer_soon = self._held = False
        self.flush()

    def flush(self) -> None:
        """Send what is queued now, as one message (nothing when nothing changed)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._timer_soon = self._held = False
        if self.before_flush is not None:
            self.before_flush()
        ops, self._ops = self._ops, []
        dirty, self._dirty = self._dirty, {}
        for producer in dirty.values():
            ops.extend(dict(op) for op in producer())
        if not ops or self.closed:
            return
        if self.templates:
            ops = [self._by_template(op) for op in ops]
        self._last = self._clock()
        self.seq += 1
        content = message(self.seq, ops)
        self.messages += 1
        self.sent_bytes += len(json.dumps(content, separators=(",", ":")))
        self._send(content)

    def _by_template(self, op: _Queued) -> _Queued:
        name = self.templates.get(op["html"]) if op.get("op") == "put" else None
        if name is None:
            return op
        short = dict(op, tpl=name)
        del short["html"]
        return short

    def close(self) -> None:
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._ops.clear()
        self._dirty.clear()
